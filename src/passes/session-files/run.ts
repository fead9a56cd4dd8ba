/**
 * The session-file pass of `reap`, `watch` and `status`: hermes' abandoned background-job triplets, `execute_code`
 * sandbox directories and RPC sockets in every directory where it puts session files, found, counted and (unless a
 * dry run) removed by the shell snapshots' proof (`judgeSession`: changed at least the threshold ago, no living
 * hermes-like process of the owner started before the last change; the owner's processes read again right before
 * removing) and the same descriptor-relative removal. Rules in passes/session-files/rule.ts, files in
 * passes/session-files/files.ts. It needs no engine. It never races hermes' own pruner into an error: what went first
 * is `gone`. Its work stops at the run's abort (`--timeout`): `cutShort`.
 */
import path from 'node:path';
import { type ProcessTable, readHermesProcesses } from '../../adapters/hermes-processes.js';
import { pidNamespaceProblem } from '../../adapters/pid-namespace.js';
import { type RemoveOutcome, type TaskDirPlace, type TaskDirScan, readMountPoints, removeTaskDir, scanTaskDir } from '../dir-trees/files.js';
import { type SessionFile, listSessionFiles, unlinkFileIfUnchanged, unlinkSocketIfUnchanged } from './files.js';
import { type EntriesBudget, SESSION_ENTRIES_CAP, type TempDirHandle, type UnlinkOutcome, closeTempDir, openTempDir } from '../temp-dirs/files.js';
import { untrustedRoot } from '../../adapters/trust.js';
import { refusalLine, shownPath } from '../dir-trees/rule.js';
import { type SessionEntry, type SessionFileKind, groupSessionEntries } from './rule.js';
import { type ProcessView, type SnapshotKeepReason, judgeSession } from '../temp-dirs/rule.js';
import { UNTRUSTED_ROOT } from '../../core/trust.js';
import { errorMessage } from '../../errors.js';
import { TimeSlice } from '../../util/time-slice.js';
import type { TempDir } from '../temp-dirs/dirs.js';
import { viewOf } from '../temp-dirs/processes.js';

export interface SessionFilesOptions {
  tempDirs: readonly TempDir[];
  /** An entry changed at least this long ago may be abandoned (2 x max(lifetime, 60 s)). */
  thresholdMs: number;
  dryRun: boolean;
  now: () => Date;
  /**
   * The process table (tests inject one; default: this host's procfs at `procRoot`, Python interpreters included, read
   * in slices): once for the pass, then once per owner right before removing that owner's entries (`uid`).
   */
  processes?: (uid?: number) => ProcessTable;
  /** The procfs root of the default table (`HERMES_JANITOR_PROC_ROOT`); default `/proc`. */
  procRoot?: string;
  /** The run's abort (`--timeout`, watch's stop): no entry is judged or removed after it. */
  signal?: AbortSignal | undefined;
}

/** Why an entry stays: the shell snapshots' reasons. */
export type SessionKeepReason = SnapshotKeepReason;

export interface RemovedSessionFile {
  kind: SessionFileKind;
  /** The sandbox directory, the socket, or a background job's stem (`<dir>/hermes_bg_<id>`). */
  path: string;
  owner: number;
  /** Its last change (ISO 8601): the newest among its files (anywhere in a sandbox directory). */
  lastChange: string;
  /** What went: a job's files, the directory, the socket. */
  files: string[];
  /** What it freed (a dry run: would free), in bytes: a job's files' sizes, a sandbox directory's size on disk, 0 for a socket. */
  bytes: number;
}

export interface KeptSessionFile {
  kind: SessionFileKind;
  path: string;
  reason: SessionKeepReason;
  detail: string;
  owner: number;
  lastChange: string;
}

export interface FailedSessionFile {
  kind: SessionFileKind;
  path: string;
  /** One line: what, why, and the fix. */
  error: string;
}

/** The `sessionFiles` object of `reap --json`. */
export interface SessionFilesResult {
  removed: RemovedSessionFile[];
  kept: KeptSessionFile[];
  failed: FailedSessionFile[];
  /**
   * The directories looked at; `reason` `untrusted-root` for one refused for the run (`problem` says why); `capped`:
   * it held more of hermes' names than a run takes (`SESSION_ENTRIES_CAP`), this many were looked at.
   */
  tempDirs: Array<TempDir & { problem: string | null; reason?: typeof UNTRUSTED_ROOT; capped?: number }>;
  /** Why some processes could not be seen, or null. */
  processesHidden: string | null;
  /** The run's abort stopped the pass before its end (what it did not reach was left as it is). */
  cutShort: boolean;
}

