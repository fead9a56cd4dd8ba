/**
 * The tool-loop state machine: pure functions over one session's history (the clock is passed in as epoch ms).
 * `pre` finds loops (identical calls with identical results, identical failing calls, polls past their limit, cycles
 * of 2 to 4 calls, a tool whose result stops changing while its arguments change; identical calls alone where no
 * result is known), `post` records each call's result and counts consecutive failures per tool.
 */
import { isoTime } from '../util/iso-time.js';
import { sha256Hex } from '../util/sha256.js';
import { type CallOutcome, isFailure, isPlainObject } from './hook-readings.js';
import { EMPTY_RESULT, maskArguments, quickHash } from './volatile.js';

export { isFailure } from './hook-readings.js';

/** Default: the 5th consecutive identical call is denied. */
export const DEFAULT_REPEAT_THRESHOLD = 5;
/** Default: the same sequence of 2 to 4 calls is denied when it would repeat a 3rd time in a row. */
export const DEFAULT_CYCLE_THRESHOLD = 3;
/** The longest sequence of calls that counts as a cycle. */
export const MAX_CYCLE_LENGTH = 4;
/** Default: the 4th identical call in a row is denied when the 3 before it gave the same result. */
export const DEFAULT_SAME_OUTCOME = 4;
/** Default: after 3 identical calls in a row that all failed, the next is denied. */
export const DEFAULT_SAME_FAILURE = 3;
/** Default: 30 identical calls in a row whose results change (a poll) are allowed; the 31st is denied. */
export const DEFAULT_POLL_LIMIT = 30;

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
  /** `callSignature(tool, input)` of the last call. */
  signature: string;
  count: number;
  /** `maskedSignature(tool, input)`: the streak's identity (calls that differ only in volatile parts are the same). */
  key?: string;
  /** The digest of the last known result (`resultDigest`). */
  outcome?: string;
  /** Calls at the end of the streak that gave that same result (the last included). */
  same?: number;
  /** Calls at the end of the streak that failed. */
  failed?: number;
  /** Calls at the end of the streak whose result never came (no `post` for them, or a result the dialect does not give). */
  blind?: number;
  /** The last call's result has not come yet. */
  pending?: true;
}

/** One tool's consecutive failures. */
export interface FailureCount {
  tool: string;
  count: number;
}

/** Calls of one tool in a row, whatever their arguments, that gave the same (non-empty) result. */
export interface ResultEcho {
  tool: string;
  outcome: string;
  count: number;
}

/** The last tool event seen, to count once a call that the agent reports twice (two hook sets for one agent). */
export interface EventView {
  /** The event names it was seen under. */
  events: string[];
  /** What identifies the call across those events (its generation and its command or arguments). */
  key: string;
  /** Its tool-call ids. */
  ids?: string[];
  /** After a call: its success or failure was counted (a report that knows neither, Cursor's afterShellExecution, leaves it unset). */
  judged?: true;
}

/** What the breaker still has to tell the agent at its next event that can say it. */
export interface PendingAnswer {
  /** `stop`: end the turn (the detection came where the dialect cannot end it); `note`: tell the model (warn-only). */
  kind: 'stop' | 'note';
  reason: string;
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
  /** The results of those calls, one per entry of `recent` (`""`: not known); absent when none is known. */
  results?: string[];
  /** The ids of the last calls counted after they ran (oldest first); absent when none. */
  counted?: string[];
  /** Calls of one tool with changing arguments and the same result. */
  echo?: ResultEcho;
  /** Loops found in this session and answered with a warning (the dialect's deny), and with an end of the turn. */
  warnings?: number;
  stops?: number;
  /** When the last warning of this turn was given: a second detection within the window ends the turn. */
  warnedAt?: string;
  /** When the last prompt (a person's, or a scheduled one) started a turn, and what started it when the agent says. */
  turnAt?: string;
  turnSource?: string;
  /** This session is disarmed (`tool-loop disarm --session`): every call is let through until `tool-loop arm`. */
  disarmed?: string;
  pending?: PendingAnswer;
  /** The last event before a call and after one (a call reported twice is counted once). */
  preView?: EventView;
  postView?: EventView;
}

