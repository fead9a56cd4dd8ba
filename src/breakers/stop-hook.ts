/**
 * The stop-hook breaker, in process: reads and updates the run marker through a {@link StateStore} and applies
 * the pure rules of `core/stop-hook`. Both the CLI and library callers use this.
 */
import path from 'node:path';
import { FileStateStore, type StateStore, hasState } from '../adapters/state-file.js';
import { type HookAnswer, keepGoingAnswer, stopMessageAnswer } from '../core/hook-answers.js';
import { type Dialect, checkDialect, dialectOf } from '../core/hook-dialects.js';
import { readStop } from '../core/hook-readings.js';
import {
  DEFAULT_MAX_BLOCKS,
  type StopDecision,
  type StopInput,
  type StopMarker,
  armMarker,
  capWarning,
  decideStop,
  defaultMaxBlocks,
  heartbeatMarker,
  parseMarker,
} from '../core/stop-hook.js';
import { errorMessage } from '../errors.js';
import { libraryHome } from './home.js';

export { DEFAULT_MAX_BLOCKS, HARNESS_BLOCK_CAP, defaultMaxBlocks, type StopMarker } from '../core/stop-hook.js';

/**
 * A stop hook's input, in any dialect (Claude Code's `Stop` shown; Codex `Stop`, Gemini `AfterAgent`, Qwen `Stop`,
 * Copilot `agentStop`, Cursor `stop`, hermes `pre_verify` too). Every field is validated at run time.
 */
export interface StopHookInput {
  session_id?: string;
  transcript_path?: string;
  cwd?: string;
  hook_event_name?: string;
  /** True when this stop follows a block; a missing value counts as true. */
  stop_hook_active?: boolean;
  [field: string]: unknown;
}

/**
 * What to print for the harness, in its dialect's shape: a block (`{"decision": "block", "reason"}` for Claude
 * Code), a message that lets the session stop (`{"systemMessage"}`), or nothing.
 */
export type StopHookOutput = Record<string, unknown>;

/** Why a stop was decided the way it was. */
export type StopHookWhy =
  | 'blocked'
  | 'cap-reached'
  | 'no-marker'
  | 'finished'
  | 'not-owner'
  | 'other-event'
  | 'subagent'
  | 'unusable-marker'
  | 'malformed-input'
  | 'save-failed'
  | 'read-failed'
  | 'internal-error';

/** The outcome of one Stop hook call. */
export interface StopHookResult {
  /** `block` keeps the session working; `allow` and `release` (the cap was reached) let it stop. */
  action: 'allow' | 'block' | 'release';
  why: StopHookWhy;
  /** The JSON to print on stdout, or undefined to print nothing. */
  output?: StopHookOutput;
  /** The marker after the decision (as saved), or as read when it was left alone; undefined when there is none. */
  marker?: StopMarker;
  /** The dialect the input was read in (undefined when none explains it). */
  dialect?: Dialect;
  /** The cap the decision used. */
  maxBlocks?: number;
  /** One-line warnings (for stderr); empty when all went well. */
  warnings: string[];
}

/** What `status` reports. */
export interface StopHookStatus {
  /** Where the marker lives. */
  location: string;
  /** True when a valid marker with `remaining > 0` exists. */
  armed: boolean;
  marker?: StopMarker;
  /** Why the marker is unusable, when it is. */
  problem?: string;
  maxBlocks: number;
}

export interface StopHookOptions {
  /** Where the marker is kept. Default: a {@link FileStateStore} at `marker`. */
  store?: StateStore;
  /** Path of the marker file. Default: `<home>/stop-hook/marker.json`. */
  marker?: string;
  /** Hermes home for the default marker. Default: `$HERMES_HOME`, else `~/.hermes` (see `profile`). */
  home?: string;
  /** Hermes profile: selects `<root>/profiles/<name>` as the home when `home` is not given. */
  profile?: string;
  /** Environment for the home resolution. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * Consecutive blocks without progress before a stop is let through (an integer >= 1). Default: 5, or one below the
   * host's own cap when that is lower (Cursor 4, hermes 2; see `defaultMaxBlocks`).
   */
  maxBlocks?: number;
  /** The dialect of the hook input (a name it does not know: RangeError). Default: recognised from each input. */
  dialect?: Dialect;
  /** The clock. The stop-hook's rules do not depend on time; accepted so every breaker takes the same options. */
  now?: () => Date;
}

