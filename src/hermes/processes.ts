/**
 * Which living process is hermes, and what it owns. Pure: a command line, a few environment variables and what the
 * filesystem says of some paths (`PlaceProbe`) in; facts out. Read from procfs in `adapters/hermes-processes.ts`;
 * what a served root holds is resolved in `owned-profiles.ts`.
 *
 * **Is it hermes** (what hermes really runs, read up to 0.21.3): its entry points (`pyproject.toml`
 * `[project.scripts]`: `hermes` = `hermes_cli.main:main`, `hermes-agent` = `run_agent:main`, `hermes-acp` =
 * `acp_adapter.entry:main`), run directly or by an interpreter (a console script's shebang; a shell script named
 * `hermes`); its modules (`python -m hermes_cli.main`, `-m gateway.run`, `-m tui_gateway.entry`, the systemd and
 * launchd units of `hermes_cli/gateway.py`); its entry files (`run_agent.py`, `hermes_cli/main.py`,
 * `gateway/run.py`, `acp_adapter/entry.py`); a script inside a hermes checkout or installed package; an interpreter
 * of hermes' venv; a `PYTHONPATH` naming a hermes checkout (hermes as a library: RL and batch runners importing
 * `tools.terminal_tool`). A path component that merely starts with `hermes-` (`hermes-notes/backup.sh`) does not
 * count, nor does `hermes-janitor`.
 *
 * The launchers' command lines (`hermes_cli/gateway.py`, source text of main): the systemd unit's `ExecStart=<venv>/bin/
 * python -m hermes_cli.main [--profile NAME] gateway run --replace`; the launchd plist's `python -m
 * hermes_cli.stderr_timestamp --error-log <file> -- python -m hermes_cli.main [--profile NAME] gateway run
 * --external-supervisor` (under `/usr/bin/osascript -e 'do shell script "exec ..."'` on macOS, where no procfs is
 * read); Desktop's and the AppImage's backend, run from the per-build payload's venv (`<payload>/venv/bin/python -m
 * hermes_cli.main --profile <identity> serve --host 127.0.0.1 --port 0`, `serve --isolated`, or on a runtime without
 * `serve` `dashboard --no-open`: apps/desktop `backend-command.ts`), each recognised by what it runs, wherever the
 * payload lies. `hermes gateway migrate --backends` (0.23.4, release notes only) moves such a backend onto the
 * gateway: while it runs it counts as a gateway (owning more, never less).
 *
 * **What it owns.** A multiplexed surface (the gateway however started, `hermes gateway [run|start|restart|migrate]`,
 * `python -m gateway.run`; the dashboard, `hermes dashboard`, and Desktop's `hermes serve`; the TUI's backend,
 * `python -m tui_gateway.entry`; the cron ticker of releases that ran it apart, `hermes cron daemon|tick`) launched on
 * a hermes root serves every profile
 * under it (`hermes_cli/profiles.py` `profiles_to_serve(multiplex=True)`; the only topology since hermes-agent
 * #118273), or `default` and the profiles of the root config.yaml's `gateway.multiplex_profile_allowlist`
 * (`gateway/config.py` `_normalize_multiplex_profile_allowlist`, since PR #83400). `-p NAME` / `--profile NAME`
 * (consumed by `hermes_cli/main.py` `_apply_profile_override` before the subcommand) owns NAME. Any other hermes
 * process owns the profile its `HERMES_HOME` names (`hermes/home.ts`). What cannot be verified owns everything.
 */
import path from 'node:path';
import { PROFILE_NAME_PATTERN } from '../defaults.js';
import { hermesRoot, profileName } from './home.js';
import { sanitizeLabelValue } from './labels.js';