/** What a detection is: the kind of loop, with the reason the model is told. */
export type LoopKind = 'repeated' | 'cycle' | 'failing' | 'polling' | 'no-progress';

export type PreDecision =
  | { action: 'allow'; count: number }
  /**
   * `count`: identical calls in a row, or for a cycle (`cycle`: its length) the times it repeated. `stop`: this is a
   * second detection in the turn within the window: the dialect's end-the-turn answer, where it has one.
   * `warnOnly`: the breaker is in warn-only mode: the call is let through, and the reason told after it.
   */
  | { action: 'deny'; count: number; reason: string; cycle?: number; kind: LoopKind; stop?: true; warnOnly?: true };

/** The limits of `decidePre`. */
export interface PreLimits {
  /** Identical calls in a row that are denied when no result of theirs is known (>= 2; the call-only rule). */
  threshold: number;
  /** Repetitions in a row of a sequence of 2 to 4 calls that are denied (>= 2). */
  cycleThreshold: number;
  /** The n-th identical call is denied when the n-1 before it gave the same result (>= 2). */
  sameOutcome?: number;
  /** After n identical calls in a row that all failed, the next is denied (>= 1). */
  sameFailure?: number;
  /** Identical calls in a row whose results change (polling) allowed before the next is denied (>= 1). */
  pollLimit?: number;
  /** Warn only: never deny nor stop; the detection is counted, and told to the model after the call. */
  warnOnly?: boolean;
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

/**
 * A call's identity for the repeat rules: the tool name and a hash of its canonical input with the volatile parts
 * masked (`Bash:~<14 hex>`), so `curl ...?t=1767225600` and `curl ...?t=1767225660` are the same call.
 */
export function maskedSignature(tool: string, input: unknown): string {
  return `${tool}:~${quickHash(maskArguments(canonicalJson(input)))}`;
}

/** Both signatures of a call (`callSignature`, `maskedSignature`), its canonical JSON made once. */
export function callSignatures(tool: string, input: unknown): { signature: string; key: string } {
  const canonical = canonicalJson(input);
  return { signature: `${tool}:${sha256Hex(canonical)}`, key: `${tool}:~${quickHash(maskArguments(canonical))}` };
}

/** An empty history for a session. */
export function emptyState(session: string, nowMs: number): ToolLoopState {
  return { session, updatedAt: isoTime(nowMs), streak: null, failures: [] };
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}

const isTally = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** True when a history was last written 24 h ago or more (or claims a time more than 24 h ahead). */
export function isExpired(updatedAt: string, nowMs: number): boolean {
  const t = Date.parse(updatedAt);
  return !Number.isFinite(t) || nowMs - t >= SESSION_TTL_MS || t - nowMs >= SESSION_TTL_MS;
}

/** The streak as stored, its newer fields kept when they are well formed. */
function parseStreak(s: unknown): CallStreak | null {
  if (!isPlainObject(s) || typeof s.tool !== 'string' || typeof s.signature !== 'string' || !isCount(s.count)) return null;
  const streak: CallStreak = { tool: s.tool, signature: s.signature, count: s.count };
  if (typeof s.key === 'string') streak.key = s.key;
  if (typeof s.outcome === 'string') streak.outcome = s.outcome;
  for (const k of ['same', 'failed', 'blind'] as const) if (isTally(s[k])) streak[k] = s[k];
  if (s.pending === true) streak.pending = true;
  return streak;
}

const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x !== '') : []);

function parseView(v: unknown): EventView | undefined {
  if (!isPlainObject(v) || typeof v.key !== 'string') return undefined;
  const view: EventView = { events: strings(v.events).slice(-8), key: v.key };
  const ids = strings(v.ids).slice(-8);
  if (ids.length > 0) view.ids = ids;
  if (v.judged === true) view.judged = true;
  return view;
}

