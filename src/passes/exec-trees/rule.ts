/**
 * Command trees hermes abandoned inside a sandbox (pure: every function takes its inputs and the clock).
 *
 * hermes runs every command as `docker exec <id> bash -c CMD` under a host-side timeout; when it fires, hermes kills
 * its `docker exec` client only and the command's tree runs on inside the sandbox. Every exec of hermes is bounded by
 * hermes' own timeouts (its background jobs start through a short exec that returns at once, and are polled with
 * more short execs), so an exec still running well past the longest timeout hermes can give a command has nobody
 * waiting for it: it is **abandoned** once its age exceeds the bound, 2 x that longest timeout. An exec whose age
 * cannot be known is never abandoned.
 *
 * Its tree is its process and every descendant by parent links, read from a snapshot of the process table on the
 * engine's host. The sandbox's init (`State.Pid`) and everything under it (its main command, background jobs left to
 * init) is never part of an exec's tree; an exec whose process sits under init is refused outright.
 */
import type { CommandTimeouts } from '../../hermes/timeouts.js';

/** One process of the host's process table. */
export interface ProcEntry {
  pid: number;
  /** Parent pid (field 4 of `/proc/<pid>/stat`). */
  ppid: number;
  /** Start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`): with the pid, who the process is. */
  startTicks: number;
}

/** A snapshot of the process table and what turns its start times into instants. */
export interface ProcSnapshot {
  /** By pid. */
  procs: ReadonlyMap<number, ProcEntry>;
  /** `btime` of `/proc/stat`, in ms since the epoch. */
  bootMs: number;
  /** Clock ticks per second (`sysconf(_SC_CLK_TCK)`, 100 on Linux). */
  ticksPerSecond: number;
}

/** A process as it was seen: its pid and start time (a pid reused by another process has another start time). */
export interface ProcIdentity {
  pid: number;
  startTicks: number;
}

/** The bound: 2 x the longest timeout hermes can give a command (seconds); `maxAge` (`--exec-max-age`) replaces it. */
export function execBoundSeconds(t: CommandTimeouts, maxAgeSeconds?: number): number {
  if (maxAgeSeconds !== undefined) return maxAgeSeconds;
  return 2 * Math.max(0, ...t.timeouts.map((x) => x.seconds));
}

/** When a process started, in ms since the epoch. */
export function startMs(snapshot: Pick<ProcSnapshot, 'bootMs' | 'ticksPerSecond'>, startTicks: number): number {
  return snapshot.bootMs + (startTicks * 1000) / snapshot.ticksPerSecond;
}

/**
 * An exec's age in seconds as of `asOf`: from the engine's `exec_start` event where known (`eventMs`), else from its
 * process' start time. Null when neither is known (never abandoned then). Never negative.
 */
export function execAgeSeconds(asOf: Date, from: { eventMs?: number | undefined; processStartMs?: number | null | undefined }): number | null {
  const at = from.eventMs !== undefined && Number.isFinite(from.eventMs) ? from.eventMs : from.processStartMs;
  if (at === undefined || at === null || !Number.isFinite(at)) return null;
  return Math.max(0, (asOf.getTime() - at) / 1000);
}

/** Abandoned: its age is known and past the bound. */
export function isAbandoned(ageSeconds: number | null, boundSeconds: number): boolean {
  return ageSeconds !== null && ageSeconds > boundSeconds;
}

/** Children of each pid in the snapshot. */
function childrenOf(procs: ReadonlyMap<number, ProcEntry>): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const p of procs.values()) {
    if (p.pid === p.ppid) continue;
    const list = out.get(p.ppid);
    if (list) list.push(p.pid);
    else out.set(p.ppid, [p.pid]);
  }
  return out;
}

/** `root` and all its descendants by parent links in the snapshot, root first (empty when `root` is not there). */
export function treeOf(procs: ReadonlyMap<number, ProcEntry>, root: number): ProcIdentity[] {
  const start = procs.get(root);
  if (!start) return [];
  const kids = childrenOf(procs);
  const out: ProcIdentity[] = [];
  const seen = new Set<number>();
  const queue = [start.pid];
  while (queue.length) {
    const pid = queue.shift()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    const p = procs.get(pid)!;
    out.push({ pid, startTicks: p.startTicks });
    for (const c of kids.get(pid) ?? []) queue.push(c);
  }
  return out;
}

