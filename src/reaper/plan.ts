import type { LabelMatcher, Selection } from '../core/selection.js';
import { formatMatcher, parseLabelMatcher } from '../core/selection.js';
import { ValueError } from '../core/parse-args.js';

/** `reap --dry-run --plan-out FILE` writes this; `reap --plan FILE` applies it. */
export interface ReapPlan {
  version: 1;
  createdAt: string;
  /** The instant the dry run judged ages at. */
  asOf: string;
  thresholdSeconds: number;
  lifetimeSeconds: number;
  /** Engines, as given or resolved. */
  hosts: string[];
  selection: {
    labels: string[];
    profileLabel: string;
    profile: string | null;
    /** The profile's label values when they are not just `profile` (its container identities). */
    profileValues?: string[];
    excludeLabels: string[];
  };
  /** The exact containers to remove. */
  containers: Array<{ host: string; id: string; name: string }>;
  /** Running sandboxes the dry run found idle: stopped at apply only if their idleness is proved again then. */
  stops?: Array<{ host: string; id: string; name: string }>;
  /** The hermes home of the dry run (its idle observations): used at apply unless --home or --profile is given. */
  home?: string;
  /** The idle rule of the dry run (absent in older plans: taken from flags and defaults). */
  stopIdle?: boolean;
  idleAfterSeconds?: number;
  /** `--idle-max-processes` of the dry run (absent: the rule's own, its init and its command). */
  idleMaxProcesses?: number;
  keepVolumes?: boolean;
}

export function buildPlan(args: {
  now: Date;
  asOf: Date;
  thresholdSeconds: number;
  lifetimeSeconds: number;
  hosts: string[];
  selection: Selection;
  containers: Array<{ host: string; id: string; name: string }>;
  stops?: Array<{ host: string; id: string; name: string }>;
  home?: string;
  stopIdle?: boolean;
  idleAfterSeconds?: number;
  idleMaxProcesses?: number;
  keepVolumes?: boolean;
}): ReapPlan {
  return {
    version: 1,
    createdAt: args.now.toISOString(),
    asOf: args.asOf.toISOString(),
    thresholdSeconds: args.thresholdSeconds,
    lifetimeSeconds: args.lifetimeSeconds,
    hosts: args.hosts,
    selection: {
      labels: args.selection.selectors.map(formatMatcher),
      profileLabel: args.selection.profileLabel,
      profile: args.selection.profile,
      ...(args.selection.profileValues ? { profileValues: args.selection.profileValues } : {}),
      excludeLabels: args.selection.exclude.map(formatMatcher),
    },
    containers: args.containers.map(({ host, id, name }) => ({ host, id, name })),
    stops: (args.stops ?? []).map(({ host, id, name }) => ({ host, id, name })),
    ...(args.home !== undefined ? { home: args.home } : {}),
    ...(args.stopIdle !== undefined ? { stopIdle: args.stopIdle } : {}),
    ...(args.idleAfterSeconds !== undefined ? { idleAfterSeconds: args.idleAfterSeconds } : {}),
    ...(args.idleMaxProcesses !== undefined ? { idleMaxProcesses: args.idleMaxProcesses } : {}),
    ...(args.keepVolumes !== undefined ? { keepVolumes: args.keepVolumes } : {}),
  };
}

const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** Validates a plan document; throws a one-line ValueError naming what is wrong. */
export function parsePlan(value: unknown, file: string): ReapPlan {
  const bad = (what: string) => new ValueError(`${file} is not a reap plan (${what}): create one with 'reap --dry-run --plan-out ${file}'`);
  const p = value as Partial<ReapPlan> | null;
  if (!p || typeof p !== 'object') throw bad('not a JSON object');
  if (p.version !== 1) throw bad('unsupported or missing "version"');
  if (!isStrings(p.hosts) || p.hosts.length === 0) throw bad('"hosts" must list at least one engine');
  if (typeof p.thresholdSeconds !== 'number' || !(p.thresholdSeconds >= 120)) throw bad('"thresholdSeconds" must be a number >= 120');
  if (typeof p.lifetimeSeconds !== 'number' || !Number.isInteger(p.lifetimeSeconds) || p.lifetimeSeconds < 0)
    throw bad('"lifetimeSeconds" must be a whole number');
  const s = p.selection;
  if (
    !s ||
    !isStrings(s.labels) ||
    !isStrings(s.excludeLabels) ||
    typeof s.profileLabel !== 'string' ||
    !(s.profile === null || typeof s.profile === 'string')
  ) {
    throw bad('"selection" is malformed');
  }
  if (s.profileValues !== undefined && !(isStrings(s.profileValues) && s.profileValues.length > 0))
    throw bad('"selection.profileValues" must list label values');
  if (!Array.isArray(p.containers) || !p.containers.every((c) => c && typeof c.id === 'string' && typeof c.host === 'string' && typeof c.name === 'string')) {
    throw bad('"containers" must be a list of {host, id, name}');
  }
  if (
    p.stops !== undefined &&
    !(Array.isArray(p.stops) && p.stops.every((c) => c && typeof c.id === 'string' && typeof c.host === 'string' && typeof c.name === 'string'))
  ) {
    throw bad('"stops" must be a list of {host, id, name}');
  }
  if (p.stopIdle !== undefined && typeof p.stopIdle !== 'boolean') throw bad('"stopIdle" must be true or false');
  if (p.home !== undefined && (typeof p.home !== 'string' || !p.home.startsWith('/'))) throw bad('"home" must be an absolute path');
  if (p.keepVolumes !== undefined && typeof p.keepVolumes !== 'boolean') throw bad('"keepVolumes" must be true or false');
  if (p.idleAfterSeconds !== undefined && !(typeof p.idleAfterSeconds === 'number' && p.idleAfterSeconds > 0))
    throw bad('"idleAfterSeconds" must be a number > 0');
  if (p.idleMaxProcesses !== undefined && !(Number.isSafeInteger(p.idleMaxProcesses) && p.idleMaxProcesses >= 1))
    throw bad('"idleMaxProcesses" must be a whole number >= 1');
  for (const c of [...p.containers, ...(p.stops ?? [])])
    if (!p.hosts.includes(c.host)) throw bad(`container ${c.id.slice(0, 12)} names an engine not in "hosts"`);
  return p as ReapPlan;
}