/** hermes' console scripts (`[project.scripts]`). */
const ENTRY_POINTS = new Set(['hermes', 'hermes-agent', 'hermes-acp']);
/** Modules hermes is run as (`python -m ...`). */
const ENTRY_MODULES = /^(hermes_cli(\.main)?|run_agent|gateway(\.run)?|acp_adapter(\.entry)?|tui_gateway(\.[a-z_]+)?|cron(\.scheduler)?)$/;
/** hermes' own entry files, by their path inside a checkout. */
const ENTRY_FILES = /(^|\/)(run_agent|hermes_cli\/main|gateway\/run|acp_adapter\/entry)\.py$/;
const PYTHON = /^python(\d+(\.\d+)*)?$/;
/** Programs that run a script named by their first argument that is not an option. */
const INTERPRETERS = /^(python(\d+(\.\d+)*)?|sh|bash|dash|zsh|node|nodejs|env)$/;

/** What the filesystem says a path is part of. */
export interface HermesPlace {
  kind: 'checkout' | 'venv' | 'package';
  /** The checkout, venv or site-packages directory. */
  dir: string;
}

/** Where a path lies: in a hermes checkout, venv or installed package, or null (unknown paths are not hermes). */
export type PlaceProbe = (p: string, kind: 'file' | 'interpreter' | 'pythonpath') => HermesPlace | null;

/** A multiplexed surface: it serves every profile of the root it was launched on. */
export type Surface = 'gateway' | 'dashboard' | 'serve' | 'tui-gateway' | 'cron';

/**
 * hermes' launchd wrapper (`hermes_cli/gateway.py` `_timestamped_stderr_gateway_command`: `python -m
 * hermes_cli.stderr_timestamp --error-log <file> -- <the gateway's command line>`): it runs what follows `--`.
 */
const WRAPPER_MODULES = new Set(['hermes_cli.stderr_timestamp']);

/** How a command line runs hermes: the entry that runs, and the arguments that entry sees. */
export interface HermesCommand {
  /** Why it is hermes (`entry point hermes`, `module gateway.run`, `PYTHONPATH names the hermes checkout /x`...). */
  why: string;
  /** The hermes entry run (`hermes`, `hermes_cli.main`, `gateway.run`...), or null for a script or library use. */
  entry: string | null;
  /** The arguments after the entry. */
  args: string[];
  /** The places it was recognised by (their versions are `status`'s hermes installs). */
  places: HermesPlace[];
}

/** The environment variables the rules read (nothing else is kept of an environment). */
export interface ProcessVariables {
  hermesHome?: string;
  home?: string;
  pythonPath?: string;
  /** `TERMINAL_DOCKER_SHARED_CONTAINER_KEY`: part of the launch reading of what it serves. */
  sharedKey?: string;
}

/** The variables the rules read out of a `/proc/<pid>/environ` (NUL-separated `NAME=value`): an agent's secrets stay. */
export function processVariables(raw: string): ProcessVariables {
  const out: ProcessVariables = {};
  const take: Record<string, keyof ProcessVariables> = {
    HERMES_HOME: 'hermesHome',
    HOME: 'home',
    PYTHONPATH: 'pythonPath',
    TERMINAL_DOCKER_SHARED_CONTAINER_KEY: 'sharedKey',
  };
  for (const entry of raw.split('\0')) {
    const eq = entry.indexOf('=');
    const key = take[entry.slice(0, eq)];
    if (eq > 0 && key) out[key] = entry.slice(eq + 1);
  }
  return out;
}

const isPythonName = (p: string) => PYTHON.test(path.basename(p));

/** The first argument of an interpreter that is its script or module (`-m MOD`), skipping its options. */
function interpreted(argv: readonly string[]): { module: string; at: number } | { script: string; at: number } | { command: true } | null {
  const env = path.basename(argv[0] ?? '') === 'env';
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    if (!env && a === '-m') return argv[i + 1] === undefined ? null : { module: argv[i + 1]!, at: i + 2 };
    if (!env && a.startsWith('-m') && !a.startsWith('--')) return { module: a.slice(2), at: i + 1 };
    if (!env && (a === '-c' || (a.startsWith('-') && !a.startsWith('--') && a.includes('c')))) return { command: true };
    if (a.startsWith('-') || (env && a.includes('='))) continue;
    return { script: a, at: i + 1 };
  }
  return null;
}

