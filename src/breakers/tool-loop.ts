/**
 * The tool-loop breaker, in process: one history per session, kept in a {@link ToolLoopStore}, updated with the
 * pure rules of `core/tool-loop`. Both the CLI and library callers use this.
 */
import path from 'node:path';
import { FileStateStore, MemoryStateStore, type StateStore, hasState } from '../adapters/state-file.js';
import { listDirSafely } from '../adapters/trust.js';
import { type HookAnswer, denyAnswer, endTurnAnswer, failingAnswer, noteAnswer } from '../core/hook-answers.js';
import { type Dialect, checkDialect, dialectOf } from '../core/hook-dialects.js';
import { type ToolCallReading, readToolCall } from '../core/hook-readings.js';
import {
  DEFAULT_CYCLE_THRESHOLD,
  DEFAULT_FAILURE_THRESHOLD,
  DEFAULT_POLL_LIMIT,
  DEFAULT_REPEAT_THRESHOLD,
  DEFAULT_SAME_FAILURE,
  DEFAULT_SAME_OUTCOME,
  DEFAULT_SESSION,
  type EventView,
  type LoopKind,
  type PreDecision,
  SESSION_FILE_PATTERN,
  type ToolLoopState,
  callSignatures,
  canonicalJson,
  decidePost,
  decidePre,
  isExpired,
  maskedSignature,
  parseToolLoopState,
  sessionFileName,
  startTurn,
  stopReason,
  sweepDue,
} from '../core/tool-loop.js';
import { quickHash, resultDigest } from '../core/volatile.js';
import { errorMessage } from '../errors.js';
import { isoTime } from '../util/iso-time.js';
import { libraryHome } from './home.js';

export {
  DEFAULT_CYCLE_THRESHOLD,
  DEFAULT_FAILURE_THRESHOLD,
  DEFAULT_POLL_LIMIT,
  DEFAULT_REPEAT_THRESHOLD,
  DEFAULT_SAME_FAILURE,
  DEFAULT_SAME_OUTCOME,
  ESCALATION_WINDOW_MS,
  SESSION_TTL_MS,
  canonicalJson,
  callSignature,
  isFailure,
  type ToolLoopState,
} from '../core/tool-loop.js';

/**
 * At most this many entries of the histories' directory are read by status, reset and the expiry sweep (a slice at a
 * time, only histories' names kept): past it they see the sessions among those read, and status says so (#47); the
 * hourly sweep gets to the others once the expired ones it read are gone.
 */
export const TOOL_LOOP_DIR_ENTRIES_CAP = 4096;

/** Where the tool-loop keeps its histories: one {@link StateStore} per session. */
export interface ToolLoopStore {
  /** Where the histories live (a directory, or `memory:`). */
  readonly location: string;
  /** The store of one session's history. */
  session(sessionId: string): StateStore;
  /**
   * The stores of every session that has a history (used by status, reset and the expiry sweep); with `busy`, also
   * of those whose history is being written this instant (a file store: only its lock is there).
   */
  sessions(opts?: { busy?: boolean }): Promise<StateStore[] & { more?: true }>;
  /** Where the time of the last expiry sweep is kept. */
  sweepRecord(): StateStore;
}

/**
 * A history's file: not flushed to disk (see below); its lock leaves the directory's leftovers (temporary files of
 * killed hooks) to the hourly sweep's, so a hook does not read a directory of every session's history on each call;
 * and it is replaced by removing it then renaming the new one in (`alwaysPresent` false), which spares each call
 * ext4's write-out of a file renamed over another. Hooks read it under its lock. Of the readers that take none,
 * status and the sweep's first look may miss one being replaced (a snapshot; a history being written is not stale),
 * and reset's takes it for one that is there (see mayHoldHistory).
 */
const HISTORY_FILE = { durable: false, removeLeftovers: false, alwaysPresent: false } as const;

/**
 * Histories as files `<dir>/<sanitized id>-<hash>.json` (mode 0600, directory 0700): the session id is reduced to
 * `[A-Za-z0-9_-]` and suffixed with 16 hex digits of its SHA-256, so no id can name a path outside `dir`. Writes are
 * atomic (a killed hook never leaves a torn file) but not flushed to disk: a history is a counter that a power loss
 * may set back by one call, and flushing would cost every tool call a disk sync.
 */
