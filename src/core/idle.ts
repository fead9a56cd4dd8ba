/**
 * The idleness proof for running sandboxes (pure: every function takes its inputs and the clock).
 *
 * A sample is one answer of the engine's one-shot stats for one container. Two samples show activity when the
 * cgroup's page-fault count grew, or its CPU time grew by more than 1 ms per second elapsed (a busy process; the
 * init process alone, tini, uses about 0.06 ms a second), or, where the engine reports no page-fault count, its CPU
 * time grew at all (Podman's init, catatonit, never wakes). A new `StartedAt` (a restart) counts as activity too.
 *
 * A container is **in use** while its cgroup holds more processes than its init and its own command (2 with
 * `HostConfig.Init`, else 1; or the run's `--idle-max-processes`): hermes' background jobs are processes left behind
 * by one short `docker exec`, often quiet for hours (a server waiting for connections), so no counter moves. A sample
 * that shows the container in use, or gives no process count, starts no proof: the proof starts at the first sample
 * that is neither.
 */

/** One observation of a running container. */
export interface IdleSample {
  /** `State.StartedAt`, raw: a new value means the container was restarted. */
  startedAt: string;
  /** Cumulative CPU nanoseconds of the container's cgroup (`cpu_stats.cpu_usage.total_usage`). */
  cpuNs: number;
  /** The cgroup's page-fault count (`memory_stats.stats.pgfault`), or null where the engine reports none. */
  pgfault: number | null;
  /** When the sample was taken (ISO 8601). */
  at: string;
  /**
   * `State.Pid` (the container's init process) when the sample was taken, where known: lets the next run see from
   * that process's cgroup, before any inspect, whether the re-check can read the container's cgroup on this host.
   */
  pid?: number;
  /**
   * Processes in the container's cgroup, zombies included (`pids_stats.current`, or the cgroup's `pids.current`);
   * absent where neither gave a count (and in records written before the count was kept).
   */
  pids?: number;
}

/** What is kept per container between runs (`<home>/janitor/idle.json`). */
export interface IdleRecord {
  /** The last sample. */
  last: IdleSample;
  /** The time of the first sample, or of the last sample that showed activity (ISO 8601). */
  since: string;
  /**
   * How many samples count toward the proof since `since` (1 = only the first: no proof yet). 0: none, because the
   * last sample showed the container in use or gave no process count (`since` is then that sample's time).
   */
  samples: number;
}

/** The processes of an idle container with an init (tini, catatonit) in front of its command: the two of them. */
export const IDLE_PROCESSES_WITH_INIT = 2;
/** The processes of an idle container without an init: its command alone. */
export const IDLE_PROCESSES_WITHOUT_INIT = 1;

/**
 * The most processes a container may hold and still be idle: `maxProcesses` (`--idle-max-processes`) when given, else
 * its init and its command (2 when `HostConfig.Init` is true, else 1).
 */
export function processLimit(init: boolean, maxProcesses?: number): number {
  if (maxProcesses !== undefined) return maxProcesses;
  return init ? IDLE_PROCESSES_WITH_INIT : IDLE_PROCESSES_WITHOUT_INIT;
}

/**
 * What a sample says of the container's processes under `limit`: `quiet` (no more than its init and its command),
 * `in-use` (more: a process of its own, such as a background job), or `unknown` (no count: never idle).
 */
export function occupancy(sample: Pick<IdleSample, 'pids'>, limit: number): 'quiet' | 'in-use' | 'unknown' {
  if (sample.pids === undefined) return 'unknown';
  return sample.pids > limit ? 'in-use' : 'quiet';
}

/** CPU a quiet container may use per second elapsed without counting as active (1 ms). */
export const IDLE_CPU_NS_PER_SECOND = 1_000_000;
/**
 * The least CPU allowance, whatever the interval (2 ms): runs started seconds apart (shells opened together, the
 * re-check right before a stop) compare samples taken well under a second or two apart, and the init process's
 * wakes must not look like use there. They average ~0.06 ms a second, but one second of an idle tini sandbox was
 * measured at 1.18 ms while the host was busy (two CPU-bound processes and a loop of `docker run --rm`; one such
 * second in 400 samples). Any command (one `docker exec <id> true` costs ~19 ms) is far above it; from 2 s on,
 * the per-second rule alone applies.
 */