export function planSelection(plan: ReapPlan): Selection {
  const parse = (l: string): LabelMatcher => parseLabelMatcher(l);
  return {
    selectors: plan.selection.labels.map(parse),
    profileLabel: plan.selection.profileLabel,
    profile: plan.selection.profile,
    ...(plan.selection.profileValues ? { profileValues: plan.selection.profileValues } : {}),
    exclude: plan.selection.excludeLabels.map(parse),
  };
}

/** Which parts of the selection were given again (a part left out is taken from the plan). All when omitted. */
export interface SelectionGiven {
  labels: boolean;
  exclude: boolean;
  profileLabel: boolean;
  profile: boolean;
}

/**
 * Flags given again with `--plan` must agree with it: the disagreements, as one-line descriptions. Only what is
 * given is compared (a flag not given again is taken from the plan).
 */
export function planDisagreements(
  plan: ReapPlan,
  given: {
    hosts?: string[];
    selection?: Selection;
    selectionGiven?: SelectionGiven;
    thresholdSeconds?: number;
    idleAfterSeconds?: number;
    stopIdle?: boolean;
    idleMaxProcesses?: number;
  },
): string[] {
  const out: string[] = [];
  const sameSet = (a: string[], b: string[]) => a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
  if (given.hosts && !sameSet(given.hosts, plan.hosts)) out.push(`engines ${given.hosts.join(', ')} (plan: ${plan.hosts.join(', ')})`);
  if (given.selection) {
    const sel = given.selection;
    const part = given.selectionGiven ?? { labels: true, exclude: true, profileLabel: true, profile: true };
    const labels = sel.selectors.map(formatMatcher);
    if (part.labels && !sameSet(labels, plan.selection.labels)) out.push(`labels ${labels.join(', ')} (plan: ${plan.selection.labels.join(', ')})`);
    if (part.profileLabel && sel.profileLabel !== plan.selection.profileLabel) {
      out.push(`profile label ${sel.profileLabel} (plan: ${plan.selection.profileLabel})`);
    }
    if (part.profile && sel.profile !== plan.selection.profile) out.push(`profile ${sel.profile ?? 'all'} (plan: ${plan.selection.profile ?? 'all'})`);
    const ex = sel.exclude.map(formatMatcher);
    if (part.exclude && !sameSet(ex, plan.selection.excludeLabels)) {
      out.push(`exclusions ${ex.join(', ') || 'none'} (plan: ${plan.selection.excludeLabels.join(', ') || 'none'})`);
    }
  }
  if (given.idleAfterSeconds !== undefined && plan.idleAfterSeconds !== undefined && given.idleAfterSeconds !== plan.idleAfterSeconds) {
    out.push(`idle threshold ${given.idleAfterSeconds} s (plan: ${plan.idleAfterSeconds} s)`);
  }
  if (given.idleMaxProcesses !== undefined && plan.idleMaxProcesses !== undefined && given.idleMaxProcesses !== plan.idleMaxProcesses) {
    out.push(`--idle-max-processes ${given.idleMaxProcesses} (plan: ${plan.idleMaxProcesses})`);
  }
  if (given.stopIdle !== undefined && plan.stopIdle !== undefined && given.stopIdle !== plan.stopIdle) {
    out.push(`${given.stopIdle ? '--stop-idle' : '--no-stop-idle'} (plan: stop idle ${plan.stopIdle ? 'on' : 'off'})`);
  }
  if (given.thresholdSeconds !== undefined && given.thresholdSeconds !== plan.thresholdSeconds) {
    out.push(`threshold ${given.thresholdSeconds} s (plan: ${plan.thresholdSeconds} s)`);
  }
  return out;
}