export class FileToolLoopStore implements ToolLoopStore {
  readonly location: string;
  constructor(readonly dir: string) {
    this.location = dir;
  }
  session(sessionId: string): StateStore {
    return new FileStateStore(path.join(this.dir, sessionFileName(sessionId)), HISTORY_FILE);
  }
  async sessions(opts: { busy?: boolean } = {}): Promise<StateStore[] & { more?: true }> {
    let names: string[];
    let more = false;
    try {
      // As root over another user's home, listed without following a symlink there (adapters/trust.ts); at most
      // TOOL_LOOP_DIR_ENTRIES_CAP entries read, only histories' (and their locks') names kept.
      const listed = listDirSafely(this.dir, {
        max: TOOL_LOOP_DIR_ENTRIES_CAP,
        keep: (n) => SESSION_FILE_PATTERN.test(n.endsWith('.lock') ? n.slice(0, -5) : n),
      });
      more = listed.more === true;
      names = listed.map((e) => e.name);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return [];
      throw err;
    }
    const files = new Set(names.filter((n) => SESSION_FILE_PATTERN.test(n)));
    if (opts.busy) for (const n of names) if (n.endsWith('.lock') && SESSION_FILE_PATTERN.test(n.slice(0, -5))) files.add(n.slice(0, -5));
    const stores = [...files].sort().map((n) => new FileStateStore(path.join(this.dir, n), HISTORY_FILE));
    return more ? Object.assign(stores, { more: true as const }) : stores;
  }
  sweepRecord(): StateStore {
    // Taken at most hourly (and so only by the hook that sweeps): it removes what crashed hooks left in the directory.
    return new FileStateStore(path.join(this.dir, '.sweep.json'), { durable: false });
  }
}

/** Histories in memory (tests, or a harness that keeps its own process alive). */
export class MemoryToolLoopStore implements ToolLoopStore {
  readonly location = 'memory:';
  private readonly stores = new Map<string, MemoryStateStore>();
  private readonly sweep = new MemoryStateStore();
  session(sessionId: string): StateStore {
    let store = this.stores.get(sessionId);
    if (!store) this.stores.set(sessionId, (store = new MemoryStateStore()));
    return store;
  }
  async sessions(): Promise<StateStore[]> {
    const out: StateStore[] = [];
    for (const store of this.stores.values()) if (store.snapshot() !== undefined) out.push(store);
    return out;
  }
  sweepRecord(): StateStore {
    return this.sweep;
  }
}

/**
 * A tool hook's input, in any dialect (Claude Code's `PreToolUse` / `PostToolUse` / `PostToolUseFailure` shown;
 * see hook-readings.ts for the others). Every field is validated at run time.
 */
export interface ToolHookInput {
  /** Missing or empty: the session `default`. */
  session_id?: string;
  tool_name?: string;
  tool_input?: unknown;
  /** PostToolUse only. */
  tool_response?: unknown;
  hook_event_name?: string;
  [field: string]: unknown;
}

/**
 * What to print for the harness, in its dialect's shape (for Claude Code a PreToolUse deny is
 * `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", ...}}`).
 */
export type ToolLoopOutput = Record<string, unknown>;

/**
 * `repeated`: identical calls in a row (with the same result, or none known); `cycle`: a repeating sequence of calls;
 * `failing-repeat`: an identical call failing in a row; `polling`: a poll past its limit; `no-progress`: a tool whose
 * result stops changing while its arguments change; `failing`: a tool failing in a row (after a call); `turn-start`: a
 * prompt started a turn; `disarmed`: the session or the host is disarmed; `other-event`: an event this hook does not
 * count (let through); `duplicate`: a call already counted (an id seen, or one call reported by two hook sets).
 */
export type ToolLoopWhy =
  | 'counted'
  | 'repeated'
  | 'cycle'
  | 'failing'
  | 'failing-repeat'
  | 'polling'
  | 'no-progress'
  | 'turn-start'
  | 'disarmed'
  | 'other-event'
  | 'duplicate'
  | 'malformed-input'
  | 'state-error'
  | 'internal-error';

/** The outcome of one PreToolUse or PostToolUse call. */
export interface ToolLoopResult {
  /**
   * `deny` (PreToolUse) refuses the call; `stop` ends the agent's turn (a loop again after a warning in the turn, where
   * the dialect can say it); `block` (PostToolUse) tells the model to change strategy.
   */
  action: 'allow' | 'deny' | 'stop' | 'block';
  why: ToolLoopWhy;
  /** The JSON to print on stdout, or undefined to print nothing. */
  output?: ToolLoopOutput;
  /** When the dialect's only answer is exit 2 with a text on stderr (Copilot CLI's postToolUseFailure). */
  exit?: { code: 2; stderr: string };
  /** The dialect the input was read in (undefined when none explains it). */
  dialect?: Dialect;
  /** The session the call was counted in. */
  session?: string;
  /** PreToolUse: identical calls in a row including this one; PostToolUse: the tool's consecutive failures. */
  count?: number;
  /** The session's history after the call, as saved. */
  state?: ToolLoopState;
  /** A loop found: `warn` (the first in the turn: a deny), `stop` (again within the window: the turn is ended). */
  stage?: 'warn' | 'stop';
  /** One-line warnings (for stderr). */
  warnings: string[];
}

