/**
 * Whether this process sees the processes that matter: hermes (the owners of sandboxes and shell snapshots) and the
 * engine's (exec clients, exec trees). A process sees only its own pid namespace and those below it. In the host's
 * initial pid namespace it sees every process of the machine; in another (a container run without `--pid=host`, an
 * `unshare --pid`), only the processes started inside it, and the engine's pids, which the engine gives in its own
 * namespace, name other processes here or none. Such a view is partial: a hermes that is not there cannot be told from
 * one that is gone, so every owner counts as unverifiable (every sandbox owned, no exec tree ended, no shell snapshot
 * removed).
 *
 * The view is the engine's when the janitor's pid namespace (`/proc/self/ns/pid`) is the host's initial one, or when
 * the engine's own numbering holds here: the `State.Pid` it gives for a running container is, in this `/proc`, a
 * process in that container's cgroup (the janitor and the engine share a pid namespace, as in Docker-in-Docker).
 */
import { readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

/** `/proc/self/ns/pid` in the host's initial pid namespace (the kernel's `PROC_PID_INIT_INO`, fixed since Linux 3.8). */
export const INITIAL_PID_NAMESPACE = 'pid:[4026531836]';

/** A process of the engine's, as the engine numbers it: a running container (full id) and its `State.Pid`. */
export interface EngineProcess {
  id: string;
  pid: number;
}

/** Pid namespaces (and the engines) proved to number processes as the engine does, once per process. */
const proved = new Set<string>();

function cgroupNames(procRoot: string, pid: number, id: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(id) || !Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    const text = readFileSync(path.join(procRoot, String(pid), 'cgroup'), 'utf8');
    return text.split('\n').some((l) => (l.split(':').slice(2).join(':').split('/').pop() ?? '').includes(id));
  } catch {
    return false;
  }
}

/**
 * Why this process's view of processes is partial, or null when it is the engine's. `engineHost`: the engine the
 * view is for (null: any engine on this host, for what needs no engine, the shell snapshots); `evidence`: a running
 * container of that engine, whose `State.Pid` can prove a shared pid namespace (remembered for the engine). No procfs
 * at all is not this function's to say (the process table cannot be read: said where it is read).
 */
export function pidNamespaceProblem(opts: { engineHost: string | null; evidence?: EngineProcess | null | undefined; procRoot?: string }): string | null {
  const root = opts.procRoot ?? '/proc';
  let ns: string;
  try {
    ns = readlinkSync(path.join(root, 'self', 'ns', 'pid'));
  } catch {
    return null;
  }
  if (ns === INITIAL_PID_NAMESPACE) return null;
  const key = `${root} ${ns} `;
  if (opts.engineHost === null ? [...proved].some((k) => k.startsWith(key)) : proved.has(key + opts.engineHost)) return null;
  const e = opts.evidence;
  if (opts.engineHost !== null && e && cgroupNames(root, e.pid, e.id)) {
    proved.add(key + opts.engineHost);
    return null;
  }
  return (
    `this janitor runs in a pid namespace of its own (${ns}), not the host's: processes outside it (hermes, exec clients) ` +
    "cannot be seen, so every owner counts as unverifiable; run it in the host's pid namespace (docker run --pid=host)"
  );
}
