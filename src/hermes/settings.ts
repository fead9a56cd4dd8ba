/**
 * hermes' own settings, resolved the way hermes resolves them, each with where its value came from. Pure: the
 * environment and the parsed files in, values and sources out (the files are read in `adapters/hermes-settings.ts`).
 *
 * The order, lowest to highest, as hermes-agent builds its process environment (NousResearch/hermes-agent, read at
 * commit 00067189dfecf833d4d009c2dd977ae85cf800e0):
 * 1. the default (`tools/environments/base.py` `get_sandbox_dir`: `<home>/sandboxes`; lifetime 300 s);
 * 2. the process environment;
 * 3. `<home>/.env`, loaded with override (`hermes_cli/env_loader.py` `load_hermes_dotenv`);
 * 4. the managed `.env`, `$HERMES_MANAGED_DIR/.env` (when that is a non-empty path to a directory) else
 *    `/etc/hermes/.env`, loaded with override after it (`_apply_managed_env`; `hermes_cli/managed_scope.py`
 *    `get_managed_dir`);
 * 5. config.yaml's `terminal.*` keys, bridged last (`_reapply_terminal_config_bridge` ->
 *    `hermes_cli/config.py` `apply_terminal_config_to_env`): a key the user wrote in `<home>/config.yaml`'s
 *    `terminal:` section overrides the environment, with the value of the merged config, in which the managed
 *    `config.yaml` wins leaf by leaf (`managed_scope.apply_managed_overlay`, `config._merge_managed_overlay`). A key
 *    only the managed config.yaml sets is, like hermes' defaults, a backfill: it applies only when no layer below
 *    set the variable (`env_var not in target`), even to an empty value.
 * Values bridged from YAML are written as hermes writes them: Python's `str()` (`True`, `300`), JSON for lists and
 * maps (`_terminal_env_value`).
 *
 * Adding a setting hermes reads this way is one entry in `HERMES_SETTINGS`.
 */
import path from 'node:path';
import { DEFAULT_LIFETIME_SECONDS, ENV_LIFETIME, ENV_REAPER_SWITCH, ENV_TERMINAL_SANDBOX_DIR, SANDBOX_ROOT_DIRNAME } from '../defaults.js';
import { type DotenvBinding, dotenvValues } from './dotenv.js';
import { wholeNumberOf } from '../core/config-number.js';
import type { KeepsMore } from '../core/setting-worth.js';
import { HERMES_FOREGROUND_MAX_TIMEOUT, HERMES_TERMINAL_TIMEOUT } from './timeouts.js';

/** A setting and where it came from (`default`, `env NAME`, a `.env` path, `config.yaml terminal.KEY`, a flag). */
export interface Sourced<T> {
  value: T;
  source: string;
  /**
   * hermes' own settings: the value each reading gives (`scope`: as a routed turn reads the profile, `launch`: as a
   * process launched on the profile reads it; `src/hermes/readings.ts`), when both were read.
   */
  readings?: Array<{ reading: 'scope' | 'launch'; value: T; source: string }>;
  /** Which reading `value` is: the one that removes, stops or ends later. */
  used?: 'scope' | 'launch';
  /**
   * Why the scope reading is not acted on, when every hermes install found on the host predates it
   * (`hermes/host-readings.ts`); absent: it is, where it removes later.
   */
  scopeNotTaken?: string;
  /** The lifetime and the reaper switch: each named execution target read (`hermes/targets.ts`), docker or not. */
  targets?: Array<TargetReading<T>>;
  /** The execution target whose reading `value` is, when one decided it (`source` names its file and key). */
  target?: string;
}

/** How one named execution target shows on a setting (`status --json`: `settings.lifetimeSeconds.targets`). */
export interface TargetReading<T> {
  target: string;
  /** Its backend, as hermes resolves it (`docker`, `ssh`, ...). */
  backend: string;
  /** A docker target: it counts for the setting (the others make no docker sandbox). */
  counts: boolean;
  /** Where it was read: `config.yaml`, the managed config.yaml, a runtime registry file (with provider and state). */
  from: string;
  /** Its value, or null when hermes cannot read it as one (it is then skipped). */
  value: T | null;
  source: string;
}