/** One session in `status`. */
export interface ToolLoopSessionStatus {
  /** The session id (undefined when the file is unusable). */
  session?: string;
  location: string;
  state?: ToolLoopState;
  problem?: string;
}

export interface ToolLoopOptions {
  /** Where histories are kept. Default: a {@link FileToolLoopStore} at `dir`. */
  store?: ToolLoopStore;
  /** Directory of the history files. Default: `<home>/tool-loop`. */
  dir?: string;
  /** Hermes home for the default directory. Default: `$HERMES_HOME`, else `~/.hermes` (see `profile`). */
  home?: string;
  /** Hermes profile: selects `<root>/profiles/<name>` as the home when `home` is not given. */
  profile?: string;
  /** Environment for the home resolution. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /** The n-th consecutive identical call is denied (an integer >= 2; default 5). */
  threshold?: number;
  /** The call that would repeat a sequence of 2 to 4 calls the n-th time in a row is denied (an integer >= 2; default 3). */
  cycleThreshold?: number;
  /** The dialect of the hook inputs (a name it does not know: RangeError). Default: recognised from each input. */
  dialect?: Dialect;
  /** The n-th consecutive failure of a tool is reported (an integer >= 1; default 5). */
  failureThreshold?: number;
  /** The n-th identical call is denied when the n-1 before it gave the same result (an integer >= 2; default 4). */
  sameOutcome?: number;
  /** After n identical calls in a row that all failed, the next is denied (an integer >= 1; default 3). */
  sameFailure?: number;
  /** Identical calls in a row whose results change, allowed before the next is denied (an integer >= 1; default 30). */
  pollLimit?: number;
  /** Warn only: loops are counted and told to the model after the call, never denied nor stopped. */
  warnOnly?: boolean;
  /** The clock (history times and the 24 h expiry). Default: `() => new Date()`. */
  now?: () => Date;
}

/** The in-process tool-loop breaker. */
export interface ToolLoop {
  readonly location: string;
  readonly threshold: number;
  readonly cycleThreshold: number;
  readonly failureThreshold: number;
  readonly sameOutcome: number;
  readonly sameFailure: number;
  readonly pollLimit: number;
  readonly warnOnly: boolean;
  /** PreToolUse. Never throws: any failure allows the call (fail open) with a warning. */
  pre(input: ToolHookInput): Promise<ToolLoopResult>;
  /** PostToolUse. Never throws: any failure prints nothing (fail open) with a warning. */
  post(input: ToolHookInput): Promise<ToolLoopResult>;
  /** A prompt (UserPromptSubmit, BeforeAgent, ...): the session's turn starts afresh. Never throws. */
  prompt(input: ToolHookInput): Promise<ToolLoopResult>;
  /** Lets every call of one session, or of every session (the host), through until `arm`; returns where it was written. */
  disarm(sessionId?: string): Promise<string>;
  /** Undoes `disarm` for one session, or for the host; true when it was disarmed. */
  arm(sessionId?: string): Promise<boolean>;
  /** Whether the host is disarmed (`disarm()` without a session): since when, or undefined. */
  hostDisarmed(): Promise<string | undefined>;
  /** Forgets one session's history, or every session's; returns how many histories were deleted. */
  reset(sessionId?: string): Promise<number>;
  /** One session's history, or every session's (expired ones are reported without state). */
  /** `more`: the directory held more than `TOOL_LOOP_DIR_ENTRIES_CAP` entries (those past it were not read). */
  status(sessionId?: string): Promise<ToolLoopSessionStatus[] & { more?: true }>;
  /** Deletes the histories untouched for 24 h (and unusable ones); returns how many. Runs by itself hourly. */
  sweep(): Promise<number>;
}

/** `<home>/tool-loop`. */
export function defaultToolLoopDir(home: string): string {
  return path.join(home, 'tool-loop');
}

