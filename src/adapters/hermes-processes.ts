/**
 * The living processes of this host that could be hermes, read from procfs (the rules are
 * `hermes/processes.ts`). Only the two variables a profile follows from are taken out of an environment.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  type HermesProcess,
  isPython,
  parseBootTime,
  parseCmdline,
  parseStatComm,
  parseStatusUid,
  shownCommand,
  startedAtMs,
} from '../hermes/process-facts.js';
import { createPlaceProbe } from '../hermes/installs.js';
import { type HermesCommand, type PlaceProbe, type ProcessVariables, hermesCommand, ownershipOf, processVariables } from '../hermes/processes.js';
import { parseStatStartTime } from './process-identity.js';
import type { TimeSlice } from '../util/time-slice.js';
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
  /** Only these users' processes (the others' command lines are not read). */
  uids?: ReadonlySet<number>;
  /** Tell the profile each serves (its environment and working directory read); default true. */
  profiles?: boolean;
  /** With `python`: only processes started no later than this (ms since the epoch); the others cost one more read. */
  startedBefore?: number;
  /** What paths are part of hermes (tests); default: the filesystem's answer (`hermes/installs.ts`). */
  probe?: PlaceProbe;
}

/**
 * The most of a command line and of an environment read (a process can make either megabytes long, and anyone's
 * is read): enough for every argument that tells hermes and its profile. An environment cut short before `HOME` and
 * `HERMES_HOME` counts as unreadable (every profile: unsure means owned).
 */
export const MAX_CMDLINE_BYTES = 16 * 1024;
export const MAX_ENVIRON_BYTES = 256 * 1024;

/** One buffer for every bounded read (a table of thousands of processes allocates nothing per process). */
let scratch: Buffer | undefined;

/** The first `max` bytes of a file (latin1), whether more followed, or null when it cannot be read. */
function readHead(file: string, max: number): { text: string; cut: boolean } | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    scratch ??= Buffer.allocUnsafe(MAX_ENVIRON_BYTES + 1);
    const buf = scratch.subarray(0, max + 1);
    let n = 0;
    for (let got = -1; got !== 0 && n < buf.length; n += got) got = fs.readSync(fd, buf, n, buf.length - n, null);
    return { text: buf.toString('latin1', 0, Math.min(n, max)), cut: n > max };
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
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
  const scan = scanTable(opts);
  for (;;) {
    const step = scan.next();
    if (step.done) return step.value;
  }
}

/**
 * The same, reading in slices (`util/time-slice.ts`: the event loop gets its turns, a table of thousands of
 * processes anyone can make stays inside the run's `--timeout`); null when the run's abort came first.
 */
export async function readHermesProcesses(opts: ProcessScanOptions, slice: TimeSlice): Promise<ProcessTable | null> {
  const scan = scanTable(opts);
  for (;;) {
    const step = scan.next();
    if (step.done) return step.value;
    if (await slice.pause()) return null;
  }
}

/** The table, one process at a time (a `yield` after each). */
function* scanTable(opts: ProcessScanOptions): Generator<void, ProcessTable> {
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
  const want: Wanted = {
    python: opts.python === true,
    uids: opts.uids,
    profiles: opts.profiles !== false,
    startedBefore: opts.startedBefore,
    probe: opts.probe ?? createPlaceProbe(),
  };
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === self) continue;
    const p = readOne(proc, Number(name), boot, want, blind);
    if (p) out.push(p);
    yield;
  }
  const hide = hidepidProblem(proc);
  const hidden = hide ?? (blind.size ? `the command line of ${blind.size === 1 ? 'a process' : 'some processes'} could not be read` : null);
  return { processes: out.sort((a, b) => a.startedAtMs - b.startedAtMs || a.pid - b.pid), hidden, blindUids: hide ? null : blind, readable: true };
}

/** What `readOne` is asked for. */
interface Wanted {
  python: boolean;
  uids: ReadonlySet<number> | undefined;
  profiles: boolean;
  startedBefore: number | undefined;
  probe: PlaceProbe;
}

/**
 * One process: its owner first (another user's, when only some are asked for, costs one read), then its command
 * line, then (only for one that could be hermes) its start and, when asked for, the profile it serves. With Python
 * interpreters asked for, the stat line (start, `comm`) is read for every process anyway: before the command line,
 * so that one started after `startedBefore` costs nothing more. Which process is hermes and what it owns:
 * `hermes/processes.ts` (a Python interpreter's environment is read to tell: its `PYTHONPATH`).
 */
