import { abortableSleep } from '../util/sleep.js';

/** Reconnect delays: 1 s doubling to 30 s. */
export const BACKOFF_FIRST_MS = 1000;
export const BACKOFF_MAX_MS = 30_000;

/** The wait before reconnect attempt `attempt` (0 = the first after a loss). */
export function backoffMs(attempt: number): number {
  return Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.min(attempt, 30));
}

/** A sleep that ends early (resolving) when the signal aborts. Injectable for tests. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const realSleep: Sleep = abortableSleep;