/** Puts an answer on a result: JSON on stdout, or exit 2 with text on stderr. */
function withAnswer(result: ToolLoopResult, answer: HookAnswer | undefined): void {
  if (!answer) return;
  if ('stdout' in answer) result.output = answer.stdout;
  else result.exit = { code: answer.exitCode, stderr: answer.stderr };
}

function checkCount(value: number, what: string, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${what} must be an integer >= ${min}, got ${value}`);
  return value;
}

/** A breaker's settings: where histories live, its thresholds, its dialect and its clock. */
interface LoopSettings {
  store: ToolLoopStore;
  threshold: number;
  cycleThreshold: number;
  failureThreshold: number;
  sameOutcome: number;
  sameFailure: number;
  pollLimit: number;
  warnOnly: boolean;
  dialect?: Dialect;
  now: () => Date;
}

/** The hook an input was given to: before a call, after one, or at the start of a turn. */
type HookEvent = 'pre' | 'post' | 'prompt';

/** A call to count: the input as read, its signatures and the time. */
interface Counted {
  dialect: Dialect;
  call: ToolCallReading;
  /** `callSignature` (before a call). */
  signature?: string;
  /** `maskedSignature` (before and after a call). */
  key?: string;
  /** What identifies the call across two hook sets (Cursor: its generation and its command or arguments). */
  view?: string;
  nowMs: number;
  /** The host is disarmed (`tool-loop disarm` without a session). */
  hostDisarmed?: boolean;
}

/** Expired, or unusable (a history nobody can use again). */
function isStale(value: unknown, nowMs: number): boolean {
  if (value === undefined) return true;
  const v = value as Partial<ToolLoopState> | null;
  return typeof v?.updatedAt !== 'string' || isExpired(v.updatedAt, nowMs);
}

/** Deletes expired and unusable histories; reads each first so live ones are never rewritten. */
async function sweepStale(store: ToolLoopStore, nowMs: number): Promise<number> {
  let deleted = 0;
  for (const s of await store.sessions()) {
    const read = await s.read().catch(() => undefined);
    if (!read || !isStale(read.value, nowMs)) continue;
    const gone = await s.update((cur) => (isStale(cur.value, nowMs) ? { next: undefined, result: hasState(cur) } : { next: cur.value, result: false }));
    if (gone) deleted++;
  }
  return deleted;
}

/** The hourly sweep, on the back of a hook call (`last`: the directory's record as read); its own failures are only warnings. */
async function maybeSweep(store: ToolLoopStore, nowMs: number, last: DirRecord | undefined, warnings: string[]): Promise<void> {
  if (last === undefined) return;
  try {
    const record = store.sweepRecord();
    if (!sweepDue(last.lastSweep, nowMs)) return;
    const due = await record.update((cur) => {
      const value = (typeof cur.value === 'object' && cur.value !== null ? cur.value : {}) as DirRecord;
      const again = sweepDue(value.lastSweep, nowMs);
      return { next: again ? { ...value, lastSweep: isoTime(nowMs) } : cur.value, result: again };
    });
    if (due) await sweepStale(store, nowMs);
  } catch (err) {
    warnings.push(`cannot remove expired tool-loop histories in ${store.location}: ${errorMessage(err)}`);
  }
}

/**
 * What identifies one call across two hook sets of one agent (Cursor running its own hooks and those of
 * .claude/settings.json): the generation it belongs to, and its command (a shell call) or its arguments without the
 * directory. Undefined where the input has no generation.
 */
function viewKey(call: ToolCallReading): string | undefined {
  if (call.generation === undefined) return undefined;
  const input = call.input as Record<string, unknown> | null;
  let what: string;
  if (input && typeof input === 'object' && typeof input.command === 'string') what = input.command;
  else {
    const rest = input && typeof input === 'object' && !Array.isArray(input) ? { ...input } : input;
    if (rest && typeof rest === 'object' && !Array.isArray(rest))
      for (const k of ['cwd', 'working_directory', 'directory']) delete (rest as Record<string, unknown>)[k];
    what = canonicalJson(rest);
  }
  return `${call.generation}|${quickHash(what)}`;
}

/**
 * Reads the input in its dialect, with the call's signatures; a result when the call is not counted (no dialect
 * explains it, it is malformed, or it is another event than the hook's).
 */
function readCall(s: LoopSettings, event: HookEvent, payload: ToolHookInput): Counted | ToolLoopResult {
  const chosen = dialectOf(payload, s.dialect);
  if ('problem' in chosen) return { action: 'allow', why: 'malformed-input', warnings: [`${chosen.problem}; the call is not counted`] };
  const dialect = chosen.dialect;
  const parsed = readToolCall(payload, dialect, event);
  if (!parsed.ok) return { action: 'allow', why: 'malformed-input', dialect, warnings: [`${parsed.problem}; the call is not counted`] };
  const role = parsed.value.role;
  // A prompt given to `pre` (or `post`) starts the turn as `tool-loop prompt` does; Copilot's permission request is
  // where it can end a turn, so `pre` takes it too.
  const counted = role === event || role === 'prompt' || (event === 'pre' && role === 'permission');
  if (!counted) return { action: 'allow', why: 'other-event', dialect, warnings: [] };
  const call = { ...parsed.value, session: parsed.value.session || DEFAULT_SESSION };
  let signature: string | undefined;
  let key: string | undefined;
  try {
    if (role === 'pre') ({ signature, key } = callSignatures(call.tool, call.input));
    else if (role === 'post') key = maskedSignature(call.tool, call.input);
  } catch (err) {
    return {
      action: 'allow',
      why: 'malformed-input',
      dialect,
      session: call.session,
      warnings: [`cannot fingerprint tool_input (${errorMessage(err)}); the call is not counted`],
    };
  }
  const nowMs = s.now().getTime();
  if (!Number.isFinite(nowMs)) throw new RangeError('the clock returned an invalid date');
  return { dialect, call, signature, key, view: viewKey(call), nowMs };
}

/**
 * Whether this event reports a call already counted: the same tool-call id, or (two hook sets of one agent) the same
 * call under another event name of the same generation. The same event name again is a new call, and so is another
 * tool-call id where the call seen had one (two calls of one command in one generation).
 */
function seenBefore(view: EventView | undefined, c: Counted): boolean {
  if (!view) return false;
  const id = c.call.callId;
  if (id !== undefined && view.ids !== undefined && view.ids.length > 0) return view.ids.includes(id);
  return c.view !== undefined && view.key === c.view && !view.events.includes(c.call.event);
}

/** The view after this event: a new call's, or the call's seen under one more event (`judged`: its outcome counted). */
function viewAfter(view: EventView | undefined, c: Counted, again: boolean, judged = false): EventView | undefined {
  if (c.view === undefined && c.call.callId === undefined) return undefined;
  const ids = c.call.callId !== undefined ? [c.call.callId] : [];
  const mark = judged || (again && view?.judged) ? { judged: true as const } : {};
  if (!again || !view) return { events: [c.call.event], key: c.view ?? '', ...(ids.length ? { ids } : {}), ...mark };
  const merged = [...new Set([...(view.ids ?? []), ...ids])].slice(-8);
  return { events: [...view.events, c.call.event].slice(-8), key: view.key, ...(merged.length ? { ids: merged } : {}), ...mark };
}

/** The `why` of a detection. */
const WHY_OF: Record<LoopKind, ToolLoopWhy> = {
  repeated: 'repeated',
  cycle: 'cycle',
  failing: 'failing-repeat',
  polling: 'polling',
  'no-progress': 'no-progress',
};

/** A detection before a call, answered: a deny (a warning), the end of the turn, or (warn only) a note for later. */
function answerLoop(c: Counted, decision: Extract<PreDecision, { action: 'deny' }>, next: ToolLoopState, result: ToolLoopResult): ToolLoopState {
  result.why = WHY_OF[decision.kind];
  result.count = decision.count;
  if (decision.warnOnly) {
    result.action = 'allow';
    result.stage = 'warn';
    return { ...next, pending: { kind: 'note', reason: decision.reason } };
  }
  if (!decision.stop) {
    result.action = 'deny';
    result.stage = 'warn';
    withAnswer(result, denyAnswer(c.dialect, decision.reason));
    return next;
  }
  result.stage = 'stop';
  const reason = stopReason(decision.reason, c.call.session);
  const end = endTurnAnswer(c.dialect, c.call.role === 'permission' ? 'permission' : 'pre', reason);
  if (end) {
    result.action = 'stop';
    withAnswer(result, end);
    return next;
  }
  // The dialect cannot end the turn before a call (Codex, Copilot CLI): deny, and end it at the next event that can.
  result.action = 'deny';
  withAnswer(result, denyAnswer(c.dialect, reason));
  const later = c.dialect === 'codex' || c.dialect === 'copilot';
  return later ? { ...next, pending: { kind: 'stop', reason } } : next;
}

/** Before a call: a duplicate, a disarmed session, a loop (answered), or a counted call. */
function decideBefore(s: LoopSettings, c: Counted, history: ToolLoopState): { next: ToolLoopState; result: ToolLoopResult } {
  const base = { dialect: c.dialect, session: c.call.session };
  if (seenBefore(history.preView, c)) {
    const next = { ...history, preView: viewAfter(history.preView, c, true) } as ToolLoopState;
    return { next, result: { action: 'allow', why: 'duplicate', ...base, count: history.streak?.count ?? 0, state: next, warnings: [] } };
  }
  const { decision, next: decided } = decidePre(history, { tool: c.call.tool, signature: c.signature, key: c.key }, s, c.nowMs);
  let next: ToolLoopState = decided;
  const view = viewAfter(history.preView, c, false);
  if (view) next.preView = view;
  else delete next.preView;
  const result: ToolLoopResult = { action: 'allow', why: 'counted', ...base, count: decision.count, state: next, warnings: [] };
  if (decision.action === 'deny') next = answerLoop(c, decision, next, result);
  result.state = next;
  return { next, result };
}

/** Copilot CLI's permission request: where a turn that had to be ended before a call is ended. */
function decidePermission(c: Counted, history: ToolLoopState): { next: ToolLoopState; result: ToolLoopResult } {
  const base = { dialect: c.dialect, session: c.call.session };
  const pending = history.pending;
  const end = pending?.kind === 'stop' ? endTurnAnswer(c.dialect, 'permission', pending.reason) : undefined;
  if (!end) return { next: history, result: { action: 'allow', why: 'other-event', ...base, state: history, warnings: [] } };
  const next = { ...history };
  delete next.pending;
  const result: ToolLoopResult = { action: 'stop', why: 'repeated', stage: 'stop', ...base, state: next, warnings: [] };
  withAnswer(result, end);
  return { next, result };
}

/** After a call: its result kept, its failure counted, and what is pending told (the end of the turn, or a note). */
function decideAfter(s: LoopSettings, c: Counted, history: ToolLoopState): { next: ToolLoopState; result: ToolLoopResult } {
  const { call, nowMs } = c;
  const base = { dialect: c.dialect, session: call.session };
  const knows = call.outcome === 'success' || call.outcome === 'failure';
  // One call reported again (Cursor's own hooks and .claude/settings.json's): its result is kept once, and its outcome
  // counted once, by the first report that knows it (afterShellExecution, first, knows no exit status).
  const again = seenBefore(history.postView, c);
  if (again && (history.postView?.judged === true || !knows)) {
    const next = { ...history, postView: viewAfter(history.postView, c, true) } as ToolLoopState;
    return { next, result: { action: 'allow', why: 'duplicate', ...base, count: 0, state: next, warnings: [] } };
  }
  const result = call.result && !again ? { digest: resultDigest(call.result.value), failed: call.outcome === 'failure' } : undefined;
  const post = { tool: call.tool, outcome: call.outcome, callId: call.callId, key: c.key, result };
  const { decision, next: decided } = decidePost(history, post, s.failureThreshold, nowMs);
  const next: ToolLoopState = { ...decided };
  if (!('duplicate' in decision)) {
    const view = viewAfter(history.postView, c, again, knows);
    if (view) next.postView = view;
    else delete next.postView;
  }
  const why: ToolLoopWhy = decision.action === 'block' ? 'failing' : 'duplicate' in decision ? 'duplicate' : 'counted';
  const out: ToolLoopResult = { action: decision.action, why, ...base, count: decision.failures, state: next, warnings: [] };
  if (decision.action === 'block') withAnswer(out, failingAnswer(c.dialect, call.event, decision.reason));
  const pending = next.pending;
  if (pending && !('duplicate' in decision)) {
    const told = pending.kind === 'stop' ? endTurnAnswer(c.dialect, 'post', pending.reason) : noteAnswer(c.dialect, call.event, pending.reason);
    if (told) {
      delete out.output;
      delete out.exit;
      withAnswer(out, told);
      if (pending.kind === 'stop') Object.assign(out, { action: 'stop', stage: 'stop' });
    }
    delete next.pending;
  }
  return { next, result: out };
}

/** The decision on one event, on its session's history (read under the lock), with its answer. */
function decideOn(s: LoopSettings, event: HookEvent, c: Counted, history: ToolLoopState): { next: ToolLoopState; result: ToolLoopResult } {
  const base = { dialect: c.dialect, session: c.call.session };
  if (c.call.role === 'prompt') {
    const next = startTurn(history, c.nowMs, c.call.source);
    return { next, result: { action: 'allow', why: 'turn-start', ...base, state: next, warnings: [] } };
  }
  if (c.call.role === 'permission') return decidePermission(c, history);
  if (event === 'pre' && (history.disarmed !== undefined || c.hostDisarmed)) {
    return { next: history, result: { action: 'allow', why: 'disarmed', ...base, state: history, warnings: [] } };
  }
  return event === 'pre' ? decideBefore(s, c, history) : decideAfter(s, c, history);
}

/** The host's switch, kept beside the time of the last sweep (one file each hook call reads anyway). */
interface DirRecord {
  lastSweep?: unknown;
  disarmed?: unknown;
}

/** One hook call: read, count under the session's lock, answer; the hourly sweep after. */
async function runHook(s: LoopSettings, event: HookEvent, payload: ToolHookInput): Promise<ToolLoopResult> {
  const c = readCall(s, event, payload);
  if (!('call' in c)) return c;
  const { store } = s;
  const warnings: string[] = [];
  const record = await readRecord(store, warnings);
  c.hostDisarmed = typeof record?.disarmed === 'string';
  let result: ToolLoopResult;
  try {
    result = await store.session(c.call.session).update((current) => {
      if (current.problem) warnings.push(current.problem);
      const read = parseToolLoopState(current.value, c.call.session, c.nowMs);
      if (read.problem) warnings.push(`${read.problem} (${store.location}, session ${JSON.stringify(c.call.session)})`);
      const decided = decideOn(s, event, c, read.state);
      decided.result.warnings = warnings;
      // A call let through unchanged (a disarmed session, a Copilot permission request with nothing pending) is not written.
      return decided.next === read.state && current.value !== undefined ? { next: current.value, result: decided.result } : decided;
    });
  } catch (err) {
    // The count could not be kept: never deny or block on a count that was not saved.
    warnings.push(`cannot update the tool-loop history in ${store.location}: ${errorMessage(err)}; the call is allowed`);
    return { action: 'allow', why: 'state-error', dialect: c.dialect, session: c.call.session, warnings };
  }
  await maybeSweep(store, c.nowMs, record, warnings);
  return result;
}

/** The directory's record (the last sweep, the host's switch); undefined when it cannot be read (a warning). */
async function readRecord(store: ToolLoopStore, warnings: string[]): Promise<DirRecord | undefined> {
  try {
    const v = (await store.sweepRecord().read()).value;
    return typeof v === 'object' && v !== null ? (v as DirRecord) : {};
  } catch (err) {
    warnings.push(`cannot read ${store.location}'s record: ${errorMessage(err)}`);
    return undefined;
  }
}

