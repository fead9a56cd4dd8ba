/**
 * The sandbox directories hermes leaves on the host: where they are, what "used" means, and when one may be
 * removed. Pure: paths, mount lists and scan facts in, decisions out (the filesystem side is `files.ts` with the
 * shared `dir-trees/files.ts`, the pass that acts `run.ts`).
 *
 * How hermes-agent makes them (NousResearch/hermes-agent, read at commit 00067189dfecf833d4d009c2dd977ae85cf800e0):
 * - `tools/environments/base.py` `get_sandbox_dir()`: `Path(os.getenv("TERMINAL_SANDBOX_DIR"))` when set and not
 *   empty, else `get_hermes_home() / "sandboxes"`; created with `mkdir(parents=True, exist_ok=True)`. The path is
 *   taken as is (no `~` expansion; a relative one is relative to hermes' working directory).
 * - `tools/environments/docker.py` `DockerEnvironment._mount_args()`, persistent filesystem on:
 *   `sandbox = get_sandbox_dir() / "docker" / _sandbox_dir_name(task_id)`, then `os.makedirs` of `sandbox/home` and
 *   `sandbox/workspace` and the bind mounts `-v <sandbox>/home:/root` and (unless the user mounted `/workspace`
 *   otherwise) `-v <sandbox>/workspace:/workspace`.
 * - `_sandbox_dir_name` is `tools/environments/path_utils.py` `sanitize_task_id_for_path`: the task id itself when
 *   it is 1-128 of `[A-Za-z0-9._-]` (not `.`, `..`, nor ending in `.`), else `<cleaned stem>-<12 hex of sha256>`;
 *   an empty id is `default`. Older versions used the raw task id. So a task directory's name says nothing
 *   reliable: every real directory directly under `<root>/docker/` is one.
 * - Nothing in hermes deletes them (hermes-agent #44114).
 *
 * Checked here (Docker 20.10 and Podman 4.3's compatible API): `GET /containers/json?all=1` lists every container
 * (created, running, exited) with `Mounts[]`; a bind mount's `Source` is the host path as given to `-v`/`--mount`,
 * cleaned (`/a//b/` is `/a/b`) but with symlinks NOT resolved; tmpfs mounts are not listed; a Docker anonymous
 * volume has `Source: ""` in the list.
 */
import path from 'node:path';
import { ENV_TERMINAL_SANDBOX_DIR, SANDBOX_DOCKER_DIRNAME, SANDBOX_REMOVING_PREFIX, SANDBOX_ROOT_DIRNAME } from '../../defaults.js';
import { escapeControls } from '../../util/escape-controls.js';
import { shownPath } from '../dir-trees/rule.js';

export interface SandboxRoot {
  /** Absolute path of the sandbox root. */
  root: string;
  /** Where it came from: hermes' `TERMINAL_SANDBOX_DIR` (from any of its sources), or the hermes home (`<home>/sandboxes`). */
  from: 'TERMINAL_SANDBOX_DIR' | 'home';
  /** The setting's source as `status` shows it (`default`, `env TERMINAL_SANDBOX_DIR`, `<home>/.env`, `config.yaml terminal.sandbox_dir`, ...). */
  source?: string;
  /**
   * The uid the root, its `docker` directory and each task directory removed must belong to (core/trust.ts
   * `rootChainProblem`): set when root runs over another user's home and the root is that user's (their settings
   * named it, or it is the default under their home). Absent: not checked.
   */
  owner?: number;
}

/**
 * The sandbox root hermes uses for a home, from hermes' resolved `sandboxRoot` setting (`hermes/settings.ts`:
 * `TERMINAL_SANDBOX_DIR` as hermes ends up with it when not empty, else `<home>/sandboxes`).
 */
export function sandboxRoot(setting: { value: string; source: string }, home: string): SandboxRoot {
  const atHome = setting.source === 'default' || setting.value === path.join(home, SANDBOX_ROOT_DIRNAME);
  return { root: setting.value, from: atHome ? 'home' : 'TERMINAL_SANDBOX_DIR', source: setting.source };
}

/** Where the task directories are: `<root>/docker`. */
export function taskDirsParent(root: string): string {
  return path.join(root, SANDBOX_DOCKER_DIRNAME);
}

/** Where a root set by `TERMINAL_SANDBOX_DIR` came from: the variable itself, or it and the file that set it. */
export function rootOrigin(r: SandboxRoot): string {
  return r.source === undefined || r.source === `env ${ENV_TERMINAL_SANDBOX_DIR}` ? ENV_TERMINAL_SANDBOX_DIR : `${ENV_TERMINAL_SANDBOX_DIR} in ${r.source}`;
}

