/**
 * The engine side of the idle rule: taking a sample, re-proving idleness right before a stop, and the stop itself.
 * The decisions are pure (`core/idle.ts`); a long-running watcher calls these with its own clock and records.
 */
import type { ContainerDetails, EngineClient, StatsCounters } from '../adapters/engine.js';
import { type IdleRecord, type IdleSample, type Recheck, observe, occupancy, processLimit, reproved } from '../core/idle.js';
import { EngineRequestError } from '../errors.js';

/**
 * One sample of a running container from the one-shot stats, stamped with `now`. Null when the engine gives none
 * (the stats failed with an HTTP error or lack the CPU counter): such a container is never stopped. Connection
 * failures and aborts are thrown (the caller decides whether they end the run).
 */
export async function takeSample(
  engine: EngineClient,
  details: Pick<ContainerDetails, 'id' | 'startedAt'> & Partial<Pick<ContainerDetails, 'pid'>>,
  now: () => Date,
  signal?: AbortSignal,
): Promise<IdleSample | null> {
  try {
    const c = await engine.stats(details.id, signal);
    if (!c) return null;
    return sampleOf(details, c, now);
  } catch (err) {
    if (err instanceof EngineRequestError) return null;
    throw err;
  }
}

/**
 * The execs of `execIds` still in flight. Docker lists only running execs; Podman keeps finished ones, so each is
 * asked. One that cannot be checked counts as in flight (never stop on doubt); connection failures are thrown.
 */
export async function execsInFlight(engine: EngineClient, execIds: readonly string[], signal?: AbortSignal): Promise<string[]> {
  const out: string[] = [];
  for (const id of execIds) {
    try {
      if (await engine.execRunning(id, signal)) out.push(id);
    } catch (err) {
      if (!(err instanceof EngineRequestError)) throw err;
      out.push(id);
    }
  }
  return out;
}

/**
 * Reads a running container's counters on this host without the engine (`adapters/cgroup-counters.ts`), or null
 * when it cannot prove the cgroup is that container's.
 */
export type LocalCounters = (id: string, pid: number) => StatsCounters | null;

function sampleOf(
  details: Pick<ContainerDetails, 'startedAt'> & Partial<Pick<ContainerDetails, 'pid'>>, c: StatsCounters, now: () => Date,
): IdleSample {
  const { pid } = details;
  const pids = c.pids;
  return {
    startedAt: details.startedAt, cpuNs: c.cpuNs, pgfault: c.pgfault, at: now().toISOString(),
    ...(pid && pid > 0 ? { pid } : {}),
    ...(pids !== null && pids !== undefined ? { pids } : {}),
  };
}

/**
 * The container's counters read on this host, when they are complete enough to stand for the engine's: a cgroup
 * whose process count cannot be read here (no pids controller) leaves the sample to the engine.
 */
export function readLocally(local: LocalCounters | undefined, id: string, pid: number | undefined): StatsCounters | null {
  if (!local || !pid) return null;
  const c = local(id, pid);
  return c && c.pids !== null && c.pids !== undefined ? c : null;
}

/** A sample from the container's cgroup on this host, or null where `local` cannot read it. */
function localSample(
  details: Pick<ContainerDetails, 'id' | 'startedAt' | 'pid'>, now: () => Date, local: LocalCounters | undefined,
): IdleSample | null {
  const c = readLocally(local, details.id, details.pid);
  return c ? sampleOf(details, c, now) : null;
}

export type StopOutcome =
  /** Stopped; the record should be dropped. `sample` is the fresh one the stop was re-proved with. */
  | { kind: 'stopped'; sample: IdleSample }
  /**
   * The fresh re-check failed: not stopped. `record` is the record after the fresh sample (when one was taken);
   * `why` is `in-use` when that sample showed more processes than an idle container holds (a background job started
   * since the last sample), `processes-unknown` when it gave no count, else `proof-failed`.
   */
  | { kind: 'proof-failed'; record: IdleRecord | undefined; why: 'proof-failed' | 'in-use' | 'processes-unknown' }
  /** The container no longer exists. */
  | { kind: 'gone' }
  /**
   * Only with `candidate`: the in-slot inspect (`details`) did not show a container to re-prove from `record` as is,
   * or its cgroup could not be read here. Nothing was done; the caller judges it from `details` as usual.
   */
  | { kind: 'declined'; details: ContainerDetails };

/**
 * Re-checks the proof right before acting and stops only if it holds: a fresh inspect (still running, same
 * StartedAt, no exec in flight) and a fresh sample showing no activity since `record.last`, then the engine's stop
 * with `stopTimeoutSeconds` before its SIGKILL. Engine errors on the stop itself are thrown.
 *
 * The final inspect, and the sample where the container's cgroup can be read on this host (`localCounters`), are
 * taken inside the stop's own slot (`act`), so nothing is re-checked seconds before a queued stop. Where only the
 * engine's one-shot stats can give a sample, the samples of a sweep are first asked for together (`read`: Docker
 * answers them in one pass of its stats collector), and the slot re-inspects right before the stop.
 */