function readOne(proc: string, pid: number, boot: number, want: Wanted, blind: Set<number>): HermesProcess | null {
  const dir = `${proc}/${pid}`;
  // Without Python interpreters and without a user filter (the owners' scan, every `list`): the command line first, as
  // most processes are not hermes and then cost that one read (about three times cheaper than status and stat first).
  let rawCmd: string | null | undefined;
  if (!want.python && want.uids === undefined) {
    rawCmd = readHead(`${dir}/cmdline`, MAX_CMDLINE_BYTES)?.text ?? null;
    const early = rawCmd === null ? null : parseCmdline(rawCmd);
    if (early !== null && (early.length === 0 || !argvMayBeHermes(early))) return null;
  }
  const status = read(`${dir}/status`);
  if (status === null) return null; // gone since the listing
  const uid = parseStatusUid(status) ?? ownerOf(dir);
  if (uid === null || (want.uids !== undefined && !want.uids.has(uid))) return null;
  let stat = want.python ? read(`${dir}/stat`) : null;
  if (want.python && !startedInTime(stat, boot, want.startedBefore)) return null;
  if (rawCmd === undefined) rawCmd = readHead(`${dir}/cmdline`, MAX_CMDLINE_BYTES)?.text ?? null;
  const argv = rawCmd === null ? [] : parseCmdline(rawCmd);
  if (rawCmd !== null && argv.length === 0) return null; // a kernel thread or a zombie
  if (rawCmd !== null && !want.python && !argvMayBeHermes(argv)) return null;
  stat ??= read(`${dir}/stat`);
  const ticks = stat === null ? null : parseStatStartTime(stat);
  if (stat === null || ticks === null) return null;
  const base = { pid, uid, startedAtMs: startedAtMs(Number(ticks), boot) };
  if (rawCmd === null) {
    blind.add(uid);
    const why = 'its command line cannot be read';
    return {
      ...base,
      command: `(${parseStatComm(stat)})`,
      hermes: true,
      why: `${why} (unsure counts as hermes)`,
      python: false,
      profile: null,
      profileUnknown: why,
      serves: 'all-profiles',
      owns: null,
      ownsWhy: why,
    };
  }
  const py = isPython(argv, parseStatComm(stat));
  // A Python interpreter's PYTHONPATH may make it hermes (a library use): its environment is read first; another
  // program's only once its command line is hermes'.
  const env = py && want.profiles ? environmentOf(dir) : null;
  const cmd = hermesCommand(argv, env?.vars ?? null, want.probe);
  if (!cmd && !(want.python && py)) return null;
  const command = shownCommand(argv);
  if (!cmd)
    return {
      ...base,
      command,
      hermes: false,
      python: py,
      profile: null,
      profileUnknown: 'not hermes',
      serves: 'all-profiles',
      owns: null,
      ownsWhy: 'not hermes',
    };
  return {
    ...base,
    command,
    hermes: true,
    why: cmd.why,
    python: py,
    places: cmd.places,
    ...owned(cmd, dir, want.profiles ? (env ?? environmentOf(dir)) : null),
  };
}

/** What a hermes process owns (`hermes/processes.ts` `ownershipOf`); `env` null: not asked for (every profile). */
function owned(
  cmd: HermesCommand,
  dir: string,
  env: ReturnType<typeof environmentOf> | null,
): Pick<HermesProcess, 'profile' | 'profileUnknown' | 'serves' | 'owns' | 'ownsWhy' | 'ownership' | 'sharedKey'> {
  if (env === null) return { profile: null, profileUnknown: 'not asked for', serves: 'all-profiles', owns: null, ownsWhy: 'not asked for' };
  const ownership = ownershipOf(cmd, { vars: env.vars, ...(env.envProblem ? { envProblem: env.envProblem } : {}), cwd: readLink(`${dir}/cwd`) });
  const shared = env.vars?.sharedKey !== undefined ? { sharedKey: env.vars.sharedKey } : {};
  if (ownership.serves === 'profile')
    return { profile: ownership.profile, serves: 'profile', owns: [ownership.profile], ownsWhy: ownership.why, ownership, ...shared };
  return { profile: null, profileUnknown: ownership.why, serves: 'all-profiles', owns: null, ownsWhy: ownership.why, ownership, ...shared };
}

/** A command line that could be hermes without reading anything else: an entry point's name, or an interpreter. */
function argvMayBeHermes(argv: readonly string[]): boolean {
  return /^(hermes|hermes-agent|hermes-acp|python(\d+(\.\d+)*)?|sh|bash|dash|zsh|node|nodejs|env)$/.test(path.basename(argv[0] ?? ''));
}

/** A stat line there, of a process started no later than `before` (ms; undefined: any). */
function startedInTime(stat: string | null, boot: number, before: number | undefined): boolean {
  const ticks = stat === null ? null : parseStatStartTime(stat);
  return ticks !== null && (before === undefined || startedAtMs(Number(ticks), boot) <= before);
}

/** The variables hermes' rules read, out of a process's environment (read up to MAX_ENVIRON_BYTES). */
function environmentOf(dir: string): { vars: ProcessVariables | null; envProblem?: string } {
  const raw = readHead(`${dir}/environ`, MAX_ENVIRON_BYTES);
  if (raw === null) return { vars: null, envProblem: errCode(`${dir}/environ`, (f) => fs.closeSync(fs.openSync(f, 'r'))) ?? 'unreadable' };
  const vars = processVariables(raw.text);
  if (raw.cut && (vars.home === undefined || vars.hermesHome === undefined)) return { vars: null, envProblem: `larger than ${MAX_ENVIRON_BYTES / 1024} KiB` };
  return { vars };
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
