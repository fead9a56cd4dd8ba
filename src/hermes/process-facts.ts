/**
 * Living hermes processes on this host, as read from procfs: what a process's command line, start time and
 * environment say about it. Pure: bytes and numbers in, facts out (the reading is `adapters/hermes-processes.ts`).
 * Which process is hermes and what it owns are hermes' rules: `hermes/processes.ts`.
 */
import path from 'node:path';
import type { HermesPlace, Ownership } from './processes.js';
import { escapeControls } from '../util/escape-controls.js';

const PYTHON = /^python(\d+(\.\d+)*)?$/;

/** Linux exports start times in USER_HZ, which is 100 on every architecture (`sysconf(_SC_CLK_TCK)`). */
export const USER_HZ = 100;

/** What a hermes process owns, as `list`, `status` and `--json` name it. */
export type Serves = 'all-profiles' | 'allowlist' | 'profile';

/** A living process of this host that could be hermes, and what it serves. */
export interface HermesProcess {
  pid: number;
  /** Real uid (`/proc/<pid>/status` `Uid:`), or the owner of its `/proc/<pid>` directory. */
  uid: number;
  /** When it started (ms since the epoch; from field 22 of its stat and the boot time, to within a second). */
  startedAtMs: number;
  /** Its command line, arguments joined by spaces (at most 200 characters; never its environment). */
  command: string;
  /** It is hermes (`hermes/processes.ts`). */
  hermes: boolean;
  /** Why it counts as hermes (its entry point, module, checkout, venv...), for a person; absent when it does not. */
  why?: string;
  /** Its program is a Python interpreter (hermes runs in one; used where unsure means keep). */
  python: boolean;
  /**
   * The one profile (label value) it serves, or null: several, or every one (its environment could not be read, it
   * serves a root, ...): unverifiable means owned.
   */
  profile: string | null;
  /** Why `profile` is null. */
  profileUnknown?: string;
  /** What it serves: one profile, every profile of its root (or unverifiable: everything), or its root's allowlist. */
  serves: Serves;
  /** The label values it owns (profile names and their container identities); null: every one. */
  owns: string[] | null;
  /** Why it owns what it owns (shown). */
  ownsWhy: string;
  /** What `hermes/owned-profiles.ts` resolves `owns` from (a served root, a profile home), and where hermes lies. */
  ownership?: Ownership;
  places?: HermesPlace[];
  /** Its `TERMINAL_DOCKER_SHARED_CONTAINER_KEY` (the launch reading of what it serves). */
  sharedKey?: string;
}

/** The arguments of a `/proc/<pid>/cmdline` (NUL-separated, NUL-terminated). */
export function parseCmdline(raw: string): string[] {
  const parts = raw.split('\0');
  if (parts.at(-1) === '') parts.pop();
  return parts;
}

/** Whether the program is a Python interpreter: by its first argument's name or its `comm`. */
export function isPython(argv: readonly string[], comm: string): boolean {
  return PYTHON.test(path.basename(argv[0] ?? '')) || PYTHON.test(comm);
}

/** The process's start (ms since the epoch) from its stat's field 22 (clock ticks since boot) and `btime` (s). */
export function startedAtMs(startTicks: number, bootTimeS: number, hz = USER_HZ): number {
  return bootTimeS * 1000 + Math.floor((startTicks * 1000) / hz);
}

/** `btime` of `/proc/stat`, or null. */
export function parseBootTime(procStat: string): number | null {
  const m = /^btime\s+(\d+)\s*$/m.exec(procStat);
  return m ? Number(m[1]) : null;
}

/** `Uid:` (the real uid) of a `/proc/<pid>/status`, or null. */
export function parseStatusUid(status: string): number | null {
  const m = /^Uid:\s+(\d+)/m.exec(status);
  return m ? Number(m[1]) : null;
}

/** The command name (field 2, between the first `(` and the last `)`) of a stat line. */
export function parseStatComm(line: string): string {
  const from = line.indexOf('(');
  const to = line.lastIndexOf(')');
  return from >= 0 && to > from ? line.slice(from + 1, to) : '';
}

/** The command line as shown: arguments joined by spaces, control characters escaped, at most 200 characters. */
export function shownCommand(argv: readonly string[]): string {
  const s = escapeControls(argv.join(' '), { short: true });
  return s.length > 200 ? `${s.slice(0, 199)}…` : s;
}

/** Whether `p` may own sandboxes labelled `label`: one of the label values it owns, or any when that is unknown. */
export function mayServe(p: Pick<HermesProcess, 'owns'>, label: string): boolean {
  return p.owns === null || p.owns.includes(label);
}