/** The in-process stop-hook breaker. */
export interface StopHook {
  /** Where the marker lives (a path, or `memory:`). */
  readonly location: string;
  /** The cap: as given, else the given dialect's default, else 5 (each decision reports the one it used). */
  readonly maxBlocks: number;
  /** Decides one stop. Never throws: any failure lets the session stop (fail open) with a warning. */
  decide(input: StopHookInput): Promise<StopHookResult>;
  /** Writes a fresh marker (`blocks` 0). Throws when it cannot be saved. */
  arm(options: { remaining: number; owner?: string }): Promise<StopMarker>;
  /**
   * Records one verified step: the heartbeat counter + 1 (and `remaining` when given). Returns undefined, and
   * writes nothing, when no valid marker exists. Throws when the marker cannot be saved.
   */
  heartbeat(options?: { remaining?: number }): Promise<StopMarker | undefined>;
  /** Deletes the marker (serialised with concurrent decisions); true when there was one. */
  disarm(): Promise<boolean>;
  /** Reads the marker (never writes). */
  status(): Promise<StopHookStatus>;
}

/** `<home>/stop-hook/marker.json`. */
export function defaultMarkerPath(home: string): string {
  return path.join(home, 'stop-hook', 'marker.json');
}

/** A result with its answer: JSON on stdout, or exit 2 with text on stderr. */
function withAnswer(result: StopHookResult, answer: HookAnswer | undefined): StopHookResult {
  if (answer && 'stdout' in answer) result.output = answer.stdout;
  return result;
}

function checkCount(value: number, what: string, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${what} must be an integer >= ${min}, got ${value}`);
  return value;
}

/** A breaker's settings: where the marker lives, the cap given (if any) and the dialect given (if any). */
interface HookSettings {
  store: StateStore;
  maxBlocks?: number;
  dialect?: Dialect;
}

/** What deciding one stop works on: the input read in its dialect, the cap, and what the result starts from. */
interface Stop {
  dialect: Dialect;
  input: StopInput;
  limit: number;
  base: { dialect: Dialect; maxBlocks: number; warnings: string[] };
}

async function readMarker(store: StateStore): Promise<{ marker?: StopMarker; problem?: string }> {
  const read = await store.read();
  if (read.notDirectory) throw new Error('something on its path is not a directory');
  if (read.value === undefined) return read.problem ? { problem: read.problem } : {};
  const parsed = parseMarker(read.value);
  return parsed.ok ? { marker: parsed.value } : { problem: `${parsed.problem} (${store.location})` };
}

/** The answer to print for a decision, in the input's dialect. */
function answerFor(dialect: Dialect, decision: StopDecision): HookAnswer | undefined {
  if (decision.action === 'block') return keepGoingAnswer(dialect, decision.reason);
  if (decision.action === 'release') return stopMessageAnswer(dialect, decision.message);
  return undefined;
}

/** Reads the input in its dialect, with the cap that applies; a result when the stop is not decided (bad input). */
function readInput(s: HookSettings, payload: StopHookInput): Stop | StopHookResult {
  const chosen = dialectOf(payload, s.dialect);
  if ('problem' in chosen) return { action: 'allow', why: 'malformed-input', warnings: [`${chosen.problem}; allowing the stop`] };
  const dialect = chosen.dialect;
  const read = readStop(payload, dialect);
  if (!read.ok) return { action: 'allow', why: 'malformed-input', dialect, warnings: [`${read.problem}; allowing the stop`] };
  const limit = s.maxBlocks ?? defaultMaxBlocks(dialect);
  const warning = s.maxBlocks === undefined ? undefined : capWarning(dialect, s.maxBlocks);
  return { dialect, input: read.value, limit, base: { dialect, maxBlocks: limit, warnings: warning ? [warning] : [] } };
}

/** Decides again under the lock (concurrent stops and heartbeats are never lost) and saves the marker. */
function decideAndSave(s: HookSettings, stop: Stop): Promise<StopHookResult> {
  const { dialect, input, limit, base } = stop;
  return s.store.update((current) => {
    const parsed = current.value === undefined ? undefined : parseMarker(current.value);
    const marker = parsed?.ok ? parsed.value : undefined;
    const decision = decideStop(marker, input, limit);
    if (decision.action === 'allow') {
      return { next: current.value, result: { action: 'allow', why: decision.why, marker, ...base } as StopHookResult };
    }
    const result: StopHookResult = { action: decision.action, why: decision.why, marker: decision.next, ...base };
    return { next: decision.next, result: withAnswer(result, answerFor(dialect, decision)) };
  });
}

/** The marker could not be saved: the session may stop, and says so where its agent shows a message. */
function saveFailed(store: StateStore, stop: Stop, seen: StopMarker | undefined, err: unknown): StopHookResult {
  const why = errorMessage(err);
  const message =
    `hermes-janitor stop-hook: could not save the run marker ${store.location} (${why}), so the session may stop ` +
    `rather than risk being held forever; ${seen?.remaining ?? 0} items remain. Fix the marker's directory, then ask the agent to continue.`;
  const result: StopHookResult = { action: 'allow', why: 'save-failed', marker: seen, ...stop.base };
  result.warnings = [...stop.base.warnings, `cannot save the run marker ${store.location}: ${why}; allowing the stop`];
  return withAnswer(result, stopMessageAnswer(stop.dialect, message));
}

