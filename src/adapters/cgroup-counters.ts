/**
 * The idle proof's counters read straight from the container's cgroup, when the janitor runs on the engine's host.
 *
 * They are the very counters the engine's stats report (Docker and Podman read them from the same files:
 * `cpuacct.usage` or `cpu.stat` usage_usec x 1000 for `cpu_stats.cpu_usage.total_usage`, `memory.stat` pgfault for
 * `memory_stats.stats.pgfault`), without waiting for the engine: Docker answers a one-shot stats request at its
 * stats collector's next pass, about a second away whenever another request was answered in the last second, so a
 * fresh sample right before each stop would otherwise cost a second per stop pass.
 *
 * Used only where the container is provably the one read: `/proc/<pid>/cgroup` of the container's init process
 * (`State.Pid`) must name a cgroup whose last path segment holds the container's full id, and that cgroup must be
 * reachable through a cgroup mount of this process's mount namespace. Anything else (another host, another pid or
 * cgroup namespace, a pid reused by another process, no permission, an unknown layout) gives null, and the caller
 * asks the engine instead. A reading that disagrees with the engine's can only look like activity (a counter that
 * differs), so it never makes a container look idler than it is.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { StatsCounters } from './engine.js';

/** Where to read from (a test points these at a fake tree). */
export interface CgroupRoots {
  /** procfs mount (default `/proc`). */
  proc: string;
}

interface CgroupMount {
  /** The cgroup path (relative to the cgroup namespace root) that the mount shows at its mount point. */
  root: string;
  mountPoint: string;
  /** `cgroup2`, or `cgroup` with its controllers. */
  v2: boolean;
  controllers: Set<string>;
}

const FULL_ID = /^[0-9a-f]{64}$/;
/** mountinfo escapes space, tab, newline and backslash as octal. */
const unescapeMountField = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

const mountCache = new Map<string, CgroupMount[]>();

/** The cgroup mounts of this process's mount namespace (read once per procfs root). */
function cgroupMounts(proc: string): CgroupMount[] {
  const cached = mountCache.get(proc);
  if (cached) return cached;
  const out: CgroupMount[] = [];
  for (const line of readFileSync(path.join(proc, 'self/mountinfo'), 'utf8').split('\n')) {
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    const dash = line.indexOf(' - ');
    if (dash < 0) continue;
    const left = line.slice(0, dash).split(' ');
    const [fstype, , superOptions = ''] = line.slice(dash + 3).split(' ');
    if ((fstype !== 'cgroup' && fstype !== 'cgroup2') || left.length < 5) continue;
    out.push({
      root: unescapeMountField(left[3]!),
      mountPoint: unescapeMountField(left[4]!),
      v2: fstype === 'cgroup2',
      controllers: new Set(superOptions.split(',')),
    });
  }
  mountCache.set(proc, out);
  return out;
}

/** The directory of cgroup `cgPath` under a mount that shows it, or null. */
function dirOf(mounts: CgroupMount[], pick: (m: CgroupMount) => boolean, cgPath: string): string | null {
  if (cgPath.split('/').includes('..')) return null; // outside this process's cgroup namespace
  for (const m of mounts) {
    if (!pick(m)) continue;
    const root = m.root === '/' ? '' : m.root;
    if (cgPath !== root && !cgPath.startsWith(`${root}/`)) continue;
    return path.join(m.mountPoint, cgPath.slice(root.length));
  }
  return null;
}

/** The last path segment names the container (`docker/<id>`, `docker-<id>.scope`, `libpod-<id>.scope`, ...). */
const namesContainer = (cgPath: string, id: string) => (cgPath.split('/').pop() ?? '').includes(id);

function pgfaultOf(memoryStat: string): number | null {
  const m = /^pgfault (\d+)$/m.exec(memoryStat);
  return m ? Number(m[1]) : null;
}

/** `pids.current` of a cgroup directory (v1 pids controller or v2), or null where it cannot be read. */
function pidsIn(dir: string | null): number | null {
  if (!dir) return null;
  try {
    const n = Number(readFileSync(path.join(dir, 'pids.current'), 'utf8').trim());
    return Number.isSafeInteger(n) && n > 0 ? n : null;
  } catch {
    return null; // no pids controller there
  }
}

/**
 * The counters of running container `id` whose init process is `pid` (its `State.Pid`), read from its cgroup; null
 * when they cannot be read here or the cgroup cannot be shown to be that container's.
 */
export function readCgroupCounters(id: string, pid: number, roots: CgroupRoots = { proc: '/proc' }): StatsCounters | null {
  if (!FULL_ID.test(id) || !Number.isSafeInteger(pid) || pid <= 0) return null;
  try {
    const lines = readFileSync(path.join(roots.proc, String(pid), 'cgroup'), 'utf8').split('\n');
    const mounts = cgroupMounts(roots.proc);
    const entry = (controller: string) => {
      for (const l of lines) {
        const [, , controllers, cgPath] = /^(\d+):([^:]*):(.*)$/.exec(l) ?? [];
        if (cgPath !== undefined && controllers!.split(',').includes(controller)) return cgPath;
      }
      return undefined;
    };
    const unified = lines.map((l) => /^0::(.*)$/.exec(l)?.[1]).find((p) => p !== undefined);
    const cpuPath = entry('cpuacct');
    if (cpuPath !== undefined) {
      // cgroup v1 (or hybrid): cpuacct and memory controllers.
      const memPath = entry('memory');
      if (!namesContainer(cpuPath, id) || (memPath !== undefined && !namesContainer(memPath, id))) return null;
      const cpuDir = dirOf(mounts, (m) => !m.v2 && m.controllers.has('cpuacct'), cpuPath);
      if (!cpuDir) return null;
      const cpuNs = Number(readFileSync(path.join(cpuDir, 'cpuacct.usage'), 'utf8').trim());
      if (!Number.isSafeInteger(cpuNs) || cpuNs <= 0) return null;
      const memDir = memPath === undefined ? null : dirOf(mounts, (m) => !m.v2 && m.controllers.has('memory'), memPath);
      const pidsPath = entry('pids');
      const pidsDir = pidsPath === undefined || !namesContainer(pidsPath, id) ? null : dirOf(mounts, (m) => !m.v2 && m.controllers.has('pids'), pidsPath);
      return { cpuNs, pgfault: memDir ? pgfaultOf(readFileSync(path.join(memDir, 'memory.stat'), 'utf8')) : null, pids: pidsIn(pidsDir) };
    }
    if (unified === undefined || !namesContainer(unified, id)) return null;
    const dir = dirOf(mounts, (m) => m.v2, unified);
    if (!dir) return null;
    const usec = /^usage_usec (\d+)$/m.exec(readFileSync(path.join(dir, 'cpu.stat'), 'utf8'));
    const cpuNs = usec ? Number(usec[1]) * 1000 : NaN;
    if (!Number.isSafeInteger(cpuNs) || cpuNs <= 0) return null;
    let pgfault: number | null = null;
    try {
      pgfault = pgfaultOf(readFileSync(path.join(dir, 'memory.stat'), 'utf8'));
    } catch {
      /* memory controller not enabled there: CPU only */
    }
    return { cpuNs, pgfault, pids: pidsIn(dir) };
  } catch {
    return null;
  }
}
