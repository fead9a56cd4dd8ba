/**
 * The shell-snapshot pass of `reap`, `watch` and `status`: hermes' abandoned shell snapshots in its temp directory,
 * found, counted and (unless a dry run) removed. Rules in rule.ts and temp-dirs/rule.ts, files in
 * files.ts and temp-dirs/files.ts, processes in adapters/hermes-processes.ts. It needs no engine.
 *
 * Its work is bounded by what it finds, whoever made it: the process table is read once per pass, and again only
 * right before removing, once per owner whose files are about to go (that owner's processes only); a file is read for
 * names at most once while it is unchanged (device, inode, size, modification time: remembered across `watch`'s
 * passes), and never past its first 256 KiB nor past the blocks it has on disk. The synchronous reads run in slices
 * (`util/time-slice.ts`) and stop at the run's abort (`--timeout`): what was not judged by then is kept, `cut-short`.
 */
import { type ProcessTable, readHermesProcesses } from '../../adapters/hermes-processes.js';
import { pidNamespaceProblem } from '../../adapters/pid-namespace.js';
import {
  type EntriesBudget,
  SESSION_ENTRIES_CAP,
  type SnapshotFile,
  type TempDirHandle,
  closeTempDir,
  openTempDir,
  unlinkIfUnchanged,
} from '../temp-dirs/files.js';
import { readSecretNames, snapshotFile, snapshotNames } from './files.js';
import { type SnapshotSession, groupSessions, inTempDir } from './rule.js';
import type { TempDir } from '../temp-dirs/dirs.js';
import { type ProcessView, type SnapshotKeepReason, START_SLACK_MS, judgeSession } from '../temp-dirs/rule.js';
import { viewOf } from '../temp-dirs/processes.js';
import { errorMessage } from '../../errors.js';
import { TimeSlice } from '../../util/time-slice.js';
import { UNTRUSTED_ROOT } from '../../core/trust.js';
import { untrustedRoot } from '../../adapters/trust.js';

export interface ShellSnapshotsOptions {
  tempDirs: readonly TempDir[];
  /** A session changed at least this long ago may be abandoned (2 x max(lifetime, 60 s)). */
  thresholdMs: number;
  /** List what would go, remove nothing. */
  dryRun: boolean;
  now: () => Date;
  /**
   * The process table (tests inject one; default: this host's procfs, Python interpreters included, read in slices).
   * Called once per pass for the owners of the sessions past the threshold (`uids`), then once per owner right before
   * removing that owner's files. Null: the run's abort came first.
   */
  processes?: (only: { uids: ReadonlySet<number>; startedBefore: number }) => ProcessTable | null | Promise<ProcessTable | null>;
  /** The run's abort (`--timeout`, watch's stop): the pass stops there, what it did not judge is kept (`cut-short`). */
  signal?: AbortSignal | undefined;
  /** The procfs root of the default table (`HERMES_JANITOR_PROC_ROOT`); default `/proc`. */
  procRoot?: string;
}

export interface RemovedSnapshot {
  /** The snapshot (or, without one, the session's first file). */
  path: string;
  /** Its owner's uid. */
  owner: number;
  /** Its last change (ISO 8601): the newest among the session's files. */
  lastChange: string;
  /** Variable names in it that look like secrets (names only); null when it could not be read. */
  secretNames: string[] | null;
  /** Every file of the session removed (the snapshot, its `.tmp.*` and `hermes-cwd-*` siblings). */
  files: string[];
  /** Their sizes, summed (what removing them freed; a dry run: would free); absent in results made elsewhere. */
  bytes?: number;
}

export interface KeptSnapshot {
  path: string;
  reason: SnapshotKeepReason;
  detail: string;
  owner: number;
  lastChange: string;
  secretNames: string[] | null;
}

export interface FailedSnapshot {
  path: string;
  /** One line: the file, why, and the fix. */
  error: string;
}