export const IDLE_CPU_MIN_ALLOWANCE_NS = 2_000_000;

const ms = (iso: string): number => Date.parse(iso);

/** True when `next` shows activity since `prev` (or a restart). */
export function showsActivity(prev: IdleSample, next: IdleSample): boolean {
  if (prev.startedAt !== next.startedAt) return true;
  const cpuDelta = next.cpuNs - prev.cpuNs;
  if (cpuDelta < 0) return true; // a counter that went back: a new cgroup, treat as a restart
  if (prev.pgfault === null || next.pgfault === null) return cpuDelta > 0;
  if (next.pgfault !== prev.pgfault) return true;
  const elapsedS = Math.max(0, ms(next.at) - ms(prev.at)) / 1000;
  return cpuDelta > Math.max(IDLE_CPU_MIN_ALLOWANCE_NS, IDLE_CPU_NS_PER_SECOND * elapsedS);
}

/**
 * The record after taking `sample` from a container that may hold `limit` processes and be idle (`processLimit`;
 * default 2, hermes' `--init` sandboxes): no proof while it is in use or its count is unknown (`samples: 0`); the
 * proof starts at the first sample that is neither, and again after activity.
 */
export function observe(prev: IdleRecord | undefined, sample: IdleSample, limit: number = IDLE_PROCESSES_WITH_INIT): IdleRecord {
  if (occupancy(sample, limit) !== 'quiet') return { last: sample, since: sample.at, samples: 0 };
  if (!prev || prev.samples === 0 || showsActivity(prev.last, sample)) return { last: sample, since: sample.at, samples: 1 };
  return { last: sample, since: prev.since, samples: prev.samples + 1 };
}

/** Seconds idle as of `asOf`: null until two samples exist (no proof yet), never negative. */
export function idleSeconds(record: IdleRecord | undefined, asOf: Date): number | null {
  if (!record || record.samples < 2) return null;
  return Math.max(0, (asOf.getTime() - ms(record.since)) / 1000);
}

/** Why a running container is not (yet) stopped, or `stop`. */
export type StopDecision = { stop: true; idleSeconds: number } | { stop: false; why: IdleKeepReason; idleSeconds: number | null };

export type IdleKeepReason =
  /** The idle rule is off (`--no-stop-idle`, `HERMES_JANITOR_STOP_IDLE`, `janitor.stop_idle`, `--label`). */
  | 'stop-idle-off'
  /** The engine gave no usable stats sample. */
  | 'stats-unavailable'
  /** Neither the engine's stats nor the container's cgroup gave a process count: never stopped. */
  | 'processes-unknown'
  /** More processes than its init and its command (a background job): in use, never stopped. */
  | 'in-use'
  /** Only one sample so far (or activity just seen): no proof yet. */
  | 'observing'
  /** Idle for less than the idle threshold. */
  | 'idle-too-recent'
  /** Owned (a living hermes on this host may serve its profile) and idle for less than `--idle-after-owned`. */
  | 'owner-alive'
  /** Started less than the idle threshold ago. */
  | 'started-recently'
  /** A `docker exec` is in flight. */
  | 'exec-in-flight'
  /**
   * The fresh re-check right before stopping showed activity, or the container no longer runs, or gave no sample. (A
   * restart seen there is judged as one: `observing`.)
   */
  | 'proof-failed';

export interface StopInput {
  /** The idle rule is on for this run. */
  enabled: boolean;
  /** The container's record after this run's sample, or undefined when stats were unavailable. */
  record: IdleRecord | undefined;
  /** `State.StartedAt`, raw. */
  startedAt: string;
  /** `ExecIDs` of the inspect. */
  execIds: readonly string[];
  /** The most processes it may hold and still be idle (`processLimit`; default 2). */
  processLimit?: number;
}

