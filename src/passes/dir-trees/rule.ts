/**
 * Removing a directory tree by descriptor, the pure side the sandbox-directory and session-file passes share (the
 * tree walker is `files.ts`): the name a directory is claimed under while one run removes it, the mount points of
 * `/proc/self/mountinfo`, and the one line for what a removal was refused.
 */
import { SANDBOX_REMOVING_PREFIX } from '../../defaults.js';
import { escapeControls } from '../../util/escape-controls.js';

/** Whether a name under `<root>/docker` is one `claimName` made. */
export const isClaimed = (name: string) => name.startsWith(SANDBOX_REMOVING_PREFIX);

/** The name a task directory is renamed to while one run removes it (so a concurrent run finds it gone). */
export function claimName(name: string, token: string): string {
  // A file name is at most 255 bytes: the original is cut (by UTF-16 units, conservatively short).
  return `${SANDBOX_REMOVING_PREFIX}${token}.${name.slice(0, 120)}`;
}

/** Mount points listed in `/proc/self/mountinfo` (field 5, octal escapes such as `\040` decoded). */
export function parseMountInfo(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const mp = line.split(' ')[4];
    if (mp) out.push(mp.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
  }
  return out;
}

/** The first thing this run could not read or remove under a task directory, and whose permission it needed. */
export interface Refusal {
  /** The file or directory refused. */
  path: string;
  /** `EACCES`, `EPERM`, `EROFS`, `EBUSY`, ... */
  code: string;
  /** Reading a directory, or removing an entry. */
  op: 'read' | 'remove';
  /** The directory whose permission decides (where the entry lives, or the unreadable directory itself) and its owner. */
  owner: { path: string; uid: number } | null;
}

/**
 * A path as one line of text shows it: control characters (a newline in a file name an agent wrote) as `\uXXXX`, so
 * a message about it stays one line and cannot forge another. JSON keeps the path as it is.
 */
export function shownPath(p: string): string {
  return escapeControls(p);
}

/**
 * The one line for a task directory this run could not remove: the directory, the first file refused, the fix (run
 * it as root, or as the owner; for a file attribute, `chattr`), and what became of it (`leftAt`: where what is left now is, when anything was
 * removed or it was renamed for removal).
 */
export function refusalLine(dir: string, r: Refusal, uid: number | null, outcome: { partial: boolean; leftAt: string }): string {
  const denied = r.code === 'EACCES' || r.code === 'EPERM';
  // EPERM on a removal this run had the permissions for (it is root, or owns the directory): a file attribute refuses it.
  const attribute = r.op === 'remove' && r.code === 'EPERM' && uid !== null && (uid === 0 || r.owner?.uid === uid);
  const why =
    r.op === 'read'
      ? `cannot be read (${r.code})`
      : attribute
        ? 'operation not permitted (EPERM)'
        : denied
          ? 'permission denied'
          : `cannot be removed (${r.code})`;
  const owner = r.owner ? ` (${shownPath(r.owner.path)} belongs to uid ${r.owner.uid}${uid !== null ? `; this run is uid ${uid}` : ''})` : '';
  const fix = attribute
    ? ': it is immutable or append-only (lsattr shows it): chattr -i (or -a) it as root, then run again'
    : denied
      ? ': run it as root, or as the owner'
      : '';
  const state = outcome.partial
    ? `PARTLY REMOVED, what is left is at ${shownPath(outcome.leftAt)}`
    : `nothing was removed${outcome.leftAt !== dir ? ` (it is now at ${shownPath(outcome.leftAt)})` : ''}`;
  return `cannot remove ${shownPath(dir)}: ${shownPath(r.path)}: ${why}${owner}${fix}; ${state}`;
}
