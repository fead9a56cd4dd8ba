/**
 * Every place a hermes version puts a session's files on the host, for each profile a run serves: its shell
 * snapshots (`hermes-snap-<id>.sh`, its `.tmp.*`, older versions' `hermes-cwd-<id>.txt`), its background jobs'
 * `hermes_bg_<id>.{log,pid,exit}`, `execute_code`'s `hermes_sandbox_*` directories and `hermes_rpc_<hex>.sock`
 * sockets. Pure: a profile's settings in, directories out, each once, each with the hermes readings that put files
 * there. Where versions disagree, every directory any of them uses is listed: what is removed there is proved unused
 * file by file (`passes/temp-dirs/rule.ts` `judgeSession`), never by where it is.
 *
 * The rules, from hermes-agent's source:
 * - `tools/environments/local.py` `get_temp_dir` (the session's snapshot, background jobs' triplets): releases since
 *   PR #97205 (2026-08-28) take `TERMINAL_TEMP_DIR` (`terminal.temp_dir`, when an existing directory), then `TMPDIR`,
 *   `TMP`, `TEMP`, each from the backend's `terminal.env` first, then the process' (absolute paths, trailing slashes
 *   dropped), then `<HERMES_HOME>/cache/terminal` (which hermes prunes itself, `cleanup_terminal_temp_cache`), then
 *   `tempfile.gettempdir()`; older releases `TMPDIR`/`TMP`/`TEMP` the same way, else `/tmp`.
 * - `tools/code_execution_tool.py` (`hermes_sandbox_*`: `tempfile.mkdtemp`; `hermes_rpc_<uuid hex>.sock` in
 *   `tempfile.gettempdir()`, every release; hermes-agent #71521): Python's temp directory, from the process'
 *   `TMPDIR`, `TEMP`, `TMP`, else `/tmp`.
 * - `hermes_constants.py` `export_scratch_tmp_env` (releases since September 2026; hermes-agent #115939): at boot,
 *   hermes points its own `TMPDIR`/`TMP`/`TEMP` at `<HERMES_HOME>/cache/scratch` when none is set, so both rules above
 *   land there (hermes prunes it itself, `prune_scratch_dir`).
 */
import path from 'node:path';
import type { HermesSettings, Sourced } from '../hermes/settings.js';

/** What the rules take of one profile a run serves. */
export interface ProfileTempSettings {
  /** Its label value (`default`, `<name>`, `custom`). */
  profile: string;
  /** Its hermes home. */
  home: string;
  /** The backend's environment: `terminal.env` of its config.yaml (null: none, or not a mapping). */
  terminalEnv: Readonly<Record<string, unknown>> | null;
  /** The process' variables as hermes resolves them (its environment, `.env` files, config.yaml's bridge). */
  settings: Pick<HermesSettings, 'terminalTempDir' | 'tmpDir' | 'tmp' | 'temp'>;
}

/** One directory where a hermes version puts session files. */
export interface SessionDir {
  dir: string;
  /**
   * The first reading that names it, as `reap --json`'s `tempDirs[].from` and `status` say it: `terminal.env.TMPDIR`,
   * `TMPDIR` (`TMP`, `TEMP`, `TERMINAL_TEMP_DIR`), `terminal.env.TERMINAL_TEMP_DIR`, `cache/terminal`, `cache/scratch`,
   * or `default` (`/tmp`).
   */
  from: string;
  /** Each hermes reading that puts files there (profile, rule, hermes file and versions), in the order met. */
  readings: string[];
  /**
   * Who named it: per profile, the setting's source (`config.yaml terminal.env`, a `.env` path, `env TMPDIR`, `default`
   * for a directory of hermes' own under the home) and that home; `/tmp` is named by the operator (`OPERATOR`). For the
   * trust rules: a home owner's word is never worth more than that user's rights.
   */
  namedBy: Array<{ home: string; source: string }>;
}

/** The variables, in `get_temp_dir`'s order. */
const TEMP_VARS = ['TERMINAL_TEMP_DIR', 'TMPDIR', 'TMP', 'TEMP'] as const;
type TempVar = (typeof TEMP_VARS)[number];

const SETTING: Record<TempVar, keyof ProfileTempSettings['settings']> = {
  TERMINAL_TEMP_DIR: 'terminalTempDir',
  TMPDIR: 'tmpDir',
  TMP: 'tmp',
  TEMP: 'temp',
};