/** One setting hermes takes from its environment, bridged from `terminal.<configKey>` in config.yaml. */
export interface HermesSettingSpec<T> {
  /** The variable hermes reads (`TERMINAL_SANDBOX_DIR`). */
  envVar: string;
  /** The key under `terminal:` in config.yaml (`sandbox_dir`), or null when none bridges to it. */
  configKey: string | null;
  /** The value from the variable's text, or from the default when unset (`raw` undefined). Throws a message on a bad value. */
  interpret(raw: string | undefined, where: SettingWhere): T;
  /**
   * Which values keep more than hermes' default (core/setting-worth.ts): all a user without engine rights may set in
   * their files (`settings-worth.ts`); another value of theirs is refused for the run, hermes' default used.
   */
  keepsMore: KeepsMore;
}

export interface SettingWhere {
  /** The profile's hermes home. */
  home: string;
  /** Relative paths resolve against this (hermes' working directory; the janitor's). */
  cwd: string;
}

export { HERMES_FOREGROUND_MAX_TIMEOUT, HERMES_TERMINAL_TIMEOUT } from './timeouts.js';

/** A positive whole number of seconds as hermes' `int()` takes it (`'90'`, ` 90 `), else undefined. */
function positiveSeconds(raw: string | undefined): number | undefined {
  const n = wholeNumberOf(raw);
  return n !== undefined && n > 0 ? n : undefined;
}

