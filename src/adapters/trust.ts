/**
 * The files side of the trust rules (core/trust.ts): as root, every path is walked from `/` one component at a time
 * through directory descriptors (dir-fd.ts `fdPath`: `/proc/self/fd/<n>/<name>`), noting who besides root controls
 * each directory on the way. A symlink is followed only where root alone decides (a directory nobody else can
 * change); a file is opened `O_NOFOLLOW|O_NONBLOCK` and must be a regular file (a FIFO, a device or a directory is
 * refused at once, never waited on) and is read only up to a cap.
 *
 * A hermes home is resolved once per process (`homeAccess`): its owner (the one user controlling it, or none: root's
 * own) and where the janitor's own state lives. Files under a home another user controls are then walked from the
 * home's real path, following no symlink at all, whoever made it; a hard link there to a file of someone else is not
 * read. What root writes there it writes with the owner's rights (`withOwnerRights`, `dropToOwner`), never root's.
 *
 * Synchronous on purpose: a walk is a few system calls, and `withOwnerRights` switches the process's effective ids,
 * which glibc applies to every thread (the libuv pool included), so nothing asynchronous may run inside that window.
 * Reads therefore take no such window (root reads by the rules above); only writes do, where nothing else runs.
 * Runs that are not root (and non-Linux hosts) keep the plain path-based calls: their own rights bound them.
 */
import fs, { constants, type Stats } from 'node:fs';
import path from 'node:path';
import { DEFAULT_STATE_DIR, ENV_STATE_DIR } from '../defaults.js';
import { UsageError } from '../errors.js';
import {
  type Controller,
  type Controllers,
  type ChainDir,
  type Names,
  addControllers,
  describeController,
  dirControllers,
  homeOwnerOf,
  rootChainProblem,
  shown,
  stateDirOf,
  untrustedRootLine,
} from '../core/trust.js';
import { fdPath, mountIdOf } from './dir-fd.js';
import { readDirCapped } from './dir-slices.js';

const O_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const O_READ = constants.O_RDONLY | constants.O_NONBLOCK;
/** Symlinks followed on one walk, as the kernel's own limit. */
const MAX_LINKS = 40;

/** Whether the root rules apply: this process is root, on Linux (where `/proc/self/fd` leads to open directories). */
export function rootRules(): boolean {
  return process.platform === 'linux' && process.geteuid?.() === 0;
}

/** An error with a code, as node:fs throws them; `message` is one line naming the path and why. */
export class TrustError extends Error {
  readonly path: string;
  constructor(
    readonly code: string,
    file: string,
    message: string,
  ) {
    super(message);
    this.path = file;
    this.name = 'TrustError';
  }
}

// ---- names of users and groups, for messages and for the owner's primary group

let passwd: Map<number, { name: string; gid: number }> | undefined;
let groups: Map<number, string> | undefined;
function table(file: string): string[][] {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.split(':'));
  } catch {
    return [];
  }
}
function users(): Map<number, { name: string; gid: number }> {
  passwd ??= new Map(
    table('/etc/passwd')
      .filter((f) => f.length >= 4)
      .map((f) => [Number(f[2]), { name: f[0]!, gid: Number(f[3]) }]),
  );
  return passwd;
}
export const NAMES: Names = {
  user: (uid) => users().get(uid)?.name,
  group: (gid) =>
    (groups ??= new Map(
      table('/etc/group')
        .filter((f) => f.length >= 3)
        .map((f) => [Number(f[2]), f[0]!]),
    )).get(gid),
};
const primaryGid = (uid: number) => users().get(uid)?.gid;

// ---- walking

/** Where a walk ended: the open directory (close it), its real path, the controllers met on the way and of itself. */
export interface Walked {
  fd: number;
  real: string;
  controllers: Controllers;
  /** The directory asked for is not there: `fd` is the deepest one that is, `real` the path asked for, made real. */
  missing: boolean;
}

const components = (p: string) => p.split('/').filter((c) => c !== '' && c !== '.');
const codeOf = (err: unknown) => (err as NodeJS.ErrnoException).code ?? 'EIO';

function refusedLink(where: string, by: readonly Controller[]): TrustError {
  return new TrustError(
    'ELOOP',
    where,
    `${shown(where)} is a symlink in a directory ${describeController(by[0]!, NAMES)} can change: as root, hermes-janitor does not follow it`,
  );
}

