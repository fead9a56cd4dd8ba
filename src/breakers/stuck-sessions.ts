/**
 * stuck-sessions, in process: read-modify-write of the restart failure counts through a StateStore, using the
 * pure core. I/O errors fail open: they are reported in `error`, never thrown.
 */
import path from 'node:path';
import { FileStateStore, type StateRead, type StateStore, hasState } from '../adapters/state-file.js';
import {
  DEFAULT_SUSPEND_THRESHOLD,
  type StuckSessionsState,
  clearKeys,
  countsOf,
  emptyState,
  keysAtThreshold,
  parseStuckSessions,
  recordShutdown,
  serializeStuckSessions,
  suspend,
} from '../core/stuck-sessions.js';
import { errorMessage } from '../errors.js';
import { libraryHome } from './home.js';

/** `<home>/.restart_failure_counts`, where hermes-agent keeps the counts. */
export function restartFailureCountsFile(home: string): string {
  return path.join(home, '.restart_failure_counts');
}

/** The file-backed store hermes-agent shares. */
export function stuckSessionsStore(home: string): FileStateStore {
  return new FileStateStore(restartFailureCountsFile(home));
}

/** What every stuck-sessions call reports besides its own result. */
export interface StuckOutcomeBase {
  /** Counts after the call (record-shutdown, clear) or as read (status, suspend). */
  counts: Record<string, number>;
  /** Problems with the state that were worked around (corrupt file, skipped entries). */
  warnings: string[];
  /** An I/O or internal error: nothing was decided from the state (fail open). */
  error?: string;
  location: string;
}

interface Interpreted {
  state: StuckSessionsState;
  warnings: string[];
}

function interpret(read: StateRead, location: string): Interpreted {
  if (read.problem) return { state: emptyState(), warnings: [read.problem] };
  const parsed = parseStuckSessions(read.value);
  const warnings: string[] = [];
  if (parsed.problem) warnings.push(`${location} ${parsed.problem}`);
  if (parsed.skipped > 0) {
    warnings.push(`${location}: ignored ${parsed.skipped} entr${parsed.skipped === 1 ? 'y that is' : 'ies that are'} neither a count nor {"count": n}`);
  }
  return { state: parsed.state, warnings };
}

function failure(what: string, location: string, err: unknown): string {
  return `cannot ${what} ${location}: ${errorMessage(err)}; proceeding (the breaker fails open)`;
}

export interface RecordShutdownOutcome extends StuckOutcomeBase {
  /** The keys counted (each once). */
  recorded: string[];
  /** Recorded keys whose count has reached the threshold (they will be suspended at the next start). */
  atThreshold: string[];
  /** Whether the state was written. */
  changed: boolean;
}

/** At gateway shutdown: + 1 for each given key, every other key dropped. No keys: the file is left untouched. */
export async function recordShutdownKeys(store: StateStore, keys: readonly string[], threshold: number): Promise<RecordShutdownOutcome> {
  const unique = [...new Set(keys)];
  const base = { recorded: unique, atThreshold: [] as string[], changed: false, location: store.location };
  try {
    if (unique.length === 0) {
      const current = interpret(await store.read(), store.location);
      return { ...base, counts: countsOf(current.state), warnings: current.warnings };
    }
    let warnings: string[] = [];
    const next = await store.update((read) => {
      const current = interpret(read, store.location);
      warnings = current.warnings;
      const step = recordShutdown(current.state, unique).next ?? current.state;
      return { next: serializeStuckSessions(step), result: step };
    });
    return { ...base, counts: countsOf(next), atThreshold: keysAtThreshold(next, threshold), changed: true, warnings };
  } catch (err) {
    return { ...base, counts: {}, warnings: [], error: failure('update', store.location, err) };
  }
}

export interface SuspendOutcome extends StuckOutcomeBase {
  /** Keys at or over the threshold: the gateway should not resume them. */
  suspended: string[];
  /** Whether the state file was deleted. */
  deleted: boolean;
}

/** At start-up: the keys to suspend; the state is deleted (read and delete are one serialised step). */
export async function suspendStuckSessions(store: StateStore, threshold: number): Promise<SuspendOutcome> {
  try {
    if (!hasState(await store.read())) {
      return { suspended: [], counts: {}, warnings: [], deleted: false, location: store.location };
    }
    let warnings: string[] = [];
    const result = await store.update((read) => {
      const current = interpret(read, store.location);
      warnings = current.warnings;
      return { next: undefined, result: suspend(current.state, threshold) };
    });
    return { ...result, warnings, deleted: true, location: store.location };
  } catch (err) {
    return { suspended: [], counts: {}, warnings: [], deleted: false, location: store.location, error: failure('read and delete', store.location, err) };
  }
}