async function safely(s: LoopSettings, event: HookEvent, input: ToolHookInput): Promise<ToolLoopResult> {
  try {
    return await runHook(s, event, input);
  } catch (err) {
    return { action: 'allow', why: 'internal-error', warnings: [`internal error: ${errorMessage(err)}; the call is allowed`] };
  }
}

/** One session's history as `status` reports it. */
async function describeSession(s: StateStore, nowMs: number, sessionId?: string): Promise<ToolLoopSessionStatus> {
  const out: ToolLoopSessionStatus = { location: s.location };
  const read = await s.read();
  const value = read.value as Partial<ToolLoopState> | undefined;
  const session = sessionId ?? (typeof value?.session === 'string' ? value.session : undefined);
  if (session !== undefined) out.session = session;
  if (read.problem) out.problem = read.problem;
  else if (value === undefined) return out;
  else if (session === undefined || value.session !== session) out.problem = 'the history is not in the expected shape';
  else if (typeof value.updatedAt === 'string' && isExpired(value.updatedAt, nowMs)) out.problem = 'expired (untouched for 24 h)';
  else {
    const parsed = parseToolLoopState(value, session, nowMs);
    if (parsed.problem) out.problem = parsed.problem;
    else out.state = parsed.state;
  }
  return out;
}

/**
 * Reset's lock-free first look: whether a history may be there. One being replaced is missing for an instant, while
 * its writer holds its lock (see HISTORY_FILE): so a missing one counts as there while its lock is, or when a second
 * look finds it (its writer finished in between).
 */
