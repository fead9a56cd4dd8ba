/**
 * The shell-snapshot pass of `reap`, `watch` and `status`: hermes' abandoned shell snapshots in its temp directory,
 * found, counted and (unless a dry run) removed. Rules in core/shell-snapshots.ts, files in
 * adapters/shell-snapshots.ts, processes in adapters/hermes-processes.ts. It needs no engine.
 */
import { type ProcessTable, listHermesProcesses } from '../adapters/hermes-processes.js';
import {
  type SnapshotFile, type TempDirHandle, closeTempDir, listSnapshotFiles, openTempDir, readSecretNames, unlinkIfUnchanged,
} from '../adapters/shell-snapshots.js';
import { type ProcessView, type SnapshotKeepReason, type SnapshotSession, groupSessions, inTempDir, judgeSession } from '../core/shell-snapshots.js';
import { errorMessage } from '../errors.js';
import { UNTRUSTED_ROOT } from '../core/trust.js';
import { untrustedRoot } from '../adapters/trust.js';

export interface TempDir {
  dir: string;
  /** Where it came from: `terminal.env.TMPDIR`, `TMPDIR`, ..., or `default`. */
  from: string;
  /**
   * The uid the directory must belong to (no symlink, its owner's: adapters/trust.ts `untrustedRoot`): set when root
   * runs over another user's home and that user's settings named it. Absent: not checked.
   */
  owner?: number;
}

export interface ShellSnapshotsOptions {
  tempDirs: readonly TempDir[];
  /** A session changed at least this long ago may be abandoned (2 x max(lifetime, 60 s)). */
  thresholdMs: number;
  /** List what would go, remove nothing. */
  dryRun: boolean;
  now: () => Date;
  /** The process table (tests inject one; default: this host's procfs at `procRoot`, Python interpreters included). */
  processes?: () => ProcessTable;
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
  tempDirs: Array<TempDir & { problem: string | null; reason?: typeof UNTRUSTED_ROOT }>;
  /** Why some processes could not be seen, or null. */
  processesHidden: string | null;
}

interface Pass {
  opts: ShellSnapshotsOptions;
  out: ShellSnapshotsResult;
  table: () => ProcessTable;
  selfUid: number;
}

/** A process table as the rule reads it. */
export function viewOf(t: ProcessTable, selfUid: number): ProcessView {
  // No procfs at all: nobody's processes are known.
  if (!t.readable) return { processes: [], hidden: { why: t.hidden ?? 'no procfs', uids: 'all' }, selfUid };
  return { processes: t.processes, hidden: t.hidden === null ? null : { why: t.hidden, uids: t.blindUids ?? 'others' }, selfUid };
}

/**
 * Runs the pass over each temp directory (the same directory given twice is looked at once). Never throws: a temp
 * directory that cannot be read is recorded with its problem, a file that cannot be removed is a failure.
 */
export function shellSnapshotPass(opts: ShellSnapshotsOptions): ShellSnapshotsResult {
  const table = opts.processes ?? (() => listHermesProcesses({ python: true, ...(opts.procRoot ? { procRoot: opts.procRoot } : {}) }));
  const p: Pass = { opts, out: { removed: [], kept: [], failed: [], tempDirs: [], processesHidden: null }, table, selfUid: process.geteuid?.() ?? -1 };
  const first = table();
  p.out.processesHidden = first.hidden;
  const seen = new Set<string>();
  for (const t of opts.tempDirs) {
    let h: TempDirHandle;
    const refused = t.owner === undefined ? null : untrustedRoot('temp directory', t.dir, t.owner).line;
    if (refused !== null) {
      p.out.tempDirs.push({ ...t, problem: refused, reason: UNTRUSTED_ROOT });
      continue;
    }
    try {
      h = openTempDir(t.dir, t.owner);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      p.out.tempDirs.push({ ...t, problem: code === 'ENOENT' ? null : `cannot open ${t.dir} (${code ?? errorMessage(err)})` });
      continue;
    }
    try {
      const key = `${h.dev}:${h.ino}`;
      if (seen.has(key)) continue;
      seen.add(key);
      p.out.tempDirs.push({ ...t, problem: null });
      oneDir(p, h, first);
    } catch (err) {
      p.out.tempDirs.at(-1)!.problem = `cannot read ${t.dir} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})`;
    } finally {
      closeTempDir(h);
    }
  }
  return p.out;
}

