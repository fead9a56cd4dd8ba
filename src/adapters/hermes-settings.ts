/**
 * Reads the files hermes takes its settings from (`<home>/.env`, the managed `.env` and `config.yaml`,
 * `<home>/config.yaml`) and resolves them (`core/hermes-settings.ts`). Where the managed directory is:
 * `$HERMES_MANAGED_DIR` when it is a non-empty path to a directory, else `/etc/hermes` when that is one
 * (hermes-agent `hermes_cli/managed_scope.py` `get_managed_dir`). `HERMES_MANAGED_DIR` is read from the janitor's
 * own environment (hermes reads it after loading `<home>/.env`; an administrator's path does not belong there).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULT_MANAGED_DIR, DOTENV_FILENAME, ENV_MANAGED_DIR, PROFILE_NAME_PATTERN } from '../defaults.js';
import { UsageError } from '../errors.js';
import { type DotenvBinding, parseDotenv } from '../core/dotenv.js';
import { type HermesSettings, type LoadedFile, type SettingsInputs, resolveHermesSettings } from '../core/hermes-settings.js';
import { type HermesConfig, loadConfig, usableConfig as refuseUnparsed } from './config.js';
import { SETTINGS_MAX_BYTES } from '../core/trust.js';
import { TrustError, listDirSafely, readFileSafely } from './trust.js';

export interface HermesSettingsLoad {
  settings: HermesSettings;
  /** Files that exist but could not be read (each a line naming it); their settings are not applied. */
  warnings: string[];
}

/** The managed directory, or null when there is none. */
export async function managedDir(env: Record<string, string | undefined>): Promise<string | null> {
  const override = (env[ENV_MANAGED_DIR] ?? '').trim();
  const dir = override || DEFAULT_MANAGED_DIR;
  const st = await fs.stat(dir).catch(() => null);
  return st?.isDirectory() ? dir : null;
}

/**
 * A `.env` file's bindings, read as `readFileSafely` reads a settings file (a regular file of at most 1 MiB; as root
 * over another user's home, with that user's rights and never through a symlink); null when absent; a usage error
 * naming it when it is refused (a FIFO, a device, a symlink root may not follow, too large); a warning (and null)
 * when it exists but cannot be read.
 */
async function readDotenv(file: string, warnings: string[]): Promise<LoadedFile<DotenvBinding[]> | null> {
  try {
    return { path: file, data: parseDotenv(readFileSafely(file, SETTINGS_MAX_BYTES)) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    // A directory there is a file hermes cannot read either: a warning, as before; a FIFO, a device, a symlink root
    // may not follow or a file too large is refused.
    if (err instanceof TrustError && code !== 'EISDIR') throw new UsageError(`${err.message}: fix or remove it`);
    warnings.push(`cannot read ${file} (${code ?? (err as Error).message}): the settings in it are not applied; fix its permissions or remove it`);
    return null;
  }
}

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
  const dir = path.join(root, 'profiles');
  let entries: Array<{ name: string; directory: boolean }>;
  try {
    entries = listDirSafely(dir); // as root over another user's root: no symlink there followed
  } catch {
    entries = [];
  }
  const named = entries
    .filter((e) => e.directory && PROFILE_NAME_PATTERN.test(e.name))
    .map((e) => ({ profile: e.name, home: path.join(dir, e.name) }))
    .sort((a, b) => a.profile.localeCompare(b.profile));
  return [{ profile: 'default', home: root }, ...named];
}

/** The settings of one hermes home, with a warning for each file that could not be read. */
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
    home: where.home, cwd: where.cwd, env: where.env, dotenv, managedDotenv,
    config: usableConfig(config), managedConfig: managedConfig ? usableConfig(managedConfig, warnings) : null,
  };
  try {
    return { settings: resolveHermesSettings(inputs), warnings };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}