/** The newer fields of a history (an older file has none of them: all start empty). */
function parseExtras(value: Record<string, unknown>, state: ToolLoopState): void {
  const e = value.echo;
  if (isPlainObject(e) && typeof e.tool === 'string' && typeof e.outcome === 'string' && isCount(e.count))
    state.echo = { tool: e.tool, outcome: e.outcome, count: e.count };
  for (const k of ['warnings', 'stops'] as const) if (isCount(value[k])) state[k] = value[k];
  for (const k of ['warnedAt', 'turnAt', 'turnSource', 'disarmed'] as const) if (typeof value[k] === 'string' && value[k] !== '') state[k] = value[k];
  const p = value.pending;
  if (isPlainObject(p) && (p.kind === 'stop' || p.kind === 'note') && typeof p.reason === 'string') state.pending = { kind: p.kind, reason: p.reason };
  const pre = parseView(value.preView);
  const post = parseView(value.postView);
  if (pre) state.preView = pre;
  if (post) state.postView = post;
  if (state.recent && Array.isArray(value.results) && value.results.length === state.recent.length) {
    state.results = value.results.map((r) => (typeof r === 'string' ? r : ''));
  }
}

/**
 * Reads a stored history. Anything unusable (wrong shape, another session's file, expired) gives an empty
 * history, with `problem` saying why when the file was wrongly shaped. Fields an older version wrote are read as
 * they were; fields it did not write start empty.
 */
export function parseToolLoopState(value: unknown, session: string, nowMs: number): { state: ToolLoopState; problem?: string } {
  const fresh = emptyState(session, nowMs);
  if (value === undefined) return { state: fresh };
  if (!isPlainObject(value) || typeof value.updatedAt !== 'string' || !Array.isArray(value.failures)) {
    return { state: fresh, problem: 'the session history is not in the expected shape; starting afresh' };
  }
  if (value.session !== session || isExpired(value.updatedAt, nowMs)) return { state: fresh };
  const failures: FailureCount[] = [];
  for (const f of value.failures) {
    if (isPlainObject(f) && typeof f.tool === 'string' && isCount(f.count) && !failures.some((x) => x.tool === f.tool)) {
      failures.push({ tool: f.tool, count: f.count });
    }
  }
  const state: ToolLoopState = { session, updatedAt: value.updatedAt, streak: parseStreak(value.streak), failures: failures.slice(-MAX_TRACKED_TOOLS) };
  const recent = strings(value.recent);
  const counted = strings(value.counted).slice(-MAX_COUNTED_CALLS);
  if (recent.length > 0) state.recent = recent;
  if (counted.length > 0) state.counted = counted;
  parseExtras(value, state);
  return { state };
}

/** The reason given when a call is repeated with no result known (the call-only rule). */
export function repeatReason(tool: string, count: number): string {
  return `${tool} called ${count} times in a row with identical arguments; try a different approach`;
}

/** The reason given when a call is repeated and its result repeats too. */
export function sameResultReason(tool: string, count: number): string {
  return `${tool} called ${count} times in a row with identical arguments, and each of the last ${count - 1} gave the same result; try a different approach`;
}

/** The reason given when a call keeps failing with the same arguments. */
export function failingRepeatReason(tool: string, count: number): string {
  return `${tool} failed ${count} times in a row with identical arguments; change strategy instead of retrying it`;
}

/** The reason given when a poll runs past its limit. */
export function pollingReason(tool: string, count: number, limit: number): string {
  const what = `${tool} called ${count} times in a row with identical arguments`;
  return `${what}: its result changed, but ${limit} polls in a row is the limit; wait differently or ask the user`;
}

/** The reason given when calls of a tool change their arguments but not their result. */
export function noProgressReason(tool: string, count: number): string {
  return `${tool} gave the same result ${count} times in a row although its arguments changed; nothing is progressing, try a different approach`;
}