/**
 * The stop decision as of `asOf` with idle threshold `idleAfterSeconds`: all of idle for at least the threshold,
 * started at least that long ago, and no exec in flight. (The fresh re-check right before the stop is `reproved`.)
 */
export function decideStop(input: StopInput, asOf: Date, idleAfterSeconds: number): StopDecision {
  const idle = idleSeconds(input.record, asOf);
  if (!input.record) return { stop: false, why: 'stats-unavailable', idleSeconds: null };
  const processes = occupancy(input.record.last, input.processLimit ?? IDLE_PROCESSES_WITH_INIT);
  if (processes === 'unknown') return { stop: false, why: 'processes-unknown', idleSeconds: idle };
  // An exec in flight is a process too: say so when one is (hermes is running a command right now).
  if (processes === 'in-use') return { stop: false, why: input.execIds.length > 0 ? 'exec-in-flight' : 'in-use', idleSeconds: idle };
  if (!input.enabled) return { stop: false, why: 'stop-idle-off', idleSeconds: idle };
  if (idle === null) return { stop: false, why: 'observing', idleSeconds: idle };
  if (idle < idleAfterSeconds) return { stop: false, why: 'idle-too-recent', idleSeconds: idle };
  const started = ms(input.startedAt);
  if (!Number.isFinite(started) || (asOf.getTime() - started) / 1000 < idleAfterSeconds) {
    return { stop: false, why: 'started-recently', idleSeconds: idle };
  }
  if (input.execIds.length > 0) return { stop: false, why: 'exec-in-flight', idleSeconds: idle };
  return { stop: true, idleSeconds: idle };
}

/** What the re-check right before a stop found. */
export interface Recheck {
  /** Still running (`State.Status` is `running`). */
  running: boolean;
  startedAt: string;
  execIds: readonly string[];
  /** A fresh sample, or null when the engine gave none. */
  sample: IdleSample | null;
  /** The most processes it may hold and still be idle (`processLimit`; default 2). */
  processLimit?: number;
}

/**
 * The proof re-checked right before acting: still running, same start, no exec, no activity since `last`, and no
 * more processes than an idle container holds (a background job started since `last` prevents the stop).
 */
export function reproved(last: IdleSample, now: Recheck): boolean {
  return (
    now.running &&
    now.startedAt === last.startedAt &&
    now.execIds.length === 0 &&
    now.sample !== null &&
    occupancy(now.sample, now.processLimit ?? IDLE_PROCESSES_WITH_INIT) === 'quiet' &&
    !showsActivity(last, now.sample)
  );
}

/** A stop the janitor made: the container is kept (`stopped-retained`) for the retention, so that hermes can start it again. */
export interface StopRecord {
  /** `State.StartedAt` of the run it stopped: a container started again since is no longer the one stopped. */
  startedAt: string;
  /** When it was stopped (ISO 8601). */
  stoppedAt: string;
}

/** The idle-observation state document: per engine, per container id; and the janitor's stops, the same way. */
export interface IdleState {
  version: 1;
  engines: Record<string, Record<string, IdleRecord>>;
  stops?: Record<string, Record<string, StopRecord>>;
}

/**
 * Whether an exited container is kept as `stopped-retained` as of `nowMs`: the janitor stopped it (its record, with
 * the same `StartedAt`), less than `retentionSeconds` ago.
 */
export function isRetained(stop: StopRecord | undefined, startedAt: string, nowMs: number, retentionSeconds: number): boolean {
  return retentionEnd(stop, startedAt, nowMs, retentionSeconds) !== null;
}

/** When the retention of a container kept as `stopped-retained` as of `nowMs` ends (ms since the epoch), else null. */
export function retentionEnd(stop: StopRecord | undefined, startedAt: string, nowMs: number, retentionSeconds: number): number | null {
  if (!stop || stop.startedAt !== startedAt) return null;
  const at = ms(stop.stoppedAt);
  const end = at + retentionSeconds * 1000;
  return Number.isFinite(at) && nowMs < end ? end : null;
}

