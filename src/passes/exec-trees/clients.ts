/**
 * The exec clients of this host, read from procfs for the exec-tree pass's client rule (`passes/exec-trees/rule-clients.ts`).
 * Every process's `stat` is read (its `comm` and start time). Its command line is read for a process whose executable
 * is `docker` or `podman` (one small read per process: what serves a survey where no exec is past its bound), and,
 * once an exec is past its bound (`every`), for every process: a client is recognised by what it runs (it names the
 * container after an exec subcommand), so `podman-remote`, or a docker CLI copied under another name, keeps its
 * stream alive. Only processes with an `exec` among their arguments are kept. What cannot be read makes the whole
 * table unverifiable (an exec is then never judged client-less): procfs mounted with `hidepid` (another user's
 * clients hidden from this one), a client whose command line cannot be read, no procfs at all.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { ClientProcess, ClientTable } from './rule-clients.js';
import { parseBootTime, parseCmdline, parseStatComm, parseStatusUid, startedAtMs } from '../../hermes/process-facts.js';
import { hidepidProblem } from '../../adapters/hermes-processes.js';
import { parseStatStartTime } from '../../adapters/process-identity.js';

/** A client's executable name as `comm` shows it (at most 15 characters). */
const CLIENT_COMM = /^(docker|podman)(\.exe)?$/;

function read(file: string): { text: string } | { code: string } {
  try {
    return { text: readFileSync(file, 'latin1') };
  } catch (err) {
    return { code: (err as NodeJS.ErrnoException).code ?? 'error' };
  }
}

/**
 * Every `docker`/`podman` process of the procfs at `procRoot` with its arguments (with `every`, every process that has
 * an `exec` among its arguments, whatever its program), or why they cannot all be seen. `comm` decides which processes
 * are read further unless `every`: a program started under another `argv[0]` is still found.
 */
export function readClientTable(procRoot = '/proc', every = false): ClientTable {
  let names: string[];
  try {
    names = readdirSync(procRoot);
  } catch {
    return { clients: [], unverifiable: `${procRoot} cannot be read: no process can be seen` };
  }
  const statFile = read(path.join(procRoot, 'stat'));
  const boot = 'text' in statFile ? parseBootTime(statFile.text) : null;
  if (boot === null) return { clients: [], unverifiable: `${procRoot}/stat gives no boot time: processes cannot be dated` };
  const hidden = hidepidProblem(procRoot);
  if (hidden) return { clients: [], unverifiable: hidden };
  const clients: ClientProcess[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const dir = path.join(procRoot, name);
    const stat = read(path.join(dir, 'stat'));
    if (!('text' in stat)) continue; // gone since the listing
    const comm = parseStatComm(stat.text);
    const named = CLIENT_COMM.test(comm);
    if (!named && !every) continue;
    const ticks = parseStatStartTime(stat.text);
    const cmdline = read(path.join(dir, 'cmdline'));
    if (!('text' in cmdline)) {
      if (cmdline.code === 'ENOENT' || cmdline.code === 'ESRCH') continue;
      return { clients: [], unverifiable: `the arguments of ${comm} process ${name} cannot be read (${cmdline.code})` };
    }
    // Cheap before parsing: no `exec` argument, no exec client (a docker/podman process is kept as before).
    if (!named && !cmdline.text.includes('\0exec\0')) continue;
    const argv = parseCmdline(cmdline.text);
    if (argv.length === 0 || ticks === null) continue; // exited (a zombie has no arguments)
    const status = read(path.join(dir, 'status'));
    const uid = 'text' in status ? (parseStatusUid(status.text) ?? -1) : -1;
    clients.push({ pid: Number(name), uid, startedAtMs: startedAtMs(Number(ticks), boot), comm, argv });
  }
  return { clients, unverifiable: null };
}

/**
 * Reads the client table, again only when the last read is older than `maxAgeMs` (0: always a fresh read); `every`:
 * every process's command line (an exec is past its bound), else only docker's and podman's.
 */
export type ClientReader = (maxAgeMs: number, every?: boolean) => ClientTable;

/**
 * A reader of `procRoot`'s clients that keeps its last table for reuse: the survey of every sandbox of a sweep takes
 * one read (a second old at most), each re-check right before a signal a fresh one. A table of every process also
 * serves a request for docker's and podman's only.
 */
export function clientReader(procRoot = '/proc', clock: () => number = Date.now): ClientReader {
  let last: { at: number; every: boolean; table: ClientTable } | null = null;
  return (maxAgeMs, every = false) => {
    const now = clock();
    if (!last || maxAgeMs <= 0 || now - last.at > maxAgeMs || (every && !last.every)) last = { at: now, every, table: readClientTable(procRoot, every) };
    return last.table;
  };
}

/** The reader of this host's `/proc`, shared by the runs of one process. */
export const hostClients: ClientReader = clientReader();
