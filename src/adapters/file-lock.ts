import fs, { constants } from 'node:fs';
import path from 'node:path';
import { isoTime } from '../util/iso-time.js';
import { abortableSleep } from '../util/sleep.js';
import { writeAllSync } from '../util/write-all.js';
import { JanitorError, ExitCode } from '../errors.js';
import { type Liveness, type ProcessIdentity, liveness, selfIdentity } from './process-identity.js';
import { readDirCapped } from './dir-slices.js';

/**
 * Cross-process lock files.
 *
 * The lock is a regular file at the lock path, holding its holder's JSON record. The rules that make it safe:
 * - It is created whole or not at all: the record is written to a private temporary file that is then hard-linked
 *   to the lock path (`link` fails if the path exists), so no reader ever sees an empty lock.
 * - Only one thing ever removes a lock path that may have been judged takeable: a compare-and-delete under a guard
 *   (`<lock>.guard`, itself such a lock, held for a read and an unlink). Creation cannot replace an existing path,
 *   so while the guard is held such a lock can only go from absent to present, never from one holder to another:
 *   reading it, comparing its record and unlinking it is atomic against every other taker and releaser. A holder's
 *   release and a takeover of a dead holder's lock both go through it, so a released lock is never revived and a
 *   live lock is never removed.
 * - The one exception: a holder releasing a lock nobody can have judged takeable yet ({@link releasableAtOnce}: a
 *   hook's, held for milliseconds) unlinks it directly. A taker only ever deletes the very record it judged
 *   takeable, so it can never be deleting this one, and the holder unlinks only while its own file is still linked.
 * - A guard left by a holder that died inside that window is broken the same way, under `<guard>.guard`.
 * - A holder is judged dead when it runs on this host and its pid is gone, or runs with another start time (pid
 *   reuse), or the host has rebooted. Holders on other hosts or in other pid namespaces cannot be checked: their
 *   locks are taken over only past `staleMs` (if given) without a refresh.
 * - A held lock refreshes its file's mtime every `refreshMs`, so staleness only ever takes holders that stopped.
 * - Reads never follow a symlink and never block on a FIFO; anything but a regular file at the lock path is a
 *   `LockPathError` that names the path.
 */

/** What a lock file records of its holder. */
export interface LockInfo extends ProcessIdentity {
  acquiredAt: string;
  token: string;
}

/** A lock's record as found on disk, with the time of its last refresh (the file's mtime). */
export type LockRecord = Partial<LockInfo> & { refreshedAt?: string };

export interface LockOptions {
  /** How long to wait for the lock; 0 tries once. */
  waitMs: number;
  /** A lock not refreshed for this long is stale whoever holds it. Default: only dead holders are taken over. */
  staleMs?: number;
  /** How often a held lock refreshes its mtime (default: a third of `staleMs`, at most 10 s). */
  refreshMs?: number;
  /**
   * False: no refresh timer. Only for a holder that releases the lock before its process next returns to the event
   * loop (a timer could never fire while it holds it), or whose release waits far less than `staleMs`; it saves a
   * hook the start-up of Node.js's timers.
   */
  refresh?: boolean;
  /** Aborts the wait. */
  signal?: AbortSignal;
  /** How often a waiting taker tries again (default: every 2-10 ms, jittered; a long-running service: 1000). */
  pollMs?: number;
  /**
   * Whether taking the lock removes the leftovers of crashed processes from its directory (default true; see
   * {@link removeLeftovers}). False where another lock of the same directory, taken less often, does it: reading a
   * directory of many files on every hook call costs the hook.
   */
  removeLeftovers?: boolean;
}

export interface HeldLock {
  info: LockInfo;
  /** False once the lock was taken from this holder (it stopped refreshing and went stale). */
  held(): boolean;
  /** Removes this holder's lock, and only it. */
  release(): Promise<void>;
}

/** Something other than a regular file sits at a lock path. */
export class LockPathError extends JanitorError {
  constructor(
    readonly lockPath: string,
    what: string,
  ) {
    super(`${lockPath} is ${what}, not a lock file: remove it (hermes-janitor never follows or waits on it)`, ExitCode.USAGE);
  }
}

/** Leftovers (temporary and set-aside files) older than this are removed. */
export const LEFTOVER_AGE_MS = 60_000;
/** A lock without a readable record (a foreign or truncated file) is taken over after this long. */
const UNREADABLE_GRACE_MS = 1000;
/** Guards are held for microseconds; one on another host untouched for this long is taken over. */
const GUARD_STALE_MS = 5000;
/** Past this depth of nested guards (each needing a holder dead inside the previous window), give up for now. */
const MAX_GUARD_DEPTH = 4;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** True when a process with this pid exists on this host. */
export { pidExists as pidAlive } from './process-identity.js';