/** Merges one engine's stop records: `added` replace theirs, `forget` ids are dropped. */
export function mergeStops(current: IdleState, host: string, added: ReadonlyMap<string, StopRecord>, forget: Iterable<string>): IdleState {
  const recs = { ...(current.stops?.[host] ?? {}) };
  for (const id of forget) delete recs[id];
  for (const [id, r] of added) recs[id] = r;
  const stops = { ...(current.stops ?? {}) };
  if (Object.keys(recs).length) stops[host] = recs;
  else delete stops[host];
  return { ...current, ...(Object.keys(stops).length ? { stops } : { stops: undefined }) };
}

function parseStops(v: unknown): IdleState['stops'] {
  if (!v || typeof v !== 'object') return undefined;
  const out: NonNullable<IdleState['stops']> = {};
  for (const [host, recs] of Object.entries(v as Record<string, unknown>)) {
    if (!recs || typeof recs !== 'object') continue;
    const kept: Record<string, StopRecord> = {};
    for (const [id, r] of Object.entries(recs as Record<string, unknown>)) {
      const rec = r as Partial<StopRecord> | null;
      if (rec && isStr(rec.startedAt) && isStr(rec.stoppedAt) && Number.isFinite(ms(rec.stoppedAt)))
        kept[id] = { startedAt: rec.startedAt, stoppedAt: rec.stoppedAt };
    }
    out[host] = kept;
  }
  return out;
}

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isStr = (v: unknown): v is string => typeof v === 'string';

function validSample(v: unknown): v is IdleSample {
  const s = v as Partial<IdleSample> | null;
  return Boolean(s) && isStr(s!.startedAt) && isNum(s!.cpuNs) && (s!.pgfault === null || isNum(s!.pgfault)) && isStr(s!.at) && Number.isFinite(ms(s!.at!));
}

/** Reads a state document leniently: anything malformed (the whole file or one record) counts as absent. */
export function parseIdleState(value: unknown): IdleState {
  const out: IdleState = { version: 1, engines: {} };
  const v = value as Partial<IdleState> | null;
  if (!v || typeof v !== 'object' || v.version !== 1 || !v.engines || typeof v.engines !== 'object') return out;
  for (const [host, recs] of Object.entries(v.engines)) {
    if (!recs || typeof recs !== 'object') continue;
    const kept: Record<string, IdleRecord> = {};
    for (const [id, r] of Object.entries(recs as Record<string, unknown>)) {
      const rec = r as Partial<IdleRecord> | null;
      if (rec && validSample(rec.last) && isStr(rec.since) && Number.isFinite(ms(rec.since)) && Number.isSafeInteger(rec.samples) && rec.samples! >= 0) {
        const { startedAt, cpuNs, pgfault, at, pid, pids } = rec.last;
        const last: IdleSample = {
          startedAt,
          cpuNs,
          pgfault,
          at,
          ...(Number.isSafeInteger(pid) && pid! > 0 ? { pid } : {}),
          ...(Number.isSafeInteger(pids) && pids! > 0 ? { pids } : {}),
        };
        kept[id] = { last, since: rec.since, samples: rec.samples! };
      }
    }
    out.engines[host] = kept;
  }
  const stops = parseStops((v as { stops?: unknown }).stops);
  if (stops) out.stops = stops;
  return out;
}

/**
 * Merges one engine's sweep into the state: `observed` records replace theirs, `forget` ids are dropped (containers
 * that no longer exist, or no longer run).
 */
export function mergeIdleState(current: IdleState, host: string, observed: ReadonlyMap<string, IdleRecord>, forget: Iterable<string>): IdleState {
  const recs = { ...(current.engines[host] ?? {}) };
  for (const id of forget) delete recs[id];
  for (const [id, r] of observed) recs[id] = r;
  const engines = { ...current.engines };
  if (Object.keys(recs).length) engines[host] = recs;
  else delete engines[host];
  return { version: 1, engines, ...(current.stops ? { stops: current.stops } : {}) };
}
