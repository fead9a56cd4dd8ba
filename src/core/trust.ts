/**
 * Whose words a file is, when the janitor runs as root (pure: facts in, verdicts out; the walks and reads are
 * `adapters/trust.ts`). A root tool takes no orders from a file another user can write:
 *
 * - **Who controls a directory**: its owner (unless root), its group when it is group-writable (unless root's group, or
 *   the owner's own primary group), and everyone when it is world-writable; in a sticky directory (`/tmp`) others may
 *   only add names, so an entry there is controlled by its own owner. Whoever controls a directory on the way to a
 *   file controls the file: they can put another file, or a symlink, in its place.
 * - **A home belongs to its owner**: a hermes home that exactly one user other than root controls (with that user's
 *   private group) is that user's. As root over it, the janitor follows no symlink inside it, reads only regular
 *   files, and only so much of them; what it writes there it writes with that user's rights; what it records for
 *   itself lives in a state directory only root can write. A home nobody but root controls is root's, as before;
 *   one that several users control, or everyone, is refused.
 * - **A path named by a user's settings** (a sandbox root, a temp directory) and the default roots under their home
 *   give root no more reach than that user: used only when it and every directory from it down to what is removed
 *   belongs to that user, is not a symlink and is on the same filesystem (`untrusted-root` otherwise).
 * - **Plans and logs**: a plan root applies must be root's and writable by nobody else; a log's directory must not be
 *   writable by anyone but the log's writer.
 */
import path from 'node:path';
import { sha256Hex } from '../util/sha256.js';
import { escapeControls } from '../util/escape-controls.js';

/** The largest settings file read (`.env`, `config.yaml`): larger ones are refused (exit 2). */
export const SETTINGS_MAX_BYTES = 1024 * 1024;

/** The reason a root (sandbox root, temp directory) is refused for a run. */
export const UNTRUSTED_ROOT = 'untrusted-root';

/** What `stat` says of a directory. */
export interface DirFacts {
  uid: number;
  gid: number;
  mode: number;
}

/** One party besides root that can change a directory's entries: a user, a group, or everyone. */
export type Controller = { kind: 'user'; id: number } | { kind: 'group'; id: number } | { kind: 'anyone' };

/** Who, besides root, controls a directory; `sticky`: others may add names but replace only their own entries. */
export function dirControllers(d: DirFacts, primaryGid: (uid: number) => number | undefined): { controllers: Controller[]; sticky: boolean } {
  const sticky = (d.mode & 0o1000) !== 0;
  const out: Controller[] = [];
  if (d.uid !== 0) out.push({ kind: 'user', id: d.uid });
  if (!sticky && (d.mode & 0o020) !== 0 && d.gid !== 0 && !(d.uid !== 0 && primaryGid(d.uid) === d.gid)) out.push({ kind: 'group', id: d.gid });
  if (!sticky && (d.mode & 0o002) !== 0) out.push({ kind: 'anyone' });
  return { controllers: out, sticky: sticky && (d.mode & 0o022) !== 0 };
}

export const controllerKey = (c: Controller) => (c.kind === 'anyone' ? 'anyone' : `${c.kind}:${c.id}`);

/** The controllers met on a walk, each with the first path where it was met. */
export type Controllers = Map<string, { who: Controller; where: string }>;

export function addControllers(into: Controllers, cs: readonly Controller[], where: string): void {
  for (const c of cs) if (!into.has(controllerKey(c))) into.set(controllerKey(c), { who: c, where });
}

/** Names for uids and gids, for messages (`uid 1001 (agent)`). */
export interface Names {
  user(uid: number): string | undefined;
  group(gid: number): string | undefined;
}

export function describeController(c: Controller, names?: Names): string {
  if (c.kind === 'anyone') return 'every user';
  const name = c.kind === 'user' ? names?.user(c.id) : names?.group(c.id);
  return `${c.kind === 'user' ? 'uid' : 'group'} ${c.id}${name ? ` (${name})` : ''}`;
}

/** A path for a one-line message (control characters escaped). */
export const shown = (p: string) => escapeControls(p);

/** Whose a home is: root's (null), one user's (their uid), or nobody's to trust (why). */
export type HomeOwnerVerdict = { owner: null } | { owner: number } | { refused: string };

/**
 * The owner of a hermes home from the controllers of every directory from `/` to it (itself included): root's when
 * none, the one user's when that user is the only one; refused when several users, a group or everyone can change it.
 */