export interface ClearKeysOutcome extends StuckOutcomeBase {
  /** The given keys that were present and are now dropped. */
  cleared: string[];
  /** Whether the file was deleted because no key was left. */
  deleted: boolean;
}

/** After a successful turn: drops the keys; deletes the file when it becomes empty. */
export async function clearSessionKeys(store: StateStore, keys: readonly string[]): Promise<ClearKeysOutcome> {
  try {
    const before = await store.read();
    if (!hasState(before)) return { cleared: [], counts: {}, warnings: [], deleted: false, location: store.location };
    const pre = interpret(before, store.location);
    const needsWrite = before.problem !== undefined || pre.warnings.length > 0 || keys.some((k) => pre.state.entries.has(k));
    if (!needsWrite) return { cleared: [], counts: countsOf(pre.state), warnings: [], deleted: false, location: store.location };
    let warnings: string[] = [];
    const step = await store.update((read) => {
      const current = interpret(read, store.location);
      warnings = current.warnings;
      const s = clearKeys(current.state, keys);
      return { next: serializeStuckSessions(s.next), result: s };
    });
    return {
      cleared: step.cleared,
      counts: countsOf(step.next),
      warnings,
      deleted: step.next.entries.size === 0,
      location: store.location,
    };
  } catch (err) {
    return { cleared: [], counts: {}, warnings: [], deleted: false, location: store.location, error: failure('update', store.location, err) };
  }
}

export interface StatusOutcome extends StuckOutcomeBase {
  /** Keys that would be suspended at the next start. */
  atThreshold: string[];
}

/** Read-only: the counts. */
export async function stuckSessionsStatus(store: StateStore, threshold: number): Promise<StatusOutcome> {
  try {
    const current = interpret(await store.read(), store.location);
    return {
      counts: countsOf(current.state),
      atThreshold: keysAtThreshold(current.state, threshold),
      warnings: current.warnings,
      location: store.location,
    };
  } catch (err) {
    return { counts: {}, atThreshold: [], warnings: [], location: store.location, error: failure('read', store.location, err) };
  }
}

// ---- Library API ---------------------------------------------------------------------------------------------

export interface StuckSessionsOptions {
  /** Where the counts live. Default: a {@link FileStateStore} at `<home>/.restart_failure_counts`. */
  store?: StateStore;
  /** Hermes home. Default: `$HERMES_HOME`, else `~/.hermes` (see `profile`). */
  home?: string;
  /** Hermes profile: selects `<root>/profiles/<name>` as the home when `home` is not given. */
  profile?: string;
  /** Environment for the home resolution. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /** The clock. The counts do not depend on time; accepted so every breaker takes the same options. */
  now?: () => Date;
  /** Suspend sessions whose count reached this (an integer >= 1; default 3). */
  threshold?: number;
}

/** The in-process stuck-sessions breaker. No method throws: I/O errors fail open and are reported in `error`. */
export interface StuckSessions {
  /** Where the counts live (a path, or `memory:`). */
  readonly location: string;
  readonly threshold: number;
  /** At gateway shutdown, with the keys of the sessions active then: + 1 each, every other key dropped. */
  recordShutdown(keys: readonly string[]): Promise<RecordShutdownOutcome>;
  /** At start-up: the keys to suspend (count >= threshold); the counts are then deleted. */
  suspend(): Promise<SuspendOutcome>;
  /** After a successful turn: drops the keys (the file is deleted when none is left). */
  clear(keys: readonly string[]): Promise<ClearKeysOutcome>;
  /** Read-only: the counts. */
  status(): Promise<StatusOutcome>;
}

/**
 * Creates a stuck-sessions breaker.
 *
 * @example
 * const stuck = createStuckSessions({ store: new MemoryStateStore() });
 * await stuck.recordShutdown(['agent:main:telegram:dm:42']);
 * const { suspended } = await stuck.suspend(); // keys not to resume
 */
export function createStuckSessions(options: StuckSessionsOptions = {}): StuckSessions {
  const threshold = options.threshold ?? DEFAULT_SUSPEND_THRESHOLD;
  if (!Number.isSafeInteger(threshold) || threshold < 1) throw new RangeError(`threshold must be an integer >= 1, got ${threshold}`);
  const store = options.store ?? stuckSessionsStore(libraryHome(options));
  return {
    location: store.location,
    threshold,
    recordShutdown: (keys) => recordShutdownKeys(store, keys, threshold),
    suspend: () => suspendStuckSessions(store, threshold),
    clear: (keys) => clearSessionKeys(store, keys),
    status: () => stuckSessionsStatus(store, threshold),
  };
}
