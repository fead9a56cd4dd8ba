import type { EngineProfileCounts } from '../adapters/metrics.js';

/** What metrics need of one engine's reap result (`stopped` is optional: sweeps without a stop rule have none). */
export interface ReapCounts {
  removed: ReadonlyArray<{ profile: string | null }>;
  kept: ReadonlyArray<{ profile: string | null }>;
  failed: ReadonlyArray<{ profile: string | null }>;
  stopped?: ReadonlyArray<{ profile: string | null }>;
}

/**
 * Per engine and profile: removed, stopped, kept, failed, and the orphans left (failed ones, and in a dry run
 * everything it would have removed or stopped). Each engine gets a row for the selected profile even when empty.
 * `homeOf`: the hermes home that judged a profile's containers (a run over several homes), each row then per home
 * too; absent, the rows carry none (the run's own home is theirs: `RunMetrics.home`).
 */
export function countsByEngineAndProfile(
  perEngine: ReadonlyArray<{ host: string; result: ReapCounts }>,
  selectedProfile: string | null,
  dryRun: boolean,
  homeOf?: (profile: string) => string,
): EngineProfileCounts[] {
  const rows = new Map<string, EngineProfileCounts>();
  const row = (host: string, profile: string | null) => {
    const p = profile ?? selectedProfile ?? '';
    const home = homeOf?.(p);
    const key = JSON.stringify([host, p, home ?? null]);
    let r = rows.get(key);
    if (!r) rows.set(key, (r = { host, profile: p, ...(home !== undefined ? { home } : {}), removed: 0, stopped: 0, kept: 0, failed: 0, orphans: 0 }));
    return r;
  };
  for (const { host, result } of perEngine) {
    if (selectedProfile !== null) row(host, selectedProfile);
    for (const e of result.removed) {
      const r = row(host, e.profile);
      if (dryRun) r.orphans++;
      else r.removed++;
    }
    for (const e of result.stopped ?? []) {
      const r = row(host, e.profile);
      if (dryRun) r.orphans++;
      else r.stopped++;
    }
    for (const e of result.kept) row(host, e.profile).kept++;
    for (const e of result.failed) {
      const r = row(host, e.profile);
      r.failed++;
      r.orphans++;
    }
  }
  return [...rows.values()].sort((a, b) => a.host.localeCompare(b.host) || a.profile.localeCompare(b.profile) || (a.home ?? '').localeCompare(b.home ?? ''));
}
