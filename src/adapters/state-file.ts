import fs from 'node:fs';
import path from 'node:path';
import { type HeldLock, acquireLock, unlinkQuiet, writeTemp } from './file-lock.js';
import { TrustError, assertRootMayWrite, readFileSafely } from './trust.js';

/** What reading a state file found. */
export interface StateRead {
  /** The parsed JSON, or undefined when the file is missing or unusable. */
  value: unknown;
  /** Why the value is undefined although a file is there (corrupt JSON, a symlink, unreadable). */
  problem?: string;
  /** No file because something on its path that should be a directory is not one (ENOTDIR): a home that is a file. */
  notDirectory?: true;
}

/** Whether a read found something: a value, or a file that is there but unusable (its `problem`). */
export function hasState(read: StateRead): boolean {
  return read.value !== undefined || read.problem !== undefined;
}

/** The next state after an update: `undefined` deletes the file. */
export interface StateUpdate<R> {
  next: unknown;
  result: R;
}

/**
 * A JSON state document with serialised read-modify-write. Breakers take one of these, so a harness can use
 * the file-backed store (default) or keep state in memory.
 */
export interface StateStore {
  /** Where the state lives (a path, or `memory:`). */
  readonly location: string;
  read(): Promise<StateRead>;
  /** Reads, applies `fn` and writes the result atomically, serialised against other processes. */
  update<R>(fn: (current: StateRead) => StateUpdate<R>): Promise<R>;
  /** Deletes the state. */
  remove(): Promise<void>;
}

/** A state file larger than this is not read (it is treated as empty, with a problem). */
export const MAX_STATE_BYTES = 16 * 1024 * 1024;

/** The lock could not be taken in time. */
export class StateLockTimeout extends Error {
  constructor(readonly lockPath: string) {
    super(`timed out waiting for the lock ${lockPath}`);
    this.name = 'StateLockTimeout';
  }
}

export interface FileStateStoreOptions {
  /** How long an update waits for another process's update (default 5 s). */
  lockWaitMs?: number;
  /**
   * Flush each write to disk before it takes the state file's name (default true). False keeps writes atomic
   * against a killed process but not against a power loss (the last update may be lost; the file is never torn
   * by a crash of the writer): for state that is only a counter, where a hook's start-up time matters more.
   */
  durable?: boolean;
  /**
   * Whether taking the lock removes what crashed writers left in the file's directory (default true). False for a
   * file updated on every hook call, whose directory another store (updated less often) keeps clean.
   */
  removeLeftovers?: boolean;
  /**
   * Whether a reader that takes no lock always finds the file (default true): the new state is renamed over the old.
   * False removes the old file just before that rename, for a file only read under its lock: renaming over an
   * existing file makes ext4 write the new one out at once (its auto_da_alloc), about 0.4 ms of a hook. A writer
   * killed between the two loses the state, as a power loss would without `durable`.
   */
  alwaysPresent?: boolean;
}

/** A state file: mode 0600, directories 0700, atomic writes, never following a symlink at its path. */
export class FileStateStore implements StateStore {
  readonly location: string;
  private readonly lockWaitMs: number;
  private readonly durable: boolean;
  private readonly removeLeftovers: boolean;
  private readonly alwaysPresent: boolean;

  constructor(
    readonly file: string,
    opts: FileStateStoreOptions = {},
  ) {
    this.location = file;
    this.lockWaitMs = opts.lockWaitMs ?? 5000;
    this.durable = opts.durable ?? true;
    this.removeLeftovers = opts.removeLeftovers ?? true;
    this.alwaysPresent = opts.alwaysPresent ?? true;
  }