/** What each variable is to hermes (the rule that reads it, its file, its versions). */
const RULE: Record<TempVar, string> = {
  TERMINAL_TEMP_DIR: 'terminal.temp_dir: get_temp_dir first (tools/environments/local.py, releases since PR #97205)',
  TMPDIR: 'TMPDIR: get_temp_dir (tools/environments/local.py, every release) and execute_code (tempfile)',
  TMP: 'TMP: get_temp_dir when TMPDIR is unset (every release) and execute_code (tempfile)',
  TEMP: 'TEMP: get_temp_dir when TMPDIR and TMP are unset (every release) and execute_code (tempfile)',
};

/** A path as hermes takes one: absolute only, trailing slashes dropped (`/` stays). */
function usable(value: unknown): string | null {
  return typeof value === 'string' && value.startsWith('/') ? value.replace(/\/+$/, '') || '/' : null;
}

/**
 * A variable's values for the backend: `terminal.env` first, then the process' as hermes resolves it, in each
 * reading of the profile's settings (`readings.ts`: a launched process and a routed turn may name different ones;
 * every one is looked in, what is removed there is proved unused file by file).
 */
function valuesOf(p: ProfileTempSettings, name: TempVar): Array<{ dir: string; from: string; source: string }> {
  const fromEnv = usable(p.terminalEnv?.[name]);
  if (fromEnv !== null) return [{ dir: fromEnv, from: `terminal.env.${name}`, source: 'config.yaml terminal.env' }];
  const s: Sourced<string> = p.settings[SETTING[name]];
  const out: Array<{ dir: string; from: string; source: string }> = [];
  for (const r of s.readings ?? [s]) {
    const v = usable(r.value);
    if (v !== null && !out.some((o) => o.dir === v)) out.push({ dir: v, from: name, source: r.source });
  }
  return out;
}

/** The directories of one profile, in the order hermes looks (the newest release's first). */
function dirsOfProfile(p: ProfileTempSettings): Array<{ dir: string; from: string; reading: string; source: string }> {
  const who = `profile ${p.profile}`;
  const out: Array<{ dir: string; from: string; reading: string; source: string }> = [];
  for (const name of TEMP_VARS) {
    for (const v of valuesOf(p, name)) out.push({ ...v, reading: `${who}: ${RULE[name]}${v.from.startsWith('terminal.env.') ? ', from terminal.env' : ''}` });
  }
  out.push(
    {
      dir: path.join(p.home, 'cache', 'terminal'),
      from: 'cache/terminal',
      source: 'default',
      reading: `${who}: get_temp_dir's default (tools/environments/local.py, releases since PR #97205; hermes prunes it itself)`,
    },
    {
      dir: path.join(p.home, 'cache', 'scratch'),
      from: 'cache/scratch',
      source: 'default',
      reading: `${who}: the TMPDIR hermes sets at boot (hermes_constants.py export_scratch_tmp_env, releases since September 2026)`,
    },
  );
  return out;
}

/** The source of a directory the janitor itself names (`/tmp`): the operator's, never a home owner's word. */
export const OPERATOR = 'operator';

/** `/tmp`: every release's last resort (its default before PR #97205), and Python's. */
const TMP_READING = "every profile: get_temp_dir's default before PR #97205 and its last resort since; execute_code's (tempfile)";

/**
 * Every directory any hermes release puts session files in, for the profiles a run serves, each once (by path;
 * the pass opens each and takes one directory named by two paths once too), `/tmp` last (`systemTmp`: the directory
 * taken for it, `HERMES_JANITOR_SYSTEM_TMP` in tests).
 */
export function sessionDirs(profiles: readonly ProfileTempSettings[], systemTmp = '/tmp'): SessionDir[] {
  const by = new Map<string, SessionDir>();
  const add = (dir: string, from: string, reading: string, named: { home: string; source: string }) => {
    const known = by.get(dir);
    const d = known ?? { dir, from, readings: [], namedBy: [] };
    if (!d.readings.includes(reading)) d.readings.push(reading);
    d.namedBy.push(named);
    if (!known) by.set(dir, d);
  };
  for (const p of profiles) for (const d of dirsOfProfile(p)) add(d.dir, d.from, d.reading, { home: p.home, source: d.source });
  add(systemTmp, 'default', TMP_READING, { home: '', source: OPERATOR });
  return [...by.values()];
}
