/**
 * The settings of owned and abandoned sandboxes (#30), resolved in one place: the idle threshold of an owned sandbox
 * (`--idle-after-owned`, `janitor.idle_after_owned`, default 24 h, `never` allowed), how long a sandbox the janitor
 * stopped is kept (`--stopped-retention`, `janitor.stopped_retention`, default 7 days), and the reader of the living
 * hermes processes that may own a sandbox (procfs, read afresh at each call; none at all, every sandbox owned, when
 * the janitor's pid namespace is not the host's: `adapters/pid-namespace.ts`).
 */
import type { HermesConfig } from '../adapters/config.js';
import { DEFAULT_IDLE_AFTER_OWNED_SECONDS, DEFAULT_STOPPED_RETENTION_SECONDS } from '../defaults.js';
import { UsageError } from '../errors.js';
import { parseDuration } from '../core/parse-args.js';
import type { OwnerView } from '../core/owners.js';
import type { EngineProcess } from '../adapters/pid-namespace.js';

export interface OwnerSettings {
  /** Seconds; null: an owned sandbox is never stopped. */
  idleAfterOwnedSeconds: number | null;
  stoppedRetentionSeconds: number;
  owners: (engineHost: string, evidence?: EngineProcess) => OwnerView;
}

/**
 * From the inputs (seconds; `null` for never), else config.yaml (a duration such as `24h`, a number of seconds, or
 * `never` for the owned threshold), else the defaults. A config value that does not parse is a usage error naming the
 * file and the flag.
 */
export async function resolveOwnerSettings(
  inputs: { idleAfterOwnedSeconds?: number | null | undefined; stoppedRetentionSeconds?: number | undefined },
  config: HermesConfig,
): Promise<OwnerSettings> {
  const owned = inputs.idleAfterOwnedSeconds !== undefined ? inputs.idleAfterOwnedSeconds : configDuration(config, 'janitor.idle_after_owned', '--idle-after-owned', true);
  const retention = inputs.stoppedRetentionSeconds ?? configDuration(config, 'janitor.stopped_retention', '--stopped-retention', false);
  const { listHermesProcesses } = await import('../adapters/hermes-processes.js');
  const { engineOnThisHost, ownerViewOf } = await import('../core/owners.js');
  const { pidNamespaceProblem } = await import('../adapters/pid-namespace.js');
  return {
    idleAfterOwnedSeconds: owned === undefined ? DEFAULT_IDLE_AFTER_OWNED_SECONDS : owned,
    stoppedRetentionSeconds: retention ?? DEFAULT_STOPPED_RETENTION_SECONDS,
    owners: (host, evidence) => {
      const partial = engineOnThisHost(host) ? pidNamespaceProblem({ engineHost: host, evidence }) : null;
      return partial ? { blind: partial, pidNamespace: partial, processes: [] } : ownerViewOf(listHermesProcesses(), host);
    },
  };
}

/** A duration in config.yaml, in seconds; undefined when absent; null for `never` (where allowed). */
function configDuration(config: HermesConfig, key: string, flag: string, neverAllowed: boolean): number | null | undefined {
  if (config.problem) return undefined; // reported by whichever setting needs the file first
  const raw = config.get(key);
  if (raw === undefined || raw === null) return undefined;
  if (neverAllowed && typeof raw === 'string' && raw.trim().toLowerCase() === 'never') return null;
  if (typeof raw === 'number' && raw > 0 && Number.isFinite(raw)) return raw;
  if (typeof raw === 'string') {
    try {
      return parseDuration(raw, key) / 1000;
    } catch {
      /* reported below */
    }
  }
  throw new UsageError(
    `${key} in ${config.file} must be a duration such as 24h, 7d or 90m (or seconds)${neverAllowed ? ", or 'never'" : ''}, got '${String(raw)}': fix the file or pass ${flag}`,
  );
}
