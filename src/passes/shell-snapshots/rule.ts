/**
 * hermes' shell snapshots in the temp directory: which files are ones, which names in them look like secrets, and
 * when one is abandoned. Pure: names, file facts, processes and the clock in, decisions out (files in
 * `adapters/shell-snapshots.ts`, the pass in `reaper/shell-snapshots.ts`).
 *
 * How hermes-agent makes them (NousResearch/hermes-agent, `tools/environments/base.py` `BaseEnvironment.__init__`
 * and `_wrap_command`, `tools/environments/local.py` `get_temp_dir` and `cleanup`): a terminal session's id is
 * `uuid4().hex[:12]`; its shell state is `<temp dir>/hermes-snap-<id>.sh`, an `export -p` dump rewritten after every
 * command through `mktemp <snapshot>.tmp.XXXXXXXXXX` and `mv -f` under `umask 077`; older versions also wrote
 * `<temp dir>/hermes-cwd-<id>.txt`. They are removed on a graceful exit only. The temp directory is hermes'
 * `get_temp_dir`, every directory any release uses (`hermes/session-dirs.ts`).
 */
import path from 'node:path';
import type { HermesProcess } from '../../hermes/process-facts.js';

const ID = '[0-9a-f]{12}';
/** `hermes-snap-<12 hex>.sh`, its `.tmp.<10 mktemp characters>`, and `hermes-cwd-<12 hex>.txt`: nothing else. */
const SNAPSHOT = new RegExp(`^hermes-snap-(${ID})\\.sh$`);
const SNAPSHOT_TMP = new RegExp(`^hermes-snap-(${ID})\\.sh\\.tmp\\.[A-Za-z0-9]{10}$`);
const CWD_FILE = new RegExp(`^hermes-cwd-(${ID})\\.txt$`);

export type SnapshotFileKind = 'snapshot' | 'snapshot-tmp' | 'cwd';

/** What a file name says: a snapshot file of session `id`, or null when it is not exactly one. */
export function snapshotName(name: string): { id: string; kind: SnapshotFileKind } | null {
  let m = SNAPSHOT.exec(name);
  if (m) return { id: m[1]!, kind: 'snapshot' };
  m = SNAPSHOT_TMP.exec(name);
  if (m) return { id: m[1]!, kind: 'snapshot-tmp' };
  m = CWD_FILE.exec(name);
  return m ? { id: m[1]!, kind: 'cwd' } : null;
}

/** Names that look like secrets: `*_KEY`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`, `*_CREDENTIALS` (any case). */
export function isSecretName(name: string): boolean {
  const n = name.toUpperCase();
  return n.endsWith('_KEY') || n.endsWith('_TOKEN') || n.includes('SECRET') || n.includes('PASSWORD') || n.endsWith('_CREDENTIALS');
}

const DECLARATION = /^(?:declare\s+-[-A-Za-z]+|export)\s+([A-Za-z_][A-Za-z0-9_]*)(?==|\s*$)/;

/**
 * The variable names an `export -p` dump declares whose names look like secrets (sorted, each once). Only names
 * leave this function: a value is never kept, and a line inside a multi-line value that looks like a declaration
 * can at worst add a name.
 */
export function secretNamesIn(text: string): string[] {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const m = DECLARATION.exec(line);
    if (m && isSecretName(m[1]!)) out.add(m[1]!);
  }
  return [...out].sort();
}

/** One session's files in the temp directory, as found: one owner, the newest change among them. */
export interface SnapshotSession {
  id: string;
  uid: number;
  /** Names (directly in the temp directory), the snapshot first when there is one. */
  names: string[];
  /** The newest modification time among them (ms). */
  lastChangeMs: number;
}

/** Why a session's files stay. */
export type SnapshotKeepReason =
  /** Changed less than the threshold ago. */
  | 'changed-recently'
  /** A living process of its owner that could be hermes started before its last change. */
  | 'owner-alive'
  /** The owner's processes cannot all be seen (hidepid, unreadable command lines, no procfs). */
  | 'processes-hidden'
  /** Another user's, and this run is not root. */
  | 'other-user'
  /** Not a regular file (a symlink, a directory, a FIFO...). */
  | 'not-regular'
  /** On another filesystem than the temp directory (a bind mount over it). */
  | 'other-filesystem'
  /** Changed, replaced or gone between the look and the removal. */
  | 'changed'
  | 'gone'
  /** The run's abort (`--timeout`) came before it was judged or removed. */
  | 'cut-short';

export interface SnapshotVerdict {
  abandoned: boolean;
  reason?: SnapshotKeepReason;
  /** One human line. */
  detail: string;
  /** The process that keeps it (`owner-alive`). */
  process?: Pick<HermesProcess, 'pid' | 'command' | 'startedAtMs'>;
}

