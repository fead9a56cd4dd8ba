/**
 * The tool-loop state machine: pure functions over one session's history (the clock is passed in as epoch ms).
 * `pre` counts consecutive identical calls, `post` counts consecutive failures per tool.
 */
import { isoTime } from '../util/iso-time.js';
import { sha256Hex } from '../util/sha256.js';
import { type CallOutcome, isFailure, isPlainObject } from './hook-readings.js';

export { isFailure } from './hook-readings.js';

/** Default: the 5th consecutive identical call is denied. */
export const DEFAULT_REPEAT_THRESHOLD = 5;
/** Default: the same sequence of 2 to 4 calls is denied when it would repeat a 3rd time in a row. */
export const DEFAULT_CYCLE_THRESHOLD = 3;
/** The longest sequence of calls that counts as a cycle. */
export const MAX_CYCLE_LENGTH = 4;
/** At most this many tool-call ids are remembered per session (a failure reported twice is counted once). */
export const MAX_COUNTED_CALLS = 64;
/** Default: the 5th consecutive failure of a tool is reported. */
export const DEFAULT_FAILURE_THRESHOLD = 5;
/** A session's history is forgotten (and its file deleted) after this long untouched. */
export const SESSION_TTL_MS = 24 * 60 * 60 * 1000;
/** The expired-session sweep runs at most this often. */
export const SWEEP_INTERVAL_MS = 60 * 60 * 1000;
/** At most this many tools' failure counts are kept per session (the least recently updated go first). */
export const MAX_TRACKED_TOOLS = 32;
/** The session used when a payload has no session id. */
export const DEFAULT_SESSION = 'default';

/** The streak of identical calls: only the last call matters. */
export interface CallStreak {
  tool: string;
  /** `callSignature(tool, input)`. */
  signature: string;
  count: number;
}

/** One tool's consecutive failures. */
export interface FailureCount {
  tool: string;
  count: number;
}

/** One session's history, as stored in `<home>/tool-loop/<session file>.json`. */
export interface ToolLoopState {
  /** The session id, as the harness gave it. */
  session: string;
  /** When the history was last written (ISO 8601); 24 h later it is forgotten. */
  updatedAt: string;
  streak: CallStreak | null;
  /** Consecutive failures per tool, least recently updated first; tools at 0 are not listed. */
  failures: FailureCount[];
  /** The signatures of the last calls (oldest first), as many as cycle detection needs; absent when none. */
  recent?: string[];
  /** The ids of the last calls counted after they ran (oldest first); absent when none. */
  counted?: string[];
}

export type PreDecision =
  | { action: 'allow'; count: number }
  /** `count`: identical calls in a row, or for a cycle (`cycle`: its length) the times it repeated. */
  | { action: 'deny'; count: number; reason: string; cycle?: number };

/** The limits of `decidePre`. */
export interface PreLimits {
  /** Identical calls in a row that are denied (>= 2). */
  threshold: number;
  /** Repetitions in a row of a sequence of 2 to 4 calls that are denied (>= 2). */
  cycleThreshold: number;
}

export type PostDecision =
  /** `duplicate`: the call's id was already counted. */
  { action: 'allow'; failures: number; duplicate?: true } | { action: 'block'; failures: number; reason: string };

/**
 * Canonical JSON: object keys sorted (by UTF-16 code units) at every depth, no insignificant whitespace, JSON
 * semantics for everything else (`toJSON`, undefined members dropped, undefined array items and non-finite
 * numbers as null). Throws RangeError on input nested too deeply for the stack.
 */
