/**
 * The settings of the shell-snapshot pass, read in this one function: the directories where hermes puts session
 * files (every one any release uses, for each profile the run serves: `passes/temp-dirs/dirs.ts`), the terminal
 * lifetime the threshold follows from, and the switch that keeps snapshots (`--keep-shell-snapshots`,
 * `janitor.keep_shell_snapshots` in config.yaml). The lifetime and hermes' temp variables come from the settings
 * resolver (`hermes/settings.ts`), so hermes' `.env` files count as in hermes.
 */
import type { HermesConfig } from '../../adapters/config.js';
import type { HermesSettings } from '../../hermes/settings.js';
import { thresholdSeconds } from '../../core/policy.js';
import { type JanitorSetting, SWITCH_ACCEPTS, readJanitorSetting } from '../../reaper/janitor-settings.js';
import { resolveLifetime } from '../../reaper/lifetime.js';
import { procRootOf } from '../../adapters/hermes-processes.js';
import type { TempDir } from '../temp-dirs/dirs.js';

export const KEEP_SHELL_SNAPSHOTS: JanitorSetting<'switch'> = {
  key: 'janitor.keep_shell_snapshots',
  kind: 'switch',
  flag: '--keep-shell-snapshots',
  accepts: SWITCH_ACCEPTS,
  description: "true: hermes' abandoned shell snapshots are counted, never removed",
  defaultText: 'false',
  keepsMore: { more: 'switch', keeps: true, default: false },
};

export interface ShellSnapshotSettings {
  tempDirs: TempDir[];
  lifetimeSeconds: number;
  /** 2 x max(lifetime, 60 s), in ms. */
  thresholdMs: number;
  /** Snapshots are only counted, never removed. */
  keep: boolean;
  /** Where hermes' processes are read (`HERMES_JANITOR_PROC_ROOT`, else `/proc`). */
  procRoot: string;
}

/**
 * `tempDirs`: every directory where a hermes release puts session files for the profiles the run serves, each with
 * the uid it must belong to where the trust rules apply (`passes/temp-dirs/dirs.ts`).
 */
export function shellSnapshotSettings(
  flags: { lifetimeSeconds?: number | undefined; keep?: boolean | undefined },
  env: Record<string, string | undefined>,
  files: { config: HermesConfig; hermes: HermesSettings },
  tempDirs: readonly TempDir[],
): ShellSnapshotSettings {
  const { config, hermes } = files;
  const lifetime = resolveLifetime(flags.lifetimeSeconds, hermes.lifetimeSeconds).value;
  return {
    tempDirs: [...tempDirs],
    lifetimeSeconds: lifetime,
    thresholdMs: thresholdSeconds(lifetime) * 1000,
    keep: flags.keep === true || (readJanitorSetting(config, KEEP_SHELL_SNAPSHOTS) ?? false),
    procRoot: procRootOf(env),
  };
}
