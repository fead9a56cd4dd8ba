/** hermes' sandbox directories, made the way hermes makes them, for the sandbox-dirs tests. */
import { execFileSync } from 'node:child_process';
import { lstatSync, lutimesSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** hermes-agent's `sanitize_task_id_for_path` (tools/environments/path_utils.py): src/hermes/task-ids.ts `taskDirName`. */
export { taskDirName as sanitizeTaskIdForPath } from '../../src/hermes/task-ids.js';
import { taskDirName as sanitizeTaskIdForPath } from '../../src/hermes/task-ids.js';

/**
 * `<root>/docker/<task dir>/{home,workspace}` as hermes' `_mount_args` makes them (os.makedirs of both), with a
 * few files the way an agent leaves them (a package cache, a clone). Returns the task directory and its two mounts.
 */
export function makeTaskDir(root: string, taskId: string, kb = 40): { dir: string; home: string; workspace: string } {
  const dir = path.join(root, 'docker', sanitizeTaskIdForPath(taskId));
  const home = path.join(dir, 'home');
  const workspace = path.join(dir, 'workspace');
  mkdirSync(path.join(home, '.cache', 'pip'), { recursive: true });
  mkdirSync(path.join(workspace, 'repo', 'src'), { recursive: true });
  writeFileSync(path.join(home, '.bash_history'), 'ls\n');
  writeFileSync(path.join(home, '.cache', 'pip', 'wheel.whl'), Buffer.alloc(kb * 1024, 7));
  writeFileSync(path.join(workspace, 'repo', 'src', 'main.py'), 'print(1)\n');
  return { dir, home, workspace };
}

/** Sets the access and modification times of every entry under `dir` (and `dir`), symlinks themselves included. */
export function ageTree(dir: string, when: Date): void {
  const walk = (p: string) => {
    if (lstatSync(p).isDirectory()) for (const name of readdirSync(p)) walk(path.join(p, name));
    lutimesSync(p, when, when);
  };
  walk(dir);
}

/** `du -sxB1 PATHS...` summed: what the paths take on disk together (a hard-linked file once). */
export function du(paths: string[]): number {
  if (paths.length === 0) return 0;
  return execFileSync('du', ['-sxB1', ...paths], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .reduce((n, line) => n + Number(line.split('\t')[0]), 0);
}