  // Synchronous I/O inside the async methods: a state file is small and local, and each thread-pool round trip
  // costs more than the operation; hooks run this on every tool call, so start-up time matters.
  async read(): Promise<StateRead> {
    let text: string;
    try {
      // Never through a symlink at the state path; a FIFO there cannot block the open (and so wedge the caller): it is
      // refused as not a regular file. As root, walked one directory at a time (adapters/trust.ts).
      text = readFileSafely(this.file, MAX_STATE_BYTES, { noFollow: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return { value: undefined };
      if (code === 'ENOTDIR') return { value: undefined, notDirectory: true };
      if (code === 'ELOOP') {
        // A symlink at the state path, or (as root) one on the way in a directory another user can change.
        return {
          value: undefined,
          problem: err instanceof TrustError ? `${err.message}; it is ignored` : `${this.file} is a symlink; it is ignored and will be replaced`,
        };
      }
      if (code === 'ENOTREG' || code === 'EISDIR')
        return { value: undefined, problem: `${this.file} is not a regular file; it is ignored and will be replaced` };
      if (code === 'EFBIG') return { value: undefined, problem: `${this.file} is larger than ${MAX_STATE_BYTES} bytes; it is treated as empty` };
      if (code === 'EXDEV' || code === 'ECHANGED') return { value: undefined, problem: `${(err as Error).message}; it is treated as empty` };
      throw err;
    }
    try {
      return { value: JSON.parse(text) as unknown };
    } catch {
      return { value: undefined, problem: `${this.file} is not valid JSON; it is treated as empty` };
    }
  }

  async update<R>(fn: (current: StateRead) => StateUpdate<R>): Promise<R> {
    const lock = await this.lock();
    try {
      const { next, result } = fn(await this.read());
      if (next === undefined) await this.remove();
      else await this.write(next);
      return result;
    } finally {
      await lock.release();
    }
  }

  /**
   * Takes the state file's lock, making its directory (mode 0700) when the lock cannot be made for want of it: once,
   * not on every update (hooks update on every tool call).
   */
  private async lock(): Promise<HeldLock> {
    const lockPath = this.lockPath;
    assertRootMayWrite(path.dirname(this.file)); // as root, never in a directory another user can change
    // No refresh timer: the lock is held for one read, one write and its release. Nothing in between returns to the
    // event loop (`fn` is synchronous, and so is the I/O), so a timer could never fire before the release; a release
    // that must wait for a busy guard gives up after about 10 s, well inside the 30 s after which a lock is stale.
    const take = () => acquireLock(lockPath, { waitMs: this.lockWaitMs, staleMs: 30_000, refresh: false, removeLeftovers: this.removeLeftovers });
    let lock: HeldLock | null;
    try {
      lock = await take();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 }); // throws what a missing directory is
      lock = await take();
    }
    if (!lock) throw new StateLockTimeout(lockPath);
    return lock;
  }

  private get lockPath(): string {
    return `${this.file}.lock`;
  }

  /** Whether the file's lock is there (an update is under way, or its holder died holding it). */
  lockPresent(): boolean {
    try {
      fs.lstatSync(this.lockPath);
      return true;
    } catch {
      return false;
    }
  }

  async remove(): Promise<void> {
    try {
      assertRootMayWrite(path.dirname(this.file));
      fs.unlinkSync(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  /**
   * Writes a temporary file in the same directory, flushes it (`durable`), then renames it over the state file (or
   * into its place, having removed it: `alwaysPresent` false). Temporary and
   * set-aside files that crashed processes left in the directory are removed when the lock is taken (by this store,
   * or by the one that keeps its directory clean: `removeLeftovers`).
   */
  private async write(value: unknown): Promise<void> {
    const { tmp, fd } = writeTemp(this.file, `${JSON.stringify(value)}\n`);
    try {
      try {
        // On disk before it takes the state file's name: a crash never leaves an empty or torn state file.
        if (this.durable) fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      if (!this.alwaysPresent) unlinkQuiet(this.file);
      fs.renameSync(tmp, this.file);
    } catch (err) {
      unlinkQuiet(tmp);
      throw err;
    }
  }
}

/**
 * A view of another store that reads through and never writes: `update` computes its result from the current state
 * and discards the next state. For reports (`status`) that judge with the same code as a sweep but must not write.
 */
export class ReadOnlyStateStore implements StateStore {
  readonly location: string;
  constructor(private readonly inner: StateStore) {
    this.location = inner.location;
  }
  read(): Promise<StateRead> {
    return this.inner.read();
  }
  async update<R>(fn: (current: StateRead) => StateUpdate<R>): Promise<R> {
    return fn(await this.inner.read()).result;
  }
  async remove(): Promise<void> {
    /* read-only */
  }
}

/** In-memory state, for library callers and tests. Holds a JSON copy, so callers never share objects. */
export class MemoryStateStore implements StateStore {
  readonly location = 'memory:';
  private text: string | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(initial?: unknown) {
    this.text = initial === undefined ? undefined : JSON.stringify(initial);
  }

  async read(): Promise<StateRead> {
    return { value: this.text === undefined ? undefined : (JSON.parse(this.text) as unknown) };
  }

  update<R>(fn: (current: StateRead) => StateUpdate<R>): Promise<R> {
    const run = this.queue.then(async () => {
      const { next, result } = fn(await this.read());
      this.text = next === undefined ? undefined : JSON.stringify(next);
      return result;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async remove(): Promise<void> {
    this.text = undefined;
  }

  /** The stored value (a copy), or undefined. */
  snapshot(): unknown {
    return this.text === undefined ? undefined : JSON.parse(this.text);
  }
}