/** The hermes settings the janitor reads. */
export const HERMES_SETTINGS = {
  /** `get_sandbox_dir()`: `$TERMINAL_SANDBOX_DIR` when not empty (taken as is, relative to the cwd), else `<home>/sandboxes`. */
  sandboxRoot: {
    envVar: ENV_TERMINAL_SANDBOX_DIR,
    configKey: 'sandbox_dir',
    interpret: (raw, w) => (raw ? path.resolve(w.cwd, raw) : path.join(w.home, SANDBOX_ROOT_DIRNAME)),
    keepsMore: { more: 'owner-rule' },
  } satisfies HermesSettingSpec<string>,
  /** The terminal lifetime in seconds: a whole number >= 0, default 300. */
  lifetimeSeconds: {
    envVar: ENV_LIFETIME,
    configKey: 'lifetime_seconds',
    interpret: (raw) => {
      if (raw === undefined || raw.trim() === '') return DEFAULT_LIFETIME_SECONDS;
      const n = wholeNumberOf(raw);
      if (n === undefined) throw new Error(`must be a whole number of seconds >= 0, got '${raw}'`);
      return n;
    },
    keepsMore: { more: 'longer', than: DEFAULT_LIFETIME_SECONDS },
  } satisfies HermesSettingSpec<number>,
  /**
   * `FOREGROUND_MAX_TIMEOUT` (tools/terminal_tool.py): the cap on a timeout the model asks for, from the environment
   * only (no config.yaml key bridges to it); a value hermes cannot read as a positive whole number is its default, 600.
   */
  foregroundMaxTimeoutSeconds: {
    envVar: 'TERMINAL_MAX_FOREGROUND_TIMEOUT',
    configKey: null,
    interpret: (raw) => positiveSeconds(raw) ?? HERMES_FOREGROUND_MAX_TIMEOUT,
    keepsMore: { more: 'longer', than: HERMES_FOREGROUND_MAX_TIMEOUT },
  } satisfies HermesSettingSpec<number>,
  /** The default command timeout, `terminal.timeout` / `TERMINAL_TIMEOUT` (tools/terminal_tool.py): 180. */
  terminalTimeoutSeconds: {
    envVar: 'TERMINAL_TIMEOUT',
    configKey: 'timeout',
    interpret: (raw) => positiveSeconds(raw) ?? HERMES_TERMINAL_TIMEOUT,
    keepsMore: { more: 'longer', than: HERMES_TERMINAL_TIMEOUT },
  } satisfies HermesSettingSpec<number>,
  /**
   * hermes' process `TMPDIR` (a `.env` can set it), where its local shell snapshots go unless the backend's
   * `terminal.env` names another (`tools/environments/local.py` `get_temp_dir`); empty when unset.
   */
  tmpDir: {
    envVar: 'TMPDIR',
    configKey: null,
    interpret: (raw) => raw ?? '',
    keepsMore: { more: 'owner-rule' },
  } satisfies HermesSettingSpec<string>,
  /**
   * `terminal.docker_shared_container_key`: profiles that name the same key share one container identity
   * (`src/hermes/identity.ts`); empty: the profile's own. Taken as written (versions differ on stripping it).
   */
  dockerSharedContainerKey: {
    envVar: 'TERMINAL_DOCKER_SHARED_CONTAINER_KEY',
    configKey: 'docker_shared_container_key',
    interpret: (raw) => raw ?? '',
    // Another's identity is not theirs to claim for root: their sandboxes under a key are then kept, never judged.
    keepsMore: { more: 'empty' },
  } satisfies HermesSettingSpec<string>,
  /** `TMP`, hermes' process' (`get_temp_dir` after `TMPDIR`; Python's `tempfile` after `TEMP`); empty when unset. */
  tmp: {
    envVar: 'TMP',
    configKey: null,
    interpret: (raw) => raw ?? '',
    keepsMore: { more: 'owner-rule' },
  } satisfies HermesSettingSpec<string>,
  /** `TEMP`, hermes' process' (`get_temp_dir` after `TMP`; Python's `tempfile` after `TMPDIR`); empty when unset. */
  temp: {
    envVar: 'TEMP',
    configKey: null,
    interpret: (raw) => raw ?? '',
    keepsMore: { more: 'owner-rule' },
  } satisfies HermesSettingSpec<string>,
  /**
   * `terminal.temp_dir` / `TERMINAL_TEMP_DIR` (hermes-agent PR #97182, in releases since PR #97205, 2026-08-28): where
   * `get_temp_dir` puts a session's files before any other, when it is an existing directory; empty when unset.
   */
  terminalTempDir: {
    envVar: 'TERMINAL_TEMP_DIR',
    configKey: 'temp_dir',
    interpret: (raw) => raw ?? '',
    keepsMore: { more: 'owner-rule' },
  } satisfies HermesSettingSpec<string>,
  /** hermes' own orphan reaper switch, which also turns the janitor off: a non-empty value other than true/1/yes. */
  dockerOrphanReaper: {
    envVar: ENV_REAPER_SWITCH,
    configKey: 'docker_orphan_reaper',
    interpret: (raw) => raw === undefined || raw === '' || ['true', '1', 'yes'].includes(raw.trim().toLowerCase()),
    keepsMore: { more: 'switch', keeps: false, default: true },
  } satisfies HermesSettingSpec<boolean>,
};

export type HermesSettingName = keyof typeof HERMES_SETTINGS;
export type HermesSettings = { [K in HermesSettingName]: Sourced<ReturnType<(typeof HERMES_SETTINGS)[K]['interpret']>> };

/** A parsed file and its path. */
export interface LoadedFile<T> {
  path: string;
  data: T;
}

/** What the settings are resolved from: the process environment and the files hermes reads (null: absent). */
export interface SettingsInputs extends SettingWhere {
  env: Record<string, string | undefined>;
  /** `<home>/.env`. */
  dotenv: LoadedFile<DotenvBinding[]> | null;
  /** `<managed dir>/.env`. */
  managedDotenv: LoadedFile<DotenvBinding[]> | null;
  /** `<home>/config.yaml`, parsed. */
  config: LoadedFile<unknown> | null;
  /** `<managed dir>/config.yaml`, parsed. */
  managedConfig: LoadedFile<unknown> | null;
}

