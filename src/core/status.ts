/**
 * `status`, the pure part: container counts by verdict and rule from a `list` sweep, and what needs attention.
 * Verdicts and rules are taken as the sweep reports them, so new ones (stop, idle, never-started) are counted too.
 */
import { ago, agoSeconds, spanSeconds } from './ages.js';
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
  /** The oldest of them (a running sandbox's age is how long it has been idle: `rule` `idle`). */
  oldestOrphan: OrphanRef | null;
  /** The oldest of those the reaper would remove (exited, never started), and the longest idle one it would stop. */
  oldestRemovable: OrphanRef | null;
  longestIdle: OrphanRef | null;
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
    oldestRemovable: null,
    longestIdle: null,
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
    // A running sandbox has not finished: its age is how long it has been idle.
    const age = e.verdict === 'stop' ? (e.idleSeconds ?? null) : (e.ageSeconds ?? e.idleSeconds ?? null);
    if (age === null) continue;
    const ref = { id: e.id, name: e.name, host: e.host, verdict: e.verdict, rule: ruleOf(e), ageSeconds: age };
    if (out.oldestOrphan === null || age > out.oldestOrphan.ageSeconds) out.oldestOrphan = ref;
    if (e.verdict === 'stop') {
      if (out.longestIdle === null || age > out.longestIdle.ageSeconds) out.longestIdle = ref;
    } else if (out.oldestRemovable === null || age > out.oldestRemovable.ageSeconds) out.oldestRemovable = ref;
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
  /**
   * Of `orphans`: those the reaper would remove (exited, never started; the oldest's age and rule) and the running
   * sandboxes it would stop (the longest idle): a running sandbox has not finished. Absent: `orphans` said as one.
   */
  removable?: { count: number; oldest: { ageSeconds: number; rule: string } | null };
  idleSandboxes?: { count: number; longestIdleSeconds: number | null };
  /** Engines whose last completed sweep is older than twice its schedule: one line each (`janitor-health.ts`). */
  staleSweeps?: readonly string[];
  /** The home's `watch`, when it is recorded but not running or not healthy (`janitor-health.ts` `watchProblem`). */
  watch?: { kind: 'not-running' | 'not-healthy'; line: string } | null;
}

/**
 * One thing that needs attention: its line (with the command that fixes it), a few words for the verdict, and how bad
 * it is (0 the worst): the janitor cut off from an engine, then a janitor that is not running (`watch` down, no recent
 * sweep), then tripped breakers (an agent is held back), then what piles up, then what the janitor may not see or touch,
 * then the rest.
 */
export interface AttentionItem {
  rank: number;
  title: string;
  line: string;
}

const RANK = { engine: 0, watch: 1, stale: 2, tripped: 3, orphans: 4, blind: 5, sessions: 6, other: 7 } as const;

/** When a container the reaper would remove was last alive: "finished 3 hours ago", "created 3 hours ago, never started". */
function removableAge(oldest: { ageSeconds: number; rule: string }, asOf: Date): string {
  const when = agoSeconds(oldest.ageSeconds, asOf);
  return oldest.rule === 'never-started' ? `created ${when}, never started` : `finished ${when}`;
}

/** The containers past their threshold: those to remove, and the running sandboxes idle past --idle-after (never "finished"). */
function containerItems(a: AttentionInput, reap: string): AttentionItem[] {
  const out: AttentionItem[] = [];
  if (!a.removable || !a.idleSandboxes) {
    if (a.orphans === 0) return out;
    const age = a.oldestOrphanAgeSeconds === null ? '' : ` (the oldest ${agoSeconds(a.oldestOrphanAgeSeconds, a.asOf)})`;
    return [
      { rank: RANK.orphans, title: `${a.orphans} container(s) past the threshold`, line: `${a.orphans} container(s) past the threshold${age}: run ${reap}` },
    ];
  }
  const { removable: r, idleSandboxes: i } = a;
  if (r.count > 0) {
    const age = r.oldest ? ` (the oldest ${removableAge(r.oldest, a.asOf)})` : '';
    out.push({
      rank: RANK.orphans,
      title: `${r.count} container(s) past the threshold`,
      line: `${r.count} container(s) past the threshold${age}: run ${reap}`,
    });
  }
  if (i.count > 0) {
    const idle = i.longestIdleSeconds === null ? '' : ` (the longest idle for ${spanSeconds(i.longestIdleSeconds, a.asOf)})`;
    out.push({
      rank: RANK.orphans,
      title: `${i.count} running sandbox(es) idle past --idle-after`,
      line: `${i.count} running sandbox(es) idle past --idle-after${idle}, still running: run ${reap} (it stops them)`,
    });
  }
  return out;
}

