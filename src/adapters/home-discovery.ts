/**
 * The hermes homes of a run over several (`--homes`, `--all-homes`): paths and globs as given, each user's `~/.hermes`
 * from the password database, and the hermes root of every living hermes process (its `HERMES_HOME`, or the root it
 * serves). Globs are expanded one path component at a time as sh does (`*`, `?`, `[...]`; a leading dot matched only
 * by a leading dot), reading only the directories a pattern component names: no library does this per component
 * without walking whole trees, and a home is then judged by the trust rules (`adapters/trust.ts` `homeAccess`) whoever
 * made the path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_HOME_DIRNAME } from '../defaults.js';
import { readDirCapped } from './dir-slices.js';
import { listHermesProcesses } from './hermes-processes.js';

/**
 * At most this many entries of one directory a glob component names are read (a slice at a time, only the matching
 * names kept): past it the run notes the directory and goes on with the matches read (#47).
 */
export const GLOB_DIR_ENTRIES_CAP = 65_536;

const GLOB = /[*?[]/;

/** A regular expression for one glob component (`*`, `?`, `[...]`, `[!...]`); everything else literal. */
function componentPattern(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) re += '\\[';
      else {
        const body = glob
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\');
        re += `[${body}]`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\\]]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * The directories an absolute path or glob names (a path without glob characters: itself, whether or not it exists).
 * A directory holding more than `GLOB_DIR_ENTRIES_CAP` entries is read that far, with a line in `notes` saying so.
 */
export function expandHomes(pattern: string, cwd: string, notes: string[] = []): string[] {
  const abs = path.resolve(cwd, pattern);
  if (!GLOB.test(abs)) return [abs];
  let at = ['/'];
  for (const part of abs.split('/').filter((p) => p !== '')) {
    if (!GLOB.test(part)) {
      at = at.map((d) => path.join(d, part));
      continue;
    }
    const re = componentPattern(part);
    const next: string[] = [];
    const keep = (n: string) => re.test(n) && (part.startsWith('.') || !n.startsWith('.'));
    for (const dir of at) {
      let read;
      try {
        read = readDirCapped(dir, { max: GLOB_DIR_ENTRIES_CAP, keep: (e) => (keep(e.name) ? e.name : null) });
      } catch {
        continue;
      }
      if (read.more)
        notes.push(`--homes ${pattern}: ${dir} holds more than ${GLOB_DIR_ENTRIES_CAP} entries: only the first ${GLOB_DIR_ENTRIES_CAP} read were matched`);
      for (const n of read.kept.sort()) next.push(path.join(dir, n));
    }
    at = next;
  }
  return at.filter(isDirectory);
}

/** A directory there (a path through a file, or one that cannot be looked at: not). */
function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Each user's `~/.hermes` that is a directory (`/etc/passwd`'s sixth field). */
export function passwdHomes(file = '/etc/passwd'): string[] {
  let text = '';
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const dir = line.split(':')[5];
    if (!dir || !dir.startsWith('/')) continue;
    const home = path.join(dir, DEFAULT_HOME_DIRNAME);
    let found = false;
    try {
      found = fs.lstatSync(home).isDirectory(); // a symlinked ~/.hermes is not taken from the table (--homes names one)
    } catch {
      /* none */
    }
    if (found) out.push(home);
  }
  return out;
}

/** The hermes root of a profile home (`<root>/profiles/<name>`), or the home itself. */
const rootOf = (home: string) => (path.basename(path.dirname(home)) === 'profiles' ? path.dirname(path.dirname(home)) : home);

/**
 * At most this many hermes roots the living processes of one user name are read in a run (#47): any user can start
 * processes that look like hermes with a `HERMES_HOME` of their choosing, and a flood of them must neither hold the run
 * past its deadline nor crowd out the roots of other users. Counted per user, oldest process first.
 */
export const PROCESS_ROOTS_PER_USER = 32;

/**
 * At most this many hermes roots a run over several homes reads (#47): `--homes` as given first, then the password
 * database's, then the living processes'. Past it the others are left out with a note: their containers are judged by
 * the homes read (a label none of them has is kept), as those of a home no process and no account names.
 */
export const ROOTS_PER_RUN_CAP = 4096;

/**
 * The hermes roots the living hermes processes of this host serve or run on (`HERMES_HOME`, their `--profile`'s root),
 * at most `PROCESS_ROOTS_PER_USER` per user (a note in `notes` for each user past it).
 */
export function processHomes(procRoot: string, notes: string[] = []): string[] {
  const table = listHermesProcesses({ procRoot });
  const byUser = new Map<number, Set<string>>();
  const over = new Set<number>();
  const out: string[] = [];
  for (const p of table.processes) {
    const o = p.ownership;
    const root = o?.serves === 'root' ? o.root : o?.serves === 'profile' && o.home ? rootOf(o.home) : null;
    if (root === null) continue;
    let theirs = byUser.get(p.uid);
    if (!theirs) byUser.set(p.uid, (theirs = new Set()));
    if (theirs.has(root)) continue;
    if (theirs.size >= PROCESS_ROOTS_PER_USER) {
      over.add(p.uid);
      continue;
    }
    theirs.add(root);
    out.push(root);
  }
  for (const uid of over)
    notes.push(
      `--all-homes: the hermes processes of uid ${uid} name more than ${PROCESS_ROOTS_PER_USER} hermes roots: ` +
        `only the first ${PROCESS_ROOTS_PER_USER} (oldest process first) are read`,
    );
  return out;
}

/** The first `ROOTS_PER_RUN_CAP` of the roots found (in the order found), with a note when there were more. */
export function capRoots<T>(found: readonly T[], flag: string, notes: string[], cap = ROOTS_PER_RUN_CAP): T[] {
  if (found.length <= cap) return [...found];
  notes.push(
    `${flag}: ${found.length} hermes roots found, more than ${cap}: only the first ${cap} are read ` +
      "(the others' containers are judged by the homes read, or kept)",
  );
  return found.slice(0, cap);
}

/** Each path once, in the order met (by its real path when it has one). */
export function uniqueHomes(homes: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const h of homes) {
    let real = h;
    try {
      real = fs.realpathSync(h);
    } catch {
      /* not there: by name */
    }
    if (seen.has(real)) continue;
    seen.add(real);
    out.push(h);
  }
  return out;
}
