import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
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

async function readInfo(lockPath: string): Promise<{ info: Partial<LockInfo> | null; raw: string; mtimeMs: number } | null> {
  try {
    const [raw, st] = await Promise.all([fs.readFile(lockPath, 'utf8'), fs.lstat(lockPath)]);
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
  const found = await readInfo(lockPath);
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
    token: randomBytes(8).toString('hex'),
  };
  const body = JSON.stringify(info);
  for (;;) {
    try {
      const fh = await fs.open(lockPath, 'wx', 0o600);
      try {
        await fh.writeFile(body);
      } finally {
        await fh.close();
      }
      return {
        info,
        release: async () => {
          const cur = await readInfo(lockPath).catch(() => null);
          if (cur?.info?.token === info.token) await fs.unlink(lockPath).catch(() => undefined);
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const found = await readInfo(lockPath);
    if (found && isStale(found, opts.staleMs)) {
      // Move the stale lock aside, then make sure it was the one judged stale before dropping it.
      const aside = `${lockPath}.stale-${info.token}`;
      try {
        await fs.rename(lockPath, aside);
        const moved = await readInfo(aside);
        if (moved && moved.raw !== found.raw) await fs.link(aside, lockPath).catch(() => undefined);
        await fs.unlink(aside).catch(() => undefined);
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
