/**
 * Which profiles' settings judge which sandboxes (pure). A sandbox labelled `hermes-profile=L` belongs to every
 * profile whose container identity is L (`identity.ts`: profiles naming one shared key share it) and to the profile
 * named L (its sandboxes from before it named a key). It is judged by the settings of all of them, taking the
 * reading that removes later: the longest lifetime gives its threshold; any of them refused by hermes (a file that
 * does not parse) or with hermes' orphan reaper off keeps it: nothing is removed or stopped for it.
 */
import type { HermesConfig } from '../adapters/config.js';
import type { HermesSettings } from './settings.js';
import { thresholdSeconds } from '../core/policy.js';
import { sanitizeLabelValue } from './labels.js';
import { profileIdentities } from './readings.js';

/** One profile's settings as read (null with `refused` when they could not be read at all). */
export interface ProfileRead {
  profile: string;
  home: string;
  settings: HermesSettings | null;
  /** Why hermes refuses the profile's routed turns, or null. */
  refused: string | null;
  /** Its config.yaml as read (the janitor's own keys for its sandboxes: `reaper/label-rules.ts`), when it was. */
  config?: HermesConfig;
}

/** Why nothing is removed or stopped for a label. */
export interface Held {
  reason: 'settings-refused' | 'reaper-off';
  why: string;
}

export interface LabelRules {
  /** The threshold of each label value, from the longest lifetime among the profiles it belongs to. */
  thresholdByLabel: Record<string, number>;
  /** The labels nothing is removed or stopped for, and why. */
  held: Record<string, Held>;
  /** The profiles each label belongs to. */
  profilesByLabel: Record<string, string[]>;
}

/** The labels a profile's sandboxes carry: its identities, and its own name. */
export function labelsOf(p: Pick<ProfileRead, 'profile' | 'settings'>): string[] {
  const own = sanitizeLabelValue(p.profile);
  return [...new Set([...(p.settings ? profileIdentities(p.profile, p.settings) : []), own])];
}

/**
 * The rules of every label the profiles' sandboxes carry. `janitorReaps`: `HERMES_JANITOR_REAPER` tells the janitor
 * to reap where hermes' reaper is off.
 */
export function labelRules(profiles: readonly ProfileRead[], opts: { janitorReaps: boolean }): LabelRules {
  const byLabel = new Map<string, ProfileRead[]>();
  for (const p of profiles) for (const l of labelsOf(p)) byLabel.set(l, [...(byLabel.get(l) ?? []), p]);
  const out: LabelRules = { thresholdByLabel: {}, held: {}, profilesByLabel: {} };
  for (const [label, ps] of byLabel) {
    out.profilesByLabel[label] = ps.map((p) => p.profile);
    const refused = ps.find((p) => p.refused !== null || p.settings === null);
    const off = ps.find((p) => p.settings && !p.settings.dockerOrphanReaper.value);
    if (refused) out.held[label] = { reason: 'settings-refused', why: `profile ${refused.profile}: ${refused.refused ?? 'settings unreadable'}` };
    else if (off && !opts.janitorReaps)
      out.held[label] = { reason: 'reaper-off', why: `profile ${off.profile}: hermes' orphan reaper is off (${off.settings!.dockerOrphanReaper.source})` };
    const lifetimes = ps.flatMap((p) => (p.settings ? [p.settings.lifetimeSeconds.value] : []));
    if (lifetimes.length) out.thresholdByLabel[label] = thresholdSeconds(Math.max(...lifetimes));
  }
  return out;
}
