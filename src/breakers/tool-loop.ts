/**
 * The tool-loop breaker, in process: one history per session, kept in a {@link ToolLoopStore}, updated with the
 * pure rules of `core/tool-loop`. Both the CLI and library callers use this.
 */
import path from 'node:path';
import { FileStateStore, MemoryStateStore, type StateStore, hasState } from '../adapters/state-file.js';
import { listDirSafely } from '../adapters/trust.js';
import { type HookAnswer, denyAnswer, failingAnswer } from '../core/hook-answers.js';
import { type Dialect, checkDialect, dialectOf } from '../core/hook-dialects.js';
import { type ToolCallReading, readToolCall } from '../core/hook-readings.js';
import {
  DEFAULT_CYCLE_THRESHOLD,
  DEFAULT_FAILURE_THRESHOLD,
  DEFAULT_REPEAT_THRESHOLD,
  DEFAULT_SESSION,
  SESSION_FILE_PATTERN,
  type ToolLoopState,
  callSignature,
  decidePost,
  decidePre,
  isExpired,
  parseToolLoopState,
  sessionFileName,
  sweepDue,
} from '../core/tool-loop.js';
import { errorMessage } from '../errors.js';
import { isoTime } from '../util/iso-time.js';
import { libraryHome } from './home.js';