/** True when `pid` is `ancestor` or below it by parent links. */
export function isUnder(procs: ReadonlyMap<number, ProcEntry>, pid: number, ancestor: number): boolean {
  const seen = new Set<number>();
  for (let cur = procs.get(pid); cur && !seen.has(cur.pid); cur = procs.get(cur.ppid)) {
    if (cur.pid === ancestor) return true;
    seen.add(cur.pid);
  }
  return false;
}

/**
 * The processes to signal for an exec whose process is `root`: its tree, minus anything that is the sandbox's init
 * (`initPid`) or under it. Null when the exec's own process is init or under it (never an exec hermes made). Empty
 * when the snapshot's process at `root.pid` is another one (another start time: the pid was reused); a descendant
 * that started before `root` cannot be its own (a parent link read across a pid's reuse) and is left out.
 */
export function signalTargets(snapshot: Pick<ProcSnapshot, 'procs'>, root: ProcIdentity, initPid: number): ProcIdentity[] | null {
  const { procs } = snapshot;
  if (procs.get(root.pid)?.startTicks !== root.startTicks) return [];
  if (initPid > 0 && isUnder(procs, root.pid, initPid)) return null;
  return treeOf(procs, root.pid).filter((p) => p.pid !== initPid && !(initPid > 0 && isUnder(procs, p.pid, initPid)) && p.startTicks >= root.startTicks);
}

/** Why an abandoned tree is left as it is, or why ending it was called off at the re-check. */
export type ExecKeepReason =
  /** `--keep-exec-trees` (or its config key): the pass only reports. */
  | 'keep-exec-trees'
  /** A dry run. */
  | 'dry-run'
  /** The engine is on another host (tcp, ssh): its processes cannot be seen or signalled from here. */
  | 'engine-not-local'
  /** The janitor's pid namespace is not the host's: exec clients and trees cannot all be seen from here. */
  | 'pid-namespace'
  /** The re-check: the engine says the exec no longer runs. */
  | 'exec-ended'
  /** The re-check: another process has the exec's pid now (another start time), or its process is gone. */
  | 'process-changed'
  /** The re-check: no longer past the bound (a clock that went back, a bound raised since). */
  | 'within-bound'
  /** Past the bound by its `exec_start` event, but its process cannot be found in the sandbox on this host. */
  | 'process-not-found'
  /** The exec's process is the sandbox's init or under it: never signalled. */
  | 'not-an-exec-tree'
  /** A `docker`/`podman` client of this host is attached to it (`passes/exec-trees/rule-clients.ts`): in use, at any age. */
  | 'client-alive'
  /** Its clients cannot be seen from here (procfs `hidepid`, a client's arguments unreadable): never judged client-less. */
  | 'client-unverifiable';

/** What the re-check right before signalling found. */
export interface ExecRecheck {
  /** The engine still says `Running`. */
  running: boolean;
  /** The engine's `Pid` for the exec now. */
  pid: number;
  /** The start time of the process with that pid now (null: no such process). */
  startTicks: number | null;
  /** Its age now (null: unknown). */
  ageSeconds: number | null;
}

/**
 * The re-check right before signalling: the exec still running, the same process (pid and start time), still past
 * the bound. Null when it holds, else why not.
 */
export function recheckExec(seen: ProcIdentity, now: ExecRecheck, boundSeconds: number): ExecKeepReason | null {
  if (!now.running) return 'exec-ended';
  if (now.pid !== seen.pid || now.startTicks === null || now.startTicks !== seen.startTicks) return 'process-changed';
  if (!isAbandoned(now.ageSeconds, boundSeconds)) return 'within-bound';
  return null;
}

/** An exec's command line from its `ProcessConfig`. */
export function commandLine(entrypoint: string, args: readonly string[]): string {
  return [entrypoint, ...args].filter((s) => s !== '').join(' ');
}
