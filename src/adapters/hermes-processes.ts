/**
 * The living processes of this host that could be hermes, read from procfs (which one is hermes and what it owns:
 * `hermes/processes.ts`). Only the variables those rules read are taken out of an environment.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  type HermesProcess, isPython, parseBootTime, parseCmdline, parseStatComm, parseStatusUid, shownCommand, startedAtMs,
} from '../hermes/process-facts.js';
import { createPlaceProbe } from '../hermes/installs.js';
import { type PlaceProbe, hermesCommand, ownershipOf, processVariables } from '../hermes/processes.js';
import { parseStatStartTime } from './process-identity.js';
import { ENV_PROC_ROOT } from '../defaults.js';

/** What the process table showed. */
export interface ProcessTable {
  /** Processes whose command line names hermes, or (with `python`) that run a Python interpreter. */
  processes: HermesProcess[];
  /**
   * Why some processes may be missing or unreadable (procfs mounted with `hidepid`, a process whose command line
   * could not be read), or null: the whole table was read. Processes of `blindUids` may hide; undefined there means
   * any user's.
   */
  hidden: string | null;
  /** The users some of whose processes could not be read; null when it cannot be told (hidepid hides whole users). */
  blindUids: Set<number> | null;
  /** procfs was read at all (false: no procfs, nothing is known). */
  readable: boolean;
}

export interface ProcessScanOptions {
  /** Also list Python interpreters that do not name hermes. */
  python?: boolean;
  /** procfs root (tests); default `/proc`. */
  procRoot?: string;
  /** This process's pid (left out); default `process.pid`. */
  selfPid?: number;
  /** What paths are part of hermes (tests); default: the filesystem's answer (`hermes/installs.ts`). */
  probe?: PlaceProbe;
}

/** Where hermes' processes are read from: `HERMES_JANITOR_PROC_ROOT` when set and not empty, else `/proc`. */
export function procRootOf(env: Record<string, string | undefined>): string {
  const v = env[ENV_PROC_ROOT];
  return v === undefined || v.trim() === '' ? '/proc' : v;
}

function read(file: string): string | null {
  try {
    return fs.readFileSync(file, 'latin1');
  } catch {
    return null;
  }
}

function errCode(file: string, fn: (f: string) => unknown): string | null {
  try {
    fn(file);
    return null;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'error';
  }
}

/** The `hidepid` option of the procfs mount at `procRoot`, when it hides other users' processes from this one. */
export function hidepidProblem(procRoot = '/proc'): string | null {
  if (process.geteuid?.() === 0) return null;
  const info = read(`${procRoot}/self/mountinfo`) ?? '';
  for (const line of info.split('\n')) {
    const fields = line.split(' ');
    if (fields[4] !== procRoot) continue;
    const m = /(?:^|,)hidepid=([^,\s]+)/.exec(line);
    if (m && m[1] !== '0' && m[1] !== 'off') return `procfs is mounted with hidepid=${m[1]}: other users' processes are hidden from this one`;
  }
  return null;
}

/**
 * Lists the processes that could be hermes. Each is identified by its pid and start time; its owner is the real uid
 * of its status. A process whose command line cannot be read is listed as hermes (unsure means it could be), with
 * every profile. Never throws; `readable: false` when there is no procfs.
 */
export function listHermesProcesses(opts: ProcessScanOptions = {}): ProcessTable {
  const proc = opts.procRoot ?? '/proc';
  const self = opts.selfPid ?? process.pid;
  const boot = parseBootTime(read(`${proc}/stat`) ?? '');
  let names: string[];
  try {
    names = fs.readdirSync(proc);
  } catch {
    return { processes: [], hidden: 'procfs cannot be read', blindUids: null, readable: false };
  }
  if (boot === null) return { processes: [], hidden: 'procfs gives no boot time', blindUids: null, readable: false };
  const out: HermesProcess[] = [];
  const blind = new Set<number>();
  const probe = opts.probe ?? createPlaceProbe();
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === self) continue;
    const p = readOne(proc, Number(name), boot, { python: opts.python === true, blind, probe });
    if (p) out.push(p);
  }
  const hide = hidepidProblem(proc);
  const hidden = hide ?? (blind.size ? `the command line of ${blind.size === 1 ? 'a process' : 'some processes'} could not be read` : null);
  return { processes: out.sort((a, b) => a.startedAtMs - b.startedAtMs || a.pid - b.pid), hidden, blindUids: hide ? null : blind, readable: true };
}

