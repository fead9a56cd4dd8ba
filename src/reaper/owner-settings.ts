/**
 * The settings of owned and abandoned sandboxes (#30), resolved in one place: the idle threshold of an owned sandbox
 * (`--idle-after-owned`, `janitor.idle_after_owned`, default 24 h, `never` allowed), how long a sandbox the janitor
 * stopped is kept (`--stopped-retention`, `janitor.stopped_retention`, default 7 days), and the reader of the living
 * hermes processes that may own a sandbox (procfs, read afresh at each call; none at all, every sandbox owned, when
 * the janitor's pid namespace is not the host's: `adapters/pid-namespace.ts`).
 */
import type { HermesConfig } from '../adapters/config.js';
import { DEFAULT_IDLE_AFTER_OWNED_SECONDS, DEFAULT_STOPPED_RETENTION_SECONDS } from '../defaults.js';
import { IDLE_AFTER_OWNED, STOPPED_RETENTION, readJanitorSetting } from './janitor-settings.js';
import type { OwnerView } from '../core/owners.js';
import type { EngineProcess } from '../adapters/pid-namespace.js';

export interface OwnerSettings {
  /** Seconds; null: an owned sandbox is never stopped. */
  idleAfterOwnedSeconds: number | null;
  stoppedRetentionSeconds: number;
  owners: (engineHost: string, evidence?: EngineProcess) => Promise<OwnerView>;
}

/**
 * From the inputs (seconds; `null` for never), else config.yaml (a duration such as `24h`, a number of seconds, or
 * `never` for the owned threshold), else the defaults. A config value that does not parse is a usage error naming the
 * file and the flag.
 */
export async function resolveOwnerSettings(
  inputs: { idleAfterOwnedSeconds?: number | null | undefined; stoppedRetentionSeconds?: number | undefined },
  config: HermesConfig,
  env: Record<string, string | undefined> = {},
): Promise<OwnerSettings> {
  const values = ownerSettingValues(inputs, config);
  const { listHermesProcesses, procRootOf } = await import('../adapters/hermes-processes.js');
  const procRoot = procRootOf(env);
  const { ownerViewOf } = await import('../core/owners.js');
  const { engineOnThisHost } = await import('../core/engine-place.js');
  const { pidNamespaceProblem } = await import('../adapters/pid-namespace.js');
  const { newOwnershipCache, resolveOwnership } = await import('../hermes/owned-profiles.js');
  // One cache per run (per `watch`): the process table is read afresh at each call, a root's profiles once a minute.
  const where = { env, cwd: process.cwd(), cache: newOwnershipCache() };
  return {
    ...values,
    owners: async (host, evidence) => {
      const partial = engineOnThisHost(host) ? pidNamespaceProblem({ engineHost: host, evidence, procRoot }) : null;
      if (partial) return { blind: partial, pidNamespace: partial, processes: [] };
      const table = listHermesProcesses({ procRoot });
      return ownerViewOf(engineOnThisHost(host) ? await resolveOwnership(table, where) : table, host);
    },
  };
}

/** The two thresholds alone (no process reader): from the inputs, else config.yaml, else the defaults. */
export function ownerSettingValues(
  inputs: { idleAfterOwnedSeconds?: number | null | undefined; stoppedRetentionSeconds?: number | undefined },
  config: HermesConfig,
): Pick<OwnerSettings, 'idleAfterOwnedSeconds' | 'stoppedRetentionSeconds'> {
  const owned = inputs.idleAfterOwnedSeconds !== undefined ? inputs.idleAfterOwnedSeconds : configSeconds(config, IDLE_AFTER_OWNED);
  const retention = inputs.stoppedRetentionSeconds ?? configSeconds(config, STOPPED_RETENTION);
  return {
    idleAfterOwnedSeconds: owned === undefined ? DEFAULT_IDLE_AFTER_OWNED_SECONDS : owned,
    stoppedRetentionSeconds: retention ?? DEFAULT_STOPPED_RETENTION_SECONDS,
  };
}

/** A duration key in seconds; undefined when absent; null for `never` (where allowed). */
function configSeconds(config: HermesConfig, setting: typeof IDLE_AFTER_OWNED): number | null | undefined {
  const ms = readJanitorSetting(config, setting);
  return ms === undefined || ms === null ? ms : ms / 1000;
}