/** By the command line alone: an entry point, a module, an entry file, or a script an interpreter runs. */
function byArgv(argv: readonly string[], probe: PlaceProbe, depth = 0): HermesCommand | null {
  const program = argv[0] ?? '';
  const base = path.basename(program);
  // Where an entry point lies (its venv or checkout) is recorded for `status`'s hermes installs.
  const placeOf = (file: string) => (file.startsWith('/') ? [probe(file, 'file')].filter((x): x is HermesPlace => x !== null) : []);
  if (ENTRY_POINTS.has(base)) return { why: `entry point ${base}`, entry: base, args: argv.slice(1), places: placeOf(program) };
  if (!INTERPRETERS.test(base)) return null;
  const r = interpreted(argv);
  if (r === null || 'command' in r) return null;
  if ('module' in r && WRAPPER_MODULES.has(r.module) && depth < 2) {
    const inner = argv.indexOf('--', r.at);
    const wrapped = inner < 0 ? null : byArgv(argv.slice(inner + 1), probe, depth + 1);
    return wrapped ? { ...wrapped, why: `${wrapped.why}, run by hermes' wrapper ${r.module}` } : null;
  }
  if ('module' in r) return ENTRY_MODULES.test(r.module) ? { why: `module ${r.module}`, entry: r.module, args: argv.slice(r.at), places: [] } : null;
  if (base === 'env' && depth < 2) return byArgv(argv.slice(r.at - 1), probe, depth + 1);
  const scriptBase = path.basename(r.script);
  if (ENTRY_POINTS.has(scriptBase)) return { why: `entry point ${scriptBase}`, entry: scriptBase, args: argv.slice(r.at), places: placeOf(r.script) };
  if (ENTRY_FILES.test(r.script)) {
    const entry = r.script.replace(/^.*?(run_agent|hermes_cli\/main|gateway\/run|acp_adapter\/entry)\.py$/, '$1').replace('/', '.');
    return { why: `entry file ${r.script.slice(-40)}`, entry, args: argv.slice(r.at), places: [] };
  }
  // A script inside a hermes checkout or installed package: for Python only (a shell script there is not hermes running).
  const place = PYTHON.test(base) && r.script.startsWith('/') ? probe(r.script, 'file') : null;
  return place ? { why: `script in the hermes ${place.kind} ${place.dir}`, entry: null, args: argv.slice(r.at), places: [place] } : null;
}

/**
 * Whether a process is hermes, and how: by its command line, else (a Python interpreter) by its interpreter's venv
 * or a `PYTHONPATH` entry that is a hermes checkout. Null: not hermes.
 */
export function hermesCommand(argv: readonly string[], vars: ProcessVariables | null, probe: PlaceProbe): HermesCommand | null {
  const found = byArgv(argv, probe);
  const program = argv[0] ?? '';
  const python = isPythonName(program);
  const venv = python && program.startsWith('/') ? probe(program, 'interpreter') : null;
  const fromPath =
    python && !venv && !found && vars?.pythonPath
      ? (vars.pythonPath
          .split(':')
          .filter((p) => p.startsWith('/'))
          .slice(0, 16)
          .map((p) => probe(p, 'pythonpath'))
          .find((p) => p !== null) ?? null)
      : null;
  if (found) return venv ? { ...found, places: [venv, ...found.places] } : found;
  if (venv) return { why: `interpreter of the hermes ${venv.kind} ${venv.dir}`, entry: null, args: [], places: [venv] };
  if (fromPath) return { why: `PYTHONPATH names the hermes ${fromPath.kind} ${fromPath.dir}`, entry: null, args: [], places: [fromPath] };
  return null;
}

