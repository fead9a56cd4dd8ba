/**
 * `status`, the pure part: container counts by verdict and rule from a `list` sweep, and what needs attention.
 * Verdicts and rules are taken as the sweep reports them, so new ones (stop, idle, never-started) are counted too.
 */
import { ago, agoSeconds } from './ages.js';
import type { IdleKeepReason } from './idle.js';
import type { KeepReason, Rule } from './policy.js';

/**
 * What status needs of one `list` entry (`rule`, `idleSeconds` are optional: older sweeps have none; `volumes`: the
 * anonymous ones it holds, absent when none).
 */
export interface StatusEntry {
  id: string;
  name: string;
  host: string;
  verdict: 'reap' | 'stop' | 'keep';
  /** Why it is kept; `expired` for one the reaper would remove, `idle` for one it would stop. */
  reason: KeepReason | 'expired' | 'idle';
  rule?: Rule | null;
  ageSeconds: number | null;
  idleSeconds?: number | null;
  /** Running entries: why the idle rule keeps it (`in-use`, `observing`, ...). */
  idleReason?: IdleKeepReason;
  volumes?: readonly string[];
}

export interface OrphanRef {
  id: string;
  name: string;
  host: string;
  verdict: string;
  rule: string;
  ageSeconds: number;
}

export interface ContainerCounts {
  total: number;
  /** Count per verdict (`reap`, `stop`, `keep`, ...). */
  byVerdict: Record<string, number>;
  /** Containers the reaper would remove, per rule (`exited` when the sweep names none). */
  wouldRemove: { total: number; byRule: Record<string, number> };
  /** Containers the reaper would stop, per rule. */
  wouldStop: { total: number; byRule: Record<string, number> };
  /** Containers kept, per reason. */
  kept: { total: number; byReason: Record<string, number> };
  /** Running sandboxes kept because they hold a process of their own (`idleReason: "in-use"`): never stopped. */
  inUse: number;
  /** Containers past their threshold (any verdict but keep). */
  orphans: number;
  oldestOrphan: OrphanRef | null;
  /** Anonymous volumes held by the listed containers, and by the orphans among them (freed by a reap). */
  anonymousVolumes: { total: number; containers: number; heldByOrphans: number };
}

const bump = (m: Record<string, number>, k: string) => {
  m[k] = (m[k] ?? 0) + 1;
};

/** The rule an entry was judged by; sweeps that name none judge exited containers only. */
export const ruleOf = (e: { rule?: string | null }): string => e.rule ?? 'exited';

/** Counts for `status`. */
export function countContainers(entries: readonly StatusEntry[]): ContainerCounts {
  const out: ContainerCounts = {
    total: entries.length,
    byVerdict: {},
    wouldRemove: { total: 0, byRule: {} },
    wouldStop: { total: 0, byRule: {} },
    kept: { total: 0, byReason: {} },
    inUse: 0,
    orphans: 0,
    oldestOrphan: null,
    anonymousVolumes: { total: 0, containers: 0, heldByOrphans: 0 },
  };
  for (const e of entries) {
    bump(out.byVerdict, e.verdict);
    const vols = e.volumes?.length ?? 0;
    out.anonymousVolumes.total += vols;
    if (vols > 0) out.anonymousVolumes.containers++;
    if (e.verdict === 'keep') {
      out.kept.total++;
      bump(out.kept.byReason, e.reason);
      if (e.idleReason === 'in-use') out.inUse++;
      continue;
    }
    out.orphans++;
    out.anonymousVolumes.heldByOrphans += vols;
    const group = e.verdict === 'stop' ? out.wouldStop : out.wouldRemove;
    group.total++;
    bump(group.byRule, ruleOf(e));
    const age = e.ageSeconds ?? e.idleSeconds ?? null;
    if (age !== null && (out.oldestOrphan === null || age > out.oldestOrphan.ageSeconds)) {
      out.oldestOrphan = { id: e.id, name: e.name, host: e.host, verdict: e.verdict, rule: ruleOf(e), ageSeconds: age };
    }
  }
  return out;
}