interface WalkOptions {
  /** Follow symlinks in directories other users control too (their controllers are kept): for a home's own path. */
  followUserLinks?: boolean;
  /** Start from what another walk found (a home): its controllers count. */
  controllers?: Controllers;
}

/** One step of a walk: the entry `c` of the open directory `w.fd`, whose own `stat` is `dir`. */
type Step = { kind: 'dir'; fd: number; st: Stats } | { kind: 'link'; target: string } | { kind: 'missing' };

function step(w: Walked, dir: Stats, c: string, opts: WalkOptions): Step {
  // A directory is opened at once (O_NOFOLLOW | O_DIRECTORY: never through a symlink, never anything but a directory),
  // and its controllers taken from what was opened: one system call per step fewer than lstat, then open (each walk
  // of a hook costs about 0.3 ms here). Anything else (a symlink, not a directory) is looked at by lstat, as before.
  const opened = openDirEntry(w.fd, c);
  if (opened === 'missing') return { kind: 'missing' };
  if (opened !== null) {
    const here = dirControllers(dir, primaryGid);
    const st = fs.fstatSync(opened);
    addControllers(w.controllers, [...here.controllers, ...(here.sticky && st.uid !== 0 ? [{ kind: 'user', id: st.uid } as const] : [])], path.join(w.real, c));
    return { kind: 'dir', fd: opened, st };
  }
  return stepByLstat(w, dir, c, opts);
}

/** The entry `c` of the directory `fd` opened as a directory (never through a symlink), 'missing', or null: not one. */
function openDirEntry(fd: number, c: string): number | 'missing' | null {
  try {
    return fs.openSync(fdPath(fd, c), O_DIR);
  } catch (err) {
    const code = codeOf(err);
    if (code === 'ENOENT') return 'missing';
    if (code === 'ELOOP' || code === 'ENOTDIR') return null;
    throw err;
  }
}

/** A step to an entry that did not open as a directory: a symlink (followed or refused), or not a directory. */
function stepByLstat(w: Walked, dir: Stats, c: string, opts: WalkOptions): Step {
  let lst: Stats;
  try {
    lst = fs.lstatSync(fdPath(w.fd, c));
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return { kind: 'missing' };
    throw err;
  }
  const here = dirControllers(dir, primaryGid);
  const local = [...here.controllers, ...(here.sticky && lst.uid !== 0 ? [{ kind: 'user', id: lst.uid } as const] : [])];
  const where = path.join(w.real, c);
  if (lst.isSymbolicLink()) {
    if (local.length > 0 && !opts.followUserLinks) throw refusedLink(where, local);
    addControllers(w.controllers, local, where);
    return { kind: 'link', target: fs.readlinkSync(fdPath(w.fd, c)) };
  }
  if (!lst.isDirectory()) throw new TrustError('ENOTDIR', where, `${shown(where)} is not a directory`);
  addControllers(w.controllers, local, where);
  const fd = fs.openSync(fdPath(w.fd, c), O_DIR);
  const st = fs.fstatSync(fd);
  if (st.ino !== lst.ino || st.dev !== lst.dev) {
    fs.closeSync(fd);
    throw new TrustError('ECHANGED', where, `${shown(where)} changed while it was walked`);
  }
  return { kind: 'dir', fd, st };
}

let procChecked = false;
/** The walk reaches each entry through `/proc/self/fd`: without it (no /proc mounted) it refuses, never guesses. */
function checkProc(): true {
  if (!fs.existsSync('/proc/self/fd')) {
    throw new TrustError(
      'ENOPROC',
      '/proc',
      'as root, hermes-janitor reaches files one directory at a time through /proc/self/fd, which is not there: mount /proc',
    );
  }
  return true;
}

/**
 * Walks to a directory from `/`, as root may: symlinks followed only where nobody but root can change the directory
 * holding them (or anywhere with `followUserLinks`), each directory opened `O_NOFOLLOW` relative to the one before.
 * A directory that is not there ends the walk at the deepest one that is (`missing`). Throws `TrustError` (ELOOP for
 * a symlink it may not follow, ENOTDIR) or what the system answered.
 */
