/**
 * Living hermes processes on this host, as read from procfs: what a process's command line, start time and
 * environment say about it. Pure: bytes and numbers in, facts out (the reading is `adapters/hermes-processes.ts`).
 *
 * hermes-agent's entry points (NousResearch/hermes-agent `pyproject.toml` `[project.scripts]`, read at commit
 * 00067189dfecf833d4d009c2dd977ae85cf800e0): `hermes` (`hermes_cli.main:main`, which also runs `hermes gateway`),
 * `hermes-agent` (`run_agent:main`), `hermes-acp` (`acp_adapter.entry:main`); from a checkout, `python run_agent.py`,
 * `python -m hermes_cli.main`, `python -m gateway.run`. Each serves the hermes home in `HERMES_HOME`, else
 * `~/.hermes` (a profile chosen with `-p`/`--profile` is set inside the process, after its environment was taken).
 */
import path from 'node:path';
import { hermesRoot, profileName } from './hermes-home.js';
import { sanitizeLabelValue } from './sanitize.js';
import { ENV_HERMES_HOME, PROFILE_NAME_PATTERN } from '../defaults.js';
import { escapeControls } from '../util/escape-controls.js';

/** Linux exports start times in USER_HZ, which is 100 on every architecture (`sysconf(_SC_CLK_TCK)`). */
export const USER_HZ = 100;

/** A living process of this host that could be hermes, and what it serves. */
export interface HermesProcess {
  pid: number;
  /** Real uid (`/proc/<pid>/status` `Uid:`), or the owner of its `/proc/<pid>` directory. */
  uid: number;
  /** When it started (ms since the epoch; from field 22 of its stat and the boot time, to within a second). */
  startedAtMs: number;
  /** Its command line, arguments joined by spaces (at most 200 characters; never its environment). */
  command: string;
  /** The command line names hermes or one of its entry points. */
  hermes: boolean;
  /** Why it counts as hermes (`whyHermes`), for a person; absent when it does not. */
  why?: string;
  /** Its program is a Python interpreter (hermes runs in one; used where unsure means keep). */
  python: boolean;
  /**
   * The profile (label value) it serves, or null: every profile (its environment could not be read, or it may serve
   * several): unverifiable means owned.
   */
  profile: string | null;
  /** Why `profile` is null. */
  profileUnknown?: string;
}

/** The arguments of a `/proc/<pid>/cmdline` (NUL-separated, NUL-terminated). */
export function parseCmdline(raw: string): string[] {
  const parts = raw.split('\0');
  if (parts.at(-1) === '') parts.pop();
  return parts;
}

/**
 * The two variables the profile follows from, out of a `/proc/<pid>/environ` (NUL-separated `NAME=value`). Nothing
 * else is kept: an agent's environment holds its secrets.
 */
export function homeVariables(raw: string): { hermesHome?: string; home?: string } {
  const out: { hermesHome?: string; home?: string } = {};
  for (const entry of raw.split('\0')) {
    if (entry.startsWith(`${ENV_HERMES_HOME}=`)) out.hermesHome = entry.slice(ENV_HERMES_HOME.length + 1);
    else if (entry.startsWith('HOME=')) out.home = entry.slice(5);
  }
  return out;
}

/** A path component that is hermes' own: `hermes`, `hermes-agent`, `hermes_cli`, `hermes-gateway`, `hermes.py`... */
const HERMES_COMPONENT = /^hermes(?:$|[-_.])/i;
/** The janitor names itself `hermes-janitor`: never taken for hermes. */
const JANITOR_COMPONENT = /^hermes[-_]janitor/i;
const ENTRY_MODULES = /^(hermes_cli(\.main)?|run_agent|gateway(\.run)?|acp_adapter(\.entry)?)$/;
const ENTRY_FILES = /(^|\/)(run_agent|hermes_cli\/main|gateway\/run|acp_adapter\/entry)\.py$/;
const PYTHON = /^python(\d+(\.\d+)*)?$/;
/** Programs that run a script named by their first argument that is not an option. */
const INTERPRETERS = /^(python(\d+(\.\d+)*)?|sh|bash|dash|zsh|node|nodejs|env)$/;