const iso = (ms: number) => new Date(ms).toISOString();

function oneDir(p: Pass, h: TempDirHandle, table: ProcessTable): void {
  const files = listSnapshotFiles(h);
  const usable: SnapshotFile[] = [];
  for (const f of files) {
    const base = { path: inTempDir(h.dir, f.name), owner: f.uid, lastChange: iso(f.mtimeMs), secretNames: null };
    if (!f.regular) p.out.kept.push({ ...base, reason: 'not-regular', detail: f.symlink ? 'a symlink: never followed, never removed' : 'not a regular file' });
    else if (f.dev !== h.dev) p.out.kept.push({ ...base, reason: 'other-filesystem', detail: 'on another filesystem than the temp directory' });
    else usable.push(f);
  }
  const byName = new Map(usable.map((f) => [f.name, f]));
  for (const s of groupSessions(usable)) oneSession(p, h, s, s.names.map((n) => byName.get(n)!), table);
}

function secretNamesOf(h: TempDirHandle, files: readonly SnapshotFile[]): string[] | null {
  const snaps = files.filter((f) => f.name.includes('.sh'));
  if (snaps.length === 0) return [];
  let readable = false;
  const names = new Set<string>();
  for (const f of snaps) {
    const found = readSecretNames(h, f);
    if (found === null) continue;
    readable = true;
    for (const n of found) names.add(n);
  }
  return readable ? [...names].sort() : null;
}

function oneSession(p: Pass, h: TempDirHandle, s: SnapshotSession, files: SnapshotFile[], table: ProcessTable): void {
  const path = inTempDir(h.dir, s.names[0]!);
  const secretNames = secretNamesOf(h, files);
  const base = { path, owner: s.uid, lastChange: iso(s.lastChangeMs), secretNames };
  const thresholdMs = p.opts.thresholdMs;
  const verdict = judgeSession(s, viewOf(table, p.selfUid), p.opts.now().getTime(), thresholdMs);
  if (!verdict.abandoned) return void p.out.kept.push({ ...base, reason: verdict.reason!, detail: verdict.detail });
  if (p.opts.dryRun) return void p.out.removed.push({ ...base, files: files.map((f) => inTempDir(h.dir, f.name)), bytes: files.reduce((n, f) => n + f.size, 0) });
  // Right before acting: the owner's processes again, from a fresh table.
  const again = judgeSession(s, viewOf(p.table(), p.selfUid), p.opts.now().getTime(), thresholdMs);
  if (!again.abandoned) return void p.out.kept.push({ ...base, reason: again.reason!, detail: again.detail });
  const removed: string[] = [];
  let bytes = 0;
  let stopped = false;
  for (const f of files) {
    const shown = inTempDir(h.dir, f.name);
    const r = unlinkIfUnchanged(h, f);
    if (r.status === 'removed') {
      removed.push(shown);
      bytes += f.size;
    }
    else if (r.status === 'changed') {
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
      dir: t.dir, from: t.from, snapshots: all.length, abandoned: removed.length, oldestChange: oldest,
      withSecretNames: all.filter((x) => (x.secretNames?.length ?? 0) > 0).length,
      secretNames: all.reduce((n, x) => n + (x.secretNames?.length ?? 0), 0),
      unreadable: all.filter((x) => x.secretNames === null).length,
      otherUsers: kept.filter((k) => k.reason === 'other-user').length,
      problem: t.problem,
      ...(t.reason ? { reason: t.reason } : {}),
    };
  });
}

/** The metrics of a pass, per temp directory (`hermes_janitor_shell_snapshots`). */
export function snapshotGauges(r: ShellSnapshotsResult): Array<{ dir: string; found: number; abandoned: number; withSecretNames: number }> {
  return summarize(r).map((s) => ({ dir: s.dir, found: s.snapshots, abandoned: s.abandoned, withSecretNames: s.withSecretNames }));
}