export function homeOwnerOf(home: string, ctl: Controllers, names?: Names): HomeOwnerVerdict {
  const all = [...ctl.values()];
  const users = all.filter((c) => c.who.kind === 'user');
  const others = all.filter((c) => c.who.kind !== 'user');
  if (users.length <= 1 && others.length === 0) return users.length === 0 ? { owner: null } : { owner: (users[0]!.who as { id: number }).id };
  const who = all.map((c) => `${describeController(c.who, names)} (${shown(c.where)})`).join(', ');
  return {
    refused:
      `hermes home ${shown(home)} can be changed by ${who}: as root, hermes-janitor works on a home that one user controls; ` +
      `make it and the directories above it writable by its owner only (chmod go-w), or run the janitor as that user`,
  };
}

/** The state directory of a home run over as root: `<base>/<readable tail of its real path>-<16 hex of its SHA-256>`. */
export function stateDirName(realHome: string): string {
  const tail =
    realHome
      .replace(/^\/+/, '')
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .slice(-48) || 'root';
  return `${tail.replace(/^\.+/, '_')}-${sha256Hex(realHome).slice(0, 16)}`;
}

/** One directory from a root (sandbox root, temp directory) down to what is removed, as `lstat` and the mount table show it. */
export interface ChainDir {
  path: string;
  symlink: boolean;
  directory: boolean;
  uid: number;
  dev: number;
  mountId: number | null;
}

/**
 * The owner rule for a root taken from a user's settings (or a default one under their home): every directory of
 * the chain, from the root down to what is removed, belongs to `owner`, is no symlink and is on the root's filesystem
 * (device and mount). Null when it holds; else the one line why not.
 */
export function rootChainProblem(chain: readonly ChainDir[], owner: number, names?: Names): string | null {
  const top = chain[0];
  if (!top) return null;
  for (const d of chain) {
    if (d.symlink) return `${shown(d.path)} is a symlink (never followed as root)`;
    if (!d.directory) return `${shown(d.path)} is not a directory`;
    if (d.uid !== owner) {
      return (
        `${shown(d.path)} belongs to ${describeController({ kind: 'user', id: d.uid }, names)}, not to the home's owner ` +
        `${describeController({ kind: 'user', id: owner }, names)}`
      );
    }
    if (d.dev !== top.dev || (d.mountId !== null && top.mountId !== null && d.mountId !== top.mountId)) {
      return `${shown(d.path)} is on another filesystem than ${shown(top.path)}`;
    }
  }
  return null;
}

/**
 * Whether a root (sandbox root, temp directory) with this setting source is the home owner's word: the default under
 * their home, or a value from a file in their home (`<home>/.env`, their `config.yaml`). The janitor's own
 * environment and the managed files (`/etc/hermes`) are the operator's.
 */
export function namedByOwner(source: string, home: string): boolean {
  return source === 'default' || source === path.join(home, '.env') || source.startsWith('config.yaml ');
}

/** The one line for a root refused for a run. */
export function untrustedRootLine(what: string, root: string, why: string): string {
  return `${what} ${shown(root)} refused (${UNTRUSTED_ROOT}): ${why}; nothing there is removed as root (give it to the home's owner, or set another)`;
}

/** Why root must not apply a plan file (`stat` of it), or null: it must be root's and writable by nobody else. */
export function planFileProblem(file: string, st: { uid: number; mode: number }): string | null {
  if (st.uid !== 0)
    return (
      `plan ${shown(file)} belongs to uid ${st.uid}, not root: as root, hermes-janitor applies only a plan root wrote; make the plan again as ` +
      `root (--plan-out)`
    );
  if ((st.mode & 0o022) !== 0) {
    return (
      `plan ${shown(file)} is writable by others (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}): as root, hermes-janitor applies ` +
      `only a plan nobody else can change; chmod go-w it or make the plan again (--plan-out)`
    );
  }
  return null;
}

/** Why a log may not be written in a directory (its controllers), or null: nobody but the writer may change it. */
export function logDirProblem(dir: string, controllers: readonly Controller[], writer: number, names?: Names): string | null {
  const other = controllers.find((c) => !(c.kind === 'user' && c.id === writer));
  if (!other) return null;
  return (
    `log directory ${shown(dir)} can be changed by ${describeController(other, names)}: a log is written only where nobody but its writer can ` +
    `replace it; chmod go-w it or point the log elsewhere`
  );
}

/** The path a message shows for a home's state directory under `base`. */
export function stateDirOf(base: string, realHome: string): string {
  return path.join(base, stateDirName(realHome));
}