export {
  DEFAULT_CYCLE_THRESHOLD,
  DEFAULT_FAILURE_THRESHOLD,
  DEFAULT_REPEAT_THRESHOLD,
  SESSION_TTL_MS,
  canonicalJson,
  callSignature,
  isFailure,
  type ToolLoopState,
} from '../core/tool-loop.js';

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
  sessions(opts?: { busy?: boolean }): Promise<StateStore[]>;
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
  async sessions(opts: { busy?: boolean } = {}): Promise<StateStore[]> {
    let names: string[];
    try {
      // As root over another user's home, listed without following a symlink there (adapters/trust.ts).
      names = listDirSafely(this.dir).map((e) => e.name);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return [];
      throw err;
    }
    const files = new Set(names.filter((n) => SESSION_FILE_PATTERN.test(n)));
    if (opts.busy) for (const n of names) if (n.endsWith('.lock') && SESSION_FILE_PATTERN.test(n.slice(0, -5))) files.add(n.slice(0, -5));
    return [...files].sort().map((n) => new FileStateStore(path.join(this.dir, n), HISTORY_FILE));
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
 * `repeated`: identical calls in a row; `cycle`: a repeating sequence of calls; `failing`: a tool failing in a row;
 * `other-event`: an event this hook does not count (let through); `duplicate`: a call id already counted.
 */
export type ToolLoopWhy = 'counted' | 'repeated' | 'cycle' | 'failing' | 'other-event' | 'duplicate' | 'malformed-input' | 'state-error' | 'internal-error';

/** The outcome of one PreToolUse or PostToolUse call. */
export interface ToolLoopResult {
  /** `deny` (PreToolUse) refuses the call; `block` (PostToolUse) tells the model to change strategy. */
  action: 'allow' | 'deny' | 'block';
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
  /** The clock (history times and the 24 h expiry). Default: `() => new Date()`. */
  now?: () => Date;
}

/** The in-process tool-loop breaker. */
export interface ToolLoop {
  readonly location: string;
  readonly threshold: number;
  readonly cycleThreshold: number;
  readonly failureThreshold: number;
  /** PreToolUse. Never throws: any failure allows the call (fail open) with a warning. */
  pre(input: ToolHookInput): Promise<ToolLoopResult>;
  /** PostToolUse. Never throws: any failure prints nothing (fail open) with a warning. */
  post(input: ToolHookInput): Promise<ToolLoopResult>;
  /** Forgets one session's history, or every session's; returns how many histories were deleted. */
  reset(sessionId?: string): Promise<number>;
  /** One session's history, or every session's (expired ones are reported without state). */
  status(sessionId?: string): Promise<ToolLoopSessionStatus[]>;
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
  dialect?: Dialect;
  now: () => Date;
}

/** A call to count: the input as read, its signature (before a call) and the time. */
interface Counted {
  dialect: Dialect;
  call: ToolCallReading;
  signature?: string;
  nowMs: number;
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

/** The hourly sweep, on the back of a hook call; its own failures are only warnings. */
async function maybeSweep(store: ToolLoopStore, nowMs: number, warnings: string[]): Promise<void> {
  try {
    const record = store.sweepRecord();
    const last = await record.read();
    if (!sweepDue((last.value as { lastSweep?: unknown } | undefined)?.lastSweep, nowMs)) return;
    const due = await record.update((cur) => {
      const again = sweepDue((cur.value as { lastSweep?: unknown } | undefined)?.lastSweep, nowMs);
      return { next: again ? { lastSweep: isoTime(nowMs) } : cur.value, result: again };
    });
    if (due) await sweepStale(store, nowMs);
  } catch (err) {
    warnings.push(`cannot remove expired tool-loop histories in ${store.location}: ${errorMessage(err)}`);
  }
}

/**
 * Reads the input in its dialect, with the call's signature before it runs; a result when the call is not
 * counted (no dialect explains it, it is malformed, or it is another event than the hook's).
 */
function readCall(s: LoopSettings, event: 'pre' | 'post', payload: ToolHookInput): Counted | ToolLoopResult {
  const chosen = dialectOf(payload, s.dialect);
  if ('problem' in chosen) return { action: 'allow', why: 'malformed-input', warnings: [`${chosen.problem}; the call is not counted`] };
  const dialect = chosen.dialect;
  const parsed = readToolCall(payload, dialect, event);
  if (!parsed.ok) return { action: 'allow', why: 'malformed-input', dialect, warnings: [`${parsed.problem}; the call is not counted`] };
  if (parsed.value.role !== event) return { action: 'allow', why: 'other-event', dialect, warnings: [] };
  const call = { ...parsed.value, session: parsed.value.session || DEFAULT_SESSION };
  let signature: string | undefined;
  try {
    if (event === 'pre') signature = callSignature(call.tool, call.input);
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
  return { dialect, call, signature, nowMs };
}

/** The decision on one call, on its session's history (read under the lock), with its answer. */
function decideOn(s: LoopSettings, event: 'pre' | 'post', c: Counted, history: ToolLoopState): { next: ToolLoopState; result: ToolLoopResult } {
  const { dialect, call, nowMs } = c;
  const base = { dialect, session: call.session };
  if (event === 'pre') {
    const { decision, next } = decidePre(history, { tool: call.tool, signature: c.signature }, s, nowMs);
    const why: ToolLoopWhy = decision.action === 'allow' ? 'counted' : decision.cycle ? 'cycle' : 'repeated';
    const result: ToolLoopResult = { action: decision.action, why, ...base, count: decision.count, state: next, warnings: [] };
    if (decision.action === 'deny') withAnswer(result, denyAnswer(dialect, decision.reason));
    return { next, result };
  }
  const { decision, next } = decidePost(history, { tool: call.tool, outcome: call.outcome, callId: call.callId }, s.failureThreshold, nowMs);
  const why: ToolLoopWhy = decision.action === 'block' ? 'failing' : 'duplicate' in decision ? 'duplicate' : 'counted';
  const result: ToolLoopResult = { action: decision.action, why, ...base, count: decision.failures, state: next, warnings: [] };
  if (decision.action === 'block') withAnswer(result, failingAnswer(dialect, call.event, decision.reason));
  return { next, result };
}

/** One hook call: read, count under the session's lock, answer; the hourly sweep after. */
async function runHook(s: LoopSettings, event: 'pre' | 'post', payload: ToolHookInput): Promise<ToolLoopResult> {
  const c = readCall(s, event, payload);
  if (!('call' in c)) return c;
  const { store } = s;
  const warnings: string[] = [];
  let result: ToolLoopResult;
  try {
    result = await store.session(c.call.session).update((current) => {
      if (current.problem) warnings.push(current.problem);
      const read = parseToolLoopState(current.value, c.call.session, c.nowMs);
      if (read.problem) warnings.push(`${read.problem} (${store.location}, session ${JSON.stringify(c.call.session)})`);
      const decided = decideOn(s, event, c, read.state);
      decided.result.warnings = warnings;
      return decided;
    });
  } catch (err) {
    // The count could not be kept: never deny or block on a count that was not saved.
    warnings.push(`cannot update the tool-loop history in ${store.location}: ${errorMessage(err)}; the call is allowed`);
    return { action: 'allow', why: 'state-error', dialect: c.dialect, session: c.call.session, warnings };
  }
  await maybeSweep(store, c.nowMs, warnings);
  return result;
}

async function safely(s: LoopSettings, event: 'pre' | 'post', input: ToolHookInput): Promise<ToolLoopResult> {
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
    pre: (input) => safely(s, 'pre', input),
    post: (input) => safely(s, 'post', input),
    reset: (sessionId) => resetSessions(store, sessionId),
    async status(sessionId) {
      const nowMs = now().getTime();
      if (sessionId !== undefined) return [await describeSession(store.session(sessionId), nowMs, sessionId)];
      const out: ToolLoopSessionStatus[] = [];
      for (const session of await store.sessions()) out.push(await describeSession(session, nowMs));
      return out;
    },
    sweep: () => sweepStale(store, now().getTime()),
  };
}
