import { KILL_MARGIN_SECONDS, MIN_LIFETIME_SECONDS, PROFILE_LABEL } from '../defaults.js';
import { parseFinishedAt } from './finished-at.js';

export type KeepReason =
  | 'too-recent'
  | 'zero-finished-at'
  | 'unparseable-finished-at'
  | 'future-finished-at'
  | 'running'
  | 'gone'
  | 'excluded'
  /** Exited because the janitor stopped it (idle), within `--stopped-retention`: kept so that hermes can start it again. */
  | 'stopped-retained'
  /** A profile it belongs to is refused by hermes (a file that does not parse): nothing is removed or stopped for it. */
  | 'settings-refused'
  /** A profile it belongs to has hermes' orphan reaper off: the janitor leaves it (`HERMES_JANITOR_REAPER` overrides). */
  | 'reaper-off'
  /** A run over several homes (`--homes`, `--all-homes`): no home of the run has its profile; never judged by defaults. */
  | 'unknown-profile';

/**
 * The rule a container falls under: `exited` (aged by FinishedAt), `never-started` (status `created` with a zero
 * StartedAt, aged by its Created time), `idle` (a running sandbox, stopped after an idleness proof), or null.
 */
export type Rule = 'exited' | 'never-started' | 'idle';

export type Verdict =
  | { verdict: 'reap'; ageSeconds: number; rule: Rule }
  | { verdict: 'keep'; reason: KeepReason; ageSeconds: number | null; rule: Rule | null };

/** Threshold = 2 × max(lifetime, 60) seconds. */
export function thresholdSeconds(lifetimeSeconds: number): number {
  return 2 * Math.max(lifetimeSeconds, MIN_LIFETIME_SECONDS);
}

/**
 * The threshold a container is judged by: its profile's (`byProfile`, keyed by the `hermes-profile` label's value:
 * `--all-profiles` resolves each profile's lifetime from its own home), else the run's.
 */
export function thresholdFor(
  req: { thresholdSeconds: number; thresholdByProfile?: Readonly<Record<string, number>> | undefined },
  labels: Readonly<Record<string, string>>,
): number {
  const profile = labels[PROFILE_LABEL];
  const own = profile !== undefined && req.thresholdByProfile && Object.hasOwn(req.thresholdByProfile, profile) ? req.thresholdByProfile[profile] : undefined;
  return own ?? req.thresholdSeconds;
}

/**
 * Why nothing is removed or stopped for a container: a profile it belongs to is held (`SweepRequest.held`), or no home of
 * a run over several has its profile (`SweepRequest.knownProfiles`), or null.
 */
export function heldReason(
  req: { held?: Readonly<Record<string, { reason: 'settings-refused' | 'reaper-off' }>> | undefined; knownProfiles?: ReadonlySet<string> | undefined },
  labels: Readonly<Record<string, string>>,
): 'settings-refused' | 'reaper-off' | 'unknown-profile' | null {
  const profile = labels[PROFILE_LABEL];
  if (req.knownProfiles && (profile === undefined || !req.knownProfiles.has(profile))) return 'unknown-profile';
  return profile !== undefined && req.held && Object.hasOwn(req.held, profile) ? req.held[profile]!.reason : null;
}

/**
 * The grace a stop gives before the engine's SIGKILL: `stopTimeoutSeconds`, cut to the whole seconds the run has
 * left before its deadline (`deadlineMs`, none: not cut) minus `KILL_MARGIN_SECONDS` for the kill and its answer;
 * never below 0 (a stop that late is an immediate kill).
 */
export function stopGrace(stopTimeoutSeconds: number, deadlineMs: number | undefined, nowMs: number): number {
  if (deadlineMs === undefined) return stopTimeoutSeconds;
  const left = Math.floor((deadlineMs - nowMs) / 1000) - KILL_MARGIN_SECONDS;
  return Math.max(0, Math.min(stopTimeoutSeconds, left));
}

/** What the policy needs to know of one container. */
export interface VerdictInput {
  running: boolean;
  finishedAt: string;
  excluded?: boolean;
  /** `State.Status`; `created` with a zero `startedAt` selects the never-started rule. */
  status?: string;
  /** `State.StartedAt`, raw. */
  startedAt?: string;
  /** The container's `Created` time, raw (RFC 3339). */
  created?: string;
}