async function decide(s: HookSettings, payload: StopHookInput): Promise<StopHookResult> {
  const stop = readInput(s, payload);
  if (!('input' in stop)) return stop;
  const { base } = stop;
  let seen: { marker?: StopMarker; problem?: string };
  try {
    seen = await readMarker(s.store);
  } catch (err) {
    base.warnings.push(`cannot read the run marker ${s.store.location}: ${errorMessage(err)}; allowing the stop`);
    return { action: 'allow', why: 'read-failed', ...base };
  }
  if (seen.problem) return { action: 'allow', why: 'unusable-marker', ...base, warnings: [...base.warnings, `${seen.problem}; allowing the stop`] };
  // A first, lock-free look: a stop that changes nothing (no run, finished, a bystander) never touches the disk.
  const first = decideStop(seen.marker, stop.input, stop.limit);
  if (first.action === 'allow') return { action: 'allow', why: first.why, marker: seen.marker, ...base };
  try {
    return await decideAndSave(s, stop);
  } catch (err) {
    return saveFailed(s.store, stop, seen.marker, err);
  }
}

async function heartbeat(store: StateStore, remaining?: number): Promise<StopMarker | undefined> {
  if (remaining !== undefined) checkCount(remaining, 'remaining', 0);
  const before = await readMarker(store);
  if (!before.marker) return undefined;
  return store.update((current) => {
    const parsed = current.value === undefined ? undefined : parseMarker(current.value);
    if (!parsed?.ok) return { next: current.value, result: undefined };
    const next = heartbeatMarker(parsed.value, remaining);
    return { next, result: next };
  });
}

async function disarm(store: StateStore): Promise<boolean> {
  const before = await store.read().catch(() => ({ value: undefined, problem: 'unreadable' }));
  if (!hasState(before)) return false;
  // Under the lock, so a Stop hook deciding at this moment cannot write the marker back afterwards.
  return store.update((current) => ({ next: undefined, result: hasState(current) }));
}

/**
 * The marker file, twice (one file, one lock): the run's own writes (arm, heartbeat, disarm) are flushed to disk, a
 * stop's count of blocks is not: a count lost to a power failure only starts again, and a hook's start-up matters.
 */
function markerStores(file: string): { run: StateStore; stops: StateStore } {
  // The run's writes also remove what killed writers left in the marker's directory; a stop's do not (see above).
  return { run: new FileStateStore(file), stops: new FileStateStore(file, { durable: false, removeLeftovers: false }) };
}

/**
 * Creates a stop-hook breaker.
 *
 * @example
 * const hook = createStopHook({ store: new MemoryStateStore() });
 * await hook.arm({ remaining: 3, owner: sessionId });
 * const { output } = await hook.decide({ session_id: sessionId, hook_event_name: 'Stop' });
 * // output: { decision: 'block', reason: '3 items remain: continue with the next one' }
 */
export function createStopHook(options: StopHookOptions = {}): StopHook {
  const { run: store, stops } = options.store
    ? { run: options.store, stops: options.store }
    : markerStores(options.marker ?? defaultMarkerPath(libraryHome(options)));
  const s: HookSettings = {
    store: stops,
    maxBlocks: options.maxBlocks === undefined ? undefined : checkCount(options.maxBlocks, 'maxBlocks', 1),
    dialect: checkDialect(options.dialect),
  };
  /** The cap shown without an input: as given, else the given dialect's default, else Claude-style input's. */
  const shownMaxBlocks = s.maxBlocks ?? (s.dialect ? defaultMaxBlocks(s.dialect) : DEFAULT_MAX_BLOCKS);
  return {
    location: store.location,
    maxBlocks: shownMaxBlocks,
    async decide(input) {
      try {
        return await decide(s, input);
      } catch (err) {
        return { action: 'allow', why: 'internal-error', warnings: [`internal error: ${errorMessage(err)}; allowing the stop`] };
      }
    },
    async arm({ remaining, owner }) {
      const marker = armMarker(checkCount(remaining, 'remaining', 0), owner);
      await store.update(() => ({ next: marker, result: undefined }));
      return marker;
    },
    heartbeat: ({ remaining } = {}) => heartbeat(store, remaining),
    disarm: () => disarm(store),
    async status() {
      const seen = await readMarker(store);
      const status: StopHookStatus = { location: store.location, armed: (seen.marker?.remaining ?? 0) > 0, maxBlocks: shownMaxBlocks };
      if (seen.marker) status.marker = seen.marker;
      if (seen.problem) status.problem = seen.problem;
      return status;
    },
  };
}