/** `hermes` CLI options that take a value (`hermes_cli/_parser.py`), so that the subcommand is found past them. */
const VALUE_OPTIONS = new Set([
  '-p',
  '--profile',
  '-z',
  '--oneshot',
  '--usage-file',
  '-m',
  '--model',
  '--provider',
  '-t',
  '--toolsets',
  '-r',
  '--resume',
  '-s',
  '--skills',
]);
/** Gateway verbs that manage the service and exit (`hermes_cli/gateway.py`): every other verb, or none, serves. */
const GATEWAY_CONTROL = new Set(['stop', 'status', 'install', 'uninstall', 'setup', 'logs', 'enable', 'disable', 'list', 'doctor']);

/** The `hermes` CLI's subcommand, its own arguments, and the `-p`/`--profile` value (the last one given). */
function cliParts(args: readonly string[]): { sub: string | null; rest: string[]; profile?: string } {
  let profile: string | undefined;
  let sub: string | null = null;
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-p' || a === '--profile') profile = args[++i];
    else if (a.startsWith('--profile=')) profile = a.slice('--profile='.length);
    else if (sub === null && VALUE_OPTIONS.has(a)) i++;
    else if (sub === null && !a.startsWith('-')) sub = a;
    else if (sub !== null) rest.push(a);
  }
  return { sub, rest, ...(profile !== undefined ? { profile } : {}) };
}

/** The surface a hermes command serves, if it is one, and the profile its `-p`/`--profile` names. */
export function surfaceOf(cmd: Pick<HermesCommand, 'entry' | 'args'>): { surface: Surface | null; profileArg?: string } {
  const e = cmd.entry;
  if (e === 'gateway.run' || e === 'gateway') return { surface: 'gateway', ...profileOption(cmd.args) };
  if (e?.startsWith('tui_gateway')) return { surface: 'tui-gateway', ...profileOption(cmd.args) };
  if (e === 'cron' || e === 'cron.scheduler') return { surface: 'cron' };
  if (e !== 'hermes' && e !== 'hermes_cli' && e !== 'hermes_cli.main') return { surface: null, ...profileOption(cmd.args) };
  const { sub, rest, profile } = cliParts(cmd.args);
  const p = profile !== undefined ? { profileArg: profile } : {};
  const verb = rest.find((a) => !a.startsWith('-'));
  if (sub === 'gateway' && !(verb && GATEWAY_CONTROL.has(verb))) return { surface: 'gateway', ...p };
  if (sub === 'dashboard' && !rest.some((a) => a === '--stop' || a === '--status')) return { surface: 'dashboard', ...p };
  // Desktop's backend (its `serve`, or `dashboard --no-open` on a runtime without it), until `gateway migrate --backends`.
  if (sub === 'serve') return { surface: 'serve', ...p };
  if (sub === 'cron' && (verb === 'daemon' || verb === 'tick')) return { surface: 'cron', ...p };
  return { surface: null, ...p };
}

/** `-p NAME`, `--profile NAME`, `--profile=NAME` anywhere in the arguments. */
function profileOption(args: readonly string[]): { profileArg?: string } {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-p' || a === '--profile') return args[i + 1] === undefined ? {} : { profileArg: args[i + 1]! };
    if (a.startsWith('--profile=')) return { profileArg: a.slice('--profile='.length) };
  }
  return {};
}

/**
 * `hermes_cli/profiles.py` `normalize_profile_name`: stripped; `default` in any case is `default`; named profiles
 * are lower-case. Null when the result is not a profile name (`validate_profile_name`).
 */
export function normalizeProfileName(raw: string): string | null {
  const s = raw.trim();
  if (s.toLowerCase() === 'default') return 'default';
  const n = s.toLowerCase();
  return PROFILE_NAME_PATTERN.test(n) ? n : null;
}