/** The process table as the rule needs it. */
export interface ProcessView {
  processes: readonly HermesProcess[];
  /**
   * Null: every user's processes were seen. Else why not, and whose: a set of uids, `others` (anyone's but this
   * user's: hidepid), or `all` (no procfs).
   */
  hidden: { why: string; uids: ReadonlySet<number> | 'others' | 'all' } | null;
  /** This process's effective uid. */
  selfUid: number;
  /**
   * Each user's earliest-started process that could be hermes (`earliestPerUser`): judging a session is then one
   * look-up, not a scan of every process (thousands of sessions against thousands of processes anyone can make).
   */
  earliest?: ReadonlyMap<number, HermesProcess>;
}

/** Each user's earliest-started process that could be hermes (its command line names hermes, or a Python interpreter). */
export function earliestPerUser(processes: readonly HermesProcess[]): Map<number, HermesProcess> {
  const out = new Map<number, HermesProcess>();
  for (const p of processes) {
    if (!(p.hermes || p.python)) continue;
    const cur = out.get(p.uid);
    if (!cur || p.startedAtMs < cur.startedAtMs) out.set(p.uid, p);
  }
  return out;
}

/**
 * A process's start may read up to a second late (`btime` is whole seconds) and the wall clock may have been set
 * since boot: a process that started up to this long after a change still counts as started before it (keeps).
 */
export const START_SLACK_MS = 2000;

/**
 * Whether a session is abandoned as of `nowMs`: changed at least `thresholdMs` ago, and no living process of its
 * owner that could be hermes (its command line names hermes, or it is a Python interpreter) started before its last
 * change: a living session rewrites its snapshot after every command, so its process started before that. When the
 * owner's processes cannot all be seen, it is kept.
 */
export function judgeSession(s: Pick<SnapshotSession, 'uid' | 'lastChangeMs'>, view: ProcessView, nowMs: number, thresholdMs: number): SnapshotVerdict {
  if (view.selfUid !== 0 && s.uid !== view.selfUid)
    return { abandoned: false, reason: 'other-user', detail: `owned by uid ${s.uid}: only root or that user removes it` };
  const age = nowMs - s.lastChangeMs;
  if (age < thresholdMs)
    return { abandoned: false, reason: 'changed-recently', detail: `changed ${Math.floor(age / 1000)} s ago, under the threshold of ${thresholdMs / 1000} s` };
  const hidden = view.hidden;
  const hides = (u: ReadonlySet<number> | 'others' | 'all') => (u === 'all' ? true : u === 'others' ? s.uid !== view.selfUid : u.has(s.uid));
  if (hidden && hides(hidden.uids)) {
    return { abandoned: false, reason: 'processes-hidden', detail: `uid ${s.uid}'s processes cannot all be seen (${hidden.why})` };
  }
  const started = (p: HermesProcess | undefined) =>
    p !== undefined && p.uid === s.uid && (p.hermes || p.python) && p.startedAtMs <= s.lastChangeMs + START_SLACK_MS;
  const owner = view.earliest ? [view.earliest.get(s.uid)].find(started) : view.processes.find(started);
  if (owner) {
    return {
      abandoned: false,
      reason: 'owner-alive',
      process: { pid: owner.pid, command: owner.command, startedAtMs: owner.startedAtMs },
      detail: `pid ${owner.pid} of uid ${s.uid} (${owner.command}) started ${new Date(owner.startedAtMs).toISOString()}, before its last change`,
    };
  }
  return { abandoned: true, detail: `no living hermes-like process of uid ${s.uid} started before its last change` };
}

/** Groups snapshot files into sessions by id and owner. */
export function groupSessions(files: ReadonlyArray<{ name: string; uid: number; mtimeMs: number }>): SnapshotSession[] {
  const by = new Map<string, SnapshotSession>();
  for (const f of files) {
    const n = snapshotName(f.name);
    if (!n) continue;
    const key = `${n.id}:${f.uid}`;
    const s = by.get(key) ?? { id: n.id, uid: f.uid, names: [], lastChangeMs: 0 };
    if (n.kind === 'snapshot') s.names.unshift(f.name);
    else s.names.push(f.name);
    s.lastChangeMs = Math.max(s.lastChangeMs, f.mtimeMs);
    by.set(key, s);
  }
  return [...by.values()].sort((a, b) => a.lastChangeMs - b.lastChangeMs || a.id.localeCompare(b.id));
}

/** A path in a temp directory, as shown. */
export const inTempDir = (dir: string, name: string): string => path.join(dir, name);
