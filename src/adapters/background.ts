import { spawn } from 'node:child_process';
import fs, { closeSync, constants, promises as fsp, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../errors.js';
import { NAMES, type Rights, TrustError, type Walked, rootRules, walkDir, withOwnerRights } from './trust.js';
import { fdPath } from './dir-fd.js';
import { logDirProblem, shown } from '../core/trust.js';

/** The log is rotated to `<log>.1` once it passes this size, so it never grows without bound. */
export const LOG_CAP_BYTES = 1024 * 1024;

const BIN = fileURLToPath(new URL('../../bin/hermes-janitor.js', import.meta.url));

/**
 * Starts `hermes-janitor ARGS` detached from the terminal (own session, no stdin), appending its output to
 * `log` (mode 0600; rotated at 1 MiB, one old file kept). As root, the log is opened with `rights` (the home's owner,
 * when the log is in another user's home: `withOwnerRights`), never through a symlink, only in a directory nobody but
 * its writer can change, and only if it is a regular file of its writer's (`openLogStrictly`); else a usage error.
 * Returns the child's pid.
 */
export async function detachToLog(
  args: readonly string[],
  log: string,
  env: Record<string, string | undefined>,
  now: Date,
  rights: Rights | null = null,
): Promise<number | undefined> {
  const fd = rootRules() ? withOwnerRights(rights, () => openLogStrictly(log)) : await openLogPlainly(log);
  try {
    // The header repeats the command line: a password in an engine address (`--host tcp://u:secret@h`) is masked.
    const shownArgs = args.map((a) => a.replace(/(:\/\/[^:/@\s]*):[^@/\s]*@/g, '$1:***@'));
    writeSync(fd, `--- ${now.toISOString()} hermes-janitor ${shownArgs.join(' ')}\n`);
    const child = spawn(process.execPath, [BIN, ...args], {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: env as NodeJS.ProcessEnv,
    });
    child.on('error', () => undefined);
    child.unref();
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/** Not root: the log by its path, as before (the user's own rights bound it). */
async function openLogPlainly(log: string): Promise<number> {
  await fsp.mkdir(path.dirname(log), { recursive: true, mode: 0o700 });
  try {
    if ((await fsp.stat(log)).size > LOG_CAP_BYTES) await fsp.rename(log, `${log}.1`);
  } catch {
    /* no log yet */
  }
  return openSync(log, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK, 0o600);
}

const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * As root (with the rights of whoever the log is written as): the log's directory, reached by a walk, must be one
 * nobody but the writer can change; the log is opened in it by descriptor, `O_NOFOLLOW`, created new
 * (`O_EXCL|O_NOFOLLOW`, 0600) when it is not there, and must then be a regular file of the writer's with one link.
 * A symlinked log is never followed: its target is neither created nor appended to. Synchronous (see
 * `withOwnerRights`).
 */
function openLogStrictly(log: string): number {
  const dir = path.dirname(path.resolve(log));
  const name = path.basename(log);
  const writer = process.geteuid!();
  const refuse = (why: string) => new UsageError(`cannot write the log ${shown(log)}: ${why}`);
  // Judged before anything is made there (a missing directory by the deepest one that is), and again once made.
  let w = logDir(dir, writer, refuse);
  if (w.missing) {
    closeSync(w.fd);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    w = logDir(dir, writer, refuse);
    if (w.missing) {
      closeSync(w.fd);
      throw refuse('its directory could not be made');
    }
  }
  try {
    let fd = openExisting(w.fd, name, refuse);
    if (fd !== null && fs.fstatSync(fd).size > LOG_CAP_BYTES) {
      closeSync(fd);
      fs.renameSync(fdPath(w.fd, name), fdPath(w.fd, `${name}.1`));
      fd = null;
    }
    if (fd === null) fd = openSync(fdPath(w.fd, name), APPEND | constants.O_CREAT | constants.O_EXCL, 0o600);
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.uid !== writer || st.nlink !== 1) {
      closeSync(fd);
      throw refuse(
        !st.isFile()
          ? 'it is not a regular file'
          : st.uid !== writer
            ? `it belongs to uid ${st.uid}, not to its writer (uid ${writer}): remove it`
            : 'it has other hard links: remove it',
      );
    }
    return fd;
  } finally {
    closeSync(w.fd);
  }
}

/** The walk to the log's directory, refused when anybody but the writer can change it. */
function logDir(dir: string, writer: number, refuse: (why: string) => Error): Walked {
  let w: Walked;
  try {
    w = walkDir(dir, { followUserLinks: true });
  } catch (err) {
    throw refuse((err as Error).message);
  }
  const problem = logDirProblem(
    dir,
    [...w.controllers.values()].map((c) => c.who),
    writer,
    NAMES,
  );
  if (problem) {
    closeSync(w.fd);
    throw refuse(problem);
  }
  return w;
}

/** The log if it is there (a regular file, not a symlink), or null; what else is there is refused. */
function openExisting(dirFd: number, name: string, refuse: (why: string) => Error): number | null {
  try {
    const fd = openSync(fdPath(dirFd, name), APPEND);
    if (!fs.fstatSync(fd).isFile()) {
      closeSync(fd);
      throw refuse('it is not a regular file (a FIFO or a device): remove it');
    }
    return fd;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw refuse('it is a symlink, never followed: remove it');
    if (code === 'ENXIO') throw refuse('it is a FIFO: remove it');
    if (err instanceof UsageError || err instanceof TrustError) throw err;
    throw refuse(`${code ?? (err as Error).message}`);
  }
}