/** The facts `attention` judges, gathered by the status adapter. */
export interface AttentionInput {
  unreachableEngines: string[];
  /** Those of `unreachableEngines` that answered, but not as a Docker engine does. */
  notEngines?: string[];
  orphans: number;
  oldestOrphanAgeSeconds: number | null;
  /** The instant the ages are as of. */
  asOf: Date;
  inspectFailures: number;
  timedOut: boolean;
  staleLocks: Array<{ path: string; pid: number | null }>;
  restartGuard: { tripped: boolean; count: number; max: number; windowSeconds: number } | null;
  suspendedSessions: number;
  stopHook: { stalled: boolean; blocks: number; maxBlocks: number; problem: string | null } | null;
  /** tool-loop sessions one step from a deny or block. */
  toolLoopLooping: string[];
  /** What the passes' parts of the report say needs attention (a sandbox root that cannot be used, a refused temp directory, ...), one line each. */
  passProblems?: readonly string[];
  /** The janitor's view of processes is partial: its pid namespace is not the host's (the line saying so). */
  pidNamespace?: string | null;
  /**
   * Paths refused this run that no pass says (root over another user's home: a symlinked or FIFO state file, ...):
   * each one line naming it and why.
   */
  refused?: readonly string[];
  /** Mistakes the hooks failed open on (core/hook-errors.ts), still remembered; their ages as of `now`. */
  hookErrors?: ReadonlyArray<{ hook: string; what: string; count: number; lastSeen: string }>;
  /** The instant of the report (default `asOf`). */
  now?: Date;
  /**
   * The commands to advise, with the selection and engine of the run that advises them, quoted for a shell (default:
   * the bare commands).
   */
  commands?: { reap: string; restartGuardClear: string };
}

/** One line per thing that needs a user's attention; empty when all is well. */
export function attention(a: AttentionInput): string[] {
  const out: string[] = [];
  for (const h of a.unreachableEngines) {
    out.push(
      a.notEngines?.includes(h) ? `${h} is not a Docker engine: point --host, --context or DOCKER_HOST at the engine's API` : `engine ${h} is unreachable`,
    );
  }
  if (a.timedOut) out.push('the engine did not answer within --timeout: the container counts are incomplete');
  if (a.orphans > 0) {
    const age = a.oldestOrphanAgeSeconds === null ? '' : ` (the oldest finished ${agoSeconds(a.oldestOrphanAgeSeconds, a.asOf)})`;
    out.push(`${a.orphans} container(s) past the threshold${age}: run ${a.commands?.reap ?? 'hermes-janitor reap'}`);
  }
  if (a.inspectFailures > 0) out.push(`${a.inspectFailures} container(s) could not be inspected`);
  for (const l of a.staleLocks) out.push(`stale reap lock ${l.path} (pid ${l.pid ?? '?'} is gone): the next reap takes it over`);
  if (a.restartGuard?.tripped) {
    out.push(
      `restart-guard tripped: ${a.restartGuard.count} boot(s) in ${a.restartGuard.windowSeconds} s (max ${a.restartGuard.max}); ` +
        `once the cause is fixed, run ${a.commands?.restartGuardClear ?? 'hermes-janitor restart-guard clear'}`,
    );
  }
  if (a.suspendedSessions > 0) out.push(`stuck-sessions: ${a.suspendedSessions} session(s) will be suspended at the next gateway start`);
  if (a.stopHook?.problem) out.push(`stop-hook marker unusable: ${a.stopHook.problem}`);
  else if (a.stopHook?.stalled) {
    out.push(`stop-hook: ${a.stopHook.blocks} consecutive block(s) without progress (cap ${a.stopHook.maxBlocks}): the run is stalled`);
  }
  out.push(...(a.passProblems ?? []));
  if (a.pidNamespace) out.push(a.pidNamespace);
  for (const r of a.refused ?? []) out.push(`refused: ${r}`);
  for (const e of a.hookErrors ?? []) {
    out.push(`${e.hook}: ${e.what} (seen ${e.count} time${e.count === 1 ? '' : 's'}, last ${ago(Date.parse(e.lastSeen), a.now ?? a.asOf)})`);
  }
  if (a.toolLoopLooping.length) {
    out.push(
      `tool-loop: ${a.toolLoopLooping.length} session(s) looping (the next identical call or failure trips the breaker): ${a.toolLoopLooping.join(', ')}`,
    );
  }
  return out;
}

/** 3 when an engine is unreachable (or timed out), else 1 when anything needs attention, else 0. */
export function statusExitCode(a: AttentionInput, lines: readonly string[]): 0 | 1 | 3 {
  if (a.unreachableEngines.length > 0 || a.timedOut) return 3;
  return lines.length > 0 ? 1 : 0;
}