/** A value with its source, as a layer leaves it in the environment (undefined: unset). */
interface Layered {
  value: string;
  source: string;
}

/** The `terminal:` map of a parsed config.yaml, or null when it has none (or it is not a map). */
function terminalSection(data: unknown): Record<string, unknown> | null {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return null;
  const t = (data as Record<string, unknown>).terminal;
  return t !== null && typeof t === 'object' && !Array.isArray(t) ? (t as Record<string, unknown>) : null;
}

/** Python's `str()` of a YAML scalar, JSON for a list or map (`hermes_cli/config.py` `_terminal_env_value`). */
export function pythonEnvText(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/**
 * The environment hermes ends with, for the variables of the settings, each with the layer that set it last. The
 * `.env` files are interpolated against the environment as it stands when each is loaded.
 */
export function layeredEnvironment(inputs: SettingsInputs): Map<string, Layered> {
  const env: Record<string, string | undefined> = { ...inputs.env };
  const out = new Map<string, Layered>();
  const vars = Object.values(HERMES_SETTINGS).map((s: HermesSettingSpec<unknown>) => s.envVar);
  for (const name of vars) if (inputs.env[name] !== undefined) out.set(name, { value: inputs.env[name]!, source: `env ${name}` });
  for (const file of [inputs.dotenv, inputs.managedDotenv]) {
    if (!file) continue;
    for (const [k, v] of dotenvValues(file.data, env)) {
      env[k] = v;
      if (vars.includes(k)) out.set(k, { value: v, source: file.path });
    }
  }
  const user = terminalSection(inputs.config?.data);
  const managed = terminalSection(inputs.managedConfig?.data);
  const managedName = inputs.managedConfig ? path.join(path.dirname(inputs.managedConfig.path), 'config.yaml') : '';
  for (const spec of Object.values(HERMES_SETTINGS) as HermesSettingSpec<unknown>[]) {
    const k = spec.configKey;
    if (k === null) continue;
    const fromManaged = managed !== null && k in managed;
    const explicit = user !== null && k in user;
    // An explicit user key overrides; a key only the managed file sets fills in an unset variable only.
    if (!explicit && !(fromManaged && !out.has(spec.envVar))) continue;
    const value = fromManaged ? managed[k] : user![k];
    out.set(spec.envVar, { value: pythonEnvText(value), source: fromManaged ? `${managedName} terminal.${k}` : `config.yaml terminal.${k}` });
  }
  return out;
}

/**
 * Every setting in `HERMES_SETTINGS`, resolved. A value a setting refuses is an Error whose message names the
 * setting's source and the fix.
 */
export function resolveHermesSettings(inputs: SettingsInputs): HermesSettings {
  const layered = layeredEnvironment(inputs);
  const out: Record<string, Sourced<unknown>> = {};
  for (const [name, spec] of Object.entries(HERMES_SETTINGS) as [string, HermesSettingSpec<unknown>][]) {
    const l = layered.get(spec.envVar);
    try {
      out[name] = { value: spec.interpret(l?.value, inputs), source: l ? l.source : 'default' };
    } catch (err) {
      const src = l!.source;
      const file = src.startsWith('config.yaml ') ? inputs.config?.path : src.replace(/ terminal\..*$/, '');
      const fix = src.startsWith('env ') ? `fix or unset ${spec.envVar}` : `fix ${file}`;
      throw new Error(`${spec.envVar} from ${l!.source} ${(err as Error).message}: ${fix}`);
    }
  }
  return out as HermesSettings;
}

/** A setting replaced by a janitor flag (or library option) when one was given: the flag wins over every file. */
export function withFlag<T>(resolved: Sourced<T>, flag: T | undefined, flagName: string): Sourced<T> {
  return flag === undefined ? resolved : { value: flag, source: flagName };
}
