import fs from 'node:fs';
import os from 'node:os';

/**
 * Who a process is, beyond its pid: pids are reused (32,768 of them by default on Linux), and containers that share
 * a host name share nothing else. On Linux a process is identified by its pid, its start time (field 22 of
 * `/proc/<pid>/stat`, in clock ticks since boot), the boot id and its pid namespace; elsewhere by its pid alone.
 */
export interface ProcessIdentity {
  pid: number;
  host: string;
  /** `/proc/<pid>/stat` field 22; absent where there is no procfs. */
  startTime?: string;
  /** `/proc/sys/kernel/random/boot_id`; absent where there is no procfs. */
  bootId?: string;
  /** `readlink /proc/self/ns/pid` (`pid:[4026531836]`); absent where there is no procfs. */
  pidNs?: string;
}

/** Whether the process a record names still runs: `unknown` when it cannot be checked from here. */
export type Liveness = 'alive' | 'dead' | 'unknown';

/**
 * Field 22 (starttime) of a `/proc/<pid>/stat` line, or null. The command name (field 2) is in parentheses and may
 * itself hold spaces and parentheses, so fields are counted from the last `)`.
 */
export function parseStatStartTime(line: string): string | null {
  const end = line.lastIndexOf(')');
  if (end < 0) return null;
  // After ") " come field 3 (state), 4, 5, ...: field 22 is the 20th of them. Counted by hand, not with a regular
  // expression: a lock takes this on every hook call, and a fresh process compiles each expression it uses.
  let at = end + 1;
  for (let field = 3; ; field++) {
    while (at < line.length && isBlank(line.charCodeAt(at))) at++;
    const from = at;
    while (at < line.length && !isBlank(line.charCodeAt(at))) at++;
    if (from === at) return null;
    if (field === 22) return isDigits(line, from, at) ? line.slice(from, at) : null;
  }
}

/** Space, tab, line feed, vertical tab, form feed, carriage return. */
const isBlank = (c: number) => c === 32 || (c >= 9 && c <= 13);
const isDigits = (s: string, from: number, to: number) => {
  for (let i = from; i < to; i++) if (s.charCodeAt(i) < 48 || s.charCodeAt(i) > 57) return false;
  return true;
};

function readSmall(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** The start time of a running process, or null when it does not exist or there is no procfs. */
export function processStartTime(pid: number): string | null {
  const stat = readSmall(`/proc/${pid}/stat`);
  return stat === null ? null : parseStatStartTime(stat);
}

/**
 * This host's name, as `os.hostname()` gives it (the UTS namespace's node name): from procfs where there is one, which
 * spares a hook loading node:os; else from node:os.
 */
export function hostName(): string {
  const name = readSmall('/proc/sys/kernel/hostname');
  return name !== null && name.endsWith('\n') ? name.slice(0, -1) : os.hostname();
}

let self: ProcessIdentity | undefined;

/** This process's identity (computed once). */
export function selfIdentity(): ProcessIdentity {
  if (self) return self;
  const id: ProcessIdentity = { pid: process.pid, host: hostName() };
  const start = processStartTime(process.pid);
  if (start) id.startTime = start;
  const boot = readSmall('/proc/sys/kernel/random/boot_id')?.trim();
  if (boot) id.bootId = boot;
  try {
    id.pidNs = fs.readlinkSync('/proc/self/ns/pid');
  } catch {
    /* no procfs */
  }
  self = id;
  return id;
}

/** True when some process with this pid exists in this pid namespace. */
export function pidExists(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether the process a record names still runs, as far as this process can tell:
 * - another host, or another pid namespace on a host of the same name (containers): `unknown`;
 * - another boot of this host: `dead`;
 * - no process with that pid: `dead`;
 * - a process with that pid but another start time (the pid was reused): `dead`;
 * - otherwise `alive` (where there is no procfs, by the pid alone).
 */
export function liveness(record: Partial<ProcessIdentity>, me: ProcessIdentity = selfIdentity()): Liveness {
  if (typeof record.pid !== 'number' || typeof record.host !== 'string') return 'unknown';
  if (record.host !== me.host) return 'unknown';
  if (record.pidNs && me.pidNs && record.pidNs !== me.pidNs) return 'unknown';
  if (record.bootId && me.bootId && record.bootId !== me.bootId) return 'dead';
  if (record.pid === me.pid) {
    return !record.startTime || !me.startTime || record.startTime === me.startTime ? 'alive' : 'dead';
  }
  if (!pidExists(record.pid)) return 'dead';
  if (record.startTime) {
    const now = processStartTime(record.pid);
    if (now !== null && now !== record.startTime) return 'dead';
  }
  return 'alive';
}
