/**
 * The files side of the shell-snapshot pass (rules in `rule.ts`): its names listed, a snapshot's facts, and the
 * secret-looking names a snapshot declares, read with `O_NOFOLLOW` relative to the temp directory's open descriptor
 * (`temp-dirs/files.ts`, which also removes a file only if it is still the one judged).
 */
import fs, { constants } from 'node:fs';
import { type EntriesBudget, type NamesRead, type SnapshotFile, type TempDirHandle, factsOf, lstatAt, readNames } from '../temp-dirs/files.js';
import { secretNamesIn, snapshotName } from './rule.js';

/**
 * The most of a snapshot read for names (an `export -p` dump is a few KiB): a file anyone can make as large as they
 * like costs at most this, and never more than the blocks it has on disk (a sparse file's holes are not read).
 */
export const MAX_SNAPSHOT_BYTES = 256 * 1024;

const at = (h: TempDirHandle, name: string) => `/proc/self/fd/${h.fd}/${name}`;

/** The names directly in the directory that are exactly snapshot names, read as `readNames` reads (nothing else read). */
export function snapshotNames(h: TempDirHandle, pause: () => Promise<boolean>, budget: EntriesBudget): Promise<NamesRead> {
  return readNames(h, (name) => snapshotName(name)?.id ?? null, { pause, budget });
}

/** One of them, with its `lstat` (null: gone since the listing). */
export function snapshotFile(h: TempDirHandle, name: string): SnapshotFile | null {
  const st = lstatAt(h, name);
  return st ? factsOf(name, st) : null;
}

/**
 * The secret-looking variable names a snapshot declares, or null when it cannot be read (another user's, as a
 * user; replaced since it was listed). Opened without following a symlink, checked to be the file listed; the
 * text is parsed for names and dropped.
 */
export function readSecretNames(h: TempDirHandle, f: SnapshotFile): string[] | null {
  let fd: number;
  try {
    fd = fs.openSync(at(h, f.name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.ino !== f.ino || st.dev !== f.dev) return null;
    // A small file may keep its bytes inline (no blocks of its own on some filesystems): read up to a block of it.
    const onDisk = st.blocks > 0 ? st.blocks * 512 : 4096;
    const buf = Buffer.alloc(Math.min(st.size, onDisk, MAX_SNAPSHOT_BYTES));
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    return secretNamesIn(buf.toString('latin1', 0, n));
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}