/** Status `created` and a zero (or absent) StartedAt: the container never ran. */
export function neverStarted(input: Pick<VerdictInput, 'status' | 'startedAt' | 'running'>): boolean {
  if (input.running || input.status?.toLowerCase() !== 'created') return false;
  return input.startedAt === undefined || input.startedAt === '' || parseFinishedAt(input.startedAt).kind === 'zero';
}

/** The rule for a container from its state. */
export function ruleOf(input: Pick<VerdictInput, 'status' | 'startedAt' | 'running'>): Rule | null {
  if (neverStarted(input)) return 'never-started';
  if (input.running) return input.status?.toLowerCase() === 'running' ? 'idle' : null;
  return 'exited';
}

/**
 * The reap verdict for one container as of `asOf`. Never reaps an excluded, running, zero, unparseable,
 * future or too-young container; an age equal to the threshold is reaped. Exact to the nanosecond.
 * A never-started container is aged by its Created time instead of FinishedAt.
 */
export function judge(input: VerdictInput, asOf: Date, threshold: number): Verdict {
  const rule = ruleOf(input);
  const v = judgeAge(rule === 'never-started' ? { ...input, finishedAt: input.created ?? '' } : input, asOf, threshold);
  return v.verdict === 'reap' ? { ...v, rule: rule ?? 'exited' } : { ...v, rule };
}

type AgeVerdict = { verdict: 'reap'; ageSeconds: number } | { verdict: 'keep'; reason: KeepReason; ageSeconds: number | null };

function judgeAge(input: VerdictInput, asOf: Date, threshold: number): AgeVerdict {
  const parsed = parseFinishedAt(input.finishedAt);
  let ageSeconds: number | null = null;
  let ageNs: bigint | null = null;
  if (parsed.kind === 'time') {
    ageNs = BigInt(asOf.getTime() - parsed.epochMs) * 1_000_000n - BigInt(parsed.subMsNanos);
    ageSeconds = Number(ageNs) / 1e9;
  }
  if (input.excluded) return { verdict: 'keep', reason: 'excluded', ageSeconds };
  if (input.running) return { verdict: 'keep', reason: 'running', ageSeconds };
  if (parsed.kind === 'zero') return { verdict: 'keep', reason: 'zero-finished-at', ageSeconds };
  if (parsed.kind === 'invalid' || ageNs === null || ageSeconds === null) {
    return { verdict: 'keep', reason: 'unparseable-finished-at', ageSeconds };
  }
  if (ageNs < 0n) return { verdict: 'keep', reason: 'future-finished-at', ageSeconds };
  if (ageNs < BigInt(threshold) * 1_000_000_000n) return { verdict: 'keep', reason: 'too-recent', ageSeconds };
  return { verdict: 'reap', ageSeconds };
}

/** Between a label and the home a container is tied to, in the rule tables' keys (never in a label value). */
export const TIED = '\u0000';

/** A sandbox root's `docker` directory of one home of a run over several (`SweepRequest.tiedRoots`). */
export interface TiedRoot {
  dir: string;
  /** The home's key in the rule tables (`<label>\u0000<home>`). */
  home: string;
}

/**
 * The labels a container's rules are looked up by: its own, unless a run over several homes ties it to one home, its
 * bind mounts all under that home's sandbox roots (hermes binds `<sandbox root>/docker/<task>/...`) and that home has
 * its profile label: then its profile label is that home's key (`<label>\u0000<home>`), judged by that home alone.
 */
export function tiedLabels(
  req: { tiedRoots?: readonly TiedRoot[] | undefined; knownProfiles?: ReadonlySet<string> | undefined },
  d: { labels: Readonly<Record<string, string>>; binds?: readonly string[] | undefined },
): Readonly<Record<string, string>> {
  const label = d.labels[PROFILE_LABEL];
  if (!req.tiedRoots?.length || !d.binds?.length || label === undefined) return d.labels;
  const homes = new Set<string>();
  for (const b of d.binds) {
    const under = req.tiedRoots.filter((r) => b === r.dir || b.startsWith(`${r.dir}/`)).sort((x, y) => y.dir.length - x.dir.length)[0];
    if (under) homes.add(under.home);
  }
  const key = homes.size === 1 ? `${label}${TIED}${[...homes][0]}` : null;
  return key !== null && req.knownProfiles?.has(key) ? { ...d.labels, [PROFILE_LABEL]: key } : d.labels;
}
