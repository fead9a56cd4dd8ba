/**
 * The filesystem side of the sandbox-directory pass (rules in `rule.ts`): listing the task directories of a sandbox
 * root (`<sandbox root>/docker/*`). Measuring and removing one is the shared tree walker, `dir-trees/files.ts`.
 */
import { promises as fs, type Stats } from 'node:fs';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import path from 'node:path';
import { readDirSliced } from '../../adapters/dir-slices.js';
import { UsageError } from '../../errors.js';
import { type EntryKind, codeOf, isGone, kindOf, lstatOrNull } from '../dir-trees/files.js';
import { type SandboxRoot, TASK_DIRS_CAP, rootProblem, taskDirsParent } from './rule.js';

/** `<root>/docker` and what is directly in it. */
export interface TaskDirListing {
  /** `<root>/docker` as configured. */
  parent: string;
  /** Its spellings: as configured, and resolved (symlinks in the root's path), for comparing mount sources. */
  parentForms: string[];
  /** Its device (`st_dev`): a task directory on another one is a mount point. Null when there is no such directory. */
  parentDev: number | null;
  /** Its inode: a removal checks that the directory it opens is still this one (not a symlink swapped in since). */
  parentIno: number | null;
  entries: Array<{ name: string; path: string; kind: EntryKind }>;
  /** `<root>/docker` holds more than `TASK_DIRS_CAP` entries: how many were taken (the first read); the others wait. */
  capped?: number;
}

/**
 * Lists the task directories of a sandbox root. A root (or `<root>/docker`) that does not exist has none; one that
 * exists but is not a directory (a file, a dangling symlink) is bad input: `UsageError`, one line naming it.
 * The root and `<root>/docker` may be symlinks to directories (hermes follows them too).
 */
export async function listTaskDirs(r: SandboxRoot, opts: { signal?: AbortSignal | undefined } = {}): Promise<TaskDirListing> {
  const parent = taskDirsParent(r.root);
  if (!(await isDirectory(r, r.root)) || !(await isDirectory(r, parent)))
    return { parent, parentForms: [parent], parentDev: null, parentIno: null, entries: [] };
  let read;
  try {
    read = await readDirSliced(parent, {
      max: TASK_DIRS_CAP,
      keep: (e) => e.name,
      pause: async () => {
        await yieldToLoop();
        return opts.signal?.aborted === true;
      },
    });
  } catch (err) {
    throw new UsageError(rootProblem(r, parent, `cannot be read (${codeOf(err)})`));
  }
  const entries = await Promise.all(
    read.kept.sort().map(async (name) => {
      const p = path.join(parent, name);
      return { name, path: p, kind: kindOf(await lstatOrNull(p)) };
    }),
  );
  const real = await fs.realpath(parent).catch(() => parent);
  const pst = await fs.stat(parent);
  const capped = read.more ? { capped: entries.length } : {};
  return { parent, parentForms: real === parent ? [parent] : [parent, real], parentDev: pst.dev, parentIno: pst.ino, entries, ...capped };
}

/** True for a directory (or a symlink to one), false when nothing is there; bad input (`UsageError`) otherwise. */
async function isDirectory(r: SandboxRoot, p: string): Promise<boolean> {
  let st: Stats;
  try {
    st = await fs.stat(p);
  } catch (err) {
    const dangling =
      isGone(err) &&
      (await fs.lstat(p).then(
        () => true,
        () => false,
      ));
    if (isGone(err) && !dangling) return false;
    throw new UsageError(rootProblem(r, p, dangling ? 'is a symlink to nothing' : `cannot be read (${codeOf(err)})`));
  }
  if (!st.isDirectory()) throw new UsageError(rootProblem(r, p, 'is not a directory'));
  return true;
}