interface Found {
  raw: string;
  record: Partial<LockInfo> | null;
  mtimeMs: number;
}

// Synchronous I/O: a lock file is tiny and local, and each thread-pool round trip costs more than the operation
// (hooks take a lock on every tool call, so start-up time matters). Waiting for a lock stays asynchronous.

/** Reads a lock file without following a symlink or blocking on a FIFO; null when there is none. */
function readLock(lockPath: string): Found | null {
  let fd: number;
  try {
    fd = fs.openSync(lockPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw new LockPathError(lockPath, 'a symlink');
    throw err;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new LockPathError(lockPath, st.isFIFO() ? 'a FIFO' : st.isDirectory() ? 'a directory' : 'not a regular file');
    const raw = st.size > 64 * 1024 ? '' : fs.readFileSync(fd, 'utf8');
    let parsed: Partial<LockInfo> | null = null;
    try {
      const v = JSON.parse(raw) as unknown;
      if (v && typeof v === 'object' && typeof (v as LockInfo).pid === 'number') parsed = v as Partial<LockInfo>;
    } catch {
      parsed = null;
    }
    return { raw, record: parsed, mtimeMs: st.mtimeMs };
  } finally {
    fs.closeSync(fd);
  }
}

/** Whether a found lock may be taken from its holder. */
function takeable(found: Found, staleMs: number | undefined, now: number): boolean {
  const idle = now - found.mtimeMs;
  if (!found.record) return idle > UNREADABLE_GRACE_MS;
  const state: Liveness = liveness(found.record);
  if (state === 'dead') return true;
  return staleMs !== undefined && idle > staleMs;
}

function newToken(): string {
  // Identifies a holder's lock file (not a secret): Math.random, since loading node:crypto costs every hook several ms.
  return Array.from({ length: 2 }, () =>
    Math.floor(Math.random() * 0x100000000)
      .toString(16)
      .padStart(8, '0'),
  ).join('');
}

/**
 * A private temporary file (`<target>.<pid>.<8 hex>.tmp`, the name {@link removeLeftovers} knows) holding `body`, to
 * be linked or renamed into place; open, for the caller to close. Not node:crypto for the name: loading it costs every
 * hook several ms, and 'wx' already refuses a name in use.
 */
export function writeTemp(target: string, body: string): { tmp: string; fd: number } {
  const tmp = `${target}.${process.pid}.${Math.floor(Math.random() * 0x100000000)
    .toString(16)
    .padStart(8, '0')}.tmp`;
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    writeAllSync(fd, body);
  } catch (err) {
    fs.closeSync(fd);
    unlinkQuiet(tmp);
    throw err;
  }
  return { tmp, fd };
}

/** Removes `p` if it is there. */
export function unlinkQuiet(p: string): void {
  try {
    fs.unlinkSync(p);
  } catch {
    /* already gone */
  }
}

