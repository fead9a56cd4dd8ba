/**
 * The shell-snapshot step of `reap` and `watch` (the pass is reaper/shell-snapshots.ts), and how a run tells that
 * there is no engine at all on this host. Loaded only when a run gets there.
 */
import type { ShellSnapshotSettings } from '../reaper/shell-snapshot-settings.js';
import type { ShellSnapshotsResult } from '../reaper/shell-snapshots.js';
import type { EngineEndpoint } from '../adapters/engine-host.js';

/**
 * Runs the pass (null when `--keep-shell-snapshots` or its config key keeps them), within the run's `signal`
 * (`--timeout`): cut short there, `cutShort` says so.
 */
export async function runShellSnapshotStep(
  s: ShellSnapshotSettings, dryRun: boolean, now: () => Date, signal?: AbortSignal,
): Promise<ShellSnapshotsResult | null> {
  if (s.keep) return null;
  const { shellSnapshotPass } = await import('../reaper/shell-snapshots.js');
  return shellSnapshotPass({ tempDirs: s.tempDirs, thresholdMs: s.thresholdMs, dryRun, now, signal });
}

/**
 * The line to say when this host has no engine at all: discovery was left to find one (nothing configured: no
 * `--host`, `--context`, `DOCKER_HOST`) and no socket exists anywhere it looks (hermes' local backend). Null for any
 * other failure: a socket that is there but does not answer, or an engine that was named, stays exit 3.
 */
export async function noEngineAtAll(err: unknown, endpoints: readonly EngineEndpoint[]): Promise<string | null> {
  const { NoEngineFoundError } = await import('../adapters/engine-discovery.js');
  if (!(err instanceof NoEngineFoundError) || !endpoints.every((e) => e.discover)) return null;
  if (!err.attempts.every((a) => a.outcome === 'absent')) return null;
  return `no container engine found (no socket at ${err.attempts.map((a) => a.path).join(', ')}): only the host's own files were checked`;
}
