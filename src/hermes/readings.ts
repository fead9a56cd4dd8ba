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
 * A scope reading hermes refuses keeps the profile's sandboxes (nothing is removed or stopped for it). Where every
 * hermes install found on the host predates the scope reading (`host-readings.ts`), it is not taken: the launch
 * reading stands.
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
 * Whether the scope reading changes what is acted on: it is refused, or it removes, stops or ends later than the
 * launch reading for some setting. Only then does it matter which hermes is installed (`host-readings.ts`).
 */
export function scopeDecides(launch: HermesSettings, scope: ScopeReading): boolean {
  if ('refused' in scope) return true;
  return (Object.entries(launch) as [HermesSettingName, Sourced<unknown>][]).some(([name, l]) => {
    const s = scope.settings[name];
    return s !== undefined && pick(LATER[name], l, s) === 'scope';
  });
}

/**
 * Each setting with its readings (`readings`, `used`) and the value to act on. When the scope reading is refused,
 * the launch values stand, each with its one reading, and `refused` says why. `scopeNotTaken`: every hermes install
 * on the host predates the scope reading (`host-readings.ts`): it is shown, never acted on, and its refusal holds
 * nothing.
 */
export function combineReadings(launch: HermesSettings, scope: ScopeReading, opts: { scopeNotTaken?: string } = {}): ProfileReadings {
  const out: Record<string, Sourced<unknown>> = {};
  const notTaken = opts.scopeNotTaken;
  for (const [name, l] of Object.entries(launch) as [HermesSettingName, Sourced<unknown>][]) {
    const launchReading = { reading: 'launch' as const, value: l.value, source: l.source };
    const s = 'settings' in scope ? scope.settings[name] : undefined;
    if (!s) {
      out[name] = { ...l, readings: [launchReading], used: 'launch' };
      continue;
    }
    const used = notTaken === undefined ? pick(LATER[name], l, s) : 'launch';
    const chosen = used === 'scope' ? s : l;
    const readings = [{ reading: 'scope' as const, value: s.value, source: s.source }, launchReading];
    out[name] = {
      value: chosen.value,
      source: chosen.source,
      readings,
      used,
      ...(notTaken !== undefined && s.value !== l.value ? { scopeNotTaken: notTaken } : {}),
    };
  }
  const refused = 'refused' in scope && notTaken === undefined ? scope.refused : null;
  return { settings: out as HermesSettings, refused };
}

/** The container identities of a profile: its shared key's in either reading, else its name (`identity.ts`). */
export function profileIdentities(profile: string, settings: Pick<HermesSettings, 'dockerSharedContainerKey'>): string[] {
  const key = settings.dockerSharedContainerKey;
  const keys = key.readings?.map((r) => r.value) ?? [key.value];
  return [...new Set(keys.flatMap((k) => identitiesOf(profile, k)))];
}