async function mayHoldHistory(s: StateStore): Promise<boolean> {
  try {
    return hasState(await s.read()) || (s instanceof FileStateStore && s.lockPresent()) || hasState(await s.read());
  } catch {
    return true;
  }
}

/** Forgets one session's history, or every session's. */
async function resetSessions(store: ToolLoopStore, sessionId?: string): Promise<number> {
  const targets = sessionId === undefined ? await store.sessions({ busy: true }) : [store.session(sessionId)];
  let deleted = 0;
  for (const s of targets) {
    if (!(await mayHoldHistory(s))) continue;
    // Under the lock, so a hook updating this session at this moment cannot write it back afterwards.
    if (await s.update((cur) => ({ next: undefined, result: hasState(cur) }))) deleted++;
  }
  return deleted;
}

/**
 * Disarms (or arms again) one session, or the host: a session's history carries `disarmed` (a fresh history is written
 * for a session that has none); the host's switch is kept in the directory's record. Returns whether it was disarmed.
 */
async function setDisarmed(store: ToolLoopStore, nowMs: number, sessionId: string | undefined, disarm: boolean): Promise<boolean> {
  const at = isoTime(nowMs);
  if (sessionId === undefined) {
    return store.sweepRecord().update((cur) => {
      const value = (typeof cur.value === 'object' && cur.value !== null ? { ...(cur.value as DirRecord) } : {}) as DirRecord;
      const was = typeof value.disarmed === 'string';
      if (disarm) value.disarmed = at;
      else delete value.disarmed;
      return { next: value, result: was };
    });
  }
  return store.session(sessionId).update((cur) => {
    const { state } = parseToolLoopState(cur.value, sessionId, nowMs);
    const was = state.disarmed !== undefined;
    const next: ToolLoopState = { ...state, updatedAt: at };
    if (disarm) next.disarmed = at;
    else delete next.disarmed;
    return { next, result: was };
  });
}