export function walkDir(target: string, opts: WalkOptions = {}): Walked {
  procChecked ||= checkProc();
  const abs = path.resolve(target);
  const fromWalk = !opts.controllers?.size;
  const known = fromWalk ? nearestRootOnly(abs) : null;
  const w = known ? walkOn(known.w, known.st, components(path.relative(known.key, abs)), opts) : walkFromRoot(abs, opts);
  if (fromWalk && !w.missing && w.controllers.size === 0) rememberRootOnly(abs, w);
  return w;
}

/**
 * Directories whose walk met nobody but root, for a moment: only root can change any directory on their way, so
 * within `ROOT_ONLY_MS` a walk to such a directory, or below it, starts from it, opened again by its real path and
 * taken only if it is the same directory (device and inode): a hook walks to its home and its state directory four
 * times, about 0.3 ms a walk here. Anything a user controls is walked every time. What root itself changes on the way
 * within that moment may be seen late, as it may be by any walk's answer once given.
 */
const ROOT_ONLY_MS = 500;
/** At most this many are kept: a long run (`watch`) walks ever new directories, and the old ones are no use. */
const ROOT_ONLY_MAX = 256;
const rootOnly = new Map<string, { real: string; dev: number; ino: number; at: number }>();

/** How many directories are remembered now (for tests: the memory a long run keeps is bounded). */
export const rememberedRootOnly = (): number => rootOnly.size;

function rememberRootOnly(abs: string, w: Walked): void {
  const st = fs.fstatSync(w.fd);
  const now = Date.now();
  if (rootOnly.size >= ROOT_ONLY_MAX) {
    for (const [key, known] of rootOnly) if (now - known.at > ROOT_ONLY_MS || now < known.at) rootOnly.delete(key);
    if (rootOnly.size >= ROOT_ONLY_MAX) rootOnly.clear();
  }
  rootOnly.set(abs, { real: w.real, dev: st.dev, ino: st.ino, at: now });
}

/** The deepest of `abs` and its parents walked a moment ago through directories only root controls, open again. */
function nearestRootOnly(abs: string): { key: string; w: Walked; st: Stats } | null {
  if (rootOnly.size === 0) return null;
  for (let key = abs; ; key = path.dirname(key)) {
    const again = reopenRootOnly(key);
    if (again) return { key, ...again };
    if (key === '/') return null;
  }
}

function reopenRootOnly(key: string): { w: Walked; st: Stats } | null {
  const known = rootOnly.get(key);
  if (!known) return null;
  rootOnly.delete(key); // kept below only if it still holds
  const age = Date.now() - known.at;
  if (age < 0 || age > ROOT_ONLY_MS) return null;
  let fd: number;
  try {
    fd = fs.openSync(known.real, O_DIR);
  } catch {
    return null;
  }
  const st = fs.fstatSync(fd);
  if (st.dev !== known.dev || st.ino !== known.ino) {
    fs.closeSync(fd);
    return null;
  }
  rootOnly.set(key, known);
  return { w: { fd, real: known.real, controllers: new Map(), missing: false }, st };
}

function walkFromRoot(abs: string, opts: WalkOptions): Walked {
  const fd = fs.openSync('/', O_DIR);
  return walkOn({ fd, real: '/', controllers: new Map(opts.controllers ?? []), missing: false }, fs.fstatSync(fd), components(abs), opts);
}

/** Walks on from the open directory `w.fd` (whose `stat` is `dir`) through `pending`; closes what it leaves. */
function walkOn(w: Walked, start: Stats, rest: string[], opts: WalkOptions): Walked {
  let pending = rest;
  let dir = start;
  let links = 0;
  try {
    while (pending.length > 0) {
      const c = pending.shift()!;
      const s = step(w, dir, c, opts);
      if (s.kind === 'missing') {
        // Whoever controls the deepest directory there can make what is missing.
        addControllers(w.controllers, dirControllers(dir, primaryGid).controllers, w.real);
        w.real = path.join(w.real, c, ...pending);
        w.missing = true;
        return w;
      }
      if (s.kind === 'link') {
        if (++links > MAX_LINKS) throw new TrustError('ELOOP', path.join(w.real, c), `${shown(path.join(w.real, c))}: too many symlinks`);
        // The walk so far has no symlink in it, so `..` in the target is resolved on real paths.
        pending = [...components(path.resolve(w.real, s.target)), ...pending];
        fs.closeSync(w.fd);
        w.fd = fs.openSync('/', O_DIR);
        w.real = '/';
        dir = fs.fstatSync(w.fd);
        continue;
      }
      fs.closeSync(w.fd);
      w.fd = s.fd;
      w.real = path.join(w.real, c);
      dir = s.st;
    }
    addControllers(w.controllers, dirControllers(dir, primaryGid).controllers, w.real);
    return w;
  } catch (err) {
    fs.closeSync(w.fd);
    throw err;
  }
}