/** The breakers' and hooks' items. */
function breakerItems(a: AttentionInput): AttentionItem[] {
  const out: AttentionItem[] = [];
  if (a.restartGuard?.tripped) {
    out.push({
      rank: RANK.tripped,
      title: 'restart-guard tripped',
      line:
        `restart-guard tripped: ${a.restartGuard.count} boot(s) in ${a.restartGuard.windowSeconds} s (max ${a.restartGuard.max}); ` +
        `once the cause is fixed, run ${a.commands?.restartGuardClear ?? 'hermes-janitor restart-guard clear'}`,
    });
  }
  if (a.suspendedSessions > 0) {
    out.push({
      rank: RANK.sessions,
      title: 'stuck sessions',
      line: `stuck-sessions: ${a.suspendedSessions} session(s) will be suspended at the next gateway start`,
    });
  }
  if (a.stopHook?.problem) out.push({ rank: RANK.tripped, title: 'stop-hook marker unusable', line: `stop-hook marker unusable: ${a.stopHook.problem}` });
  else if (a.stopHook?.stalled) {
    out.push({
      rank: RANK.tripped,
      title: 'stop-hook stalled',
      line: `stop-hook: ${a.stopHook.blocks} consecutive block(s) without progress (cap ${a.stopHook.maxBlocks}): the run is stalled`,
    });
  }
  for (const e of a.hookErrors ?? []) {
    out.push({
      rank: RANK.other,
      title: `${e.hook} failed open`,
      line: `${e.hook}: ${e.what} (seen ${e.count} time${e.count === 1 ? '' : 's'}, last ${ago(Date.parse(e.lastSeen), a.now ?? a.asOf)})`,
    });
  }
  if (a.toolLoopLooping.length) {
    out.push({
      rank: RANK.sessions,
      title: 'tool-loop sessions looping',
      line: `tool-loop: ${a.toolLoopLooping.length} session(s) looping (the next identical call or failure trips the breaker): ${a.toolLoopLooping.join(', ')}`,
    });
  }
  return out;
}

/** A line's few words for the verdict: up to its first `: ` (or the whole line, cut). */
const titleOf = (line: string) => {
  const cut = line.indexOf(': ');
  const head = cut > 0 ? line.slice(0, cut) : line;
  return head.length > 80 ? `${head.slice(0, 77)}...` : head;
};

/** Everything that needs a user's attention, the worst first (in the order found within a rank); empty when all is well. */
export function attentionItems(a: AttentionInput): AttentionItem[] {
  const out: AttentionItem[] = [];
  for (const h of a.unreachableEngines) {
    out.push(
      a.notEngines?.includes(h)
        ? {
            rank: RANK.engine,
            title: `${h} is not a Docker engine`,
            line: `${h} is not a Docker engine: point --host, --context or DOCKER_HOST at the engine's API`,
          }
        : { rank: RANK.engine, title: `engine ${h} unreachable`, line: `engine ${h} is unreachable` },
    );
  }
  if (a.timedOut) {
    out.push({ rank: RANK.engine, title: 'the engine timed out', line: 'the engine did not answer within --timeout: the container counts are incomplete' });
  }
  if (a.watch) out.push({ rank: RANK.watch, title: a.watch.kind === 'not-running' ? 'watch not running' : 'watch not healthy', line: a.watch.line });
  for (const l of a.staleSweeps ?? []) out.push({ rank: RANK.stale, title: l.slice(0, l.indexOf(', more than')), line: l });
  out.push(...containerItems(a, a.commands?.reap ?? 'hermes-janitor reap'));
  if (a.inspectFailures > 0) {
    out.push({ rank: RANK.other, title: 'containers not inspected', line: `${a.inspectFailures} container(s) could not be inspected` });
  }
  for (const l of a.staleLocks) {
    out.push({ rank: RANK.other, title: 'stale reap lock', line: `stale reap lock ${l.path} (pid ${l.pid ?? '?'} is gone): the next reap takes it over` });
  }
  out.push(...breakerItems(a));
  for (const l of a.passProblems ?? []) out.push({ rank: RANK.blind, title: titleOf(l), line: l });
  if (a.pidNamespace) out.push({ rank: RANK.blind, title: 'a partial view of processes', line: a.pidNamespace });
  for (const r of a.refused ?? []) out.push({ rank: RANK.blind, title: 'a path refused', line: `refused: ${r}` });
  return out
    .map((item, i) => ({ item, i }))
    .sort((x, y) => x.item.rank - y.item.rank || x.i - y.i)
    .map((x) => x.item);
}

/** One line per thing that needs a user's attention, the worst first; empty when all is well. */
export function attention(a: AttentionInput): string[] {
  return attentionItems(a).map((i) => i.line);
}

/** At most this many things named in the verdict line (the rest counted). */
const VERDICT_NAMES = 3;

/** The one line a report opens with: `OK: nothing needs attention`, or how many things do, the worst first. */
export function verdictLine(items: readonly AttentionItem[]): string {
  if (items.length === 0) return 'OK: nothing needs attention';
  if (items.length === 1) return `ATTENTION: 1 thing: ${items[0]!.title}`;
  const named = items.slice(0, VERDICT_NAMES).map((i) => i.title);
  const more = items.length > VERDICT_NAMES ? `; and ${items.length - VERDICT_NAMES} more` : '';
  return `ATTENTION: ${items.length} things, the worst first: ${named.join('; ')}${more}`;
}

/** 3 when an engine is unreachable (or timed out), else 1 when anything needs attention, else 0. */
export function statusExitCode(a: AttentionInput, lines: readonly string[]): 0 | 1 | 3 {
  if (a.unreachableEngines.length > 0 || a.timedOut) return 3;
  return lines.length > 0 ? 1 : 0;
}
