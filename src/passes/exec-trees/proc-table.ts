/**
 * The host's process table as the exec-tree pass needs it: pid, parent and start time of every process
 * (`/proc/<pid>/stat`), boot time (`/proc/stat` btime), whether a process is in a container's cgroup, and signals
 * sent only to the process that was seen: right before each `kill`, its start time and its cgroup (the sandbox's)
 * are read again and must be the ones first seen.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { ProcEntry, ProcIdentity, ProcSnapshot } from './rule.js';
import { parseStatStartTime } from '../../adapters/process-identity.js';
import { type EngineProcess, pidNamespaceProblem } from '../../adapters/pid-namespace.js';

/** Clock ticks per second: `sysconf(_SC_CLK_TCK)`, 100 on every Linux architecture Node runs on (USER_HZ). */
export const TICKS_PER_SECOND = 100;

/** What the exec-tree pass reads and does on this host (a test points `proc` at a fake tree, or swaps `kill`). */
export interface ProcAccess {
  snapshot(): ProcSnapshot | null;
  /** The start time of `pid` now, or null when there is no such process. */
  startTicks(pid: number): number | null;
  /** Whether `pid`'s cgroup (`/proc/<pid>/cgroup`) names container `id` (its last path segment holds the full id). */
  inContainer(pid: number, id: string): boolean;
  /**
   * Why this view of the engine's processes is partial (this process's pid namespace is not the host's, nor proved the
   * engine's by `evidence`: `adapters/pid-namespace.ts`), or null.
   */
  pidNamespace(engineHost: string, evidence: EngineProcess): string | null;
  /** The process `p` still runs (same pid and start time, not a zombie). */
  alive(p: ProcIdentity): boolean;
  /**
   * Sends `signal` to `p` if the process with its pid still has its start time and is still in the cgroup of
   * container `container` (its full id), both read again right before the `kill`: `sent`, `gone` or `changed`.
   */
  signal(p: ProcIdentity, signal: 'SIGTERM' | 'SIGKILL', container: string): 'sent' | 'gone' | 'changed';
}

/** Field 4 (ppid) and 22 (starttime) of a `/proc/<pid>/stat` line, or null. */
export function parseStat(pid: number, line: string): ProcEntry | null {
  const end = line.lastIndexOf(')');
  if (end < 0) return null;
  const fields = line
    .slice(end + 1)
    .trim()
    .split(/\s+/);
  // fields[0] is field 3 (state), fields[1] field 4 (ppid).
  const ppid = Number(fields[1]);
  const start = parseStatStartTime(line);
  if (!Number.isSafeInteger(ppid) || start === null) return null;
  return { pid, ppid, startTicks: Number(start) };
}

function read(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** The real `/proc` (or another procfs root), with `kill` for the signals. */
export function procAccess(proc = '/proc', kill: (pid: number, sig: NodeJS.Signals) => void = process.kill): ProcAccess {
  const startTicks = (pid: number): number | null => {
    const line = read(path.join(proc, String(pid), 'stat'));
    const s = line === null ? null : parseStatStartTime(line);
    return s === null ? null : Number(s);
  };
  const inContainer = (pid: number, id: string): boolean => {
    if (!/^[0-9a-f]{64}$/.test(id)) return false;
    const text = read(path.join(proc, String(pid), 'cgroup'));
    if (text === null) return false;
    return text.split('\n').some((l) => (l.split(':').slice(2).join(':').split('/').pop() ?? '').includes(id));
  };
  return {
    snapshot(): ProcSnapshot | null {
      const btime = /^btime (\d+)$/m.exec(read(path.join(proc, 'stat')) ?? '');
      if (!btime) return null;
      const procs = new Map<number, ProcEntry>();
      let names: string[];
      try {
        names = readdirSync(proc);
      } catch {
        return null;
      }
      for (const name of names) {
        if (!/^\d+$/.test(name)) continue;
        const pid = Number(name);
        const line = read(path.join(proc, name, 'stat'));
        const e = line === null ? null : parseStat(pid, line);
        if (e) procs.set(pid, e);
      }
      return { procs, bootMs: Number(btime[1]) * 1000, ticksPerSecond: TICKS_PER_SECOND };
    },
    startTicks,
    inContainer,
    pidNamespace: (engineHost, evidence) => pidNamespaceProblem({ engineHost, evidence, procRoot: proc }),
    alive(p: ProcIdentity): boolean {
      const line = read(path.join(proc, String(p.pid), 'stat'));
      if (line === null) return false;
      const e = parseStat(p.pid, line);
      const state = line.slice(line.lastIndexOf(')') + 1).trim()[0];
      return e !== null && e.startTicks === p.startTicks && state !== 'Z' && state !== 'X';
    },
    signal(p: ProcIdentity, sig: 'SIGTERM' | 'SIGKILL', container: string): 'sent' | 'gone' | 'changed' {
      // The checks and the kill are separate calls (Node has no pidfd_send_signal): the window is the time between
      // the last read and the kill, microseconds, against a pid space of 32,768 or more handed out in order. The
      // cgroup is read first, the start time last: a pid taken over in between has another start time.
      const inSandbox = inContainer(p.pid, container);
      const now = startTicks(p.pid);
      if (now === null) return 'gone';
      if (now !== p.startTicks || !inSandbox) return 'changed';
      try {
        kill(p.pid, sig);
        return 'sent';
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
        throw err;
      }
    },
  };
}