// ---- homes

/** How the janitor may touch a hermes home, resolved once per home and process. */
export interface HomeAccess {
  /** The home as named (absolute). */
  home: string;
  /**
   * The home's owner when the janitor runs as root over a home another user controls: files there are walked from
   * `real` following no symlink, written only with the owner's rights, and the janitor's own state is in `stateDir`.
   * Null otherwise: the janitor runs as the home's owner, or as root over a home only root controls (as before).
   */
  owner: { uid: number; gid: number; name: string | null } | null;
  /** The home's real path (its symlinks resolved when it was looked at). */
  real: string;
  /** Who besides root controls the home (and the directories above it). */
  controllers: Controllers;
  /** Where the janitor keeps what it records for itself (idle samples, image uses, stamps, locks). */
  stateDir: string;
}

const resolved = new Map<string, HomeAccess>();

/** The base of root's state directories: `HERMES_JANITOR_STATE_DIR`, else /var/lib/hermes-janitor. */
function stateBase(): string {
  return path.resolve(process.env[ENV_STATE_DIR]?.trim() || DEFAULT_STATE_DIR);
}

/** The state base must be a place only root can change (or not there yet, below such a place). */
function checkStateBase(base: string): void {
  let w: Walked;
  try {
    w = walkDir(base);
  } catch (err) {
    throw new UsageError(`state directory ${shown(base)}: ${(err as Error).message}: point ${ENV_STATE_DIR} at a directory only root can write`);
  }
  fs.closeSync(w.fd);
  const c = [...w.controllers.values()][0];
  if (c) {
    throw new UsageError(
      `state directory ${shown(base)} can be changed by ${describeController(c.who, NAMES)} (${shown(c.where)}): point ${ENV_STATE_DIR} at a ` +
        `directory only root can write`,
    );
  }
}

/**
 * The access rules of a home (memoised per process). Not root: the home as it is, the state in `<home>/janitor`.
 * Root: the walk from `/` to the home decides whose it is (core/trust.ts `homeOwnerOf`); a home several users (or
 * everyone) can change is a usage error naming them.
 */
export function homeAccess(home: string): HomeAccess {
  const key = path.resolve(home);
  const known = resolved.get(key);
  if (known) return known;
  const plain: HomeAccess = { home: key, owner: null, real: key, controllers: new Map(), stateDir: path.join(key, 'janitor') };
  let access = plain;
  if (rootRules()) {
    let w: Walked;
    try {
      w = walkDir(key, { followUserLinks: true });
    } catch (err) {
      throw new UsageError(`hermes home ${shown(key)}: ${(err as Error).message}`);
    }
    fs.closeSync(w.fd);
    const verdict = homeOwnerOf(key, w.controllers, NAMES);
    if ('refused' in verdict) throw new UsageError(verdict.refused);
    if (verdict.owner !== null) {
      ownersOwnHome(key, w.real, verdict.owner);
      const base = stateBase();
      checkStateBase(base);
      const uid = verdict.owner;
      const info = users().get(uid);
      access = {
        home: key,
        owner: { uid, gid: info?.gid ?? uid, name: info?.name ?? null },
        real: w.real,
        controllers: w.controllers,
        stateDir: stateDirOf(base, w.real),
      };
    }
  }
  resolved.set(key, access);
  return access;
}

/** Under the state base: the one store of every run over several homes (`--homes`, `--all-homes`). */
export const SHARED_STORE_DIRNAME = 'all-homes';