/** The path component (or entry file) of `p` that is hermes' own, or null. */
function hermesPart(p: string): string | null {
  const c = p.split('/').find((x) => HERMES_COMPONENT.test(x) && !JANITOR_COMPONENT.test(x));
  if (c !== undefined) return c;
  const m = ENTRY_FILES.exec(p);
  return m ? m[0].replace(/^\//, '') : null;
}

/**
 * Whether a command line could be hermes: its program, or the script an interpreter runs (its first argument that
 * is not an option; never a `-c` command string), has a path component that is hermes' own (its `hermes`,
 * `hermes-agent`, `hermes-acp` scripts, a checkout or venv under `hermes-agent/`, `exec -a hermes-gateway`), or is
 * one of its entry files (`run_agent.py`, `gateway/run.py`); or an interpreter runs one of its modules (`-m
 * hermes_cli.main`, `-m gateway.run`). `hermes-janitor` does not count, nor does a word inside a command string or a
 * file argument (a sandbox's `hermes_bg_<id>.log`).
 */
export function namesHermes(argv: readonly string[]): boolean {
  return whyHermes(argv) !== null;
}

/** Why a command line counts as hermes (`namesHermes`), for a person: which argument and what in it; null when it does not. */
export function whyHermes(argv: readonly string[]): string | null {
  const program = argv[0] ?? '';
  const own = hermesPart(program);
  if (own !== null) return `its program's path names hermes ('${own}')`;
  if (!INTERPRETERS.test(path.basename(program))) return null;
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    const module = a === '-m' ? (argv[i + 1] ?? '') : a.startsWith('-m') && !a.startsWith('--') ? a.slice(2) : null;
    if (module !== null) return ENTRY_MODULES.test(module) ? `it runs hermes' module '${module}'` : null;
    if (a === '-c' || (a.startsWith('-') && !a.startsWith('--') && a.includes('c') && path.basename(program) !== 'env')) return null;
    if (a.startsWith('-') || (path.basename(program) === 'env' && a.includes('='))) continue;
    const script = hermesPart(a);
    if (script !== null) return `the script it runs names hermes ('${script}')`;
    return path.basename(program) === 'env' ? whyHermes(argv.slice(i)) : null;
  }
  return null;
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

/** Arguments that make one process serve several profiles (a gateway for all of them). */
const SEVERAL_PROFILES = new Set(['--all-profiles', '--profiles']);

/** The profile named by `-p NAME`, `--profile NAME` or `--profile=NAME` on a command line, or undefined. */
function profileArgument(argv: readonly string[]): string | undefined {
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-p' || a === '--profile') return argv[i + 1];
    if (a.startsWith('--profile=')) return a.slice('--profile='.length);
  }
  return undefined;
}

export interface ProfileFacts {
  argv: readonly string[];
  /** Its environment's `HERMES_HOME` and `HOME`; null when the environment could not be read. */
  env: { hermesHome?: string; home?: string } | null;
  /** Why the environment could not be read (shown). */
  envProblem?: string;
  /** Its working directory (a relative `HERMES_HOME` is relative to it), or null when unreadable. */
  cwd: string | null;
}

/**
 * The profile a hermes process serves, by the rule of its container labels (`core/hermes-home.ts`): its home is
 * `HERMES_HOME`, else `~/.hermes` (`HOME` from its environment), or `<root>/profiles/NAME` for `-p NAME`. Null with
 * the reason when it cannot be told: an environment that cannot be read, no `HOME`, a relative home without a
 * readable working directory, arguments for several profiles, or no `HERMES_HOME` and no `-p` (hermes then may pick
 * a sticky profile of its own).
 */
export function servedProfile(f: ProfileFacts): { profile: string } | { profile: null; why: string } {
  if (f.argv.some((a) => SEVERAL_PROFILES.has(a))) return { profile: null, why: 'serves several profiles' };
  if (f.env === null) return { profile: null, why: `its environment cannot be read (${f.envProblem ?? 'denied'})` };
  const homedir = f.env.home;
  if (!homedir || !homedir.startsWith('/')) return { profile: null, why: 'no absolute HOME in its environment' };
  const named = profileArgument(f.argv);
  let home: string;
  if (f.env.hermesHome) {
    const h = f.env.hermesHome;
    if (h === '~' || h.startsWith('~/')) home = path.join(homedir, h.slice(1));
    else if (h.startsWith('/')) home = path.resolve(h);
    else if (f.cwd) home = path.resolve(f.cwd, h);
    else return { profile: null, why: 'a relative HERMES_HOME and an unreadable working directory' };
  } else if (named !== undefined) {
    if (named !== 'default' && !PROFILE_NAME_PATTERN.test(named)) return { profile: null, why: `an unusable --profile '${named.slice(0, 64)}'` };
    return { profile: sanitizeLabelValue(named) };
  } else {
    return { profile: null, why: 'no HERMES_HOME in its environment (hermes may pick a sticky profile)' };
  }
  const root = hermesRoot(home, homedir);
  if (named !== undefined && (named === 'default' || PROFILE_NAME_PATTERN.test(named))) return { profile: sanitizeLabelValue(named) };
  return { profile: sanitizeLabelValue(profileName(home, root)) };
}

/** The command line as shown: arguments joined by spaces, control characters escaped, at most 200 characters. */
export function shownCommand(argv: readonly string[]): string {
  const s = escapeControls(argv.join(' '), { short: true });
  return s.length > 200 ? `${s.slice(0, 199)}…` : s;
}

/** Whether `p` may own sandboxes of `profile`: its own profile, or every profile when that is unknown. */
export function mayServe(p: Pick<HermesProcess, 'profile'>, profile: string): boolean {
  return p.profile === null || p.profile === profile;
}
