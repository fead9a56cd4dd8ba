/**
 * The reap lock of a hermes home, one per engine: `reap` takes them for one run (at once, or with `--wait` within
 * `--timeout`), `watch` for as long as it runs (waiting as long as it takes, and saying so once).
 */
import { type HeldLock, type LockRecord, acquireLock, lockHolder, tryAcquireLock } from '../adapters/file-lock.js';
import { ensureJanitorDir, reapLockPath } from '../adapters/janitor-files.js';

/** Someone else holds the reap lock of `host`. */
export interface HeldElsewhere {
  host: string;
  holder: LockRecord | null;
  /** The wait for it ran out (`--wait` past `--timeout`), rather than no wait at all. */
  timedOut: boolean;
}

export interface ReapLockWait {
  /** How long to wait for each lock: 0 (one try), a bound, or Infinity (until `signal`). */
  waitMs: number;
  signal?: AbortSignal | undefined;
  /** How often to try again while waiting (see `acquireLock`). */
  pollMs?: number;
  /** Called once per engine whose lock another holds, before waiting for it. */
  onWait?: (held: Omit<HeldElsewhere, 'timedOut'>) => void;
}

/**
 * Takes the reap lock of `home` for every engine, in order. All of them, or none: when one is held elsewhere (and
 * the wait runs out or is aborted), those already taken are released and the holder is returned.
 */
export async function takeReapLocks(home: string, hosts: readonly string[], wait: ReapLockWait): Promise<{ locks: HeldLock[] } | { held: HeldElsewhere }> {
  await ensureJanitorDir(home);
  const locks: HeldLock[] = [];
  for (const host of hosts) {
    const path = reapLockPath(home, host);
    let lock = tryAcquireLock(path);
    if (!lock && wait.waitMs > 0) {
      wait.onWait?.({ host, holder: await lockHolder(path) });
      lock = await acquireLock(path, { waitMs: wait.waitMs, ...(wait.signal ? { signal: wait.signal } : {}), ...(wait.pollMs ? { pollMs: wait.pollMs } : {}) });
    }
    if (!lock) {
      await Promise.all(locks.map((l) => l.release()));
      return { held: { host, holder: await lockHolder(path), timedOut: wait.waitMs > 0 } };
    }
    locks.push(lock);
  }
  return { locks };
}

/** Who holds a lock, for a person: `pid 4242 on host-a since 2026-11-23T09:30:02.114Z`, or `another process`. */
export function holderText(holder: LockRecord | null): string {
  return holder ? `pid ${holder.pid} on ${holder.host} since ${holder.acquiredAt}` : 'another process';
}
