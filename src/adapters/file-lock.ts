import fs from 'node:fs';
import os from 'node:os';

/** What a lock file records of its holder. */
export interface LockInfo {
  pid: number;
  host: string;
  acquiredAt: string;
  token: string;
}

export interface LockOptions {
  /** How long to wait for the lock; 0 tries once. */
  waitMs: number;
  /** A lock older than this is stale whoever holds it (for locks held for milliseconds). */
  staleMs?: number;
  /** Aborts the wait. */
  signal?: AbortSignal;
}

export interface HeldLock {
  info: LockInfo;
  release(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** True when a process with this pid exists on this host. */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// Synchronous I/O: a lock file is tiny and local, and each thread-pool round trip costs more than the operation
// (hooks take a lock on every tool call, so start-up time matters). Waiting for a lock stays asynchronous.
function readInfo(lockPath: string): { info: Partial<LockInfo> | null; raw: string; mtimeMs: number } | null {
  try {
    const raw = fs.readFileSync(lockPath, 'utf8');
    const st = fs.lstatSync(lockPath);
    let info: Partial<LockInfo> | null = null;
    try {
      const v = JSON.parse(raw) as unknown;
      if (v && typeof v === 'object') info = v as Partial<LockInfo>;
    } catch {
      info = null;
    }
    return { info, raw, mtimeMs: st.mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function isStale(found: { info: Partial<LockInfo> | null; mtimeMs: number }, staleMs: number | undefined): boolean {
  const age = Date.now() - found.mtimeMs;
  if (staleMs !== undefined && age > staleMs) return true;
  const { info } = found;
  // A lock file still being written has no content yet: give its writer a moment.
  if (!info || typeof info.pid !== 'number') return age > 1000;
  return info.host === os.hostname() && !pidAlive(info.pid);
}

/** Reads who holds a lock, if anyone. */
export async function lockHolder(lockPath: string): Promise<Partial<LockInfo> | null> {
  const found = readInfo(lockPath);
  return found?.info ?? null;
}

/**
 * Takes an exclusive lock file (O_CREAT|O_EXCL, mode 0600), recording pid and host name. A lock whose holder
 * process is gone (same host), or older than `staleMs`, is taken over. Returns null when the wait ran out.
 */
export async function acquireLock(lockPath: string, opts: LockOptions): Promise<HeldLock | null> {
  const deadline = Date.now() + opts.waitMs;
  const info: LockInfo = {
    pid: process.pid,
    host: os.hostname(),
    acquiredAt: new Date().toISOString(),
    // Identifies this holder's lock file (not a secret): Math.random, since loading node:crypto costs every hook several ms.
    token: Array.from({ length: 2 }, () => Math.floor(Math.random() * 0x100000000).toString(16).padStart(8, '0')).join(''),
  };
  const body = JSON.stringify(info);
  for (;;) {
    try {
      const fd = fs.openSync(lockPath, 'wx', 0o600);
      try {
        fs.writeFileSync(fd, body);
      } finally {
        fs.closeSync(fd);
      }
      return {
        info,
        release: async () => {
          let cur: ReturnType<typeof readInfo> = null;
          try {
            cur = readInfo(lockPath);
          } catch {
            /* unreadable: not ours to remove */
          }
          if (cur?.info?.token === info.token) {
            try {
              fs.unlinkSync(lockPath);
            } catch {
              /* already gone */
            }
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const found = readInfo(lockPath);
    if (found && isStale(found, opts.staleMs)) {
      // Move the stale lock aside, then make sure it was the one judged stale before dropping it.
      const aside = `${lockPath}.stale-${info.token}`;
      try {
        fs.renameSync(lockPath, aside);
        const moved = readInfo(aside);
        if (moved && moved.raw !== found.raw) {
          try {
            fs.linkSync(aside, lockPath);
          } catch {
            /* a new lock is already there */
          }
        }
        fs.unlinkSync(aside);
      } catch {
        /* someone else moved it first */
      }
      continue;
    }
    if (!found) continue;
    if (opts.signal?.aborted || Date.now() >= deadline) return null;
    await sleep(2 + Math.random() * 8);
  }
}
