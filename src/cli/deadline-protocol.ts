/**
 * What the main thread of a run with a deadline (deadline.ts) and its watchdog thread (deadline-watchdog.ts) share: a
 * leaf module, so that the watchdog loads nothing else.
 */

/**
 * How long past its deadline a run may take to end by itself (its AbortSignal) before it is ended whatever it is
 * doing: by the watchdog of a one-shot run (deadline.ts), by the supervisor of `watch` (watch-supervisor.ts).
 */
export const HARD_STOP_GRACE_MS = 400;

/** The global the watchdog's `Runtime.evaluate` calls (a registered symbol: nothing else names it). */
export const HARD_STOP_KEY = 'hermes-janitor.hard-stop';
/** Slots of the buffer shared with the watchdog (Int32). */
export const SLOT = {
  /** 1 once the main thread runs its hard stop (it then ends the process itself). */
  answered: 0,
} as const;

/** What the watchdog is given (workerData). */
export interface WatchdogData {
  hardAtMs: number;
  shared: SharedArrayBuffer;
  /** The line it says itself when the main thread does not answer. */
  lastWords: string;
  answerMs: number;
}