/**
 * Creates a tool-loop breaker.
 *
 * @example
 * const loop = createToolLoop({ store: new MemoryToolLoopStore(), threshold: 3 });
 * const r = await loop.pre({ session_id: 's1', tool_name: 'Bash', tool_input: { command: 'make' } });
 * if (r.action === 'deny') console.log(r.output); // the PreToolUse deny answer
 */
export function createToolLoop(options: ToolLoopOptions = {}): ToolLoop {
  const s: LoopSettings = {
    threshold: checkCount(options.threshold ?? DEFAULT_REPEAT_THRESHOLD, 'threshold', 2),
    cycleThreshold: checkCount(options.cycleThreshold ?? DEFAULT_CYCLE_THRESHOLD, 'cycleThreshold', 2),
    failureThreshold: checkCount(options.failureThreshold ?? DEFAULT_FAILURE_THRESHOLD, 'failureThreshold', 1),
    sameOutcome: checkCount(options.sameOutcome ?? DEFAULT_SAME_OUTCOME, 'sameOutcome', 2),
    sameFailure: checkCount(options.sameFailure ?? DEFAULT_SAME_FAILURE, 'sameFailure', 1),
    pollLimit: checkCount(options.pollLimit ?? DEFAULT_POLL_LIMIT, 'pollLimit', 1),
    warnOnly: options.warnOnly === true,
    dialect: checkDialect(options.dialect),
    now: options.now ?? (() => new Date()),
    store: options.store ?? new FileToolLoopStore(options.dir ?? defaultToolLoopDir(libraryHome(options))),
  };
  const { store, now } = s;
  return {
    location: store.location,
    threshold: s.threshold,
    cycleThreshold: s.cycleThreshold,
    failureThreshold: s.failureThreshold,
    sameOutcome: s.sameOutcome,
    sameFailure: s.sameFailure,
    pollLimit: s.pollLimit,
    warnOnly: s.warnOnly,
    pre: (input) => safely(s, 'pre', input),
    post: (input) => safely(s, 'post', input),
    prompt: (input) => safely(s, 'prompt', input),
    disarm: (sessionId) =>
      setDisarmed(store, now().getTime(), sessionId, true).then(() => (sessionId === undefined ? store.sweepRecord() : store.session(sessionId)).location),
    arm: (sessionId) => setDisarmed(store, now().getTime(), sessionId, false),
    async hostDisarmed() {
      const v = (await store.sweepRecord().read()).value as DirRecord | undefined;
      return typeof v?.disarmed === 'string' ? v.disarmed : undefined;
    },
    reset: (sessionId) => resetSessions(store, sessionId),
    async status(sessionId) {
      const nowMs = now().getTime();
      if (sessionId !== undefined) return [await describeSession(store.session(sessionId), nowMs, sessionId)];
      const out: ToolLoopSessionStatus[] = [];
      const sessions = await store.sessions();
      for (const session of sessions) out.push(await describeSession(session, nowMs));
      return sessions.more ? Object.assign(out, { more: true as const }) : out;
    },
    sweep: () => sweepStale(store, now().getTime()),
  };
}
