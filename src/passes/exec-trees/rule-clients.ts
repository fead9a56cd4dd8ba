/**
 * Whose `docker exec` is still held: the client rule of the exec-tree pass (pure: processes, execs and their ages
 * in, verdicts out; the processes are read in `passes/exec-trees/clients.ts`).
 *
 * hermes holds every command and every long-lived stream it runs in a sandbox through a `docker`/`podman` client
 * process on this host: `docker exec [-i] <container id> bash [-l] -c CMD` (hermes-agent `tools/environments/docker.py`
 * `_run_bash`, every version), and since the exec streams (`tools/environments/streams.py` `open_stream`: the desktop
 * pane's RFB relay, cua-driver's MCP server, agent-browser, each `forward_port` connection) `docker exec -i [-u user]
 * <container id> bash -c "<exports> exec <argv>"` under `subprocess.Popen`, kept open for the life of the hermes
 * process. hermes ends a command at its timeout by killing that client (#84967): the exec then runs on with nobody
 * attached. So an exec is in use while a client process lives whose arguments name its container (full id, an id
 * prefix, or its name) followed by exactly the exec's own command (`ProcessConfig`: entrypoint and arguments), as the
 * CLI's grammar has it (`exec [OPTIONS] CONTAINER COMMAND [ARG...]`); it is abandoned only when none does, and its age
 * is past the bound (the second condition, `passes/exec-trees/rule.ts`).
 *
 * A client names a container and a command, not an exec: when several running execs share a container and a command,
 * the newest are the ones kept, one per living client (execs whose age is unknown are never ended, so they take no
 * client from one whose age is known).
 */

/** An exec client of this host (a `docker`/`podman` process, or any process running an exec), as read from procfs. */
export interface ClientProcess {
  pid: number;
  uid: number;
  /** When it started (ms since the epoch). */
  startedAtMs: number;
  /** Its program's name as the kernel keeps it (`comm` of `/proc/<pid>/stat`: the executable's base name). */
  comm: string;
  /** Its arguments (`/proc/<pid>/cmdline`), the program first. */
  argv: readonly string[];
}

/** The clients of this host, or why they cannot all be seen. */
export interface ClientTable {
  clients: readonly ClientProcess[];
  /**
   * Null: every client process of every user could be read. Else why not (procfs mounted with `hidepid`, a client
   * whose arguments could not be read, no procfs): no exec is then judged client-less.
   */
  unverifiable: string | null;
}

/** A container as the client rule needs it: its full id and name. */
export interface ContainerRef {
  id: string;
  name: string;
}

/** Whether a client's argument names the container: its full id, a prefix of it, its name (with or without `/`). */
export function namesContainer(arg: string, c: ContainerRef): boolean {
  if (arg === '') return false;
  if (/^[0-9a-f]+$/.test(arg) && c.id.startsWith(arg)) return true;
  const name = c.name.replace(/^\//, '');
  return name !== '' && arg.replace(/^\//, '') === name;
}

/**
 * Whether a client process is attached to an exec of container `c` running `command` (entrypoint and arguments): its
 * arguments end with exactly `command`, the one before names the container, and an `exec` subcommand comes before
 * that (`docker exec`, `docker container exec`, `podman exec`, `podman-remote exec`, global options anywhere before
 * it). Whatever its program is called: a client is recognised by what it runs (which processes are read at all is the
 * adapter's: docker and podman always, every process once an exec is past its bound).
 */
export function clientOf(p: Pick<ClientProcess, 'comm' | 'argv'>, c: ContainerRef, command: readonly string[]): boolean {
  const { argv } = p;
  if (command.length === 0) return false;
  const at = argv.length - command.length;
  if (at < 3) return false;
  for (let i = 0; i < command.length; i++) if (argv[at + i] !== command[i]) return false;
  if (!namesContainer(argv[at - 1]!, c)) return false;
  return argv.slice(1, at - 1).includes('exec');
}

/** One running exec as the client rule needs it. */
export interface ExecForClients {
  id: string;
  /** `ProcessConfig`: the entrypoint first, then the arguments. */
  command: readonly string[];
  /** Its age in seconds; null when unknown. */
  ageSeconds: number | null;
}

/** An exec's living client as shown (`"client": {"pid", "since"}`), or null when none lives. */
export interface ClientView {
  pid: number;
  /** When the client process started (ISO 8601). */
  since: string;
}

/** What the rule says of each exec: its living client, or null; `unverifiable` when clients cannot be seen. */
export interface ClientVerdict {
  client: ClientView | null;
  /** Why this exec's clients cannot all be seen (null: they can). */
  unverifiable: string | null;
}

/** The newest first; an unknown age after every known one (it is never ended, so it takes a client last). */
const newestFirst = (a: ExecForClients, b: ExecForClients) =>
  (a.ageSeconds ?? Number.POSITIVE_INFINITY) - (b.ageSeconds ?? Number.POSITIVE_INFINITY) || a.id.localeCompare(b.id);

/**
 * The client of each running exec of container `c` (by exec id): execs are grouped by their command; a group's
 * living clients go to its newest execs, one each, the newest client to the newest exec. When the table says clients
 * cannot all be seen, every exec is `unverifiable` (and none is said to have no client).
 */
export function assignClients(c: ContainerRef, execs: readonly ExecForClients[], table: ClientTable): Map<string, ClientVerdict> {
  const out = new Map<string, ClientVerdict>();
  if (table.unverifiable !== null) {
    for (const e of execs) out.set(e.id, { client: null, unverifiable: table.unverifiable });
    return out;
  }
  const groups = new Map<string, ExecForClients[]>();
  for (const e of execs) {
    const key = JSON.stringify(e.command);
    groups.set(key, [...(groups.get(key) ?? []), e]);
  }
  for (const group of groups.values()) {
    const clients = table.clients.filter((p) => clientOf(p, c, group[0]!.command)).sort((a, b) => b.startedAtMs - a.startedAtMs || a.pid - b.pid);
    group.sort(newestFirst).forEach((e, i) => {
      const p = clients[i];
      out.set(e.id, { client: p ? { pid: p.pid, since: new Date(p.startedAtMs).toISOString() } : null, unverifiable: null });
    });
  }
  return out;
}