/** The `shellSnapshots` object of `reap --json`. */
export interface ShellSnapshotsResult {
  removed: RemovedSnapshot[];
  kept: KeptSnapshot[];
  failed: FailedSnapshot[];
  /**
   * The temp directories looked at, and what was wrong with one that could not be read; `reason` `untrusted-root`
   * for one refused for the run (`problem` then says why).
   */
  tempDirs: Array<TempDir & { problem: string | null; reason?: typeof UNTRUSTED_ROOT; capped?: number }>;
  /** Why some processes could not be seen, or null. */
  processesHidden: string | null;
  /** The run's abort stopped the pass before its end (sessions it had judged are reported; the rest were kept). */
  cutShort?: boolean;
}

interface Pass {
  opts: ShellSnapshotsOptions;
  out: ShellSnapshotsResult;
  selfUid: number;
  /** Every owner's processes, as read once for this pass (null: not read, the run was cut short first). */
  view: ProcessView | null;
  /** An owner's processes read again right before removing their files: at most once per owner (null: cut short). */
  fresh: (uid: number) => Promise<ProcessView | null>;
  slice: TimeSlice;
  /** The names the run may still take from its temp directories (`SESSION_ENTRIES_CAP`). */
  budget: EntriesBudget;
}

/** How this pass reads processes: none at all when the janitor's pid namespace is not the host's (nothing to see). */
function processReader(
  opts: ShellSnapshotsOptions,
  selfUid: number,
  slice: TimeSlice,
): { read: (only: Only) => Promise<ProcessView | null>; partial: string | null } {
  const procRoot = opts.procRoot ? { procRoot: opts.procRoot } : {};
  const partial = pidNamespaceProblem({ engineHost: null, ...procRoot });
  if (partial) return { read: async () => ({ processes: [], hidden: { why: partial, uids: 'all' }, selfUid }), partial };
  const table = opts.processes ?? ((only) => readHermesProcesses({ python: true, profiles: false, ...only, ...procRoot }, slice));
  return {
    read: async (only) => {
      const t = await table(only);
      return t === null ? null : viewOf(t, selfUid);
    },
    partial,
  };
}

/**
 * Whose processes a pass reads: the owners of sessions that could go, and only those started in time to keep one (no
 * later than the newest change among them, with the slack the rule allows).
 */
interface Only {
  uids: ReadonlySet<number>;
  startedBefore: number;
}

/** One temp directory as listed: its sessions and their files. */
interface Listed {
  h: TempDirHandle;
  sessions: Array<{ s: SnapshotSession; files: SnapshotFile[] }>;
}

/**
 * Runs the pass over each temp directory (the same directory given twice is looked at once). Never throws: a temp
 * directory that cannot be read is recorded with its problem, a file that cannot be removed is a failure.
 */
export async function shellSnapshotPass(opts: ShellSnapshotsOptions): Promise<ShellSnapshotsResult> {
  const selfUid = process.geteuid?.() ?? -1;
  const slice = new TimeSlice(opts.signal);
  const reader = processReader(opts, selfUid, slice);
  const byOwner = new Map<number, Promise<ProcessView | null>>();
  let startedBefore = 0;
  const fresh = (uid: number) => byOwner.get(uid) ?? byOwner.set(uid, reader.read({ uids: new Set([uid]), startedBefore })).get(uid)!;
  const out: ShellSnapshotsResult = { removed: [], kept: [], failed: [], tempDirs: [], processesHidden: reader.partial };
  const p: Pass = { opts, out, selfUid, view: null, fresh, slice, budget: { left: SESSION_ENTRIES_CAP } };
  const listed: Listed[] = [];
  try {
    for (const t of opts.tempDirs) {
      const l = await listDir(p, t, listed);
      if (l) listed.push(l);
    }
    // The owners whose files could go (past the threshold; this user's, or anyone's as root): their processes only.
    const nowMs = opts.now().getTime();
    const could = listed
      .flatMap((l) => l.sessions.map((x) => x.s))
      .filter((s) => nowMs - s.lastChangeMs >= opts.thresholdMs && (selfUid === 0 || s.uid === selfUid));
    const uids = new Set(could.map((s) => s.uid));
    startedBefore = could.reduce((m, s) => Math.max(m, s.lastChangeMs), 0) + START_SLACK_MS;
    p.view = uids.size === 0 || slice.aborted ? { processes: [], hidden: null, selfUid } : await reader.read({ uids, startedBefore });
    if (p.view && p.out.processesHidden === null) p.out.processesHidden = p.view.hidden?.why ?? null;
    for (const l of listed) await judgeDir(p, l);
  } finally {
    for (const l of listed) closeTempDir(l.h);
  }
  return p.out;
}