/** One run of the pass. */
interface Run {
  opts: SessionFilesOptions;
  out: SessionFilesResult;
  selfUid: number;
  /**
   * Every owner's processes, read once, the first time an entry that could go is judged (null: the run's abort came
   * first). A run whose directories hold nothing past the threshold that it may remove reads no process table.
   */
  first: () => Promise<ProcessView | null>;
  /** An owner's processes read again right before removing their entries: once per owner (null: the run's abort). */
  fresh: (uid: number) => Promise<ProcessView | null>;
  /** The mount points, read once, the first time a sandbox directory is scanned. */
  mounts: () => Promise<ReadonlySet<string>>;
  /** Gives the event loop a turn every few milliseconds; true once the run is aborted. */
  pause: () => Promise<boolean>;
  /** The names the run may still take from its directories (`SESSION_ENTRIES_CAP`). */
  budget: EntriesBudget;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * How the pass reads processes: the table (every user's, or one owner's), in slices inside the run's abort; none at
 * all when the janitor's pid namespace is not the host's (`hidden` for every owner: nothing is removed).
 */
function processReader(opts: SessionFilesOptions, selfUid: number): { read: (uid?: number) => Promise<ProcessView | null>; partial: string | null } {
  const procRoot = opts.procRoot ? { procRoot: opts.procRoot } : {};
  const partial = pidNamespaceProblem({ engineHost: null, ...procRoot });
  if (partial) return { read: async () => ({ processes: [], hidden: { why: partial, uids: 'all' }, selfUid }), partial };
  const slice = new TimeSlice(opts.signal);
  const read = async (uid?: number) => {
    const t = opts.processes
      ? opts.processes(uid)
      : await readHermesProcesses({ python: true, profiles: false, ...procRoot, ...(uid === undefined ? {} : { uids: new Set([uid]) }) }, slice);
    return t === null ? null : viewOf(t, selfUid);
  };
  return { read, partial };
}

/** Whether an entry could go at all, whatever the processes (`judgeSession`'s first two tests): else none are read for it. */
const mayGo = (e: SessionEntry, selfUid: number, nowMs: number, thresholdMs: number): boolean =>
  (selfUid === 0 || e.uid === selfUid) && nowMs - e.lastChangeMs >= thresholdMs;

/** Runs the pass over each directory (one directory named twice is looked at once). Never throws. */
export async function sessionFilePass(opts: SessionFilesOptions): Promise<SessionFilesResult> {
  const selfUid = process.geteuid?.() ?? -1;
  const { read, partial } = processReader(opts, selfUid);
  const out: SessionFilesResult = { removed: [], kept: [], failed: [], tempDirs: [], processesHidden: partial, cutShort: false };
  let first: Promise<ProcessView | null> | undefined;
  const firstView = () =>
    (first ??= read().then((v) => {
      if (v) out.processesHidden = v.hidden?.why ?? null;
      return v;
    }));
  const byOwner = new Map<number, Promise<ProcessView | null>>();
  const fresh = (uid: number) => byOwner.get(uid) ?? byOwner.set(uid, read(uid)).get(uid)!;
  const slice = new TimeSlice(opts.signal);
  const budget = { left: SESSION_ENTRIES_CAP };
  let mounts: Promise<ReadonlySet<string>> | undefined;
  const run: Run = { opts, out, selfUid, first: firstView, fresh, mounts: () => (mounts ??= readMountPoints()), pause: () => slice.pause(), budget };
  const seen = new Set<string>();
  for (const t of opts.tempDirs) {
    if (opts.signal?.aborted) {
      out.cutShort = true;
      break;
    }
    const h = openDir(out, t);
    if (!h) continue;
    try {
      const key = `${h.dev}:${h.ino}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.tempDirs.push({ ...t, problem: null });
      await oneDir(run, h, t);
    } catch (err) {
      out.tempDirs.at(-1)!.problem = `cannot read ${t.dir} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})`;
    } finally {
      closeTempDir(h);
    }
  }
  return out;
}

/** The directory opened (root over another user's home: theirs, by the trust rule for roots), or null with why not. */
function openDir(out: SessionFilesResult, t: TempDir): TempDirHandle | null {
  const refused = t.owner === undefined ? null : untrustedRoot('temp directory', t.dir, t.owner).line;
  if (refused !== null) {
    out.tempDirs.push({ ...t, problem: refused, reason: UNTRUSTED_ROOT });
    return null;
  }
  try {
    return openTempDir(t.dir, t.owner);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    out.tempDirs.push({ ...t, problem: code === 'ENOENT' ? null : `cannot open ${t.dir} (${code ?? errorMessage(err)})` });
    return null;
  }
}

/** What a run knows of one entry: its files as listed, and a sandbox directory's scan. */
interface Judged {
  e: SessionEntry;
  files: SessionFile[];
  scan: TaskDirScan | null;
  shown: string;
}

async function oneDir(run: Run, h: TempDirHandle, t: TempDir): Promise<void> {
  const { out } = run;
  const read = await listSessionFiles(h, run.pause, run.budget);
  if (read.capped !== undefined) out.tempDirs.at(-1)!.capped = read.capped;
  if (read.cutShort) out.cutShort = true;
  // Root over another user's home: that user's entries only (`TempDir.onlyUid`), none of another user's names.
  const listed = read.files.filter((f) => t.onlyUid === undefined || f.uid === t.onlyUid);
  const { entries, wrongType } = groupSessionEntries(listed.filter((f) => f.dev === h.dev || f.symlink));
  for (const f of listed.filter((x) => x.dev !== h.dev && !x.symlink)) keepFile(run, h, f, 'other-filesystem', 'on another filesystem than the directory');
  for (const f of wrongType)
    keepFile(run, h, f, 'not-regular', f.symlink ? 'a symlink: never followed, never removed' : 'not the type of file hermes makes there');
  const byName = new Map(listed.map((f) => [f.name, f]));
  for (const e of entries) {
    if ((await run.pause()) || out.cutShort) {
      out.cutShort = true;
      return;
    }
    const shown = path.join(h.dir, e.entry);
    const j: Judged = { e, files: e.names.map((n) => byName.get(n)!), scan: null, shown };
    if (e.kind === 'code-sandbox') {
      const place: TaskDirPlace = { parentDev: h.dev, mountPoints: await run.mounts() };
      j.scan = await scanTaskDir(shown, place, { checkRemovable: !run.opts.dryRun, ...(run.opts.signal ? { signal: run.opts.signal } : {}) }).catch(() => null);
      if (!j.scan || j.scan.kind !== 'directory') {
        keep(run, j, 'gone', 'no longer there (removed by someone else)');
        continue;
      }
      e.lastChangeMs = Math.max(e.lastChangeMs, j.scan.lastChangeMs);
      if (j.scan.mountPoint || j.scan.mounts.length) {
        keep(run, j, 'other-filesystem', 'another filesystem is mounted in it: not entered');
        continue;
      }
    }
    await judgeAndRemove(run, h, t, j);
  }
}

function keepFile(run: Run, h: TempDirHandle, f: SessionFile, reason: SessionKeepReason, detail: string): void {
  const kind = (f.type === 'directory' ? 'code-sandbox' : f.name.endsWith('.sock') ? 'rpc-socket' : 'background-job') as SessionFileKind;
  run.out.kept.push({ kind, path: path.join(h.dir, f.name), reason, detail, owner: f.uid, lastChange: iso(f.mtimeMs) });
}

function keep(run: Run, j: Judged, reason: SessionKeepReason, detail: string): void {
  run.out.kept.push({ kind: j.e.kind, path: j.shown, reason, detail, owner: j.e.uid, lastChange: iso(j.e.lastChangeMs) });
}

/** The proof, again right before acting (the owner's processes read afresh), then the removal. */
async function judgeAndRemove(run: Run, h: TempDirHandle, t: TempDir, j: Judged): Promise<void> {
  const { opts, out } = run;
  const nowMs = opts.now().getTime();
  // An entry that cannot go whatever the processes is judged without them (the same verdict: other user, too recent).
  const first = mayGo(j.e, run.selfUid, nowMs, opts.thresholdMs) ? await run.first() : { processes: [], hidden: null, selfUid: run.selfUid };
  if (!first) {
    out.cutShort = true;
    return keep(run, j, 'processes-hidden', "the run's time was up before its owner's processes were read");
  }
  const verdict = judgeSession(j.e, first, nowMs, opts.thresholdMs);
  if (!verdict.abandoned) return keep(run, j, verdict.reason!, verdict.detail);
  const removed = { kind: j.e.kind, path: j.shown, owner: j.e.uid, lastChange: iso(j.e.lastChangeMs), bytes: j.scan ? j.scan.bytes : 0 };
  const files = j.e.kind === 'background-job' ? j.files.map((f) => path.join(h.dir, f.name)) : [j.shown];
  const sizes = j.e.kind === 'background-job' ? j.files.reduce((n, f) => n + f.size, 0) : removed.bytes;
  if (opts.dryRun) return void out.removed.push({ ...removed, files, bytes: sizes });
  const view = await run.fresh(j.e.uid);
  if (!view) {
    out.cutShort = true;
    return keep(run, j, 'processes-hidden', "the run's time was up before its owner's processes were read again");
  }
  const again = judgeSession(j.e, view, opts.now().getTime(), opts.thresholdMs);
  if (!again.abandoned) return keep(run, j, again.reason!, again.detail);
  if (j.e.kind === 'code-sandbox') return removeSandboxDir(run, h, t, { j, removed });
  const done: string[] = [];
  let bytes = 0;
  let stopped = false;
  for (const f of j.files) {
    const r: UnlinkOutcome = j.e.kind === 'rpc-socket' ? unlinkSocketIfUnchanged(h, f) : unlinkFileIfUnchanged(h, f);
    const shownFile = path.join(h.dir, f.name);
    if (r.status === 'removed') {
      done.push(shownFile);
      if (j.e.kind === 'background-job') bytes += f.size;
    } else if (r.status === 'changed' || r.status === 'failed') {
      // Rewritten or replaced: the job may be alive after all; its remaining files stay. A failure stops it too.
      if (r.status === 'changed') keep(run, { ...j, shown: shownFile }, 'changed', r.detail);
      else out.failed.push({ kind: j.e.kind, path: shownFile, error: unlinkError(shownFile, r.code, j.e.uid) });
      stopped = true;
      break;
    }
  }
  if (done.length) out.removed.push({ ...removed, files: done, bytes });
  else if (!stopped) keep(run, j, 'gone', 'no longer there (removed by someone else: hermes prunes its own cache)');
}

function unlinkError(file: string, code: string, uid: number): string {
  const fix = code === 'EACCES' || code === 'EPERM' ? `run as root or as uid ${uid}` : 'check the directory and remove it by hand';
  return `cannot remove ${shownPath(file)} (${code}): ${fix}`;
}

/** A sandbox directory: refused before anything is touched when a part of it cannot be removed; else removed by descriptor. */
async function removeSandboxDir(run: Run, h: TempDirHandle, t: TempDir, o: { j: Judged; removed: Omit<RemovedSessionFile, 'files'> }): Promise<void> {
  const { j } = o;
  const uid = run.selfUid < 0 ? null : run.selfUid;
  if (j.scan?.refused) {
    run.out.failed.push({ kind: 'code-sandbox', path: j.shown, error: refusalLine(j.shown, j.scan.refused, uid, { partial: false, leftAt: j.shown }) });
    return;
  }
  let r: RemoveOutcome;
  try {
    r = await removeTaskDir(j.shown, h.dev, { parentIno: h.ino, ...(t.owner !== undefined ? { owner: t.owner } : {}) });
  } catch (err) {
    run.out.failed.push({ kind: 'code-sandbox', path: j.shown, error: `cannot remove ${shownPath(j.shown)} (${errorMessage(err)})` });
    return;
  }
  if (r.status === 'removed') run.out.removed.push({ ...o.removed, files: [j.shown] });
  else if (r.status === 'gone') keep(run, j, 'gone', 'no longer there (removed by someone else: hermes prunes its own cache)');
  else run.out.failed.push({ kind: 'code-sandbox', path: j.shown, error: refusalLine(j.shown, r.refusal, uid, r) });
}

/** What `status` and the metrics show per directory: found and abandoned, by kind. */
export interface SessionFilesSummary {
  dir: string;
  from: string;
  /** By kind: found (kept or abandoned) and abandoned (a `reap` would remove them). */
  kinds: Record<SessionFileKind, { found: number; abandoned: number }>;
  /** Other users' entries, not this user's to remove. */
  otherUsers: number;
  problem: string | null;
  reason?: typeof UNTRUSTED_ROOT;
  /** It held more of hermes' names than a run takes: this many were looked at (`SESSION_ENTRIES_CAP`). */
  capped?: number;
}

/** The per-directory summary of a dry run. */
export function summarizeSessionFiles(r: SessionFilesResult): SessionFilesSummary[] {
  return r.tempDirs.map((t) => {
    const inDir = (x: { path: string }) => path.dirname(x.path) === t.dir;
    const kinds = { 'background-job': { found: 0, abandoned: 0 }, 'code-sandbox': { found: 0, abandoned: 0 }, 'rpc-socket': { found: 0, abandoned: 0 } };
    for (const x of r.removed.filter(inDir)) {
      kinds[x.kind].found++;
      kinds[x.kind].abandoned++;
    }
    const kept = r.kept.filter((k) => inDir(k) && k.reason !== 'not-regular' && k.reason !== 'other-filesystem');
    for (const k of kept) kinds[k.kind].found++;
    return {
      dir: t.dir,
      from: t.from,
      kinds,
      otherUsers: kept.filter((k) => k.reason === 'other-user').length,
      problem: t.problem,
      ...(t.reason ? { reason: t.reason } : {}),
      ...(t.capped !== undefined ? { capped: t.capped } : {}),
    };
  });
}