/** Links `tmp` to `target`; false when the target exists (any kind of file, even a dangling symlink). */
function linkInto(tmp: string, target: string): boolean {
  try {
    fs.linkSync(tmp, target);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

function record(token: string): LockInfo {
  return { ...selfIdentity(), acquiredAt: isoTime(Date.now()), token };
}

/**
 * Removes `target` if, and only if, it still holds exactly `expected`: under `<target>.guard`. Returns false when
 * the guard is busy (the caller retries later).
 */
function compareAndDelete(target: string, expected: string, depth = 0): boolean {
  const guard = `${target}.guard`;
  const body = JSON.stringify(record(newToken()));
  const { tmp, fd } = writeTemp(guard, body);
  let mine = false;
  try {
    mine = linkInto(tmp, guard);
    if (!mine) {
      // A guard is held for microseconds. One whose holder died inside that window is broken under a guard of its own.
      const held = readLock(guard);
      if (held && depth < MAX_GUARD_DEPTH && guardAbandoned(held, Date.now())) {
        compareAndDelete(guard, held.raw, depth + 1);
        mine = linkInto(tmp, guard);
      } else if (!held) {
        mine = linkInto(tmp, guard);
      }
    }
  } finally {
    unlinkQuiet(tmp);
  }
  if (!mine) {
    fs.closeSync(fd);
    return false;
  }
  try {
    const cur = readLock(target);
    if (cur && cur.raw === expected) fs.unlinkSync(target);
    return true;
  } finally {
    // Our guard is ours to remove: nobody breaks a guard whose holder is alive on this host, and ours is.
    // (nlink 0: it was broken as abandoned after all, and the path may now be someone else's.)
    if (fs.fstatSync(fd).nlink > 0) unlinkQuiet(guard);
    fs.closeSync(fd);
  }
}

function guardAbandoned(found: Found, now: number): boolean {
  if (!found.record) return now - found.mtimeMs > UNREADABLE_GRACE_MS;
  const state = liveness(found.record);
  return state === 'dead' || (state === 'unknown' && now - found.mtimeMs > GUARD_STALE_MS);
}

/** Reads who holds a lock, if anyone (with `refreshedAt`, the time of its last refresh). */
export async function lockHolder(lockPath: string): Promise<LockRecord | null> {
  return (await lockState(lockPath))?.holder ?? null;
}

/** What `status` says of a lock: its holder, and whether it is stale (taken over by the next taker). */
export async function lockState(lockPath: string, staleMs?: number): Promise<{ holder: LockRecord; holderAlive: Liveness; stale: boolean } | null> {
  const found = readLock(lockPath);
  if (!found) return null;
  return {
    holder: { ...(found.record ?? {}), refreshedAt: new Date(found.mtimeMs).toISOString() },
    holderAlive: found.record ? liveness(found.record) : 'unknown',
    stale: takeable(found, staleMs, Date.now()),
  };
}

/**
 * Removes temporary files (`*.<pid>.<8 hex>.tmp`) and set-aside locks (`*.stale-<16 hex>`) older than a minute
 * from `dir`: what a process killed between writing and renaming leaves behind.
 */
export function removeLeftovers(dir: string, now = Date.now()): void {
  let names: string[];
  try {
    // A slice at a time, only the leftovers' names kept (dir-slices.ts): a directory of a million other names costs
    // no memory, and every entry is still looked at (no cap: nothing is skipped).
    names = readDirCapped(dir, { max: Infinity, keep: (e) => (isLeftoverName(e.name) ? e.name : null) }).kept;
  } catch {
    return;
  }
  for (const name of names) {
    const p = path.join(dir, name);
    try {
      const st = fs.lstatSync(p);
      if ((st.isFile() || st.isSymbolicLink()) && now - st.mtimeMs > LEFTOVER_AGE_MS) fs.unlinkSync(p);
    } catch {
      /* gone, or not ours to remove */
    }
  }
}

/** A temporary file or a set-aside lock. The cheap test first: most names are neither (hooks take a lock on every call, in a directory of histories). */
const isLeftoverName = (name: string): boolean =>
  (name.endsWith('.tmp') && /\.\d+\.[0-9a-f]{8}\.tmp$/.test(name)) || (name.includes('.stale-') && /\.stale-[0-9a-f]{16}$/.test(name));

/** One try at a lock: true when `tmp` (our record) now sits at the lock path, taking over a dead or stale holder's. */
function tryLink(lockPath: string, tmp: string, staleMs: number | undefined): boolean {
  for (;;) {
    if (linkInto(tmp, lockPath)) return true;
    const found = readLock(lockPath);
    if (!found) continue; // released meanwhile
    if (!takeable(found, staleMs, Date.now())) return false;
    if (!compareAndDelete(lockPath, found.raw)) return false; // another taker holds the guard: try again later
  }
}

/**
 * Takes an exclusive lock file (mode 0600) recording this process's identity. A lock whose holder is dead, or that
 * was not refreshed for `staleMs`, is taken over. Returns null when the wait ran out. The first attempt runs
 * synchronously, before the returned promise settles.
 */
export async function acquireLock(lockPath: string, opts: LockOptions): Promise<HeldLock | null> {
  const deadline = Date.now() + opts.waitMs;
  for (;;) {
    const held = tryAcquireLock(lockPath, opts);
    if (held) return held;
    if (opts.signal?.aborted || Date.now() >= deadline) return null;
    await abortableSleep(Math.min(opts.pollMs ?? 2 + Math.random() * 8, Math.max(0, deadline - Date.now())), opts.signal);
  }
}

/** One synchronous try at a lock, without waiting: the lock, or null when a live holder has it. */
export function tryAcquireLock(lockPath: string, opts: Partial<LockOptions> = {}): HeldLock | null {
  const info = record(newToken());
  const body = JSON.stringify(info);
  const { tmp, fd } = writeTemp(lockPath, body);
  let won = false;
  try {
    won = tryLink(lockPath, tmp, opts.staleMs);
  } finally {
    unlinkQuiet(tmp);
    if (!won) fs.closeSync(fd);
  }
  if (!won) return null;
  if (opts.removeLeftovers !== false) removeLeftovers(path.dirname(lockPath));
  return holding(lockPath, info, body, fd, opts);
}

/**
 * Whether a lock held this long can be released without the guard: no taker can have judged it takeable. A takeover
 * needs a dead holder, which the releaser is not, or a lock file (whose mtime is its creation, or its last refresh)
 * unrefreshed for `staleMs`. Held for less than a third of that by the monotonic clock (`heldMs`), with the wall clock
 * agreeing within a second (`wallMs`: no step that could make it look older to a taker on this host), it cannot have
 * looked stale to one, and nothing else removes a lock path: so the holder may unlink it at once, which saves a hook
 * the guard's nine filesystem calls (about 0.3 ms). Without `staleMs` only death takes a lock: always.
 */
export function releasableAtOnce(heldMs: number, wallMs: number, staleMs: number | undefined): boolean {
  if (staleMs === undefined) return true;
  return heldMs < staleMs / 3 && Math.abs(wallMs - heldMs) < 1000;
}

/**
 * The locks this process holds, by path, each with the record it wrote: what a run ended at its deadline releases
 * (cli/deadline.ts: every lock the run held, whatever it was doing), and what a supervisor releases for a worker it
 * ended (cli/watch-supervisor.ts). A Map of a few entries: hooks pay nothing measurable for it.
 */
const heldLocks = new Map<string, string>();
/** Told of each lock taken (`held: true`) and released, once set (`observeLocks`). */
type LockObserver = (change: { held: boolean; lockPath: string; body: string }) => void;
let lockObserver: LockObserver | undefined;

/** Tells `fn` of every lock taken and released from now on (and of those held now): one observer per process. */
export function observeLocks(fn: LockObserver): void {
  lockObserver = fn;
  for (const [lockPath, body] of heldLocks) fn({ held: true, lockPath, body });
}

function noteHeld(lockPath: string, body: string, held: boolean): void {
  if (held) heldLocks.set(lockPath, body);
  else heldLocks.delete(lockPath);
  lockObserver?.({ held, lockPath, body });
}

/**
 * Removes the lock at `lockPath` if, and only if, it still holds exactly `body` (a record this process or a worker of
 * it wrote), synchronously: under its guard, as every release. A guard busy for longer than about 50 ms leaves the
 * lock as it is (its holder's process is about to end: it is then a dead holder's, taken over by the next taker).
 */
export function releaseRecordedLock(lockPath: string, body: string): boolean {
  const wait = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 50; i++) {
    try {
      if (compareAndDelete(lockPath, body)) return true;
    } catch {
      return false; // unreadable: not ours to remove
    }
    Atomics.wait(wait, 0, 0, 1); // a guard is held for microseconds
  }
  return false;
}

/** Releases every lock this process holds, synchronously (a run ended at its deadline: cli/deadline.ts). */
export function releaseHeldLocksNow(): void {
  for (const [lockPath, body] of [...heldLocks]) {
    releaseRecordedLock(lockPath, body);
    noteHeld(lockPath, body, false);
  }
}

function holding(lockPath: string, info: LockInfo, body: string, fd: number, opts: Partial<LockOptions>): HeldLock {
  let open = true;
  const since = { mono: process.hrtime(), wall: Date.now() };
  const held = () => open && fs.fstatSync(fd).nlink > 0;
  const every = opts.refreshMs ?? Math.min(10_000, opts.staleMs !== undefined ? Math.max(50, opts.staleMs / 3) : 10_000);
  const timer =
    opts.refresh === false
      ? undefined
      : setInterval(() => {
          try {
            if (open) fs.futimesSync(fd, new Date(), new Date());
          } catch {
            /* the next refresh tries again */
          }
        }, every);
  timer?.unref();
  noteHeld(lockPath, body, true);
  return {
    info,
    held,
    release: async () => {
      if (!open) return;
      if (timer) clearInterval(timer);
      try {
        const [s, ns] = process.hrtime(since.mono);
        if (releasableAtOnce(s * 1000 + ns / 1e6, Date.now() - since.wall, opts.staleMs)) {
          // Nobody can have taken it: while our file is still linked (nlink > 0), the lock path is it.
          if (fs.fstatSync(fd).nlink > 0) unlinkQuiet(lockPath);
          return;
        }
        // Nobody else removes our lock while we are alive and refreshing; if it was taken (nlink 0), the path is theirs.
        for (let i = 0; fs.fstatSync(fd).nlink > 0; i++) {
          if (compareAndDelete(lockPath, body)) break;
          if (i > 2000) break; // a guard wedged for ~10 s: leave the lock to be taken over as ours is dead soon
          await sleep(1 + Math.random() * 4);
        }
      } catch {
        /* unreadable: not ours to remove */
      } finally {
        open = false;
        fs.closeSync(fd);
        noteHeld(lockPath, body, false);
      }
    },
  };
}
