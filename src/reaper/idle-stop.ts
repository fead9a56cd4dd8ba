/**
 * The engine side of the idle rule: taking a sample, re-proving idleness right before a stop, and the stop itself.
 * The decisions are pure (`core/idle.ts`); a long-running watcher calls these with its own clock and records.
 */
import type { ContainerDetails, EngineClient, StatsCounters } from '../adapters/engine.js';
import { type IdleRecord, type IdleSample, type Recheck, observe, occupancy, processLimit, reproved, showsActivity } from '../core/idle.js';
import { EngineRequestError } from '../errors.js';
import { KILLED_EXIT_CODE } from '../defaults.js';
import { stopGrace } from '../core/policy.js';

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

function sampleOf(details: Pick<ContainerDetails, 'startedAt'> & Partial<Pick<ContainerDetails, 'pid'>>, c: StatsCounters, now: () => Date): IdleSample {
  const { pid } = details;
  const pids = c.pids;
  return {
    startedAt: details.startedAt,
    cpuNs: c.cpuNs,
    pgfault: c.pgfault,
    at: now().toISOString(),
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

/**
 * A sample of the engine's stats that gives no process count, completed with the count of the container's cgroup on
 * this host where it can be read (the same cgroup, proven the container's): only where neither gives one is the
 * count unknown.
 */
export function withLocalCount(sample: IdleSample | null, details: Pick<ContainerDetails, 'id' | 'pid'>, local: LocalCounters | undefined): IdleSample | null {
  if (!sample || sample.pids !== undefined) return sample;
  const pids = readLocally(local, details.id, details.pid)?.pids;
  return pids ? { ...sample, pids } : sample;
}

/** A sample from the container's cgroup on this host, or null where `local` cannot read it. */
export function localSample(details: Pick<ContainerDetails, 'id' | 'startedAt' | 'pid'>, now: () => Date, local: LocalCounters | undefined): IdleSample | null {
  const c = readLocally(local, details.id, details.pid);
  return c ? sampleOf(details, c, now) : null;
}

export type StopOutcome =
  /** Stopped; the record should be dropped. `sample` is the fresh one the stop was re-proved with. */
  | {
      kind: 'stopped';
      sample: IdleSample;
      /** The grace the stop gave before the engine's SIGKILL (seconds). */
      graceSeconds: number;
      /** The stop ended in the engine's SIGKILL (exit code 137 after it); undefined when the engine did not say. */
      killed?: boolean;
    }
  /**
   * The fresh re-check failed: not stopped. `record` is the record after the fresh sample (when one was taken);
   * `why` is `in-use` when that sample showed more processes than an idle container holds (a background job started
   * since the last sample), `processes-unknown` when it gave no count, else `proof-failed`.
   */
  | { kind: 'proof-failed'; record: IdleRecord | undefined; why: 'proof-failed' | 'in-use' | 'processes-unknown' }
  /** The container no longer exists. */
  | { kind: 'gone' }
  /**
   * Nothing was done; the caller judges the container from `details` as usual. Either the re-check found it
   * **restarted** since `record.last` (running with a new `StartedAt`: its proof starts again, `observing`, never
   * `proof-failed`), or, only with `candidate`, the in-slot inspect did not show a container to re-prove from `record`
   * as is, or its cgroup could not be read here.
   */
  | { kind: 'declined'; details: ContainerDetails };

/**
 * Re-checks the proof right before acting and stops only if it holds: a fresh inspect (still running, same
 * StartedAt, no exec in flight) and a fresh sample showing no activity since `record.last`, then the engine's stop
 * with `stopTimeoutSeconds` before its SIGKILL. Engine errors on the stop itself are thrown. A container found
 * restarted since `record.last` (running with a new StartedAt, seen by any of its inspects) is `declined`: a restart
 * is judged as one (its proof starts again), never as a failed proof.
 *
 * The final inspect, and the sample where the container's cgroup can be read on this host (`localCounters`), are
 * taken inside the stop's own slot (`act`), so nothing is re-checked seconds before a queued stop. Where only the
 * engine's one-shot stats can give a sample, the samples of a sweep are first asked for together (`read`: Docker
 * answers them in one pass of its stats collector), and the slot re-inspects right before the stop.
 */
export function reproveAndStop(engine: EngineClient, id: string, record: IdleRecord, opts: ReproveOptions): Promise<StopOutcome> {
  return new Reproof(engine, id, record, opts).run();
}

/** The options of `reproveAndStop`. */
export interface ReproveOptions {
  stopTimeoutSeconds: number;
  now: () => Date;
  signal?: AbortSignal;
  /** When the run's `signal` fires (`Date.now()` ms): the stop's grace is cut to fit (`stopGrace`). */
  deadlineMs?: number;
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
   * `record` (the caller's own checks: selection, verdict, the stop decision with the execs still in flight). Needs
   * `localCounters`: when it declines, or the cgroup cannot be read, the outcome is `declined` and nothing was done.
   */
  candidate?: (fresh: ContainerDetails, execsInFlight: readonly string[]) => boolean;
}

/** What one re-check found; `fromEngine`: its sample is the engine's stats (else the cgroup's, or none). */
type Check = Recheck & { processLimit: number; fromEngine: boolean };

/** A stop that answered this much before its grace was over cannot have been the engine's kill (clock slack). */
const GRACE_SLACK_MS = 250;

/** One `reproveAndStop`. */
class Reproof {
  private readonly read: <R>(fn: () => Promise<R>) => Promise<R>;
  private readonly act: <R>(fn: () => Promise<R>) => Promise<R>;
  /** The engine's sample taken before the slot (where the cgroup cannot be read here). */
  private engineSample: IdleSample | null | undefined;

  constructor(
    private readonly engine: EngineClient,
    private readonly id: string,
    private readonly record: IdleRecord,
    private readonly opts: ReproveOptions,
  ) {
    this.read = opts.read ?? ((fn) => fn());
    this.act = opts.act ?? ((fn) => fn());
  }

  async run(): Promise<StopOutcome> {
    const { opts } = this;
    if (opts.candidate) {
      const accept = opts.candidate;
      return this.act(() => this.candidateSlot(accept));
    }
    if (!readLocally(opts.localCounters, this.id, opts.inspected?.pid)) {
      const early = await this.engineCheck();
      if (early) return early;
    }
    return this.act(() => this.slot());
  }

  private isRunning(d: ContainerDetails): boolean {
    return d.status.toLowerCase() === 'running' && d.running;
  }

  private limitOf(d: ContainerDetails): number {
    return processLimit(d.init, this.opts.maxProcesses);
  }

  /** Running with another `StartedAt` than the last sample's: restarted since (the caller judges it afresh). */
  private restarted(d: ContainerDetails): boolean {
    return this.isRunning(d) && d.startedAt !== this.record.last.startedAt;
  }

  private inspect(): Promise<ContainerDetails | null> {
    return this.engine.inspect(this.id, this.opts.signal);
  }

  /** The candidate's slot: its inspect is the only one; its sample the cgroup's. */
  private async candidateSlot(accept: NonNullable<ReproveOptions['candidate']>): Promise<StopOutcome> {
    const { engine, opts } = this;
    const fresh = await this.inspect();
    if (!fresh) return { kind: 'gone' };
    if (!this.isRunning(fresh)) return { kind: 'declined', details: fresh };
    const execIds = fresh.execIds.length ? await execsInFlight(engine, fresh.execIds, opts.signal) : [];
    if (!accept(fresh, execIds)) return { kind: 'declined', details: fresh };
    const sample = localSample(fresh, opts.now, opts.localCounters);
    if (!sample) return { kind: 'declined', details: fresh };
    return this.stopIfReproved({ running: true, startedAt: fresh.startedAt, execIds, sample, processLimit: this.limitOf(fresh), fromEngine: false });
  }

  /**
   * No cgroup to read here: the engine's sample, asked for together with the sweep's others, checked before the
   * slot. Returns the outcome when that check already decides it, else undefined (on to the slot).
   */
  private async engineCheck(): Promise<StopOutcome | undefined> {
    const { engine, opts, read } = this;
    const first = opts.inspected ?? (await read(() => this.inspect()));
    if (!first) return { kind: 'gone' };
    if (this.restarted(first)) return { kind: 'declined', details: first };
    const running = this.isRunning(first);
    this.engineSample = running ? await read(() => takeSample(engine, first, opts.now, opts.signal)) : null;
    // (A caller that inspected has checked its execs; the slot checks them again right before the stop.)
    const execIds = running && !opts.inspected ? await read(() => execsInFlight(engine, first.execIds, opts.signal)) : [];
    const check = { running, startedAt: first.startedAt, execIds, sample: this.engineSample, processLimit: this.limitOf(first), fromEngine: true };
    return reproved(this.record.last, check) ? undefined : read(() => this.failed(check));
  }

  /** The slot: the final inspect and sample, then the stop. */
  private async slot(): Promise<StopOutcome> {
    const { engine, opts } = this;
    const fresh = await this.inspect();
    if (!fresh) return { kind: 'gone' };
    // Restarted since the last sample (a new StartedAt): its proof starts again, judged by the caller as usual.
    if (this.restarted(fresh)) return { kind: 'declined', details: fresh };
    const running = this.isRunning(fresh);
    // The cgroup read now where it can be; else the engine's sample just taken (or, when the cgroup stopped being
    // readable since, one now).
    const local = running ? localSample(fresh, opts.now, opts.localCounters) : null;
    const sample = !running ? null : (local ?? this.engineSample ?? (await takeSample(engine, fresh, opts.now, opts.signal)));
    const execIds = running ? await execsInFlight(engine, fresh.execIds, opts.signal) : fresh.execIds;
    return this.stopIfReproved({ running, startedAt: fresh.startedAt, execIds, sample, processLimit: this.limitOf(fresh), fromEngine: !local });
  }

  /** The last step inside the slot: the stop, when what was just re-checked still proves the container idle. */
  private async stopIfReproved(check: Check): Promise<StopOutcome> {
    if (!reproved(this.record.last, check)) return this.failed(check);
    const graceSeconds = stopGrace(this.opts.stopTimeoutSeconds, this.opts.deadlineMs, Date.now());
    const started = Date.now();
    const stopped = await this.engine.stop(this.id, graceSeconds, this.opts.signal);
    if (!stopped) return { kind: 'proof-failed', record: undefined, why: 'proof-failed' };
    const killed = await this.killedByEngine(Date.now() - started, graceSeconds);
    return { kind: 'stopped', sample: check.sample!, graceSeconds, ...(killed !== undefined ? { killed } : {}) };
  }

  /**
   * Whether a stop that took `tookMs` ended in the engine's SIGKILL. One that answered before its grace was over
   * exited on SIGTERM (the engine kills only when the grace has passed): no request. Else an inspect tells by the
   * exit code (137 = 128 + SIGKILL); undefined when that look fails.
   */
  private async killedByEngine(tookMs: number, graceSeconds: number): Promise<boolean | undefined> {
    if (tookMs < graceSeconds * 1000 - GRACE_SLACK_MS) return false;
    const after = await this.inspect().catch(() => null);
    return after?.exitCode === undefined ? undefined : after.exitCode === KILLED_EXIT_CODE;
  }

  /**
   * The re-check failed. When the engine's sample is quiet but shows activity, it may be a restarted container's (a
   * new cgroup's counters) asked for by id under a `StartedAt` read before the restart: one more inspect tells, and
   * a restart is `declined` (judged afresh: `observing`), never `proof-failed`. (A cgroup's sample cannot be: it is
   * read through the inspected init process, gone with a restart.)
   */
  private async failed(check: Check): Promise<StopOutcome> {
    const { sample, processLimit: limit } = check;
    const busy = sample ? occupancy(sample, limit) : 'quiet';
    if (busy === 'quiet' && sample && check.fromEngine && check.running && showsActivity(this.record.last, sample)) {
      const again = await this.inspect();
      if (!again) return { kind: 'gone' };
      if (this.restarted(again)) return { kind: 'declined', details: again };
    }
    const why = busy === 'in-use' ? 'in-use' : busy === 'unknown' ? 'processes-unknown' : 'proof-failed';
    return { kind: 'proof-failed', record: sample ? observe(this.record, sample, limit) : undefined, why };
  }
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

/**
 * The cost of a stop: the size of the sandbox's writable layer (`SizeRw`, what it wrote outside its mounts: every
 * package installed outside the bind-mounted `/root` and `/workspace`). hermes' own reaper removes a sandbox the
 * janitor stopped at its next start once it has been stopped for 2 x its lifetime, and this layer with it, unless
 * `terminal.docker_orphan_reaper` is off. Asked only of the sandboxes the idle rule stops (the engine walks the layer).
 * Measured by an inspect that asks for it (`?size=1`: `SizeRw`). Null when it cannot be known (the engine gives no
 * size, no answer, the run's time is up): the stop is never held up by it.
 */
export async function writableLayerBytes(engine: EngineClient, id: string, signal?: AbortSignal): Promise<number | null> {
  if (signal?.aborted) return null;
  try {
    return (await engine.inspect(id, signal, { size: true }))?.sizeRw ?? null;
  } catch {
    return null;
  }
}