export function canonicalJson(value: unknown): string {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON: () => unknown }).toJSON();
  }
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'object':
      break;
    case 'bigint':
    case 'function':
    case 'symbol':
    case 'undefined':
      return 'null'; // not JSON
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(obj).sort()) {
    const v = obj[key];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    parts.push(`${JSON.stringify(key)}:${canonicalJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}

/** SHA-256 (hex) of the canonical JSON of a tool's input. */
export function inputDigest(input: unknown): string {
  return sha256Hex(canonicalJson(input));
}

/** A call's signature: the tool name and the SHA-256 of its canonical input (`Bash:9f86d0...`). */
export function callSignature(tool: string, input: unknown): string {
  return `${tool}:${inputDigest(input)}`;
}

/** An empty history for a session. */
export function emptyState(session: string, nowMs: number): ToolLoopState {
  return { session, updatedAt: isoTime(nowMs), streak: null, failures: [] };
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}

/** True when a history was last written 24 h ago or more (or claims a time more than 24 h ahead). */
export function isExpired(updatedAt: string, nowMs: number): boolean {
  const t = Date.parse(updatedAt);
  return !Number.isFinite(t) || nowMs - t >= SESSION_TTL_MS || t - nowMs >= SESSION_TTL_MS;
}

/**
 * Reads a stored history. Anything unusable (wrong shape, another session's file, expired) gives an empty
 * history, with `problem` saying why when the file was wrongly shaped.
 */
export function parseToolLoopState(value: unknown, session: string, nowMs: number): { state: ToolLoopState; problem?: string } {
  const fresh = emptyState(session, nowMs);
  if (value === undefined) return { state: fresh };
  if (!isPlainObject(value) || typeof value.updatedAt !== 'string' || !Array.isArray(value.failures)) {
    return { state: fresh, problem: 'the session history is not in the expected shape; starting afresh' };
  }
  if (value.session !== session || isExpired(value.updatedAt, nowMs)) return { state: fresh };
  let streak: CallStreak | null = null;
  const s = value.streak;
  if (isPlainObject(s) && typeof s.tool === 'string' && typeof s.signature === 'string' && isCount(s.count)) {
    streak = { tool: s.tool, signature: s.signature, count: s.count };
  }
  const failures: FailureCount[] = [];
  for (const f of value.failures) {
    if (isPlainObject(f) && typeof f.tool === 'string' && isCount(f.count) && !failures.some((x) => x.tool === f.tool)) {
      failures.push({ tool: f.tool, count: f.count });
    }
  }
  const state: ToolLoopState = { session, updatedAt: value.updatedAt, streak, failures: failures.slice(-MAX_TRACKED_TOOLS) };
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x !== '') : []);
  const recent = strings(value.recent);
  const counted = strings(value.counted).slice(-MAX_COUNTED_CALLS);
  if (recent.length > 0) state.recent = recent;
  if (counted.length > 0) state.counted = counted;
  return { state };
}

/** The reason given when a repeated call is denied. */
export function repeatReason(tool: string, count: number): string {
  return `${tool} called ${count} times in a row with identical arguments; try a different approach`;
}

/** The reason given when a tool keeps failing. */
export function failureReason(tool: string, count: number): string {
  return `${tool} failed ${count} times in a row; change strategy`;
}

/** The reason given when a sequence of calls keeps repeating. */
export function cycleReason(tools: readonly string[], repeats: number): string {
  return `the same ${tools.length} calls (${tools.join(', ')}) repeated ${repeats} times in a row; try a different approach`;
}

/**
 * The cycle the last calls end with: the same sequence of 2 to 4 calls (not all one call: that is a streak)
 * `repeats` times in a row. `signatures` are oldest first. Returns the sequence's length, or 0.
 */
export function cycleLength(signatures: readonly string[], repeats: number): number {
  for (let len = 2; len <= MAX_CYCLE_LENGTH; len++) {
    const n = len * repeats;
    if (signatures.length < n) break;
    const tail = signatures.slice(-n);
    const pattern = tail.slice(0, len);
    if (pattern.every((x) => x === pattern[0])) continue;
    if (tail.every((x, i) => x === pattern[i % len])) return len;
  }
  return 0;
}

/** The tool name of a signature (`Bash:9f86d0...`). */
const toolOf = (signature: string) => signature.slice(0, signature.lastIndexOf(':'));

/**
 * PreToolUse: the call that would make `threshold` identical calls in a row is denied, and so is the call that
 * would repeat the same sequence of 2 to 4 calls `cycleThreshold` times in a row; either way the history starts
 * again from zero (the denied call does not count). Any other call is allowed and extends the history.
 */
export function decidePre(
  state: ToolLoopState,
  call: { tool: string; input?: unknown /** `callSignature(tool, input)`, when already computed. */; signature?: string },
  limits: number | PreLimits,
  nowMs: number,
): { decision: PreDecision; next: ToolLoopState } {
  const { threshold, cycleThreshold } = typeof limits === 'number' ? { threshold: limits, cycleThreshold: DEFAULT_CYCLE_THRESHOLD } : limits;
  const signature = call.signature ?? callSignature(call.tool, call.input);
  const prev = state.streak;
  const count = prev && prev.tool === call.tool && prev.signature === signature ? prev.count + 1 : 1;
  const updatedAt = isoTime(nowMs);
  const reset = { ...state, updatedAt, streak: null };
  delete reset.recent;
  if (count >= threshold) return { decision: { action: 'deny', count, reason: repeatReason(call.tool, count) }, next: reset };
  const recent = [...(state.recent ?? []), signature].slice(-MAX_CYCLE_LENGTH * cycleThreshold);
  const cycle = cycleLength(recent, cycleThreshold);
  if (cycle > 0) {
    const tools = recent.slice(-cycle).map(toolOf);
    return { decision: { action: 'deny', count: cycleThreshold, cycle, reason: cycleReason(tools, cycleThreshold) }, next: reset };
  }
  return { decision: { action: 'allow', count }, next: { ...state, updatedAt, streak: { tool: call.tool, signature, count }, recent } };
}

/**
 * After a call: a failure adds 1 to the tool's consecutive failures; at `threshold` the model is told to change
 * strategy and the count starts again. A success clears the tool's count; a neutral outcome (an interrupted or
 * vetoed call) changes nothing. A call whose id was already counted is not counted again. `outcome` defaults to
 * the verdict of `isFailure(response)`.
 */
export function decidePost(
  state: ToolLoopState,
  call: { tool: string; response?: unknown; outcome?: CallOutcome; callId?: string },
  threshold: number,
  nowMs: number,
): { decision: PostDecision; next: ToolLoopState } {
  const current = state.failures.find((f) => f.tool === call.tool)?.count ?? 0;
  if (call.callId !== undefined && state.counted?.includes(call.callId)) {
    return { decision: { action: 'allow', failures: current, duplicate: true }, next: state };
  }
  const outcome = call.outcome ?? (isFailure(call.response) ? 'failure' : 'success');
  const updatedAt = isoTime(nowMs);
  const base: ToolLoopState = { ...state, updatedAt };
  if (call.callId !== undefined) base.counted = [...(state.counted ?? []), call.callId].slice(-MAX_COUNTED_CALLS);
  const others = state.failures.filter((f) => f.tool !== call.tool);
  if (outcome === 'neutral') return { decision: { action: 'allow', failures: current }, next: base };
  if (outcome === 'success') return { decision: { action: 'allow', failures: 0 }, next: { ...base, failures: others } };
  const count = current + 1;
  if (count >= threshold) {
    return { decision: { action: 'block', failures: count, reason: failureReason(call.tool, count) }, next: { ...base, failures: others } };
  }
  const failures = [...others, { tool: call.tool, count }].slice(-MAX_TRACKED_TOOLS);
  return { decision: { action: 'allow', failures: count }, next: { ...base, failures } };
}

/** True when the sweep of expired sessions is due (`lastSweep` is the ISO time of the previous one). */
export function sweepDue(lastSweep: unknown, nowMs: number): boolean {
  const t = typeof lastSweep === 'string' ? Date.parse(lastSweep) : Number.NaN;
  return !Number.isFinite(t) || nowMs - t >= SWEEP_INTERVAL_MS || t > nowMs;
}

/** Characters kept from a session id in its file name; everything else becomes `_`. */
const FILE_SAFE = /[^A-Za-z0-9_-]/g;

/**
 * The file name of a session's history: a readable, sanitized prefix of the id (letters, digits, `_` and `-`
 * only, so never `.`, `/` or `..`) and 16 hex digits of its SHA-256, so different ids never share a file.
 */
export function sessionFileName(session: string): string {
  const readable = session.replace(FILE_SAFE, '_').slice(0, 48);
  const hash = sha256Hex(session).slice(0, 16);
  return `${readable}-${hash}.json`;
}

/** Matches the names `sessionFileName` makes. */
export const SESSION_FILE_PATTERN = /^[A-Za-z0-9_-]{0,48}-[0-9a-f]{16}\.json$/;
