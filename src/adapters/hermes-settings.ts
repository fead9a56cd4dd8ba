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

/** A `.env` file's bindings; null when absent; a warning (and null) when it exists but cannot be read. */
async function readDotenv(file: string, warnings: string[]): Promise<LoadedFile<DotenvBinding[]> | null> {
  try {
    return { path: file, data: parseDotenv(await fs.readFile(file, 'utf8')) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
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
}

/**
 * Every profile's home under a hermes root, as hermes lays them out (`hermes_cli/profiles.py`): the root itself
 * (profile `default`) and each directory `<root>/profiles/<name>` whose name is a profile name.
 */
export async function profileHomes(root: string): Promise<Array<{ profile: string; home: string }>> {
  const dir = path.join(root, 'profiles');
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  const named = entries
    .filter((e) => e.isDirectory() && PROFILE_NAME_PATTERN.test(e.name))
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
    where.config ?? loadConfig(where.home),
    mdir ? loadConfig(mdir) : null,
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