/**
 * A run over several homes keeps one store for all of them, per engine inside (idle samples and stop records, image
 * uses, stamps, the reap locks): as root `<state base>/all-homes` (`HERMES_JANITOR_STATE_DIR`, else
 * /var/lib/hermes-janitor; only root may change it), so that a `watch` and a cron run over the homes take the same lock
 * and see each other's stops. Not root: the run's own home's. Made the run home's state directory; returns it.
 */
export function useSharedStore(home: string): string {
  const access = homeAccess(home);
  if (!rootRules()) return access.stateDir;
  const base = stateBase();
  checkStateBase(base);
  const shared = { ...access, stateDir: path.join(base, SHARED_STORE_DIRNAME) };
  resolved.set(access.home, shared);
  return shared.stateDir;
}

/**
 * A home another user controls must be that user's own directory, wherever its path leads: a symlink of theirs to a
 * directory of root's (or of a third user's) does not make that directory theirs to have root read.
 */
function ownersOwnHome(home: string, real: string, owner: number): void {
  let st: Stats;
  try {
    st = fs.lstatSync(real);
  } catch {
    return; // not there yet
  }
  if (st.uid !== owner) {
    throw new UsageError(
      `hermes home ${shown(home)} leads to ${shown(real)}, which belongs to ${describeController({ kind: 'user', id: st.uid }, NAMES)}, while ` +
        `${describeController({ kind: 'user', id: owner }, NAMES)} controls the way there: point --home or HERMES_HOME at that user's own directory`,
    );
  }
}

/** The resolved home another user owns that holds `file`, if any (files there are walked from its real path). */
function foreignHomeOf(file: string): HomeAccess | undefined {
  for (const h of resolved.values()) {
    if (h.owner && (file === h.home || file.startsWith(`${h.home}/`))) return h;
  }
  return undefined;
}

// ---- files

/** A file refused by the rules (a symlink not followed, not a regular file, too large, a hard link): `status` names them. */
export interface Refusal {
  path: string;
  /** `symlink`, `not-regular`, `too-large`, `hard-link`, `changed`. */
  reason: string;
  /** The one line why. */
  detail: string;
}
const REASONS: Record<string, string> = {
  ELOOP: 'symlink',
  ENOTREG: 'not-regular',
  EISDIR: 'not-regular',
  EFBIG: 'too-large',
  EXDEV: 'hard-link',
  ECHANGED: 'changed',
};
const refused = new Map<string, Refusal>();

/** Every file this process refused to read so far, in the order met (each path once). */
export function refusals(): Refusal[] {
  return [...refused.values()];
}

function noted(err: unknown): unknown {
  if (err instanceof TrustError && REASONS[err.code] && !refused.has(err.path))
    refused.set(err.path, { path: err.path, reason: REASONS[err.code]!, detail: err.message });
  return err;
}

/** How a file may be opened. */
export interface OpenOptions {
  /** Never follow a symlink as the file itself (state files), whoever runs. */
  noFollow?: boolean;
}

/** An open regular file (close `fd`). */
export interface OpenedFile {
  fd: number;
  st: Stats;
  /** Who besides root controls the directories on the way to it (root only; empty otherwise). */
  controllers: Controllers;
}

/** A FIFO, device, socket (ENOTREG) or directory (EISDIR, as the system says it) where a regular file should be. */
function notRegular(file: string, st: Stats): TrustError {
  const what = st.isFIFO()
    ? 'a FIFO'
    : st.isDirectory()
      ? 'a directory'
      : st.isCharacterDevice() || st.isBlockDevice()
        ? 'a device'
        : st.isSocket()
          ? 'a socket'
          : 'not a regular file';
  return new TrustError(
    st.isDirectory() ? 'EISDIR' : 'ENOTREG',
    file,
    `${shown(file)} is ${what}, not a regular file: hermes-janitor reads no FIFO, device or directory there`,
  );
}

/** Opens `file` for reading, as root by a walk (see the module comment); must be a regular file. */
export function openFileSafely(file: string, opts: OpenOptions = {}): OpenedFile {
  const abs = path.resolve(file);
  let opened: OpenedFile;
  try {
    if (!rootRules()) {
      const fd = fs.openSync(abs, O_READ | (opts.noFollow ? constants.O_NOFOLLOW : 0));
      opened = { fd, st: fs.fstatSync(fd), controllers: new Map() };
    } else opened = openAsRoot(abs, opts);
  } catch (err) {
    throw noted(err);
  }
  if (!opened.st.isFile()) {
    fs.closeSync(opened.fd);
    throw noted(notRegular(abs, opened.st));
  }
  return opened;
}