/**
 * Opens and lists one temp directory (null: refused for the run, missing, unreadable, or one already listed); its
 * problem is recorded.
 */
async function listDir(p: Pass, t: TempDir, listed: readonly Listed[]): Promise<Listed | null> {
  let h: TempDirHandle;
  const refused = t.owner === undefined ? null : untrustedRoot('temp directory', t.dir, t.owner).line;
  if (refused !== null) {
    p.out.tempDirs.push({ ...t, problem: refused, reason: UNTRUSTED_ROOT });
    return null;
  }
  try {
    h = openTempDir(t.dir, t.owner);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    p.out.tempDirs.push({ ...t, problem: code === 'ENOENT' ? null : `cannot open ${t.dir} (${code ?? errorMessage(err)})` });
    return null;
  }
  if (listed.some((l) => l.h.dev === h.dev && l.h.ino === h.ino)) {
    closeTempDir(h);
    return null;
  }
  p.out.tempDirs.push({ ...t, problem: null });
  try {
    return { h, sessions: await listSessions(p, h, t.onlyUid) };
  } catch (err) {
    p.out.tempDirs.at(-1)!.problem = `cannot read ${t.dir} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})`;
    return { h, sessions: [] };
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A session judged abandoned, waiting for its owner's removals. */
interface Doomed {
  s: SnapshotSession;
  files: SnapshotFile[];
  base: Omit<KeptSnapshot, 'reason' | 'detail'>;
}

/**
 * The snapshot files of a directory, grouped into sessions (those that are not regular files are kept at once); with
 * `onlyUid`, that user's only (another user's are not looked at, not even reported).
 */
async function listSessions(p: Pass, h: TempDirHandle, onlyUid: number | undefined): Promise<Listed['sessions']> {
  const usable: SnapshotFile[] = [];
  const read = await snapshotNames(h, () => p.slice.pause(), p.budget);
  if (read.cutShort) p.out.cutShort = true;
  if (read.capped !== undefined) p.out.tempDirs.at(-1)!.capped = read.capped;
  for (const name of read.names) {
    if (await p.slice.pause()) {
      p.out.cutShort = true;
      break;
    }
    const f = snapshotFile(h, name);
    if (!f || (onlyUid !== undefined && f.uid !== onlyUid)) continue;
    const base = { path: inTempDir(h.dir, f.name), owner: f.uid, lastChange: iso(f.mtimeMs), secretNames: null };
    if (!f.regular) p.out.kept.push({ ...base, reason: 'not-regular', detail: f.symlink ? 'a symlink: never followed, never removed' : 'not a regular file' });
    else if (f.dev !== h.dev) p.out.kept.push({ ...base, reason: 'other-filesystem', detail: 'on another filesystem than the temp directory' });
    else usable.push(f);
  }
  const byName = new Map(usable.map((f) => [f.name, f]));
  return groupSessions(usable).map((s) => ({ s, files: s.names.map((n) => byName.get(n)!) }));
}

/** Each session of a listed directory judged against the pass's view, then the doomed ones removed. */
async function judgeDir(p: Pass, { h, sessions }: Listed): Promise<void> {
  const doomed: Doomed[] = [];
  for (let i = 0; i < sessions.length; i++) {
    const { s, files } = sessions[i]!;
    if (p.view === null || (await p.slice.pause())) return cutShort(p, h, sessions.slice(i), 'before this session was judged');
    const d = judgeOne(p, p.view, { h, s, files });
    if (d) doomed.push(d);
  }
  await removeDoomed(p, h, doomed);
}

/** One session against the pass's view: kept (reported), would go (a dry run), or doomed (removed later). */
function judgeOne(p: Pass, view: ProcessView, { h, s, files }: { h: TempDirHandle; s: SnapshotSession; files: SnapshotFile[] }): Doomed | null {
  const verdict = judgeSession(s, view, p.opts.now().getTime(), p.opts.thresholdMs);
  const base = { path: inTempDir(h.dir, s.names[0]!), owner: s.uid, lastChange: iso(s.lastChangeMs), secretNames: secretNamesOf(h, files) };
  if (!verdict.abandoned) p.out.kept.push({ ...base, reason: verdict.reason!, detail: verdict.detail });
  else if (p.opts.dryRun) p.out.removed.push({ ...base, files: files.map((f) => inTempDir(h.dir, f.name)), bytes: files.reduce((n, f) => n + f.size, 0) });
  else return { s, files, base };
  return null;
}

/** The doomed sessions removed owner by owner, each owner's processes read again right before their first removal. */
async function removeDoomed(p: Pass, h: TempDirHandle, doomed: Doomed[]): Promise<void> {
  for (let i = 0; i < doomed.length; i++) {
    const d = doomed[i]!;
    if (await p.slice.pause()) return cutShort(p, h, doomed.slice(i), 'before it was removed');
    // Right before acting: the owner's processes again, from a fresh table (read once per owner).
    const view = await p.fresh(d.s.uid);
    if (view === null) return cutShort(p, h, doomed.slice(i), 'before it was removed');
    const again = judgeSession(d.s, view, p.opts.now().getTime(), p.opts.thresholdMs);
    if (!again.abandoned) p.out.kept.push({ ...d.base, reason: again.reason!, detail: again.detail });
    else removeSession(p, h, d);
  }
}

/** What the run's abort left unjudged (or not removed) is kept, `cut-short`. */
function cutShort(p: Pass, h: TempDirHandle, left: ReadonlyArray<Pick<Doomed, 's'> & { base?: Doomed['base'] }>, when: string): void {
  p.out.cutShort = true;
  for (const { s, base } of left) {
    const b = base ?? { path: inTempDir(h.dir, s.names[0]!), owner: s.uid, lastChange: iso(s.lastChangeMs), secretNames: null };
    p.out.kept.push({ ...b, reason: 'cut-short', detail: `the run was cut short (--timeout) ${when}` });
  }
}

/** Secret names read, per file as it was (device, inode, size, mtime): a file unchanged is never read again. */
const namesRead = new Map<string, string[] | null>();
const NAMES_REMEMBERED = 100_000;

function namesOf(h: TempDirHandle, f: SnapshotFile): string[] | null {
  const key = `${f.dev}:${f.ino}:${f.size}:${f.mtimeMs}`;
  if (namesRead.has(key)) return namesRead.get(key)!;
  const found = readSecretNames(h, f);
  if (namesRead.size >= NAMES_REMEMBERED) namesRead.clear();
  namesRead.set(key, found);
  return found;
}

function secretNamesOf(h: TempDirHandle, files: readonly SnapshotFile[]): string[] | null {
  const snaps = files.filter((f) => f.name.includes('.sh'));
  if (snaps.length === 0) return [];
  let readable = false;
  const names = new Set<string>();
  for (const f of snaps) {
    const found = namesOf(h, f);
    if (found === null) continue;
    readable = true;
    for (const n of found) names.add(n);
  }
  return readable ? [...names].sort() : null;
}

function removeSession(p: Pass, h: TempDirHandle, { s, files, base }: Doomed): void {
  const removed: string[] = [];
  let bytes = 0;
  let stopped = false;
  for (const f of files) {
    const shown = inTempDir(h.dir, f.name);
    const r = unlinkIfUnchanged(h, f);
    if (r.status === 'removed') {
      removed.push(shown);
      bytes += f.size;
    } else if (r.status === 'changed') {
      // Rewritten or replaced: the session may be alive after all; its remaining files stay.
      p.out.kept.push({ ...base, path: shown, reason: 'changed', detail: r.detail });
      stopped = true;
      break;
    } else if (r.status === 'failed') {
      const fix = r.code === 'EACCES' || r.code === 'EPERM' ? `run as root or as uid ${s.uid}` : 'check the temp directory and remove it by hand';
      p.out.failed.push({ path: shown, error: `cannot remove shell snapshot ${shown} (${r.code}): ${fix}` });
      stopped = true;
    }
  }
  if (removed.length) p.out.removed.push({ ...base, files: removed, bytes });
  else if (!stopped) p.out.kept.push({ ...base, reason: 'gone', detail: 'no longer there (removed by someone else)' });
}

/** What `status` shows per temp directory. */
export interface ShellSnapshotsSummary {
  dir: string;
  from: string;
  /** Sessions found (a snapshot and its siblings count once). */
  snapshots: number;
  /** Of them, abandoned (a `reap` would remove them). */
  abandoned: number;
  /** The oldest last change (ISO 8601), or null. */
  oldestChange: string | null;
  /** Snapshots declaring secret-looking names, and how many names in all (of those that could be read). */
  withSecretNames: number;
  secretNames: number;
  /** Snapshots that could not be read for names (another user's, as a user). */
  unreadable: number;
  /** Other users' snapshots, not this user's to remove. */
  otherUsers: number;
  problem: string | null;
  /** `untrusted-root` when the directory was refused for the run (`problem` says why). */
  reason?: typeof UNTRUSTED_ROOT;
  /** It held more of hermes' names than a run takes: this many were looked at (`SESSION_ENTRIES_CAP`). */
  capped?: number;
}

/** The per-directory summary of a dry run. */
export function summarize(r: ShellSnapshotsResult): ShellSnapshotsSummary[] {
  return r.tempDirs.map((t) => {
    const inDir = (x: { path: string }) => x.path.startsWith(t.dir === '/' ? '/' : `${t.dir}/`) && !x.path.slice(t.dir.length + 1).includes('/');
    const removed = r.removed.filter(inDir);
    const kept = r.kept.filter((k) => inDir(k) && k.reason !== 'not-regular' && k.reason !== 'other-filesystem');
    const all = [...removed, ...kept];
    const oldest = all.reduce<string | null>((o, x) => (o === null || x.lastChange < o ? x.lastChange : o), null);
    return {
      dir: t.dir,
      from: t.from,
      snapshots: all.length,
      abandoned: removed.length,
      oldestChange: oldest,
      withSecretNames: all.filter((x) => (x.secretNames?.length ?? 0) > 0).length,
      secretNames: all.reduce((n, x) => n + (x.secretNames?.length ?? 0), 0),
      unreadable: all.filter((x) => x.secretNames === null).length,
      otherUsers: kept.filter((k) => k.reason === 'other-user').length,
      problem: t.problem,
      ...(t.reason ? { reason: t.reason } : {}),
      ...(t.capped !== undefined ? { capped: t.capped } : {}),
    };
  });
}

/** The metrics of a pass, per temp directory (`hermes_janitor_shell_snapshots`). */
export function snapshotGauges(r: ShellSnapshotsResult): Array<{ dir: string; found: number; abandoned: number; withSecretNames: number }> {
  return summarize(r).map((s) => ({ dir: s.dir, found: s.snapshots, abandoned: s.abandoned, withSecretNames: s.withSecretNames }));
}
