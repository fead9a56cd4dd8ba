/**
 * restart-guard, in process: reads and updates the state through a StateStore, decides with the pure core,
 * and fails open (an I/O error is reported in `error` and never trips). The CLI and the library API call this.
 */
import path from 'node:path';
import { loadConfig } from '../adapters/config.js';
import { FileStateStore, type StateRead, type StateStore, hasState } from '../adapters/state-file.js';
import {
  CONFIG_MAX_KEY,
  CONFIG_WINDOW_KEY,
  type RestartGuardSettings,
  type RestartGuardVerdict,
  type RestartLoopState,
  checkAndRecord,
  epochSeconds,
  parseRestartLoopState,
  resolveSettings,
  restartGuardStatus,
} from '../core/restart-guard.js';
import { errorMessage } from '../errors.js';
import { libraryHome } from './home.js';

/** The clock: the current instant. */
export type Clock = () => Date;

/** `<home>/gateway/restart_loop.json`, where hermes-agent keeps its boot log. */
export function restartLoopFile(home: string): string {
  return path.join(home, 'gateway', 'restart_loop.json');
}

/** The file-backed store hermes-agent shares. */
export function restartLoopStore(home: string): FileStateStore {
  return new FileStateStore(restartLoopFile(home));
}

/** What a restart-guard call decided. */
export interface RestartGuardOutcome {
  /** Hold back (exit 1). Always false when `error` is set: the breaker fails open. */
  tripped: boolean;
  /** The decision's numbers; absent when the state could not be read. */
  verdict?: RestartGuardVerdict;
  /** The state after the call (check-and-record) or as read (status). */
  state?: RestartLoopState;
  /** The state was unusable (corrupt, wrongly shaped, a symlink) and counted as empty. */
  problem?: string;
  /** An I/O or internal error: the call failed open. */
  error?: string;
  /** Where the state lives. */
  location: string;
}

function describeProblem(read: StateRead, location: string): { state: RestartLoopState; problem?: string } {
  if (read.problem) return { state: { boots: [] }, problem: read.problem };
  const parsed = parseRestartLoopState(read.value);
  return parsed.problem ? { state: parsed.state, problem: `${location} ${parsed.problem}` } : { state: parsed.state };
}

/** Records this boot and reports whether the loop has tripped (read-modify-write, serialised). */
export async function recordBoot(store: StateStore, clock: Clock, settings: RestartGuardSettings): Promise<RestartGuardOutcome> {
  let problem: string | undefined;
  try {
    const now = epochSeconds(clock());
    const { next, verdict } = await store.update((read) => {
      const current = describeProblem(read, store.location);
      problem = current.problem;
      const step = checkAndRecord(current.state, now, settings);
      return { next: step.next, result: step };
    });
    return { tripped: verdict.tripped, verdict, state: next, location: store.location, ...(problem ? { problem } : {}) };
  } catch (err) {
    return {
      tripped: false,
      location: store.location,
      // One line says it all: the state could not be used (any problem found on the way is moot).
      error: `cannot record the boot in ${store.location}: ${errorMessage(err)}; proceeding (the breaker fails open)`,
    };
  }
}

/** Read-only: whether the boots inside the window have reached `max`. */
export async function restartGuardState(store: StateStore, clock: Clock, settings: RestartGuardSettings): Promise<RestartGuardOutcome> {
  try {
    const current = describeProblem(await store.read(), store.location);
    const verdict = restartGuardStatus(current.state, epochSeconds(clock()), settings);
    return {
      tripped: verdict.tripped,
      verdict,
      state: current.state,
      location: store.location,
      ...(current.problem ? { problem: current.problem } : {}),
    };
  } catch (err) {
    return {
      tripped: false,
      location: store.location,
      error: `cannot read ${store.location}: ${errorMessage(err)}; proceeding (the breaker fails open)`,
    };
  }
}

export interface ClearOutcome {
  /** Whether there was state to delete. */
  existed: boolean;
  error?: string;
  location: string;
}

/** Deletes the state. */
export async function clearRestartGuard(store: StateStore): Promise<ClearOutcome> {
  let existed: boolean;
  try {
    const read = await store.read();
    existed = hasState(read);
  } catch {
    existed = true; // something is there, unreadable
  }
  try {
    await store.remove();
    return { existed, location: store.location };
  } catch (err) {
    return { existed, location: store.location, error: `cannot delete ${store.location}: ${errorMessage(err)}` };
  }
}

