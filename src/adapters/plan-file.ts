/**
 * The plan files of `reap --plan-out` and `reap --plan` (format in reaper/plan.ts). A plan names the containers a
 * later run removes, so a plan root applies must be one nobody but root could have written or changed (core/trust.ts
 * `planFileProblem`); and writing one never goes through what is already at its name (a symlink or a file another
 * user planted in a shared directory).
 */
import fs, { constants } from 'node:fs';
import path from 'node:path';
import { ExitCode, JanitorError, UsageError } from '../errors.js';
import { planFileProblem, shown } from '../core/trust.js';
import { fdPath } from './dir-fd.js';
import { openFileSafely, rootRules, walkDir } from './trust.js';

/**
 * The text of a plan file. As root it is reached by a walk (a symlink followed only where nobody but root can change
 * the directory holding it), must be a regular file, root's, and writable by nobody else; else a usage error naming it.
 */
export function readPlanFile(file: string): string {
  let opened;
  try {
    opened = openFileSafely(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR' ? code : (err as Error).message;
    throw new UsageError(`cannot read plan ${shown(file)} (${why}): give the file written by --plan-out`);
  }
  try {
    const problem = rootRules() ? planFileProblem(file, opened.st) : null;
    if (problem) throw new UsageError(problem);
    return fs.readFileSync(opened.fd, 'utf8');
  } finally {
    fs.closeSync(opened.fd);
  }
}

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Writes a plan file: a new file beside it (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600), flushed, then renamed over the
 * name, so whatever was at the name (a file someone planted first, a symlink) is replaced, never written through. As
 * root the directory is reached by a walk (no symlink another user placed is followed). A failure is exit 1.
 */
export function writePlanFile(file: string, text: string): void {
  const dir = path.dirname(path.resolve(file));
  const name = path.basename(file);
  const tmpName = `.${name}.${process.pid}.${Math.floor(Math.random() * 0x100000000)
    .toString(16)
    .padStart(8, '0')}.tmp`;
  let dirFd: number | null = null;
  try {
    if (rootRules()) {
      const w = walkDir(dir);
      dirFd = w.fd;
      if (w.missing) throw Object.assign(new Error(`no directory ${dir}`), { code: 'ENOENT' });
    }
    const at = (n: string) => (dirFd === null ? path.join(dir, n) : fdPath(dirFd, n));
    const fd = fs.openSync(at(tmpName), CREATE, 0o600);
    try {
      try {
        fs.writeFileSync(fd, text);
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(at(tmpName), at(name));
    } catch (err) {
      try {
        fs.unlinkSync(at(tmpName));
      } catch {
        /* gone */
      }
      throw err;
    }
  } catch (err) {
    throw new JanitorError(`cannot write plan ${shown(file)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, ExitCode.FAILED);
  } finally {
    if (dirFd !== null) fs.closeSync(dirFd);
  }
}
