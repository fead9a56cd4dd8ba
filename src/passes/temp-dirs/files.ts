/**
 * The files side of the passes over hermes' temp directories (the shell snapshots and the session files), what both
 * share: a temp directory opened once, and every entry reached relative to that descriptor, through
 * `/proc/self/fd/<fd>/<name>` (Node.js has no `openat` or `unlinkat`; the kernel resolves that magic link to the very
 * directory opened, never again by its path), so a directory on the way swapped for a symlink cannot redirect a read
 * or a removal. The name is a single plain component: `lstat` and `unlink` do not follow a last component that is a
 * symlink. In a sticky temp directory (`/tmp`) only a file's owner (or root) can rename, replace or remove it. The
 * listing is bounded by the run's cap (`SESSION_ENTRIES_CAP`) and sliced.
 */
import fs, { constants, type Stats } from 'node:fs';
import { readDirSliced } from '../../adapters/dir-slices.js';

/** An open temp directory. */
export interface TempDirHandle {
  dir: string;
  fd: number;
  dev: number;
  ino: number;
}

/** One file of the temp directory whose name is exactly a snapshot's. */
export interface SnapshotFile {
  name: string;
  uid: number;
  dev: number;
  ino: number;
  mtimeMs: number;
  size: number;
  /** Bytes it has on disk (`st_blocks * 512`): less than `size` for a sparse file. */
  allocated: number;
  regular: boolean;
  symlink: boolean;
}

const at = (h: TempDirHandle, name: string) => `/proc/self/fd/${h.fd}/${name}`;

/**
 * Opens the temp directory (a symlink to a directory as the configured path itself is followed, as hermes does).
 * With `owner` (root over another user's home, who named it): never through a symlink, and it must still be that
 * user's (it was checked just before: a swap since is refused, `EPERM`).
 */
export function openTempDir(dir: string, owner?: number): TempDirHandle {
  const fd = fs.openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NONBLOCK | (owner === undefined ? 0 : constants.O_NOFOLLOW));
  const st = fs.fstatSync(fd);
  if (owner !== undefined && st.uid !== owner) {
    fs.closeSync(fd);
    throw Object.assign(new Error(`${dir} is no longer the home owner's`), { code: 'EPERM' });
  }
  return { dir, fd, dev: st.dev, ino: st.ino };
}

export function closeTempDir(h: TempDirHandle): void {
  try {
    fs.closeSync(h.fd);
  } catch {
    /* already closed */
  }
}

export function lstatAt(h: TempDirHandle, name: string): Stats | null {
  try {
    return fs.lstatSync(at(h, name));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** A directory entry's facts as `lstat` gave them (what a removal checks again). */
export const factsOf = (name: string, st: Stats): SnapshotFile => ({
  name,
  uid: st.uid,
  dev: st.dev,
  ino: st.ino,
  mtimeMs: st.mtimeMs,
  size: st.size,
  allocated: st.blocks * 512,
  regular: st.isFile(),
  symlink: st.isSymbolicLink(),
});

/**
 * At most this many of hermes' entries (a session, a background job's files, a directory, a socket) are taken from
 * the session directories in one run of a pass: a directory of 300,000 of hermes' names is read whole, in slices, and
 * judged up to here (the first read); the others are not judged this run, and the run says so. The memory a pass
 * holds, and its report, stay bounded whatever users put there (#47).
 */
export const SESSION_ENTRIES_CAP = 20_000;

/** What a run of a pass may still take (`SESSION_ENTRIES_CAP` at its start), shared by its directories. */
export interface EntriesBudget {
  left: number;
}

/** The names a directory listing kept, and whether it stopped taking entries at the run's cap. */
export interface NamesRead {
  names: string[];
  /** More entries were there than the run had left: how many were taken from this directory (maybe 0), else absent. */
  capped?: number;
  /** The run's abort stopped the listing. */
  cutShort?: boolean;
}

/**
 * The names directly in the directory that belong to an entry (`entryOf`: its key, or null for a name that is none of
 * hermes'), read through its descriptor a few at a time (`opendir`: no listing is ever held whole; other names are
 * dropped as read), the event loop given a turn between slices (`pause`: true once the run is aborted, which stops the
 * listing); every name of the first entries the budget has room for (taken from it), none of the others.
 */
export async function readNames(
  h: TempDirHandle,
  entryOf: (name: string) => string | null,
  opts: { pause: () => Promise<boolean>; budget: EntriesBudget },
): Promise<NamesRead> {
  const taken = new Set<string>();
  let capped: number | undefined;
  const keep = (e: { name: string }): string | null => {
    const key = entryOf(e.name);
    if (key === null) return null;
    if (!taken.has(key)) {
      if (opts.budget.left <= 0) {
        capped = taken.size;
        return null; // the rest of its names may belong to entries taken
      }
      opts.budget.left--;
      taken.add(key);
    }
    return e.name;
  };
  const read = await readDirSliced(at(h, '.'), { max: Infinity, keep, pause: opts.pause });
  return { names: read.kept, ...(read.cutShort ? { cutShort: true } : {}), ...(capped !== undefined ? { capped } : {}) };
}

export type UnlinkOutcome = { status: 'removed' } | { status: 'gone' } | { status: 'changed'; detail: string } | { status: 'failed'; code: string };

/**
 * Removes one file if it is still the one judged: right before the `unlink`, a fresh `lstat` must show a regular
 * file (`type`: a socket, for hermes' RPC sockets) with the same inode, device, owner and modification time, on the
 * temp directory's filesystem. What is gone first (hermes' own pruner) is `gone`, never a failure.
 */
export function unlinkIfUnchanged(
  h: TempDirHandle,
  f: Pick<SnapshotFile, 'name' | 'ino' | 'dev' | 'uid' | 'mtimeMs'>,
  type: 'file' | 'socket' = 'file',
): UnlinkOutcome {
  let st: Stats | null;
  try {
    st = lstatAt(h, f.name);
  } catch (err) {
    return { status: 'failed', code: (err as NodeJS.ErrnoException).code ?? 'error' };
  }
  if (!st) return { status: 'gone' };
  if (type === 'file' && !st.isFile()) return { status: 'changed', detail: 'no longer a regular file' };
  if (type === 'socket' && !st.isSocket()) return { status: 'changed', detail: 'no longer a socket' };
  if (st.ino !== f.ino || st.dev !== f.dev || st.uid !== f.uid) return { status: 'changed', detail: 'replaced since it was judged' };
  if (st.dev !== h.dev) return { status: 'changed', detail: 'on another filesystem' };
  if (st.mtimeMs !== f.mtimeMs) return { status: 'changed', detail: 'changed since it was judged' };
  try {
    fs.unlinkSync(at(h, f.name));
    return { status: 'removed' };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return code === 'ENOENT' ? { status: 'gone' } : { status: 'failed', code };
  }
}
