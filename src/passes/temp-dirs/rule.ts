/**
 * When a session's files in hermes' temp directories are abandoned: the proof the shell-snapshot and session-file
 * passes share. Pure: the owner, the last change, processes and the clock in, a verdict out (the process table is
 * read by `processes.ts`). A living session rewrites its files as it works, so its hermes process started before
 * its last change.
 */
import type { HermesProcess } from '../../hermes/process-facts.js';

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
export function judgeSession(s: { uid: number; lastChangeMs: number }, view: ProcessView, nowMs: number, thresholdMs: number): SnapshotVerdict {
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
