/**
 * restart-guard, the pure part: a rolling-window breaker for restart-interrupted gateway boots.
 *
 * State is hermes-agent's `<home>/gateway/restart_loop.json`: `{"boots": [<epoch seconds>, ...]}`. Every
 * function here is a transition over plain values with the clock passed in; nothing touches the disk.
 */

/** hermes-agent's defaults: 3 boots within 60 s trip the breaker. */
export const DEFAULT_MAX_RESTARTS = 3;
export const DEFAULT_WINDOW_SECONDS = 60;
/** At most this many (newest) boots are kept in the state file. */
export const MAX_STORED_BOOTS = 50;
/** The window never counts as shorter than this many seconds. */
export const MIN_WINDOW_SECONDS = 1;

/** Config keys in `<home>/config.yaml`. */
export const CONFIG_MAX_KEY = 'gateway.restart_loop_guard.max_restarts';
export const CONFIG_WINDOW_KEY = 'gateway.restart_loop_guard.window_seconds';

/** The state file's document, exactly as hermes writes it. */
export interface RestartLoopState {
  /** Boot times in epoch seconds (floats), oldest first. */
  boots: number[];
}

export interface RestartGuardSettings {
  /** Trip when this many boots fall inside the window; 0 or below never trips. */
  max: number;
  /** The window in seconds (values below 1 count as 1). */
  windowSeconds: number;
}

export const DEFAULT_SETTINGS: RestartGuardSettings = {
  max: DEFAULT_MAX_RESTARTS,
  windowSeconds: DEFAULT_WINDOW_SECONDS,
};

/** What a check found: the decision and the numbers behind it. */
export interface RestartGuardVerdict {
  tripped: boolean;
  /** False when `max <= 0`: the breaker never trips. */
  enabled: boolean;
  /** Boots inside the window (after recording, for check-and-record). */
  count: number;
  max: number;
  windowSeconds: number;
  /** The clock, epoch seconds. */
  now: number;
  /** Boots before this instant (epoch seconds) are outside the window. */
  cutoff: number;
}

/** Epoch seconds (a float, like Python's `time.time()`) for a Date. */
export function epochSeconds(date: Date): number {
  return date.getTime() / 1000;
}

/** True for a usable boot time: a finite JSON number (booleans and strings are not numbers). */
function isBootTime(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/**
 * Reads a parsed state document. Missing state is empty; a document that is not `{"boots": [...]}` is treated
 * as empty and described in `problem`; non-numeric entries are ignored. Boots come back sorted, oldest first.
 */
export function parseRestartLoopState(value: unknown): { state: RestartLoopState; problem?: string } {
  if (value === undefined) return { state: { boots: [] } };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { state: { boots: [] }, problem: 'is not a JSON object with a "boots" list; it is treated as empty' };
  }
  const raw = (value as Record<string, unknown>).boots;
  if (raw === undefined) return { state: { boots: [] } };
  if (!Array.isArray(raw)) {
    return { state: { boots: [] }, problem: '"boots" is not a list; it is treated as empty' };
  }
  const boots = raw.filter(isBootTime).sort((a, b) => a - b);
  return { state: { boots } };
}

/** The start of the window ending at `now`: boots strictly older than this are dropped. */
export function windowCutoff(now: number, windowSeconds: number): number {
  return now - Math.max(MIN_WINDOW_SECONDS, windowSeconds);
}

/** Boots inside the window ending at `now` (a boot exactly at the cutoff is inside). */
export function bootsInWindow(boots: readonly number[], now: number, windowSeconds: number): number[] {
  const cutoff = windowCutoff(now, windowSeconds);
  return boots.filter((b) => b >= cutoff);
}

function verdict(count: number, now: number, settings: RestartGuardSettings): RestartGuardVerdict {
  const enabled = settings.max > 0;
  return {
    tripped: enabled && count >= settings.max,
    enabled,
    count,
    max: settings.max,
    windowSeconds: settings.windowSeconds,
    now,
    cutoff: windowCutoff(now, settings.windowSeconds),
  };
}

