/**
 * The tool-loop state machine: pure functions over one session's history (the clock is passed in as epoch ms).
 * `pre` counts consecutive identical calls, `post` counts consecutive failures per tool.
 */
import { sha256Hex } from '../util/sha256.js';

type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Default: the 5th consecutive identical call is denied. */
export const DEFAULT_REPEAT_THRESHOLD = 5;
/** Default: the 5th consecutive failure of a tool is reported. */
export const DEFAULT_FAILURE_THRESHOLD = 5;
/** A session's history is forgotten (and its file deleted) after this long untouched. */
export const SESSION_TTL_MS = 24 * 60 * 60 * 1000;
/** The expired-session sweep runs at most this often. */
export const SWEEP_INTERVAL_MS = 60 * 60 * 1000;
/** At most this many tools' failure counts are kept per session (the least recently updated go first). */
export const MAX_TRACKED_TOOLS = 32;
/** The session used when a payload has no `session_id`. */
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
}

/** A PreToolUse or PostToolUse call, validated. */
export interface ToolCall {
  session: string;
  tool: string;
  /** `tool_input` (null when missing). */
  input: unknown;
  /** `tool_response` (PostToolUse only). */
  response?: unknown;
}

export type PreDecision =
  | { action: 'allow'; count: number }
  | { action: 'deny'; count: number; reason: string };

export type PostDecision =
  | { action: 'allow'; failures: number }
  | { action: 'block'; failures: number; reason: string };

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
    default:
      return 'null'; // functions, symbols, bigints: not JSON
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

/**
 * A tool response is a failure when it is an object carrying a truthy `error`, `is_error: true`,
 * `isError: true` or `success: false`; anything else is a success.
 */
export function isFailure(response: unknown): boolean {
  if (!isPlainObject(response)) return false;
  return Boolean(response.error) || response.is_error === true || response.isError === true || response.success === false;
}

/** Validates a PreToolUse/PostToolUse payload. A missing or empty `session_id` is the session `default`. */
export function parseToolCall(payload: unknown): Parsed<ToolCall> {
  if (!isPlainObject(payload)) return { ok: false, problem: 'the hook input is not a JSON object' };
  const tool = payload.tool_name;
  if (typeof tool !== 'string' || tool === '') {
    return { ok: false, problem: "the hook input is invalid: 'tool_name' must be a non-empty string" };
  }
  const session = payload.session_id;
  if (session !== undefined && session !== null && typeof session !== 'string') {
    return { ok: false, problem: "the hook input is invalid: 'session_id' must be a string" };
  }
  const call: ToolCall = { session: session || DEFAULT_SESSION, tool, input: payload.tool_input ?? null };
  if ('tool_response' in payload) call.response = payload.tool_response;
  return { ok: true, value: call };
}

/** An empty history for a session. */
export function emptyState(session: string, nowMs: number): ToolLoopState {
  return { session, updatedAt: new Date(nowMs).toISOString(), streak: null, failures: [] };
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
  return { state: { session, updatedAt: value.updatedAt, streak, failures: failures.slice(-MAX_TRACKED_TOOLS) } };
}

/** The reason given when a repeated call is denied. */
export function repeatReason(tool: string, count: number): string {
  return `${tool} called ${count} times in a row with identical arguments; try a different approach`;
}

/** The reason given when a tool keeps failing. */
export function failureReason(tool: string, count: number): string {
  return `${tool} failed ${count} times in a row; change strategy`;
}

/**
 * PreToolUse: the call that would make `threshold` consecutive identical calls is denied and the streak starts
 * again from zero (the denied call does not count); any other call is allowed and extends or replaces the streak.
 */
export function decidePre(
  state: ToolLoopState,
  call: { tool: string; input?: unknown; /** `callSignature(tool, input)`, when already computed. */ signature?: string },
  threshold: number,
  nowMs: number,
): { decision: PreDecision; next: ToolLoopState } {
  const signature = call.signature ?? callSignature(call.tool, call.input);
  const prev = state.streak;
  const count = prev && prev.tool === call.tool && prev.signature === signature ? prev.count + 1 : 1;
  const updatedAt = new Date(nowMs).toISOString();
  if (count >= threshold) {
    return { decision: { action: 'deny', count, reason: repeatReason(call.tool, count) }, next: { ...state, updatedAt, streak: null } };
  }
  return { decision: { action: 'allow', count }, next: { ...state, updatedAt, streak: { tool: call.tool, signature, count } } };
}

/**
 * PostToolUse: a failure adds 1 to the tool's consecutive failures; at `threshold` the model is told to change
 * strategy and the count starts again. A success clears the tool's count.
 */
export function decidePost(
  state: ToolLoopState,
  call: { tool: string; response?: unknown },
  threshold: number,
  nowMs: number,
): { decision: PostDecision; next: ToolLoopState } {
  const others = state.failures.filter((f) => f.tool !== call.tool);
  const updatedAt = new Date(nowMs).toISOString();
  if (!isFailure(call.response)) {
    return { decision: { action: 'allow', failures: 0 }, next: { ...state, updatedAt, failures: others } };
  }
  const count = (state.failures.find((f) => f.tool === call.tool)?.count ?? 0) + 1;
  if (count >= threshold) {
    return { decision: { action: 'block', failures: count, reason: failureReason(call.tool, count) }, next: { ...state, updatedAt, failures: others } };
  }
  const failures = [...others, { tool: call.tool, count }].slice(-MAX_TRACKED_TOOLS);
  return { decision: { action: 'allow', failures: count }, next: { ...state, updatedAt, failures } };
}

/** The PreToolUse answer that denies a call. */
export function denyOutput(reason: string) {
  return {
    hookSpecificOutput: { hookEventName: 'PreToolUse' as const, permissionDecision: 'deny' as const, permissionDecisionReason: reason },
  };
}

/** The PostToolUse answer that shows the model a reason. */
export function blockOutput(reason: string) {
  return { decision: 'block' as const, reason };
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
