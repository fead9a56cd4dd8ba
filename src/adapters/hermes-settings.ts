/**
 * Reads the files hermes takes its settings from (`<home>/.env`, the managed `.env` and `config.yaml`,
 * `<home>/config.yaml`) and resolves them twice: as a process launched on the profile reads them
 * (`hermes/settings.ts`) and as a routed turn does (`hermes/scope-settings.ts`), each file read once for both
 * (`hermes/readings.ts` says which reading is acted on, `adapters/host-hermes.ts` whether the hermes installed has
 * the scope reading), then applies the profile's named execution targets (`adapters/execution-targets.ts`,
 * `hermes/targets.ts`) to its lifetime and reaper switch. Where the managed directory is:
 * `$HERMES_MANAGED_DIR` when it is a non-empty path to a directory, else `/etc/hermes` when that is one
 * (hermes-agent `hermes_cli/managed_scope.py` `get_managed_dir`). `HERMES_MANAGED_DIR` is read from the janitor's
 * own environment (hermes reads it after loading `<home>/.env`; an administrator's path does not belong there).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULT_MANAGED_DIR, DOTENV_FILENAME, ENV_MANAGED_DIR, PROFILE_NAME_PATTERN } from '../defaults.js';
import { UsageError } from '../errors.js';
import { type DotenvBinding, parseDotenv } from '../hermes/dotenv.js';
import { type HermesSettings, type LoadedFile, type SettingsInputs, resolveHermesSettings } from '../hermes/settings.js';
import { type EnvFileReading, readEnvFile } from '../hermes/env-file.js';
import { combineReadings, scopeDecides } from '../hermes/readings.js';
import { withTargets } from '../hermes/targets.js';
import { readExecutionTargets } from './execution-targets.js';
import { type ScopeInputs, resolveScopeSettings } from '../hermes/scope-settings.js';
import { type HermesConfig, loadConfig, usableConfig as refuseUnparsed } from './config.js';
import { SETTINGS_MAX_BYTES } from '../core/trust.js';
import { TrustError, listDirSafely, readFileSafely } from './trust.js';

export interface HermesSettingsLoad {
  /** Each setting as acted on, with its scope and launch readings (`hermes/readings.ts`). */
  settings: HermesSettings;
  /** Files that exist but could not be read (each a line naming it); their settings are not applied. */
  warnings: string[];
  /** Why hermes refuses the profile's routed turns (a file that does not parse), or null: nothing is removed for it. */
  refused: string | null;
  /** `<home>/config.yaml` as read (its `janitor.*` keys judge the profile's sandboxes too). */
  config: HermesConfig;
}

/** A `.env` file read once: its bindings as python-dotenv reads them (launch) and as a routed turn does (scope). */
interface DotenvFile {
  launch: LoadedFile<DotenvBinding[]>;
  scope: { path: string; reading: EnvFileReading };
}

/** The managed directory, or null when there is none. */
export async function managedDir(env: Record<string, string | undefined>): Promise<string | null> {
  const override = (env[ENV_MANAGED_DIR] ?? '').trim();
  const dir = override || DEFAULT_MANAGED_DIR;
  const st = await fs.stat(dir).catch(() => null);
  return st?.isDirectory() ? dir : null;
}

/**
 * A `.env` file, read once, as `readFileSafely` reads a settings file (a regular file of at most 1 MiB; as root over
 * another user's home, with that user's rights and never through a symlink); null when absent; a usage error naming
 * it when it is refused (a FIFO, a device, a symlink root may not follow, too large); a warning when it exists but
 * cannot be read (launch: its settings are not applied; scope: the reading is refused, as hermes refuses it). A file
 * that is not UTF-8 (decoded with replacement characters) is refused by the scope.
 */
async function readDotenv(file: string, warnings: string[]): Promise<DotenvFile | { unreadable: string } | null> {
  let text: string;
  try {
    text = readFileSafely(file, SETTINGS_MAX_BYTES);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    // A directory there is a file hermes cannot read either: a warning, as before; a FIFO, a device, a symlink root
    // may not follow or a file too large is refused.
    if (err instanceof TrustError && code !== 'EISDIR') throw new UsageError(`${err.message}: fix or remove it`);
    warnings.push(`cannot read ${file} (${code ?? (err as Error).message}): the settings in it are not applied; fix its permissions or remove it`);
    return { unreadable: `cannot read ${file} (${code ?? (err as Error).message})` };
  }
  const scope: EnvFileReading = text.includes('\uFFFD') ? { refused: `cannot read ${file}: not UTF-8` } : readEnvFile(text, file);
  return { launch: { path: file, data: parseDotenv(text) }, scope: { path: file, reading: scope } };
}

const launchOf = (f: DotenvFile | { unreadable: string } | null) => (f && 'launch' in f ? f.launch : null);

/**
 * A config.yaml that exists must parse: else one line naming it (exit 2). The managed one that cannot be read at all
 * is a warning instead (`warnings` given): hermes cannot read it either, and applies nothing from it.
 */
function usableConfig(config: HermesConfig, warnings?: string[]): LoadedFile<unknown> | null {
  if (config.problem && warnings && config.problem.startsWith('cannot read ')) {
    warnings.push(`${config.problem}: the settings in it are not applied; fix its permissions`);
    return null;
  }
  refuseUnparsed(config);
  return config.data === undefined ? null : { path: config.file, data: config.data };
}