/**
 * As root: under a home another user owns, walked from the home's real path following no symlink; elsewhere walked
 * from `/`, a symlink followed only where nobody but root can change the directory holding it.
 */
function openAsRoot(abs: string, opts: OpenOptions): OpenedFile {
  const home = foreignHomeOf(abs);
  if (home) return openWalked(path.join(home.real, path.relative(home.home, abs)), abs, { ...opts, home });
  return openWalked(abs, abs, opts);
}

function openWalked(start: string, abs: string, opts: OpenOptions & { home?: HomeAccess }): OpenedFile {
  let target = start;
  for (let links = 0; ; links++) {
    const parent = walkDir(path.dirname(target), opts.home ? { controllers: opts.home.controllers } : {});
    try {
      if (parent.missing) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${abs}'`), { code: 'ENOENT' });
      const name = path.basename(target);
      const local = [...parent.controllers.values()].map((c) => c.who);
      // In a sticky directory others can write (/tmp), an entry is its own owner's to replace.
      const entry = fs.lstatSync(fdPath(parent.fd, name), { throwIfNoEntry: false });
      if (entry && entry.uid !== 0 && dirControllers(fs.fstatSync(parent.fd), primaryGid).sticky) local.push({ kind: 'user', id: entry.uid });
      let fd: number;
      try {
        fd = fs.openSync(fdPath(parent.fd, name), O_READ | constants.O_NOFOLLOW);
      } catch (err) {
        if (codeOf(err) !== 'ELOOP') throw err;
        // A symlink as the file: followed only where root alone decides, and never for a state file.
        if (opts.noFollow || local.length > 0 || links >= MAX_LINKS) {
          throw local.length > 0 ? refusedLink(abs, local) : new TrustError('ELOOP', abs, `${shown(abs)} is a symlink`);
        }
        target = path.resolve(parent.real, fs.readlinkSync(fdPath(parent.fd, name)));
        continue;
      }
      const st = fs.fstatSync(fd);
      // A hard link another user made to a file they do not own would be read with root's eyes.
      if (local.length > 0 && st.isFile() && st.nlink > 1 && !local.some((c) => c.kind === 'user' && c.id === st.uid)) {
        fs.closeSync(fd);
        throw new TrustError(
          'EXDEV',
          abs,
          `${shown(abs)} is a hard link to a file of uid ${st.uid}, in a directory ${describeController(local[0]!, NAMES)} can change: not read as root`,
        );
      }
      return { fd, st, controllers: parent.controllers };
    } finally {
      fs.closeSync(parent.fd);
    }
  }
}

/** Reads at most `cap` + 1 bytes of an open file whose `stat` said `size` (a first read of that much, then the rest). */
function readCapped(fd: number, cap: number, size: number): Buffer {
  const chunks: Buffer[] = [];
  let got = 0;
  for (let first = true; ; first = false) {
    const buf = Buffer.allocUnsafe(Math.min(first ? size + 1 : 64 * 1024, cap + 1 - got));
    if (buf.length === 0) break;
    const n = fs.readSync(fd, buf, 0, buf.length, null);
    if (n === 0) break;
    chunks.push(buf.subarray(0, n));
    got += n;
  }
  return Buffer.concat(chunks, got);
}

/**
 * THE reader of a settings or state file: opened as `openFileSafely` does, read up to `cap` bytes (a larger file:
 * `TrustError` EFBIG, "too large"). Throws `ENOENT`/`ENOTDIR` as node:fs does when the file is not there.
 */