/** The reason given when a tool keeps failing. */
export function failureReason(tool: string, count: number): string {
  return `${tool} failed ${count} times in a row; change strategy`;
}

/** The reason given when a sequence of calls keeps repeating. */
export function cycleReason(tools: readonly string[], repeats: number, withResults = false): string {
  const what = withResults ? ' with the same results' : '';
  return `the same ${tools.length} calls (${tools.join(', ')}) repeated ${repeats} times in a row${what}; try a different approach`;
}

/**
 * The reason of the end-the-turn answer: what repeated, that this is the second time in the turn, and how to let the
 * session run (its id spelled out where it is safe to paste into a shell, else `<id>`).
 */
export function stopReason(reason: string, session: string): string {
  const id = /^[A-Za-z0-9_.:@-]{1,128}$/.test(session) ? session : '<id>';
  const what = `hermes-janitor tool-loop: a loop again after a warning in this turn (${reason}); the turn is ended.`;
  return `${what} Run 'hermes-janitor tool-loop disarm --session ${id}' to let it run.`;
}

/**
 * The cycle the last calls end with: the same sequence of 2 to 4 calls (not all one call: that is a streak)
 * `repeats` times in a row. `signatures` are oldest first. Returns the sequence's length, or 0. With `results` (one
 * per signature, `""` when not known; the last call's is not compared), a cycle whose calls at one position gave
 * different results is progress, not a loop.
 */
export function cycleLength(signatures: readonly string[], repeats: number, results?: readonly string[]): number {
  for (let len = 2; len <= MAX_CYCLE_LENGTH; len++) {
    const n = len * repeats;
    if (signatures.length < n) break;
    const tail = signatures.slice(-n);
    const pattern = tail.slice(0, len);
    if (pattern.every((x) => x === pattern[0])) continue;
    if (!tail.every((x, i) => x === pattern[i % len])) continue;
    if (results && resultsChange(results.slice(-n, -1), len)) continue;
    return len;
  }
  return 0;
}

/** Whether the known results at one position of a cycle differ (`""`: not known, matches anything). */
function resultsChange(results: readonly string[], len: number): boolean {
  for (let p = 0; p < len; p++) {
    let seen = '';
    for (let i = p; i < results.length; i += len) {
      const r = results[i]!;
      if (r === '') continue;
      if (seen !== '' && r !== seen) return true;
      seen = r;
    }
  }
  return false;
}

/** The tool name of a signature (`Bash:9f86d0...`). */
const toolOf = (signature: string) => signature.slice(0, signature.lastIndexOf(':'));

/** The escalation window: a second loop within this long of a warning (in the same turn) ends the turn. */
export const ESCALATION_WINDOW_MS = 30 * 60 * 1000;

/** The limits with their defaults filled in. */
function fullLimits(limits: number | PreLimits): Required<PreLimits> {
  const l = typeof limits === 'number' ? { threshold: limits, cycleThreshold: DEFAULT_CYCLE_THRESHOLD } : limits;
  return {
    threshold: l.threshold,
    cycleThreshold: l.cycleThreshold,
    sameOutcome: l.sameOutcome ?? DEFAULT_SAME_OUTCOME,
    sameFailure: l.sameFailure ?? DEFAULT_SAME_FAILURE,
    pollLimit: l.pollLimit ?? DEFAULT_POLL_LIMIT,
    warnOnly: l.warnOnly ?? false,
  };
}

