/**
 * Two readings of one profile's hermes settings, and the one the janitor acts on. hermes reads a profile's terminal
 * settings one way in a process launched on that profile (the launch reading, `hermes/settings.ts`: its
 * environment, `.env`, the managed `.env`, config.yaml) and another in a turn a multiplexed surface routes to it (the
 * scope reading, `scope-settings.ts`). Which one governs a given sandbox depends on which process made it, and on
 * the hermes version; where they differ, the janitor acts on the reading that removes, stops or ends later:
 * - the longer lifetime and the longer timeouts (a later threshold, a later bound on an exec);
 * - the orphan reaper off if either reading says off;
 * - paths (sandbox root, temp dirs) as launched: neither removes later, and they are where the janitor looked before
 *   (the session-file passes look in the temp directories of both readings: `session-dirs.ts`);
 * - the shared container key: both readings' identities are selected (`identity.ts`).
 * A scope reading hermes refuses keeps the profile's sandboxes (nothing is removed or stopped for it).
 */
import type { HermesSettingName, HermesSettings, Sourced } from './settings.js';
import { identitiesOf } from './identity.js';
import type { ScopeReading } from './scope-settings.js';

/** How the two readings of a setting combine. */
type Later = 'longer' | 'off-wins' | 'as-launched';

const LATER: Record<HermesSettingName, Later> = {
  lifetimeSeconds: 'longer',
  foregroundMaxTimeoutSeconds: 'longer',
  terminalTimeoutSeconds: 'longer',
  dockerOrphanReaper: 'off-wins',
  sandboxRoot: 'as-launched',
  tmpDir: 'as-launched',
  tmp: 'as-launched',
  temp: 'as-launched',
  terminalTempDir: 'as-launched',
  dockerSharedContainerKey: 'as-launched',
};

/** The reading to act on of one setting: `scope` only when it removes, stops or ends later than `launch`. */
function pick(rule: Later, launch: Sourced<unknown>, scope: Sourced<unknown>): 'scope' | 'launch' {
  if (rule === 'longer') return (scope.value as number) > (launch.value as number) ? 'scope' : 'launch';
  if (rule === 'off-wins') return scope.value === false && launch.value !== false ? 'scope' : 'launch';
  return 'launch';
}

/** A profile's settings with both readings, and why hermes refuses its routed turns (null: it does not). */
export interface ProfileReadings {
  settings: HermesSettings;
  /** The scope reading was refused (a file that does not parse): nothing is removed or stopped for the profile. */
  refused: string | null;
}

/**
 * Each setting with its readings (`readings`, `used`) and the value to act on. When the scope reading is refused,
 * the launch values stand, each with its one reading, and `refused` says why.
 */
export function combineReadings(launch: HermesSettings, scope: ScopeReading): ProfileReadings {
  const out: Record<string, Sourced<unknown>> = {};
  for (const [name, l] of Object.entries(launch) as [HermesSettingName, Sourced<unknown>][]) {
    const launchReading = { reading: 'launch' as const, value: l.value, source: l.source };
    const s = 'settings' in scope ? scope.settings[name] : undefined;
    if (!s) {
      out[name] = { ...l, readings: [launchReading], used: 'launch' };
      continue;
    }
    const used = pick(LATER[name], l, s);
    const chosen = used === 'scope' ? s : l;
    out[name] = { value: chosen.value, source: chosen.source, readings: [{ reading: 'scope', value: s.value, source: s.source }, launchReading], used };
  }
  return { settings: out as HermesSettings, refused: 'refused' in scope ? scope.refused : null };
}

/** The container identities of a profile: its shared key's in either reading, else its name (`identity.ts`). */
export function profileIdentities(profile: string, settings: Pick<HermesSettings, 'dockerSharedContainerKey'>): string[] {
  const key = settings.dockerSharedContainerKey;
  const keys = key.readings?.map((r) => r.value) ?? [key.value];
  return [...new Set(keys.flatMap((k) => identitiesOf(profile, k)))];
}