/** Names the way a sandbox root was chosen, for messages. */
export function describeRoot(r: SandboxRoot): string {
  return r.from === 'home' ? `${r.root} (the hermes home's sandboxes)` : `${r.root} (from ${rootOrigin(r)})`;
}

/** The one line for a sandbox root (or its `docker` directory, `p`) that is not a usable directory, with the fix. */
export function rootProblem(r: SandboxRoot, p: string, what: string): string {
  const fix = r.from === 'TERMINAL_SANDBOX_DIR' ? `point ${rootOrigin(r)} at a directory, or unset it` : `move ${p} out of the way`;
  return p === r.root ? `sandbox root ${describeRoot(r)} ${what}: ${fix}` : `sandbox root ${describeRoot(r)}: ${p} ${what}: ${fix}`;
}

/**
 * A host path as an engine reports a mount source, normalised: `.`, `..` and repeated or trailing slashes
 * resolved. Null when it is not absolute (a named volume, an empty `Source`).
 */
export function normalizeHostPath(p: string): string | null {
  if (!p.startsWith('/')) return null;
  const n = path.posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

/** True when `p` is `dir` or inside it, by whole path components (`/a/bc` is not inside `/a/b`). Both normalised. */
export function isSameOrInside(p: string, dir: string): boolean {
  if (p === dir) return true;
  return p.startsWith(dir === '/' ? '/' : `${dir}/`);
}

/** One mount source of one container on one engine (a source may be listed once per spelling: as given, resolved). */
export interface MountRef {
  host: string;
  id: string;
  name: string;
  state: string;
  source: string;
}

/**
 * Which task directories are used, by name under `<root>/docker`: a container uses one when some mount's source is
 * the directory or inside it. `parentForms` are the spellings of `<root>/docker` (as configured, and resolved);
 * each source is compared as given (normalised). A source that is the parent itself, or above it, uses no task
 * directory (the rule: the directory or inside it).
 */
export function usageByTaskDir(parentForms: readonly string[], mounts: readonly MountRef[]): Map<string, MountRef[]> {
  const parents = [...new Set(parentForms.map((p) => normalizeHostPath(p)).filter((p): p is string => p !== null))];
  const out = new Map<string, MountRef[]>();
  for (const m of mounts) {
    const src = normalizeHostPath(m.source);
    if (src === null) continue;
    for (const parent of parents) {
      if (src === parent || !isSameOrInside(src, parent)) continue;
      const name = src.slice(parent === '/' ? 1 : parent.length + 1).split('/')[0]!;
      const users = out.get(name) ?? [];
      if (!users.some((u) => u.host === m.host && u.id === m.id)) users.push(m);
      out.set(name, users);
    }
  }
  return out;
}

/** Why a task directory stays. */
export type KeepReason =
  | 'not-a-directory'
  | 'symlink'
  | 'mount-point'
  | 'mount-inside'
  | 'changed-recently'
  | 'in-use'
  | 'engine-unanswered'
  | 'gone'
  | 'being-removed'
  | 'cut-short'
  /** Not the home's owner's (root over another user's home): never removed with root's rights. */
  | 'untrusted-root';

export interface Keep {
  reason: KeepReason;
  /** One human line. */
  detail: string;
}

/** Gone between the listing and the removal (another run removed it). */
export const GONE: Keep = { reason: 'gone', detail: 'no longer there (removed by someone else)' };

/** What a fresh scan of a task directory found (see `passes/dir-trees/files.ts` `scanTaskDir`). */
export interface TaskDirFileFacts {
  /** The entry itself: a real directory, a symlink, anything else, or gone. */
  kind: 'directory' | 'symlink' | 'other' | 'missing';
  /** It is itself a mount point (another filesystem than its parent's, or listed in the mount table). */
  mountPoint: boolean;
  /** Directories inside that are another filesystem or a mount point: never entered. */
  mounts: readonly string[];
  /** The newest modification time of any entry, the directory itself included (ms since the epoch). */
  lastChangeMs: number;
  /** For a directory a run renamed to remove it (`claimName`): when (its ctime, which the rename set); else null. */
  claimedAtMs: number | null;
}

/**
 * The filesystem half of the removal rule: a real directory (not a symlink, not a mount point), nothing mounted
 * inside, and nothing changed for `olderThanMs` (a modification time in the future counts as a change now). Null
 * when the files allow removal. (What this run cannot read or remove is not a reason to keep: it makes the
 * directory a failure, see `refusalLine`.)
 */
export function keepByFiles(f: TaskDirFileFacts, nowMs: number, olderThanMs: number): Keep | null {
  if (f.kind === 'missing') return GONE;
  if (f.kind === 'symlink') return { reason: 'symlink', detail: 'a symbolic link, never followed' };
  if (f.kind === 'other') return { reason: 'not-a-directory', detail: 'not a directory' };
  if (f.mountPoint) return { reason: 'mount-point', detail: 'a mount point (another filesystem), never entered' };
  // Another run is removing it; a claim older than the duration is a run that died half-way: removed as any other.
  if (f.claimedAtMs !== null && !(nowMs - f.claimedAtMs >= olderThanMs)) {
    return { reason: 'being-removed', detail: `another run is removing it (claimed at ${new Date(f.claimedAtMs).toISOString()})` };
  }
  if (f.mounts.length > 0) {
    return { reason: 'mount-inside', detail: `another filesystem is mounted inside at ${f.mounts[0]}: not entered${more(f.mounts.length)}` };
  }
  const age = nowMs - f.lastChangeMs;
  if (!(age >= olderThanMs)) {
    return { reason: 'changed-recently', detail: `changed at ${new Date(f.lastChangeMs).toISOString()}, less than ${olderThanMs / 1000} s before the run` };
  }
  return null;
}

const more = (n: number) => (n > 1 ? ` (and ${n - 1} more)` : '');

/**
 * The engine half: every engine of the run answered, and none lists a container with a mount in the directory.
 * Null when the engines allow removal.
 */
export function keepByEngines(users: readonly MountRef[], unanswered: ReadonlyArray<{ host: string; error: string }>): Keep | null {
  if (unanswered.length > 0) {
    const u = unanswered[0]!;
    return { reason: 'engine-unanswered', detail: `engine ${u.host} did not answer (${u.error}): a container there may use it` };
  }
  if (users.length > 0) {
    const u = users[0]!;
    return {
      reason: 'in-use',
      detail: `mounted by container ${u.name || u.id.slice(0, 12)} (${u.state || 'unknown state'}) on ${u.host}${more(users.length)}`,
    };
  }
  return null;
}

/** A scan's size: allocated bytes, each inode once; `shared` holds the hard-linked ones (`dev:ino` -> bytes). */
export interface SizedScan {
  bytes: number;
  shared: ReadonlyMap<string, number>;
}

/** Bytes of several scans together, a hard-linked file counted once across them (as `du -sxB1 a b c` counts). */
export function totalBytes(scans: readonly SizedScan[]): number {
  const seen = new Set<string>();
  let total = 0;
  for (const s of scans) {
    total += s.bytes;
    for (const [key, bytes] of s.shared) {
      if (seen.has(key)) total -= bytes;
      else seen.add(key);
    }
  }
  return total;
}

/** `status`'s numbers for one sandbox root (the `sandboxDirs` JSON object, keys as the issue names them). */
export interface SandboxDirsSummary {
  root: string;
  /** Task directories (real directories directly under `<root>/docker`); null when the root is unusable. */
  count: number | null;
  /** Their size on disk (allocated blocks, hard links once, symlinks not followed, other filesystems not entered). */
  bytes: number | null;
  /** How many no container uses; null when not every engine answered (unknown, not guessed). */
  unused: number | null;
  unusedBytes: number | null;
  /** The oldest "last changed" among the unused ones (ISO 8601); null when none, or unknown. */
  oldestUnusedChange: string | null;
}

export interface SurveyedDir extends SizedScan {
  name: string;
  /** Newest modification time inside; null when part of it could not be read (unknown). */
  lastChangeMs: number | null;
}

/** Sums the surveyed task directories; `used` is the usage index, or null when not every engine answered. */
export function summarize(root: string, dirs: readonly SurveyedDir[], used: ReadonlyMap<string, unknown> | null): SandboxDirsSummary {
  if (used === null) return { root, count: dirs.length, bytes: totalBytes(dirs), unused: null, unusedBytes: null, oldestUnusedChange: null };
  const unused = dirs.filter((d) => !used.has(d.name));
  const changes = unused.map((d) => d.lastChangeMs).filter((t): t is number => t !== null);
  return {
    root,
    count: dirs.length,
    bytes: totalBytes(dirs),
    unused: unused.length,
    unusedBytes: totalBytes(unused),
    oldestUnusedChange: changes.length ? new Date(Math.min(...changes)).toISOString() : null,
  };
}

/**
 * At most this many entries of one `<root>/docker` are taken by a run (the first read, in the directory's order): a
 * user's directory of a million names is read a slice at a time and only this far, and the run says so (#47). hermes
 * makes one task directory per task; a root past the cap is worked through over several runs.
 */
export const TASK_DIRS_CAP = 4096;

/** The line of a sandbox root whose `<root>/docker` (`parent`) held more entries than a run takes. */
export const cappedRootLine = (parent: string, taken: number): string =>
  `${shownPath(parent)} holds more than ${TASK_DIRS_CAP} entries (a run takes ${TASK_DIRS_CAP}): ${taken} of them were judged, the others not this run`;