/** The streak this call continues (by its masked signature, or its exact one in a history an older version wrote), or a new one. */
function nextStreak(prev: CallStreak | null, tool: string, signature: string, key: string): CallStreak {
  const same = prev !== null && prev.tool === tool && (prev.key !== undefined ? prev.key === key : prev.signature === signature);
  if (!same) return { tool, signature, count: 1, key, blind: 0, pending: true };
  const next: CallStreak = { ...prev, signature, key, count: prev.count + 1, pending: true };
  // The previous call's result never came: the runs of equal results and failures are broken, the blind run grows.
  if (prev.pending || prev.key === undefined) {
    next.blind = (prev.blind ?? (prev.key === undefined ? prev.count : 0)) + 1;
    delete next.same;
    delete next.failed;
    delete next.outcome;
  }
  return next;
}

type Detection = { kind: LoopKind; count: number; reason: string; cycle?: number };

/** The loop this call would continue on its streak, if any. */
function streakLoop(s: CallStreak, l: Required<PreLimits>): Detection | undefined {
  const failed = s.failed ?? 0;
  const same = s.same ?? 0;
  if (s.blind !== undefined && s.blind + 1 >= l.threshold && s.blind + 1 >= s.count) {
    return { kind: 'repeated', count: s.count, reason: repeatReason(s.tool, s.count) };
  }
  if (failed >= l.sameFailure) return { kind: 'failing', count: s.count, reason: failingRepeatReason(s.tool, failed) };
  if (same > 0 && same + 1 >= l.sameOutcome) return { kind: 'repeated', count: s.count, reason: sameResultReason(s.tool, s.count) };
  if (s.count > l.pollLimit) return { kind: 'polling', count: s.count, reason: pollingReason(s.tool, s.count, l.pollLimit) };
  // A streak whose results were never seen (no post hook): the call-only rule, as before outcomes were known.
  if (same === 0 && failed === 0 && s.outcome === undefined && s.count >= l.threshold) {
    return { kind: 'repeated', count: s.count, reason: repeatReason(s.tool, s.count) };
  }
  return undefined;
}

/** The loop this call would continue, if any: its streak, a cycle of 2 to 4 calls, or a tool whose result stopped changing. */
function findLoop(state: ToolLoopState, streak: CallStreak, recent: string[], results: string[], l: Required<PreLimits>): Detection | undefined {
  const found = streakLoop(streak, l);
  if (found) return found;
  const cycle = cycleLength(recent, l.cycleThreshold, results);
  if (cycle > 0) {
    const tools = recent.slice(-cycle).map(toolOf);
    const known = results.slice(-cycle * l.cycleThreshold, -1).some((r) => r !== '');
    return { kind: 'cycle', count: l.cycleThreshold, cycle, reason: cycleReason(tools, l.cycleThreshold, known) };
  }
  const echo = state.echo;
  if (echo && echo.tool === streak.tool && echo.count >= l.sameOutcome) {
    return { kind: 'no-progress', count: echo.count, reason: noProgressReason(streak.tool, echo.count) };
  }
  return undefined;
}

/** Whether a warning was given in this turn within the escalation window. */
function warnedRecently(state: ToolLoopState, nowMs: number): boolean {
  const t = state.warnedAt === undefined ? Number.NaN : Date.parse(state.warnedAt);
  return Number.isFinite(t) && nowMs - t >= 0 && nowMs - t < ESCALATION_WINDOW_MS;
}

/** The history after a detection: the streaks, cycles and echoes start again; the counts of warnings and stops go up. */
function afterDetection(state: ToolLoopState, updatedAt: string, stop: boolean, warnOnly: boolean): ToolLoopState {
  const next: ToolLoopState = { ...state, updatedAt, streak: null };
  delete next.recent;
  delete next.results;
  delete next.echo;
  if (stop) {
    next.stops = (state.stops ?? 0) + 1;
  } else {
    next.warnings = (state.warnings ?? 0) + 1;
    next.warnedAt = updatedAt;
  }
  if (warnOnly) delete next.warnedAt; // warn only never escalates
  return next;
}

/**
 * PreToolUse: the call that would continue a loop is denied (see `streakLoop`, cycles and echoes); either way the
 * history starts again from zero (the denied call does not count). A second detection in the same turn within
 * `ESCALATION_WINDOW_MS` of a warning is marked `stop` (the dialect ends the turn where it can). Any other call is
 * allowed and extends the history.
 */
