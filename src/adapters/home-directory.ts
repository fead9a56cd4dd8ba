/**
 * Whether the hermes home is usable as one: a directory, or not there yet (a fresh home reads as empty). A regular
 * file (or a path through one) is neither: read as a home it looked empty, so every breaker reported OK, `status`
 * said nothing needed attention, and `reap` failed on ENOTDIR as an "unexpected error".
 */
import { statSync } from 'node:fs';

/** One line naming the home and the fix when it exists but is not a directory; undefined when it is usable. */
export function homeDirectoryProblem(home: string, source: string): string | undefined {
  let isDir: boolean;
  try {
    isDir = statSync(home).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTDIR') return undefined; // not there yet (or unreadable: the command's own reads say so)
    isDir = false;
  }
  if (isDir) return undefined;
  const what = JSON.stringify(home)
    .slice(1, -1)
    .replace(/\u007f/g, '\\u007f');
  return (
    `hermes home '${what}' (from ${source}) is not a directory: point ${source === '--home' ? '--home' : '$HERMES_HOME or --home'} at hermes' ` +
    `home directory`
  );
}