export async function reproveAndStop(
  engine: EngineClient,
  id: string,
  record: IdleRecord,
  opts: {
    stopTimeoutSeconds: number; now: () => Date; signal?: AbortSignal;
    /** Bounds for the re-check's reads and for the stop itself (a sweep shares them across containers). */
    read?: <R>(fn: () => Promise<R>) => Promise<R>;
    act?: <R>(fn: () => Promise<R>) => Promise<R>;
    /** Counters read on this host for the fresh sample (else the engine's stats). */
    localCounters?: LocalCounters;
    /** `--idle-max-processes`: the most processes an idle container may hold (default: its init and its command). */
    maxProcesses?: number;
    /**
     * The caller's own inspect, just taken (a sweep's): its `State.Pid` shows before queueing whether the cgroup can
     * be read here, and where it cannot, the engine's sample follows it instead of another inspect.
     */
    inspected?: ContainerDetails;
    /**
     * For a caller that has not inspected the container (a sweep whose earlier runs already proved it idle): the
     * in-slot inspect is then the only one, and this says whether it shows a running container to re-prove from
     * `record` (the caller's own checks: selection, verdict, the stop decision with the execs still in flight). Needs `localCounters`: when it declines, or
     * the cgroup cannot be read, the outcome is `declined` and nothing was done.
     */
    candidate?: (fresh: ContainerDetails, execsInFlight: readonly string[]) => boolean;
  },
): Promise<StopOutcome> {
  const read = opts.read ?? ((fn) => fn());
  const act = opts.act ?? ((fn) => fn());
  const { signal, now, localCounters: local } = opts;
  const isRunning = (d: ContainerDetails) => d.status.toLowerCase() === 'running' && d.running;
  const limitOf = (d: ContainerDetails) => processLimit(d.init, opts.maxProcesses);
  const failed = (sample: IdleSample | null, limit: number): StopOutcome => {
    const busy = sample ? occupancy(sample, limit) : 'quiet';
    const why = busy === 'in-use' ? 'in-use' : busy === 'unknown' ? 'processes-unknown' : 'proof-failed';
    return { kind: 'proof-failed', record: sample ? observe(record, sample, limit) : undefined, why };
  };
  /** The last step inside the slot: the stop, when what was just re-checked still proves the container idle. */
  const stopIfReproved = async (check: Recheck & { processLimit: number }): Promise<StopOutcome> => {
    if (!reproved(record.last, check)) return failed(check.sample, check.processLimit);
    const stopped = await engine.stop(id, opts.stopTimeoutSeconds, signal);
    return stopped ? { kind: 'stopped', sample: check.sample! } : { kind: 'proof-failed', record: undefined, why: 'proof-failed' };
  };
  let engineSample: IdleSample | null | undefined;
  if (opts.candidate) {
    const accept = opts.candidate;
    return act(async () => {
      const fresh = await engine.inspect(id, signal);
      if (!fresh) return { kind: 'gone' };
      if (!isRunning(fresh)) return { kind: 'declined', details: fresh };
      const execIds = fresh.execIds.length ? await execsInFlight(engine, fresh.execIds, signal) : [];
      if (!accept(fresh, execIds)) return { kind: 'declined', details: fresh };
      const sample = localSample(fresh, now, local);
      if (!sample) return { kind: 'declined', details: fresh };
      return stopIfReproved({ running: true, startedAt: fresh.startedAt, execIds, sample, processLimit: limitOf(fresh) });
    });
  }
  if (!readLocally(local, id, opts.inspected?.pid)) {
    // No cgroup to read here: the engine's sample, asked for together with the sweep's others.
    const first = opts.inspected ?? (await read(() => engine.inspect(id, signal)));
    if (!first) return { kind: 'gone' };
    const running = isRunning(first);
    engineSample = running ? await read(() => takeSample(engine, first, now, signal)) : null;
    // (A caller that inspected has checked its execs; the slot checks them again right before the stop.)
    const execIds = running && !opts.inspected ? await read(() => execsInFlight(engine, first.execIds, signal)) : [];
    const check = { running, startedAt: first.startedAt, execIds, sample: engineSample, processLimit: limitOf(first) };
    if (!reproved(record.last, check)) return failed(engineSample, check.processLimit);
  }
  return act(async () => {
    const fresh = await engine.inspect(id, signal);
    if (!fresh) return { kind: 'gone' };
    const running = isRunning(fresh);
    // The cgroup read now where it can be; else the engine's sample just taken (or, when the cgroup stopped being
    // readable since, one now).
    const sample = running ? (localSample(fresh, now, local) ?? engineSample ?? (await takeSample(engine, fresh, now, signal))) : null;
    const execIds = running ? await execsInFlight(engine, fresh.execIds, signal) : fresh.execIds;
    return stopIfReproved({ running, startedAt: fresh.startedAt, execIds, sample, processLimit: limitOf(fresh) });
  });
}

/**
 * Which of the container's volumes went with it, verified after its removal: those the engine no longer knows
 * (`GET /volumes/{name}` answers 404). Named volumes stay, so they are never listed; a failed check leaves the
 * volume out (not verified).
 */
export async function volumesGone(engine: EngineClient, names: readonly string[], signal?: AbortSignal): Promise<string[]> {
  const out: string[] = [];
  for (const name of names) {
    try {
      if (!(await engine.volumeExists(name, signal))) out.push(name);
    } catch {
      /* not verified: left out */
    }
  }
  return out;
}
