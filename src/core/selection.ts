import { AGENT_LABEL, AGENT_LABEL_VALUE, PROFILE_LABEL } from '../defaults.js';
import { ValueError } from './parse-args.js';

/** `KEY` (label present) or `KEY=VALUE`. */
export interface LabelMatcher {
  key: string;
  value?: string;
}

/** Which containers are ours. */
export interface Selection {
  /** All must match (default `hermes-agent=1`). */
  selectors: LabelMatcher[];
  /** The label that holds the profile (default `hermes-profile`). */
  profileLabel: string;
  /** Profile to select, or null for every profile. */
  profile: string | null;
  /**
   * The profile label's values that make up `profile`'s selection when they are not just `profile`: its container
   * identities as hermes computes them (`hermes/identity.ts`: a profile naming a shared key is selected by that key's
   * identity). Absent: `[profile]`.
   */
  profileValues?: string[];
  /** A container matching any of these is kept (`excluded`). */
  exclude: LabelMatcher[];
}

/** The profile label values a selection takes, or null for every one. */
export function profileValuesOf(sel: Pick<Selection, 'profile' | 'profileValues'>): string[] | null {
  if (sel.profile === null) return null;
  return sel.profileValues?.length ? sel.profileValues : [sel.profile];
}

export function defaultSelection(profile: string | null): Selection {
  return {
    selectors: [{ key: AGENT_LABEL, value: AGENT_LABEL_VALUE }],
    profileLabel: PROFILE_LABEL,
    profile,
    exclude: [],
  };
}

/** A selection that takes hermes' own containers (its `hermes-agent` label): hermes' siblings need their margin. */
export function isHermesSelection(sel: Selection): boolean {
  return sel.selectors.some((m) => m.key === AGENT_LABEL);
}

/** How a caller describes a selection (the flags `--label`, `--exclude-label`, `--profile-label`). */
export interface SelectionSpec {
  /** Profile to select, or null for every profile. */
  profile: string | null;
  labels?: string[] | undefined;
  excludeLabels?: string[] | undefined;
  profileLabel?: string | undefined;
}

/** Builds a selection from its description; throws a one-line ValueError naming the bad value. */
export function selectionFrom(spec: SelectionSpec): Selection {
  const sel = defaultSelection(spec.profile);
  if (spec.labels?.length) sel.selectors = spec.labels.map((l) => parseLabelMatcher(l, '--label'));
  if (spec.excludeLabels?.length) sel.exclude = spec.excludeLabels.map((l) => parseLabelMatcher(l, '--exclude-label'));
  if (spec.profileLabel !== undefined) {
    if (!spec.profileLabel || /\s|=/.test(spec.profileLabel)) {
      throw new ValueError(`--profile-label must be a label key without '=' or spaces, got '${spec.profileLabel}'`);
    }
    sel.profileLabel = spec.profileLabel;
  }
  return sel;
}

/** Parses `KEY[=VALUE]`; keys are non-empty and contain no whitespace. */
export function parseLabelMatcher(raw: string, what = 'label'): LabelMatcher {
  const eq = raw.indexOf('=');
  const key = eq < 0 ? raw : raw.slice(0, eq);
  if (!key || /\s/.test(key)) throw new ValueError(`${what} must be KEY or KEY=VALUE with a non-empty key, got '${raw}'`);
  return eq < 0 ? { key } : { key, value: raw.slice(eq + 1) };
}

export function formatMatcher(m: LabelMatcher): string {
  return m.value === undefined ? m.key : `${m.key}=${m.value}`;
}

function matchOne(m: LabelMatcher, labels: Record<string, string>): boolean {
  if (!Object.hasOwn(labels, m.key)) return false;
  return m.value === undefined || labels[m.key] === m.value;
}

/**
 * The engine-side `label` filters for a selection (the engine ANDs them). A profile selected by several label values
 * is filtered here by the other selectors only, and by its values client-side (`isSelected`).
 */
export function engineLabelFilters(sel: Selection): string[] {
  const out = sel.selectors.map(formatMatcher);
  const values = profileValuesOf(sel);
  if (values?.length === 1) out.push(`${sel.profileLabel}=${values[0]}`);
  return out;
}

/** Client-side re-check: some engines ignore label filters. */
export function isSelected(sel: Selection, labels: Record<string, string>): boolean {
  if (!sel.selectors.every((m) => matchOne(m, labels))) return false;
  const values = profileValuesOf(sel);
  return values === null || (Object.hasOwn(labels, sel.profileLabel) && values.includes(labels[sel.profileLabel]!));
}

export function isExcluded(sel: Selection, labels: Record<string, string>): boolean {
  return sel.exclude.some((m) => matchOne(m, labels));
}
