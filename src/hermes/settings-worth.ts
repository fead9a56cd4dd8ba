/**
 * hermes' settings of a home as the janitor may act on them (core/setting-worth.ts): built on the settings as read
 * (both readings, `readings.ts`), each reading whose value comes from the home owner's own files (their `.env`, their
 * `config.yaml`; core/trust.ts `namedByOwner`) and would not keep more than hermes' default (`HermesSettingSpec.keepsMore`)
 * is replaced by that default, then the value acted on is taken again the same way: the longest for a duration, the
 * reading used otherwise. The janitor's own environment and the managed files are the operator's, never refused.
 */
import path from 'node:path';
import { CONFIG_FILENAME } from '../defaults.js';
import { type SettingsWorth, type UntrustedSetting, UNTRUSTED_SETTING, keepsMore, shownValue, untrustedSettingLine } from '../core/setting-worth.js';
import { namedByOwner } from '../core/trust.js';
import { HERMES_SETTINGS, type HermesSettingName, type HermesSettingSpec, type HermesSettings, type SettingWhere, type Sourced } from './settings.js';

type Reading = NonNullable<Sourced<unknown>['readings']>[number];

/** The key and file a source names (`config.yaml terminal.timeout` is `<home>/config.yaml`'s `terminal.timeout`). */
function keyOf(source: string, spec: HermesSettingSpec<unknown>, home: string): { setting: string; file: string } {
  if (source.startsWith('config.yaml ')) return { setting: source.slice('config.yaml '.length), file: path.join(home, CONFIG_FILENAME) };
  return { setting: spec.envVar, file: source };
}

/** Each of the owner's readings that does not keep more, replaced by hermes' default (noted). */
function clampReadings(
  readings: readonly Reading[],
  spec: HermesSettingSpec<unknown>,
  where: SettingWhere,
  refuse: (r: Reading, fallback: unknown) => void,
): Reading[] {
  return readings.map((r) => {
    if (r.source === 'default' || !namedByOwner(r.source, where.home) || keepsMore(spec.keepsMore, r.value)) return r;
    const fallback = spec.interpret(undefined, where);
    refuse(r, fallback);
    return { ...r, value: fallback, source: 'default' };
  });
}

/**
 * The settings with every value of the owner's that does not keep more replaced by hermes' default, each refusal
 * given to `note` once. As written (`worth`): the settings unchanged.
 */
export function settingsWorthActing(settings: HermesSettings, worth: SettingsWorth, where: SettingWhere, note: (u: UntrustedSetting) => void): HermesSettings {
  if (worth.worth === 'as-written') return settings;
  const out: Record<string, Sourced<unknown>> = { ...settings };
  for (const [name, spec] of Object.entries(HERMES_SETTINGS) as Array<[HermesSettingName, HermesSettingSpec<unknown>]>) {
    const s = settings[name] as Sourced<unknown>;
    const readings: Reading[] = s.readings ?? [{ reading: s.used ?? 'launch', value: s.value, source: s.source }];
    let changed = false;
    const clamped = clampReadings(readings, spec, where, (r, fallback) => {
      changed = true;
      const u = { home: where.home, ...keyOf(r.source, spec, where.home), value: shownValue(r.value), used: `${shownValue(fallback)} (hermes' default)` };
      note({ ...u, reason: UNTRUSTED_SETTING, detail: untrustedSettingLine(u, worth) });
    });
    if (!changed) continue;
    // The value acted on stands where it keeps more already (a longer reading, or a named execution target's longer
    // lifetime: `targets.ts`); else the reading to act on among those as clamped.
    const stands = s.source === 'default' || !namedByOwner(s.source, where.home) || keepsMore(spec.keepsMore, s.value);
    const used = spec.keepsMore.more === 'longer' ? longest(clamped) : (clamped.find((r) => r.reading === s.used) ?? clamped[0]!);
    const acted = stands ? { value: s.value, source: s.source } : { value: used.value, source: used.source, ...(s.used ? { used: used.reading } : {}) };
    out[name] = { ...s, ...acted, ...(s.readings ? { readings: clamped } : {}) };
  }
  return out as HermesSettings;
}

/** The reading with the largest value (the first of equals). */
function longest(readings: readonly Reading[]): Reading {
  return readings.reduce((a, b) => ((b.value as number) > (a.value as number) ? b : a));
}
