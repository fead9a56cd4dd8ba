/**
 * The settings of the shell-snapshot pass, read in this one function: hermes' temp directory (`terminal.env` in
 * config.yaml, else the process's environment: `core/shell-snapshots.ts` `hermesTempDir`), the terminal lifetime the
 * threshold follows from, and the switch that keeps snapshots (`--keep-shell-snapshots`, `janitor.keep_shell_snapshots`
 * in config.yaml). The lifetime and hermes' TMPDIR come from the settings resolver (`core/hermes-settings.ts`), so
 * hermes' `.env` files count as in hermes.
 */
import type { HermesConfig } from '../adapters/config.js';
import type { HermesSettings } from '../core/hermes-settings.js';
import { hermesTempDir } from '../core/shell-snapshots.js';
import { thresholdSeconds } from '../core/policy.js';
import { type JanitorSetting, SWITCH_ACCEPTS, readJanitorSetting } from './janitor-settings.js';
import { namedByOwner } from '../core/trust.js';
import { resolveLifetime } from './settings.js';
import { procRootOf } from '../adapters/hermes-processes.js';
import type { TempDir } from './shell-snapshots.js';

export const KEEP_SHELL_SNAPSHOTS: JanitorSetting<'switch'> = {
  key: 'janitor.keep_shell_snapshots', kind: 'switch', flag: '--keep-shell-snapshots', accepts: SWITCH_ACCEPTS,
  description: "true: hermes' abandoned shell snapshots are counted, never removed", defaultText: 'false',
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
 * `owner`: the home's owner when the janitor runs as root over another user's home (adapters/trust.ts `homeAccess`):
 * a temp directory that user's files name (`terminal.env` in their config.yaml, `TMPDIR` in their `.env`) carries
 * their uid, and the pass uses it only if it is theirs (`untrusted-root` otherwise). One from the janitor's own
 * environment or the default `/tmp` is the operator's.
 */
export function shellSnapshotSettings(
  flags: { lifetimeSeconds?: number | undefined; keep?: boolean | undefined },
  env: Record<string, string | undefined>,
  files: { config: HermesConfig; hermes: HermesSettings },
  owner?: { uid: number; home: string } | null,
): ShellSnapshotSettings {
  const { config, hermes } = files;
  const lifetime = resolveLifetime(flags.lifetimeSeconds, hermes.lifetimeSeconds).value;
  const terminalEnv = config.problem ? null : config.get('terminal.env');
  // hermes' own TMPDIR as hermes resolves it (a .env may set it); TMP and TEMP as the janitor's environment has them.
  const hermesEnv = { ...env, TMPDIR: hermes.tmpDir.value || undefined };
  const t: TempDir = hermesTempDir(terminalEnv && typeof terminalEnv === 'object' && !Array.isArray(terminalEnv) ? (terminalEnv as Record<string, unknown>) : null, hermesEnv);
  const ownersWord = t.from.startsWith('terminal.env.') || (t.from === 'TMPDIR' && owner && hermes.tmpDir.source !== `env TMPDIR` && namedByOwner(hermes.tmpDir.source, owner.home));
  if (owner && ownersWord) t.owner = owner.uid;
  return {
    tempDirs: [t], lifetimeSeconds: lifetime, thresholdMs: thresholdSeconds(lifetime) * 1000, keep: flags.keep === true || (readJanitorSetting(config, KEEP_SHELL_SNAPSHOTS) ?? false),
    procRoot: procRootOf(env),
  };
}