export function decidePre(
  state: ToolLoopState,
  call: { tool: string; input?: unknown /** `callSignature(tool, input)`, when already computed. */; signature?: string; key?: string },
  limits: number | PreLimits,
  nowMs: number,
): { decision: PreDecision; next: ToolLoopState } {
  const l = fullLimits(limits);
  const signature = call.signature ?? callSignature(call.tool, call.input);
  const key = call.key ?? (call.input !== undefined || call.signature === undefined ? maskedSignature(call.tool, call.input) : signature);
  const streak = nextStreak(state.streak, call.tool, signature, key);
  const updatedAt = isoTime(nowMs);
  const keep = MAX_CYCLE_LENGTH * l.cycleThreshold;
  const prior = state.recent ?? [];
  const priorResults = state.results && state.results.length === prior.length ? state.results : prior.map(() => '');
  const recent = [...prior, key].slice(-keep);
  const results = [...priorResults, ''].slice(-keep);
  const found = findLoop(state, streak, recent, results, l);
  if (found) {
    const stop = !l.warnOnly && warnedRecently(state, nowMs);
    const decision: PreDecision = { action: 'deny', count: found.count, reason: found.reason, kind: found.kind };
    if (found.cycle) decision.cycle = found.cycle;
    if (stop) decision.stop = true;
    if (l.warnOnly) decision.warnOnly = true;
    return { decision, next: afterDetection(state, updatedAt, stop, l.warnOnly) };
  }
  const next: ToolLoopState = { ...state, updatedAt, streak, recent };
  if (results.some((r) => r !== '')) next.results = results;
  else delete next.results;
  if (state.echo && state.echo.tool !== call.tool) delete next.echo;
  return { decision: { action: 'allow', count: streak.count }, next };
}

/** A finished call's result, for the rules that compare results: its digest, or undefined when the dialect gives none. */
export interface CallResult {
  /** `resultDigest` of what the call returned; `EMPTY_RESULT` for nothing. */
  digest: string;
  failed: boolean;
}

/**
 * Tools that write (their names say so: Edit, Write, replace, write_file, apply_patch, str_replace_editor, create, ...):
 * their success is a confirmation that reads the same for different changes ("Successfully modified file: a.ts"), so it
 * never counts as a result that stopped changing; their failures do.
 */
const WRITES = /edit|write|replace|patch|create|insert|update|rename|move|delete|remove|mkdir|save/i;

/** Records a finished call's result on the streak, the cycle history and the echo. */
function recordResult(state: ToolLoopState, tool: string, key: string | undefined, result: CallResult): ToolLoopState {
  const next: ToolLoopState = { ...state };
  const s = state.streak;
  if (s && s.pending && s.tool === tool && (key === undefined || s.key === undefined || s.key === key)) {
    const streak: CallStreak = { ...s, outcome: result.digest, same: s.outcome === result.digest ? (s.same ?? 0) + 1 : 1 };
    streak.failed = result.failed ? (s.failed ?? 0) + 1 : 0;
    streak.blind = 0;
    delete streak.pending;
    next.streak = streak;
  }
  if (state.recent && key !== undefined) {
    const at = state.recent.lastIndexOf(key);
    const results = state.results && state.results.length === state.recent.length ? [...state.results] : state.recent.map(() => '');
    if (at >= 0 && results[at] === '') {
      results[at] = result.digest;
      next.results = results;
    }
  }
  const e = state.echo;
  if (result.digest === EMPTY_RESULT || (!result.failed && WRITES.test(tool))) delete next.echo;
  else next.echo = e && e.tool === tool && e.outcome === result.digest ? { ...e, count: e.count + 1 } : { tool, outcome: result.digest, count: 1 };
  return next;
}

