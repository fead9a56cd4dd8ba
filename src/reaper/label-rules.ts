/**
 * Each label's idle rule (`IdleOptions.byProfile`), from the settings of the profiles it belongs to (of every home of
 * the run): each profile read as a run with `--profile <it>` reads it (hermes' settings of its home, the `janitor.*`
 * keys of its config.yaml, the run's flags and environment over both), and a label several profiles have judged by
 * the reading that stops or ends later among them. So under `--all-profiles` (and `--homes`) a profile's idle
 * threshold is its own, as under `--profile`.
 */
import type { HermesConfig } from '../adapters/config.js';
import { type Held, type ProfileRead, labelRules, labelsOf } from '../hermes/judgement.js';
import { TIED, thresholdSeconds } from '../core/policy.js';
import type { Selection } from '../core/selection.js';
import { laterSweeps, sweepOptions } from './sweep-passes.js';
import { ownerSettingValues } from './owner-settings.js';
import { type RunInputs, resolveIdleMaxProcesses, resolveLifetime, resolveStopIdle } from './settings.js';
import type { IdleRule } from './sweep-types.js';

/** Where a profile's rule is read: the run's environment and selection, and the profile's own files. */
export interface RuleWhere {
  env: Record<string, string | undefined>;
  selection: Selection;
  /** `--label` replaced the hermes selector (the idle rule is then off unless asked for). */
  selectorGiven: boolean;
}

/** One profile's idle rule, as a run over its home reads it; null when its settings could not be read. */
export function profileIdleRule(inputs: RunInputs, p: Pick<ProfileRead, 'settings' | 'config'>, where: RuleWhere): IdleRule | null {
  if (!p.settings || !p.config) return null;
  const config: HermesConfig = p.config;
  const lifetime = resolveLifetime(inputs.lifetimeSeconds, p.settings.lifetimeSeconds).value;
  const maxProcesses = resolveIdleMaxProcesses(inputs.idleMaxProcesses, config).value;
  const sweeps = sweepOptions(inputs, { hermes: p.settings, config, selection: where.selection });
  return {
    stopIdle: resolveStopIdle(inputs.stopIdle, where.selectorGiven, where.env, config).value,
    idleAfterSeconds: inputs.idleAfterSeconds ?? thresholdSeconds(lifetime),
    ...(maxProcesses !== undefined ? { maxProcesses } : {}),
    ...ownerSettingValues(inputs, config),
    ...(sweeps ? { sweeps } : {}),
  };
}

/** The longer of two durations in seconds, null (never) the longest. */
const longer = (a: number | null, b: number | null) => (a === null || b === null ? null : Math.max(a, b));

/**
 * Two rules of one label as one, the reading that stops or ends later: stopping off if either says so, the longer
 * thresholds and retention, each sweep pass's later options (its `later`: the exec-tree pass's longer bound, abandoned
 * trees kept if either keeps them), and the stricter in-use rule (the fewer processes; the rule's own count is the
 * strictest but one).
 */
export function laterRule(a: IdleRule, b: IdleRule): IdleRule {
  const max =
    a.maxProcesses === undefined || b.maxProcesses === undefined
      ? a.maxProcesses === 1 || b.maxProcesses === 1
        ? 1
        : undefined
      : Math.min(a.maxProcesses, b.maxProcesses);
  const sweeps = laterSweeps(a.sweeps, b.sweeps);
  return {
    stopIdle: a.stopIdle && b.stopIdle,
    idleAfterSeconds: Math.max(a.idleAfterSeconds, b.idleAfterSeconds),
    ...(max !== undefined ? { maxProcesses: max } : {}),
    idleAfterOwnedSeconds: longer(a.idleAfterOwnedSeconds, b.idleAfterOwnedSeconds),
    stoppedRetentionSeconds: Math.max(a.stoppedRetentionSeconds, b.stoppedRetentionSeconds),
    ...(sweeps ? { sweeps } : {}),
  };
}

/** Every label the profiles' sandboxes carry, with the later rule of the profiles it belongs to (those read). */
export function labelIdleRules(profiles: readonly ProfileRead[], inputs: RunInputs, where: RuleWhere): Record<string, IdleRule> {
  const out: Record<string, IdleRule> = {};
  for (const p of profiles) {
    const rule = profileIdleRule(inputs, p, where);
    if (!rule) continue;
    for (const label of labelsOf(p)) out[label] = Object.hasOwn(out, label) ? laterRule(out[label]!, rule) : rule;
  }
  return out;
}

/** A run over several homes: each home's own label rules, under `<label>\u0000<home>` (`core/policy.ts` `tiedLabels`). */
export interface TiedTables {
  thresholdByProfile: Record<string, number>;
  held: Record<string, Held>;
  idle: Record<string, IdleRule>;
  known: string[];
}

/** Each home's rules of its own labels (its profiles alone), for the containers tied to it by their mounts. */
export function tiedTables(
  homes: ReadonlyArray<{ root: string }>,
  reads: readonly ProfileRead[],
  inputs: RunInputs,
  where: RuleWhere & { janitorReaps: boolean },
): TiedTables {
  const out: TiedTables = { thresholdByProfile: {}, held: {}, idle: {}, known: [] };
  for (const { root } of homes) {
    const own = reads.filter((p) => p.home === root || p.home.startsWith(`${root}/`));
    const rules = labelRules(own, { janitorReaps: where.janitorReaps });
    const idle = labelIdleRules(own, inputs, where);
    for (const label of Object.keys(rules.profilesByLabel)) {
      const key = `${label}${TIED}${root}`;
      out.known.push(key);
      if (Object.hasOwn(rules.thresholdByLabel, label)) out.thresholdByProfile[key] = rules.thresholdByLabel[label]!;
      if (Object.hasOwn(rules.held, label)) out.held[key] = rules.held[label]!;
      if (Object.hasOwn(idle, label)) out.idle[key] = idle[label]!;
    }
  }
  return out;
}