export interface SettingsPlace {
  home: string;
  env: Record<string, string | undefined>;
  cwd: string;
  /** `<home>/config.yaml` when the caller has it loaded already. */
  config?: HermesConfig;
  /** The run's `--timeout` (config.yaml parses are cut short when it fires). */
  signal?: AbortSignal | undefined;
}

/**
 * Every profile's home under a hermes root, as hermes lays them out (`hermes_cli/profiles.py`): the root itself
 * (profile `default`) and each directory `<root>/profiles/<name>` whose name is a profile name.
 */
export async function profileHomes(root: string): Promise<Array<{ profile: string; home: string }>> {
  const listed = await listProfileHomes(root);
  return 'homes' in listed ? listed.homes : [{ profile: 'default', home: root }];
}

/**
 * At most this many entries of `<root>/profiles` are read (hermes' roots hold a few profiles; a user's directory of a
 * million names is not read whole): past it the listing says `more` (#47).
 */
export const MAX_PROFILE_DIR_ENTRIES = 4096;

/**
 * `profileHomes`, or why `<root>/profiles` cannot be listed (absent: `default` alone); `more` when it holds more than
 * `MAX_PROFILE_DIR_ENTRIES` entries (those listed are the first read, not every profile).
 */
export async function listProfileHomes(root: string): Promise<{ homes: Array<{ profile: string; home: string }>; more?: true } | { problem: string }> {
  const dir = path.join(root, 'profiles');
  let entries: Array<{ name: string; directory: boolean }> & { more?: true };
  try {
    entries = listDirSafely(dir, { max: MAX_PROFILE_DIR_ENTRIES }); // as root over another user's root: no symlink there followed
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR')
      return { problem: `cannot list ${dir}: ${err instanceof TrustError ? err.message : (code ?? (err as Error).message)}` };
    entries = [];
  }
  const named = entries
    .filter((e) => e.directory && PROFILE_NAME_PATTERN.test(e.name))
    .map((e) => ({ profile: e.name, home: path.join(dir, e.name) }))
    .sort((a, b) => a.profile.localeCompare(b.profile));
  return { homes: [{ profile: 'default', home: root }, ...named], ...(entries.more ? { more: true as const } : {}) };
}

/** The scope reading's view of the home's own files (the managed ones never reach it). */
function scopeInputs(where: SettingsPlace, dotenv: DotenvFile | { unreadable: string } | null, config: HermesConfig): ScopeInputs {
  const env: ScopeInputs['dotenv'] =
    dotenv === null ? null : 'unreadable' in dotenv ? { path: path.join(where.home, DOTENV_FILENAME), reading: { refused: dotenv.unreadable } } : dotenv.scope;
  const cfg: ScopeInputs['config'] = config.problem
    ? { path: config.file, problem: config.problem }
    : config.data === undefined
      ? null
      : { path: config.file, data: config.data };
  return { home: where.home, cwd: where.cwd, dotenv: env, config: cfg };
}

/**
 * The settings of one hermes home, both readings combined (`hermes/readings.ts`), with a warning for each file that
 * could not be read. A launch reading that fails (a config.yaml that is not YAML, a value hermes cannot use) is a
 * usage error naming the file; a refused scope reading is `refused`.
 */
export async function loadHermesSettings(where: SettingsPlace): Promise<HermesSettingsLoad> {
  const warnings: string[] = [];
  const mdir = await managedDir(where.env);
  const [dotenv, managedDotenv, config, managedConfig] = await Promise.all([
    readDotenv(path.join(where.home, DOTENV_FILENAME), warnings),
    mdir ? readDotenv(path.join(mdir, DOTENV_FILENAME), warnings) : null,
    where.config ?? loadConfig(where.home, { signal: where.signal }),
    mdir ? loadConfig(mdir, { signal: where.signal }) : null,
  ]);
  const inputs: SettingsInputs = {
    home: where.home,
    cwd: where.cwd,
    env: where.env,
    dotenv: launchOf(dotenv),
    managedDotenv: launchOf(managedDotenv),
    config: usableConfig(config),
    managedConfig: managedConfig ? usableConfig(managedConfig, warnings) : null,
  };
  let launch: HermesSettings;
  try {
    launch = resolveHermesSettings(inputs);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const scope = resolveScopeSettings(scopeInputs(where, dotenv, config));
  // Which hermes is installed matters only where the scope reading would change what is acted on.
  const notTaken = scopeDecides(launch, scope) ? await (await import('./host-hermes.js')).hostScopeNotTaken(where.env, where.signal) : null;
  const combined = combineReadings(launch, scope, notTaken === null ? {} : { scopeNotTaken: notTaken });
  const targets = readExecutionTargets(
    {
      home: where.home,
      config: inputs.config?.data,
      managed: inputs.managedConfig ? { file: inputs.managedConfig.path, data: inputs.managedConfig.data } : null,
    },
    warnings,
  );
  return { settings: withTargets(combined.settings, targets), warnings, refused: combined.refused, config };
}

/** A profile whose settings could not be read at all: nothing is removed or stopped for it. */
export interface RefusedProfile {
  settings: null;
  warnings: string[];
  refused: string;
}

/**
 * `loadHermesSettings` for a profile other than the run's own (`--all-profiles`, the profiles sharing a container
 * identity): a file that does not parse is that profile's refusal, reported, never the run's usage error.
 */
export async function loadProfileSettings(where: SettingsPlace): Promise<HermesSettingsLoad | RefusedProfile> {
  try {
    return await loadHermesSettings(where);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    return { settings: null, warnings: [], refused: err.message.replace(/: fix (the file|or remove it)$/, '') };
  }
}
