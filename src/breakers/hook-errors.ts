/**
 * The record of a breaker's hook mistakes (see core/hook-errors.ts), as a file: `<home>/hook-errors/stop-hook.json`
 * and `<home>/hook-errors/tool-loop.json`, beside the breakers' own state directories rather than in them, so that
 * a state directory the hook cannot write does not also keep the mistake from being recorded. Written only when a
 * hook fails open (never on a call that went well); read by `status`.
 */
import path from 'node:path';
import { FileStateStore } from '../adapters/state-file.js';
import { type HookErrorEntry, hookErrorsFrom, withHookError } from '../core/hook-errors.js';

export type HookBreaker = 'stop-hook' | 'tool-loop';

/** The breaker a hook command belongs to: `tool-loop pre` is tool-loop's. */
export const breakerOf = (hook: string): HookBreaker => (hook.startsWith('tool-loop') ? 'tool-loop' : 'stop-hook');

export function hookErrorsFile(home: string, breaker: HookBreaker): string {
  return path.join(home, 'hook-errors', `${breaker}.json`);
}

// Not flushed (a count lost to a power failure only starts again); no sweep of other processes' leftovers; a short
// wait for the lock: a hook that fails open must not hold its agent up.
const store = (file: string) => new FileStateStore(file, { durable: false, removeLeftovers: false, lockWaitMs: 1000 });

/** Records one sighting of `what` in `hook`. Throws what keeps it from being recorded (the caller fails open). */
export async function recordHookError(home: string, hook: string, what: string, now: Date): Promise<void> {
  await store(hookErrorsFile(home, breakerOf(hook))).update((current) => ({ next: withHookError(current.value, hook, what, now), result: undefined }));
}

/** A breaker's recorded mistakes still remembered at `now` (read-only), most recent first, or why they cannot be read. */
export async function readHookErrors(
  home: string,
  breaker: HookBreaker,
  now: Date,
): Promise<{ file: string; errors: HookErrorEntry[]; problem: string | null }> {
  const file = hookErrorsFile(home, breaker);
  try {
    const read = await store(file).read();
    return { file, errors: hookErrorsFrom(read.value, now), problem: read.problem ?? null };
  } catch (err) {
    return { file, errors: [], problem: (err as Error).message };
  }
}