/**
 * After a call: a failure adds 1 to the tool's consecutive failures; at `threshold` the model is told to change
 * strategy and the count starts again. A success clears the tool's count; a neutral outcome (an interrupted or
 * vetoed call) changes nothing. A call whose id was already counted is not counted again. `outcome` defaults to
 * the verdict of `isFailure(response)`. With `result` (and `key`, the call's `maskedSignature`), the result is kept for
 * the rules of `decidePre` that compare results.
 */
export function decidePost(
  state: ToolLoopState,
  call: { tool: string; response?: unknown; outcome?: CallOutcome; callId?: string; key?: string; result?: CallResult },
  threshold: number,
  nowMs: number,
): { decision: PostDecision; next: ToolLoopState } {
  const current = state.failures.find((f) => f.tool === call.tool)?.count ?? 0;
  if (call.callId !== undefined && state.counted?.includes(call.callId)) {
    return { decision: { action: 'allow', failures: current, duplicate: true }, next: state };
  }
  const outcome = call.outcome ?? (isFailure(call.response) ? 'failure' : 'success');
  const updatedAt = isoTime(nowMs);
  const recorded = call.result && outcome !== 'neutral' ? recordResult(state, call.tool, call.key, call.result) : state;
  const base: ToolLoopState = { ...recorded, updatedAt };
  if (call.callId !== undefined) base.counted = [...(state.counted ?? []), call.callId].slice(-MAX_COUNTED_CALLS);
  const others = state.failures.filter((f) => f.tool !== call.tool);
  if (outcome === 'neutral' || outcome === 'unknown') return { decision: { action: 'allow', failures: current }, next: base };
  if (outcome === 'success') return { decision: { action: 'allow', failures: 0 }, next: { ...base, failures: others } };
  const count = current + 1;
  if (count >= threshold) {
    return { decision: { action: 'block', failures: count, reason: failureReason(call.tool, count) }, next: { ...base, failures: others } };
  }
  const failures = [...others, { tool: call.tool, count }].slice(-MAX_TRACKED_TOOLS);
  return { decision: { action: 'allow', failures: count }, next: { ...base, failures } };
}

/**
 * Whether a session is one step from the breaker: its next identical call would be denied (with the limits' defaults
 * where not given), or its next failure of a tool reported. A loop found resets the history, so this is what a
 * history can show of a loop in the making.
 */
export function oneStepFromLoop(state: ToolLoopState, limits: Partial<PreLimits> & { failureThreshold: number }): boolean {
  const l = fullLimits({ threshold: limits.threshold ?? DEFAULT_REPEAT_THRESHOLD, cycleThreshold: DEFAULT_CYCLE_THRESHOLD, ...limits });
  const s = state.streak;
  const failing = state.failures.some((f) => f.count >= limits.failureThreshold - 1);
  if (!s) return failing;
  const blind = s.outcome === undefined && s.count >= l.threshold - 1;
  const same = (s.same ?? 0) >= l.sameOutcome - 1;
  return failing || blind || same || (s.failed ?? 0) >= l.sameFailure || s.count >= l.pollLimit;
}

/**
 * A new turn (a person's prompt, or a scheduled one): the streaks, cycles, echoes and the warning of the last turn
 * are forgotten; the counts of warnings and stops, the failure counts and a disarmed session stay.
 */
export function startTurn(state: ToolLoopState, nowMs: number, source?: string): ToolLoopState {
  const next: ToolLoopState = { ...state, updatedAt: isoTime(nowMs), streak: null, turnAt: isoTime(nowMs) };
  for (const k of ['recent', 'results', 'echo', 'warnedAt', 'pending', 'preView', 'postView', 'turnSource'] as const) delete next[k];
  if (source) next.turnSource = source;
  return next;
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

/** What `tool-loop status` and `status` say of a histories' directory holding more entries than they read (`cap`). */
export const toolLoopCappedLine = (cap: number): string => `holds more than ${cap} entries: the sessions among the first ${cap} read are shown`;
