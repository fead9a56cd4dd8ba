/**
 * The settings of the session-file pass, read in this one function: the directories where hermes puts session files
 * (`passes/temp-dirs/dirs.ts`, shared with the shell-snapshot pass), the threshold (2 x max(lifetime, 60 s), as for
 * snapshots), and the switch that keeps them (`--keep-session-files`, `janitor.keep_session_files` in config.yaml).
 */
import type { HermesConfig } from '../../adapters/config.js';
import type { HermesSettings } from '../../hermes/settings.js';
import { thresholdSeconds } from '../../core/policy.js';
import { procRootOf } from '../../adapters/hermes-processes.js';
import { type JanitorSetting, SWITCH_ACCEPTS, readJanitorSetting } from '../../reaper/janitor-settings.js';
import { resolveLifetime } from '../../reaper/lifetime.js';
import type { TempDir } from '../temp-dirs/dirs.js';

export const KEEP_SESSION_FILES: JanitorSetting<'switch'> = {
  key: 'janitor.keep_session_files',
  kind: 'switch',
  flag: '--keep-session-files',
  accepts: SWITCH_ACCEPTS,
  description: "true: hermes' abandoned background-job files, execute_code sandboxes and RPC sockets are counted, never removed",
  defaultText: 'false',
  keepsMore: { more: 'switch', keeps: true, default: false },
};

export interface SessionFileSettings {
  tempDirs: TempDir[];
  /** 2 x max(lifetime, 60 s), in ms. */
  thresholdMs: number;
  /** Only counted, never removed. */
  keep: boolean;
  /** Where hermes' processes are read (`HERMES_JANITOR_PROC_ROOT`, else `/proc`). */
  procRoot: string;
}

export function sessionFileSettings(
  flags: { lifetimeSeconds?: number | undefined; keep?: boolean | undefined },
  env: Record<string, string | undefined>,
  files: { config: HermesConfig; hermes: HermesSettings },
  tempDirs: readonly TempDir[],
): SessionFileSettings {
  const lifetime = resolveLifetime(flags.lifetimeSeconds, files.hermes.lifetimeSeconds).value;
  return {
    tempDirs: [...tempDirs],
    thresholdMs: thresholdSeconds(lifetime) * 1000,
    procRoot: procRootOf(env),
    keep: flags.keep === true || (readJanitorSetting(files.config, KEEP_SESSION_FILES) ?? false),
  };
}
