import { MIN_LIFETIME_SECONDS } from '../defaults.js';
import { parseFinishedAt } from './finished-at.js';

export type KeepReason =
  | 'too-recent'
  | 'zero-finished-at'
  | 'unparseable-finished-at'
  | 'future-finished-at'
  | 'running'
  | 'gone'
  | 'excluded';

export type Verdict =
  | { verdict: 'reap'; ageSeconds: number }
  | { verdict: 'keep'; reason: KeepReason; ageSeconds: number | null };

/** Threshold = 2 × max(lifetime, 60) seconds. */
export function thresholdSeconds(lifetimeSeconds: number): number {
  return 2 * Math.max(lifetimeSeconds, MIN_LIFETIME_SECONDS);
}

/** What the policy needs to know of one container. */
export interface VerdictInput {
  running: boolean;
  finishedAt: string;
  excluded?: boolean;
}

/**
 * The reap verdict for one container as of `asOf`. Never reaps an excluded, running, zero, unparseable,
 * future or too-young container; an age equal to the threshold is reaped. Exact to the nanosecond.
 */
export function judge(input: VerdictInput, asOf: Date, threshold: number): Verdict {
  const parsed = parseFinishedAt(input.finishedAt);
  let ageSeconds: number | null = null;
  let ageNs: bigint | null = null;
  if (parsed.kind === 'time') {
    ageNs = BigInt(asOf.getTime() - parsed.epochMs) * 1_000_000n - BigInt(parsed.subMsNanos);
    ageSeconds = Number(ageNs) / 1e9;
  }
  if (input.excluded) return { verdict: 'keep', reason: 'excluded', ageSeconds };
  if (input.running) return { verdict: 'keep', reason: 'running', ageSeconds };
  if (parsed.kind === 'zero') return { verdict: 'keep', reason: 'zero-finished-at', ageSeconds };
  if (parsed.kind === 'invalid' || ageNs === null || ageSeconds === null) {
    return { verdict: 'keep', reason: 'unparseable-finished-at', ageSeconds };
  }
  if (ageNs < 0n) return { verdict: 'keep', reason: 'future-finished-at', ageSeconds };
  if (ageNs < BigInt(threshold) * 1_000_000_000n) return { verdict: 'keep', reason: 'too-recent', ageSeconds };
  return { verdict: 'reap', ageSeconds };
}