/**
 * `check-and-record`: drops boots older than `now - max(1, window)`, appends `now`, keeps the newest 50,
 * and trips when the boots left number at least `max`.
 */
export function checkAndRecord(state: RestartLoopState, now: number, settings: RestartGuardSettings): { next: RestartLoopState; verdict: RestartGuardVerdict } {
  const kept = bootsInWindow(state.boots, now, settings.windowSeconds);
  kept.push(now);
  kept.sort((a, b) => a - b);
  const boots = kept.slice(-MAX_STORED_BOOTS);
  return { next: { boots }, verdict: verdict(boots.length, now, settings) };
}

/** `status`: read-only; tripped when the boots inside the window number at least `max`. */
export function restartGuardStatus(state: RestartLoopState, now: number, settings: RestartGuardSettings): RestartGuardVerdict {
  return verdict(bootsInWindow(state.boots, now, settings.windowSeconds).length, now, settings);
}

/** An integer setting from config.yaml: a number (truncated, as hermes' `int()`) or a string of digits. */
function configInteger(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return Math.trunc(v);
  if (typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v)) {
    const n = Number(v.trim());
    return Number.isSafeInteger(n) ? n : undefined;
  }
  return undefined;
}

/** A number of seconds from config.yaml: a number or a numeric string. */
function configSeconds(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && /^\s*[+-]?\d+(\.\d+)?\s*$/.test(v)) return Number(v.trim());
  return undefined;
}

/** Flags and config values, as given. */
export interface SettingsInputs {
  /** `--max` (already validated). */
  flagMax?: number | undefined;
  /** `--window` (already validated). */
  flagWindow?: number | undefined;
  /** `gateway.restart_loop_guard.max_restarts`, as read from YAML. */
  configMax?: unknown;
  /** `gateway.restart_loop_guard.window_seconds`, as read from YAML. */
  configWindow?: unknown;
}

/**
 * The effective settings: a flag wins over config.yaml, which wins over the defaults. An unusable config
 * value is reported in `warnings` and the default is used. A max above the 50 kept boots could never trip,
 * so it counts as 50.
 */
export function resolveSettings(inputs: SettingsInputs): { settings: RestartGuardSettings; warnings: string[] } {
  const warnings: string[] = [];
  let max = DEFAULT_MAX_RESTARTS;
  let windowSeconds = DEFAULT_WINDOW_SECONDS;
  if (inputs.flagMax !== undefined) {
    max = inputs.flagMax;
    if (max > MAX_STORED_BOOTS) {
      warnings.push(`--max is ${max}, but only the ${MAX_STORED_BOOTS} newest boots are kept; using ${MAX_STORED_BOOTS}`);
      max = MAX_STORED_BOOTS;
    }
  } else if (inputs.configMax !== undefined && inputs.configMax !== null) {
    const n = configInteger(inputs.configMax);
    if (n === undefined) {
      warnings.push(`${CONFIG_MAX_KEY} must be an integer, got ${JSON.stringify(inputs.configMax)}; using ${DEFAULT_MAX_RESTARTS}`);
    } else if (n > MAX_STORED_BOOTS) {
      warnings.push(`${CONFIG_MAX_KEY} is ${n}, but only the ${MAX_STORED_BOOTS} newest boots are kept; using ${MAX_STORED_BOOTS}`);
      max = MAX_STORED_BOOTS;
    } else {
      max = n;
    }
  }
  if (inputs.flagWindow !== undefined) {
    windowSeconds = inputs.flagWindow;
  } else if (inputs.configWindow !== undefined && inputs.configWindow !== null) {
    const n = configSeconds(inputs.configWindow);
    if (n === undefined) {
      warnings.push(`${CONFIG_WINDOW_KEY} must be a number of seconds, got ${JSON.stringify(inputs.configWindow)}; using ${DEFAULT_WINDOW_SECONDS}`);
    } else {
      windowSeconds = n;
    }
  }
  return { settings: { max, windowSeconds }, warnings };
}