/** `--max`/`--window` when given, else config.yaml, else the defaults; config problems become warnings. */
export async function loadRestartGuardSettings(
  home: string,
  flags: { max?: number | undefined; windowSeconds?: number | undefined } = {},
): Promise<{ settings: RestartGuardSettings; warnings: string[] }> {
  const warnings: string[] = [];
  let configMax: unknown;
  let configWindow: unknown;
  if (flags.max === undefined || flags.windowSeconds === undefined) {
    try {
      const config = await loadConfig(home);
      if (config.problem) warnings.push(`${config.problem}; using the restart-guard defaults`);
      configMax = config.get(CONFIG_MAX_KEY);
      configWindow = config.get(CONFIG_WINDOW_KEY);
    } catch (err) {
      warnings.push(`cannot read the config: ${errorMessage(err)}; using the restart-guard defaults`);
    }
  }
  const resolved = resolveSettings({ flagMax: flags.max, flagWindow: flags.windowSeconds, configMax, configWindow });
  return { settings: resolved.settings, warnings: [...warnings, ...resolved.warnings] };
}

// ---- Library API ---------------------------------------------------------------------------------------------

export interface RestartGuardOptions {
  /** Where the boot log lives. Default: a {@link FileStateStore} at `<home>/gateway/restart_loop.json`. */
  store?: StateStore;
  /** Hermes home. Default: `$HERMES_HOME`, else `~/.hermes` (see `profile`). */
  home?: string;
  /** Hermes profile: selects `<root>/profiles/<name>` as the home when `home` is not given. */
  profile?: string;
  /** Environment for the home resolution. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /** The clock. Default: `() => new Date()`. */
  now?: Clock;
  /** Trip at this many boots inside the window; 0 or below never trips; above 50 (the boots kept) counts as 50. Default: config, else 3. */
  max?: number;
  /** The rolling window in seconds (> 0; below 1 counts as 1). Default: config, else 60. */
  windowSeconds?: number;
  /**
   * Read missing settings from `<home>/config.yaml` (`gateway.restart_loop_guard.*`). Default: true unless a
   * `store` is given without a `home`.
   */
  useConfig?: boolean;
}

/** A decision with the settings it used and the warnings met on the way (config and state problems). */
export interface RestartGuardReport extends RestartGuardOutcome {
  settings: RestartGuardSettings;
  /** One-line warnings (config problems, an unusable state file); `error` is separate. */
  warnings: string[];
}

/** The in-process restart-guard breaker. */
export interface RestartGuard {
  /** Where the boot log lives (a path, or `memory:`). */
  readonly location: string;
  /** Records this boot; `tripped` means: do not auto-resume. Never throws (fails open, see `error`). */
  checkAndRecord(): Promise<RestartGuardReport>;
  /** Read-only: whether the boots inside the window have reached `max`. Never throws (fails open). */
  status(): Promise<RestartGuardReport>;
  /** Deletes the boot log. Never throws (see `error`). */
  clear(): Promise<ClearOutcome>;
}

/**
 * Creates a restart-guard breaker.
 *
 * @example
 * const guard = createRestartGuard({ store: new MemoryStateStore(), max: 3, windowSeconds: 60 });
 * const { tripped } = await guard.checkAndRecord();
 * if (tripped) skipAutoResume();
 */
export function createRestartGuard(options: RestartGuardOptions = {}): RestartGuard {
  if (options.max !== undefined && !Number.isSafeInteger(options.max)) {
    throw new RangeError(`max must be an integer, got ${options.max}`);
  }
  if (options.windowSeconds !== undefined && !(Number.isFinite(options.windowSeconds) && options.windowSeconds > 0)) {
    throw new RangeError(`windowSeconds must be a number > 0, got ${options.windowSeconds}`);
  }
  const needHome = options.store === undefined || options.home !== undefined || options.useConfig === true;
  const home = needHome ? libraryHome(options) : undefined;
  const store = options.store ?? restartLoopStore(home!);
  const clock = options.now ?? (() => new Date());
  const useConfig = options.useConfig ?? !(options.store !== undefined && options.home === undefined);
  const flags = { max: options.max, windowSeconds: options.windowSeconds };

  async function settings(): Promise<{ settings: RestartGuardSettings; warnings: string[] }> {
    if (useConfig && home !== undefined) return loadRestartGuardSettings(home, flags);
    return { settings: resolveSettings({ flagMax: options.max, flagWindow: options.windowSeconds }).settings, warnings: [] };
  }

  async function run(fn: (s: RestartGuardSettings) => Promise<RestartGuardOutcome>): Promise<RestartGuardReport> {
    const resolved = await settings();
    const outcome = await fn(resolved.settings);
    return { ...outcome, settings: resolved.settings, warnings: [...resolved.warnings, ...(outcome.problem ? [outcome.problem] : [])] };
  }

  return {
    location: store.location,
    checkAndRecord: () => run((s) => recordBoot(store, clock, s)),
    status: () => run((s) => restartGuardState(store, clock, s)),
    clear: () => clearRestartGuard(store),
  };
}