export function readFileSafely(file: string, cap: number, opts: OpenOptions = {}): string {
  const { fd, st } = openFileSafely(file, opts);
  try {
    const bytes = readCapped(fd, cap, st.size);
    if (bytes.length > cap) {
      throw noted(
        new TrustError(
          'EFBIG',
          path.resolve(file),
          `${shown(path.resolve(file))} is too large (more than ${cap >= 1024 * 1024 ? `${cap / (1024 * 1024)} MiB` : `${cap} bytes`}): it is not read`,
        ),
      );
    }
    return bytes.toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The entries of a directory (names, and whether each is itself a directory: symlinks are not), as root reached by a
 * walk as files are (`openFileSafely`): under another user's home no symlink on the way is followed, so a linked
 * directory lists nothing of what it points at. Throws ENOENT/ENOTDIR as node:fs does, a `TrustError` for a refusal.
 * With `max`, at most that many entries are read (dir-slices.ts: a few at a time, a directory of a million names is
 * never held whole) and the list ends with `more: true` on it when there were more; with `keep`, only the entries it
 * accepts are held (the others dropped as read).
 */
export function listDirSafely(
  dir: string,
  opts: { max?: number; keep?: (name: string, directory: boolean) => boolean } = {},
): Array<{ name: string; directory: boolean }> & { more?: true } {
  const abs = path.resolve(dir);
  const of = (at: string) => readEntries(at, opts.max ?? Infinity, opts.keep);
  if (!rootRules()) return of(abs);
  const home = foreignHomeOf(abs);
  let w: Walked;
  try {
    w = walkDir(home ? path.join(home.real, path.relative(home.home, abs)) : abs, home ? { controllers: home.controllers } : {});
  } catch (err) {
    throw noted(err);
  }
  try {
    if (w.missing) throw Object.assign(new Error(`ENOENT: no such file or directory, scandir '${abs}'`), { code: 'ENOENT' });
    return of(`/proc/self/fd/${w.fd}`);
  } finally {
    fs.closeSync(w.fd);
  }
}

/** At most `max` entries of the directory at `at` (those `keep` accepts), `more` when there were more. */
function readEntries(
  at: string,
  max: number,
  keep: ((name: string, directory: boolean) => boolean) | undefined,
): Array<{ name: string; directory: boolean }> & { more?: true } {
  const read = readDirCapped(at, {
    max,
    keep: (e) => {
      const entry = { name: e.name, directory: e.isDirectory() };
      return !keep || keep(entry.name, entry.directory) ? entry : null;
    },
  });
  return read.more ? Object.assign(read.kept, { more: true as const }) : read.kept;
}

// ---- writing

/**
 * As root, a directory nobody but root controls may be written in; throws (naming who else controls it) otherwise:
 * root writes in another user's directory only with that user's rights (`withOwnerRights`, or a breaker run dropped
 * to them). A directory that is not there yet is judged by the deepest one that is.
 */
export function assertRootMayWrite(dir: string): void {
  if (!rootRules()) return;
  const home = foreignHomeOf(path.resolve(dir));
  const w = walkDir(home ? path.join(home.real, path.relative(home.home, path.resolve(dir))) : dir, home ? { controllers: home.controllers } : {});
  fs.closeSync(w.fd);
  const c = [...w.controllers.values()][0];
  if (c) {
    throw new TrustError(
      'EPERM',
      dir,
      `not writing in ${shown(dir)} as root: ${describeController(c.who, NAMES)} can change it (${shown(c.where)}); hermes-janitor writes there ` +
        `only with that user's rights`,
    );
  }
}

/** The ids a write takes on: the home's owner. */
export interface Rights {
  uid: number;
  gid: number;
}

/**
 * Runs `fn` with the effective uid and gid (and only that group) of `who`, then takes root's back. `fn` must be
 * synchronous: glibc switches every thread of the process, and an asynchronous call queued meanwhile would run with
 * the owner's ids (or one of the owner's with root's). Not root: `fn` runs as is. Never in a worker thread (Node.js
 * refuses to switch ids there): `reap --background`, its one user, runs on the main thread.
 */
export function withOwnerRights<T>(who: Rights | null, fn: () => T): T {
  if (!who || !rootRules()) return fn();
  const groupsBefore = process.getgroups!();
  ownerWindow = groupsBefore;
  onOwnerRights?.(true);
  process.setgroups!([who.gid]);
  process.setegid!(who.gid);
  process.seteuid!(who.uid);
  try {
    return fn();
  } finally {
    leaveOwnerRights();
  }
}

/** Root's groups while `withOwnerRights` runs (its window is open), else null. */
let ownerWindow: number[] | null = null;
/** Told when a window opens and closes (cli/deadline.ts: the watchdog thread does no file I/O inside one). */
let onOwnerRights: ((open: boolean) => void) | undefined;

/**
 * Tells `fn` when `withOwnerRights` switches the process's ids and back: glibc switches every thread, so another
 * thread of the process (the run's watchdog) must not touch a file meanwhile.
 */
export function observeOwnerRights(fn: (open: boolean) => void): void {
  onOwnerRights = fn;
}

/**
 * Takes root's ids back if a `withOwnerRights` window is open (else nothing): its own end, and a run ended at its
 * deadline inside one (cli/deadline.ts), which then releases its locks and says its line with root's rights.
 */
export function leaveOwnerRights(): void {
  if (ownerWindow === null) return;
  process.seteuid!(0);
  process.setegid!(0);
  process.setgroups!(ownerWindow);
  ownerWindow = null;
  onOwnerRights?.(false);
}

/**
 * The rest of this process runs with `who`'s ids only (real, effective and saved; that one group): what a breaker
 * does in a home another user owns, it does as that user. Irreversible.
 */
export function dropToOwner(who: Rights): void {
  process.setgroups!([who.gid]);
  process.setgid!(who.gid);
  process.setuid!(who.uid);
}

// ---- roots named by a user's settings

/** `stat` facts of one directory of a chain, with its inode (to check later that it is still the one checked). */
export interface CheckedDir extends ChainDir {
  ino: number;
}

function factsOf(p: string, st: Stats, fd: number | null): CheckedDir {
  return {
    path: p,
    symlink: st.isSymbolicLink(),
    directory: st.isDirectory(),
    uid: st.uid,
    dev: st.dev,
    ino: st.ino,
    mountId: fd === null ? null : mountIdOf(fd),
  };
}

/**
 * The chain from `root` down through the directories `sub` (one name each), as `rootChainProblem` judges it: the root
 * itself by its path (its last component not followed), each next one relative to the one before, `O_NOFOLLOW`. It
 * ends early at what is not there (nothing to remove below) or is no directory (the first such entry is included).
 */
export function rootChain(root: string, sub: readonly string[] = []): CheckedDir[] {
  const out: CheckedDir[] = [];
  let lst: Stats;
  try {
    lst = fs.lstatSync(root);
  } catch (err) {
    if (codeOf(err) === 'ENOENT' || codeOf(err) === 'ENOTDIR') return out;
    throw err;
  }
  if (!lst.isDirectory()) return [factsOf(root, lst, null)];
  let fd = fs.openSync(root, O_DIR);
  try {
    out.push(factsOf(root, fs.fstatSync(fd), fd));
    let at = root;
    for (const name of sub) {
      at = path.join(at, name);
      let st: Stats;
      try {
        st = fs.lstatSync(fdPath(fd, name));
      } catch (err) {
        if (codeOf(err) === 'ENOENT') break;
        throw err;
      }
      if (!st.isDirectory()) {
        out.push(factsOf(at, st, null));
        break;
      }
      const next = fs.openSync(fdPath(fd, name), O_DIR);
      fs.closeSync(fd);
      fd = next;
      out.push(factsOf(at, fs.fstatSync(fd), fd));
    }
  } finally {
    fs.closeSync(fd);
  }
  return out;
}

/**
 * The owner rule for a root the home's owner named in their settings, or a default one under their home (a sandbox
 * root with `sub` = `['docker']`, a temp directory with none): the root and each directory below it must belong to
 * `owner`, be no symlink and be on the root's filesystem (core/trust.ts `rootChainProblem`). `line` is null when it
 * holds, else the one `untrusted-root` line naming `what` and why; `chain` what was checked (its inodes, for checking
 * later that a directory opened is still the one checked). For every pass that removes under such a root.
 */
export function untrustedRoot(what: string, root: string, owner: number, sub: readonly string[] = []): { line: string | null; chain: CheckedDir[] } {
  let chain: CheckedDir[];
  try {
    chain = rootChain(root, sub);
  } catch (err) {
    return { line: untrustedRootLine(what, root, `${shown(root)} cannot be checked (${codeOf(err)})`), chain: [] };
  }
  const problem = rootChainProblem(chain, owner, NAMES);
  return { line: problem === null ? null : untrustedRootLine(what, root, problem), chain };
}