function readOne(proc: string, pid: number, boot: number, scan: { python: boolean; blind: Set<number>; probe: PlaceProbe }): HermesProcess | null {
  const dir = `${proc}/${pid}`;
  // The command line first: most processes are not hermes (nor, without `python`, anything else of interest), and
  // skipping their stat and status reads makes the scan about three times cheaper (it runs in every `list`).
  const rawCmd = read(`${dir}/cmdline`);
  if (rawCmd !== null && !scan.python) {
    const early = parseCmdline(rawCmd);
    if (early.length === 0 || !argvMayBeHermes(early)) return null;
  }
  const stat = read(`${dir}/stat`);
  if (stat === null) return null; // gone since the listing
  const ticks = parseStatStartTime(stat);
  if (ticks === null) return null;
  const uid = parseStatusUid(read(`${dir}/status`) ?? '') ?? ownerOf(dir);
  if (uid === null) return null;
  const base = { pid, uid, startedAtMs: startedAtMs(Number(ticks), boot) };
  if (rawCmd === null) {
    scan.blind.add(uid);
    const why = 'its command line cannot be read';
    return { ...base, command: `(${parseStatComm(stat)})`, hermes: true, python: false, profile: null, profileUnknown: why, serves: 'all-profiles', owns: null, why };
  }
  const argv = parseCmdline(rawCmd);
  if (argv.length === 0) return null; // a kernel thread or a zombie
  const py = isPython(argv, parseStatComm(stat));
  if (!py && !argvMayBeHermes(argv)) return null;
  // The environment is read only for a process that may be hermes (a Python interpreter's PYTHONPATH is part of that).
  let cmd = py ? null : hermesCommand(argv, null, scan.probe);
  if (!py && !cmd) return null;
  const envRaw = read(`${dir}/environ`);
  const vars = envRaw === null ? null : processVariables(envRaw);
  if (py) cmd = hermesCommand(argv, vars, scan.probe);
  if (!cmd && !(scan.python && py)) return null;
  const command = shownCommand(argv);
  if (!cmd) return { ...base, command, hermes: false, python: py, profile: null, profileUnknown: 'not hermes', serves: 'all-profiles', owns: null, why: 'not hermes' };
  const ownership = ownershipOf(cmd, {
    vars,
    ...(envRaw === null ? { envProblem: errCode(`${dir}/environ`, (f) => fs.readFileSync(f)) ?? 'unreadable' } : {}),
    cwd: readLink(`${dir}/cwd`),
  });
  const p: HermesProcess = {
    ...base, command, hermes: true, hermesWhy: cmd.why, python: py, ownership, places: cmd.places,
    ...(vars?.sharedKey !== undefined ? { sharedKey: vars.sharedKey } : {}),
    ...(ownership.serves === 'profile'
      ? { profile: ownership.profile, serves: 'profile', owns: [ownership.profile], why: ownership.why }
      : { profile: null, profileUnknown: ownership.why, serves: 'all-profiles', owns: null, why: ownership.why }),
  };
  return p;
}

/** A command line that could be hermes without reading anything else: an entry point's name, or an interpreter. */
function argvMayBeHermes(argv: readonly string[]): boolean {
  return /^(hermes|hermes-agent|hermes-acp|python(\d+(\.\d+)*)?|sh|bash|dash|zsh|node|nodejs|env)$/.test(path.basename(argv[0] ?? ''));
}

function ownerOf(dir: string): number | null {
  try {
    return fs.statSync(dir).uid;
  } catch {
    return null;
  }
}

function readLink(p: string): string | null {
  try {
    return fs.readlinkSync(p);
  } catch {
    return null;
  }
}