/** What one hermes process owns, before what a served root holds is read. */
export type Ownership =
  | { serves: 'profile'; profile: string; home: string | null; why: string }
  | { serves: 'root'; root: string; why: string }
  | { serves: 'unknown'; why: string };

export interface OwnershipFacts {
  /** Its environment's variables; null when the environment could not be read. */
  vars: ProcessVariables | null;
  envProblem?: string;
  /** Its working directory (a relative `HERMES_HOME` is relative to it), or null. */
  cwd: string | null;
}

/** Its home: `HERMES_HOME` resolved (`~`, relative), or null with why it cannot be told. */
function homeOf(f: OwnershipFacts): { home: string; homedir: string } | { why: string } {
  if (f.vars === null) return { why: `its environment cannot be read (${f.envProblem ?? 'denied'})` };
  const homedir = f.vars.home;
  if (!homedir || !homedir.startsWith('/')) return { why: 'no absolute HOME in its environment' };
  const h = f.vars.hermesHome;
  if (!h) return { why: 'no HERMES_HOME in its environment (hermes may pick a sticky profile)' };
  if (h === '~' || h.startsWith('~/')) return { home: path.join(homedir, h.slice(1)), homedir };
  if (h.startsWith('/')) return { home: path.resolve(h), homedir };
  if (f.cwd) return { home: path.resolve(f.cwd, h), homedir };
  return { why: 'a relative HERMES_HOME and an unreadable working directory' };
}

/** What a hermes process owns: by `-p`, by the surface it serves, or by the profile its home names. */
export function ownershipOf(cmd: Pick<HermesCommand, 'entry' | 'args'>, f: OwnershipFacts): Ownership {
  if (cmd.args.some((a) => a === '--all-profiles' || a === '--profiles')) return { serves: 'unknown', why: 'its arguments name several profiles' };
  const { surface, profileArg } = surfaceOf(cmd);
  const where = homeOf(f);
  if (profileArg !== undefined) {
    const name = normalizeProfileName(profileArg);
    if (name === null) return { serves: 'unknown', why: `an unusable --profile '${profileArg.slice(0, 64)}'` };
    if (name !== 'default' || !surface) {
      const home = 'home' in where ? path.join(hermesRoot(where.home, where.homedir), ...(name === 'default' ? [] : ['profiles', name])) : null;
      return { serves: 'profile', profile: sanitizeLabelValue(name), home, why: `started with --profile ${name}` };
    }
  }
  if ('why' in where) return { serves: 'unknown', why: where.why };
  const root = hermesRoot(where.home, where.homedir);
  const profile = profileArg !== undefined ? 'default' : profileName(where.home, root);
  if (surface && profile === 'default') return { serves: 'root', root, why: `the ${surface} launched on the hermes root ${root}` };
  const why = surface ? `the ${surface} launched on profile ${profile}` : `HERMES_HOME names profile ${profile}`;
  return { serves: 'profile', profile: sanitizeLabelValue(profile), home: where.home, why };
}

/**
 * The profiles a surface serves, from its root's config.yaml (`gateway.multiplex_profile_allowlist`, or a top-level
 * `multiplex_profile_allowlist`, as `gateway/config.py` reads either): null = every profile; a value that is not a
 * list serves `default` only; entries that are not profile names are skipped.
 */
export function allowlistOf(config: unknown): string[] | null {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) return null;
  const c = config as Record<string, unknown>;
  const gw = c.gateway !== null && typeof c.gateway === 'object' && !Array.isArray(c.gateway) ? (c.gateway as Record<string, unknown>) : {};
  const raw = c.multiplex_profile_allowlist ?? gw.multiplex_profile_allowlist;
  if (raw === undefined || raw === null) return null;
  if (!Array.isArray(raw)) return [];
  return [...new Set(raw.flatMap((e) => (typeof e === 'string' ? [normalizeProfileName(e)] : [])).filter((n): n is string => n !== null && n !== 'default'))];
}
