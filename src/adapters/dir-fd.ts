/**
 * Descriptor-relative file operations, for removing trees as root without a path another user can redirect.
 *
 * A removal by path (`unlink('<dir>/<name>')`) resolves `<dir>` again at every call: whoever can write above
 * `<name>` can swap a directory for a symlink between the check and the unlink, and the unlink then lands wherever
 * the link points (the tmpwatch/tmpreaper hole). Safe removers work relative to open directory descriptors
 * (`openat(O_NOFOLLOW|O_DIRECTORY)`, `unlinkat`, `fstatat(AT_SYMLINK_NOFOLLOW)`): GNU `rm -r`, systemd-tmpfiles.
 *
 * Node's fs has no `*at` calls, but Linux gives the same through `/proc/self/fd/<n>`: resolving that "magic link"
 * jumps to the very directory the descriptor holds (the kernel's `nd_jump_link`; no path is walked again), so
 * `unlink('/proc/self/fd/<n>/<name>')` is `unlinkat(n, name, 0)`, `lstat` of it is `fstatat(n, name,
 * AT_SYMLINK_NOFOLLOW)`, and `open` of it with `O_NOFOLLOW|O_DIRECTORY` is `openat(n, name, ...)`. `<name>` is one
 * component read from that directory (never `/`, `.` or `..`), and the last component of an unlink, rmdir, rename,
 * lstat or `O_NOFOLLOW` open is never followed. Where `/proc` is not mounted, nothing is removed (`DirFdUnavailable`).
 *
 * Chosen over `rm -rf --one-file-system` on the claimed directory: GNU rm compares devices only, so it enters a bind
 * mount of the same filesystem (hermes' own mounts are binds), and it reports what it refused as localised text.
 * Here every directory's mount id (`/proc/self/fdinfo/<n>`) is compared too, and each refusal is a code and a path.
 */
import { constants, promises as fs, readFileSync, type Stats } from 'node:fs';
import path from 'node:path';

const OPEN_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** `/proc/self/fd` cannot be used here (not Linux, or `/proc` not mounted): a removal refuses before it starts. */
export class DirFdUnavailable extends Error {
  readonly code = 'ENOPROC';
}

/** The directory an entry was expected to be is something else now (a symlink, a file, another directory). */
export const SWAPPED = 'swapped';

/**
 * The descriptor-relative path of `name` in the directory open as `fd`: `openat`/`fstatat`/`unlinkat` through
 * `/proc/self/fd/<fd>/<name>` (`name` one component read from that directory or given by the caller: never `/`, `.`,
 * `..` or empty). Also for synchronous callers (adapters/trust.ts walks paths with it one component at a time).
 */
export function fdPath(fd: number, name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/')) throw new Error(`not a single path component: ${JSON.stringify(name)}`);
  return `/proc/self/fd/${fd}/${name}`;
}

/** The mount id of an open descriptor (`mnt_id:` of `/proc/self/fdinfo/<n>`, Linux 3.15+), or null where not shown. */
export function mountIdOf(fd: number): number | null {
  try {
    const m = /^mnt_id:\s*(\d+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** One open directory: every operation on its entries goes through its descriptor, never through `shown`. */
export class DirFd {
  private constructor(
    private readonly handle: fs.FileHandle,
    /** The path this directory had when reached (for messages only: it may have moved since). */
    readonly shown: string,
    /** `fstat` of the descriptor: the directory held, wherever it is now. */
    readonly st: Stats,
    /** Its mount id; a directory whose id differs from its parent's is a mount point (bind mounts included). */
    readonly mountId: number | null,
  ) {}

  /**
   * Opens a directory by path, symlinks in it followed (a configured sandbox root may be a link), and checks that
   * it is the directory expected (`dev`/`ino` as listed), so a swap of the path since then is refused.
   * Throws `DirFdUnavailable` where `/proc/self/fd` does not lead to it.
   */
  static async open(p: string, expect?: { dev: number; ino: number }): Promise<DirFd | typeof SWAPPED> {
    const handle = await fs.open(p, constants.O_RDONLY | constants.O_DIRECTORY);
    const dir = await DirFd.wrap(handle, p);
    if (expect && (dir.st.dev !== expect.dev || dir.st.ino !== expect.ino)) {
      await dir.close();
      return SWAPPED;
    }
    try {
      const via = await fs.stat(`/proc/self/fd/${handle.fd}`);
      if (via.ino !== dir.st.ino || via.dev !== dir.st.dev) throw new Error('mismatch');
    } catch {
      await dir.close();
      throw new DirFdUnavailable('/proc/self/fd does not lead to open directories here (is /proc mounted?)');
    }
    return dir;
  }

  private static async wrap(handle: fs.FileHandle, shown: string): Promise<DirFd> {
    try {
      return new DirFd(handle, shown, await handle.stat(), mountIdOf(handle.fd));
    } catch (err) {
      await handle.close().catch(() => {});
      throw err;
    }
  }

  /** The descriptor-relative path of an entry (`name` is one component read from this directory). */
  at(name: string): string {
    return fdPath(this.handle.fd, name);
  }

  /** Path of an entry for messages. */
  show(name: string): string {
    return path.join(this.shown, name);
  }

  /** The path its entries are listed through (`/proc/self/fd/<n>`): read with dir-slices.ts, a slice at a time. */
  listPath(): string {
    return `/proc/self/fd/${this.handle.fd}`;
  }

  /** `fstatat(AT_SYMLINK_NOFOLLOW)`. */
  lstat(name: string): Promise<Stats> {
    return fs.lstat(this.at(name));
  }

  /**
   * `openat(O_NOFOLLOW|O_DIRECTORY)` of an entry that `lstat` showed as directory `seen`: `SWAPPED` when it is a
   * symlink, not a directory, or another directory than the one seen.
   */
  async openChild(name: string, seen: Stats): Promise<DirFd | typeof SWAPPED> {
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(this.at(name), OPEN_DIR);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ELOOP' || code === 'ENOTDIR') return SWAPPED;
      throw err;
    }
    const child = await DirFd.wrap(handle, this.show(name));
    if (child.st.ino !== seen.ino || child.st.dev !== seen.dev) {
      await child.close();
      return SWAPPED;
    }
    return child;
  }

  unlink(name: string): Promise<void> {
    return fs.unlink(this.at(name));
  }

  rmdir(name: string): Promise<void> {
    return fs.rmdir(this.at(name));
  }

  /** `renameat` within this directory. */
  rename(from: string, to: string): Promise<void> {
    return fs.rename(this.at(from), this.at(to));
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
