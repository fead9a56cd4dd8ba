/**
 * The idle observations of one engine during a sweep: loaded at the start, judged per running container, merged
 * back (under the state file's lock) at the end. Records of containers that no longer run, or no longer exist,
 * are dropped.
 */
import type { ContainerDetails, EngineClient } from '../adapters/engine.js';
import type { EngineProcess } from '../adapters/pid-namespace.js';
import { type IdleRecord, type StopRecord, decideStop, mergeIdleState, retentionEnd, mergeStops, observe, parseIdleState, processLimit } from '../core/idle.js';
import { type OwnerView, type SandboxOwner, idleThresholdFor, ownerOf } from '../core/owners.js';
import { DEFAULT_IDLE_AFTER_OWNED_SECONDS, PROFILE_LABEL, STATS_CONCURRENCY, STOP_CONCURRENCY } from '../defaults.js';
import { errorMessage } from '../errors.js';
import { limiter } from '../util/pool.js';
import type { AbandonedLoad } from '../passes/sweep-pass.js';
import { execsInFlight, localSample, takeSample, withLocalCount } from './idle-stop.js';
import type { IdleOptions } from './sweep-types.js';
import { withLabelSweeps } from './sweep-passes.js';

export type StopDecision = ReturnType<typeof decideStop>;

/** What else a running container is judged with: its abandoned exec trees (left out) and its owner, if any. */
export interface RunningJudgement {
  abandoned?: AbandonedLoad | undefined;
  owner?: SandboxOwner | null;
  /**
   * Take the sample from the container's cgroup on this host where it can be proven the container's (`list`): the
   * same counters the engine's stats report, read at once, where Docker answers a one-shot stats request only at its
   * stats collector's next pass (up to a second away). The engine is asked where the cgroup cannot be read here.
   */
  localFirst?: boolean;
}

export class IdleBook {
  readonly observed = new Map<string, IdleRecord>();
  readonly forget = new Set<string>();
  readonly seen = new Set<string>();
  private previous: Record<string, IdleRecord> = {};
  /** The janitor's stops of this engine (loaded), those made by this run, and those to drop. */
  private previousStops: Record<string, StopRecord> = {};
  readonly stops = new Map<string, StopRecord>();
  readonly forgetStops = new Set<string>();
  /** The owners as seen at the start of the sweep (null: owners not considered). */
  private ownerView: OwnerView | null = null;
  readonly now: () => Date;
  /** Running containers are judged apart from the inspect/remove workers, so their samples go out together. */
  readonly pending: Array<Promise<void>> = [];
  /** Stats and re-check reads (cheap; answered together by the engine's stats collector). */
  readonly reads = limiter(STATS_CONCURRENCY);
  /** Stops (each ends a container's processes): at most STOP_CONCURRENCY, or --concurrency if higher. */
  readonly acts: ReturnType<typeof limiter>;
  constructor(
    readonly opts: IdleOptions,
    private readonly host: string,
    private readonly warnings: string[],
    concurrency: number,
  ) {
    this.now = opts.now ?? (() => new Date());
    this.acts = limiter(Math.max(concurrency, STOP_CONCURRENCY));
  }

  async load(): Promise<void> {
    if (!this.opts.store) return;
    try {
      const r = await this.opts.store.read();
      if (r.problem) this.warnings.push(r.problem);
      const state = parseIdleState(r.value);
      this.previous = state.engines[this.host] ?? {};
      this.previousStops = state.stops?.[this.host] ?? {};
    } catch (err) {
      this.warnings.push(`cannot read the idle state ${this.opts.store.location} (${errorMessage(err)}); observing afresh`);
    }
  }

  /**
   * The owner of a sandbox of `profile` (`fresh`: from the process table read now; else as read at the start of the
   * sweep), or null when it is abandoned. `sandbox`: the running container judged (its `State.Pid` can prove the
   * janitor's view of processes the engine's). A partial view (the janitor's pid namespace is not the host's) is said
   * once, as a warning of the run.
   */
  async ownerFor(profile: string | null, sandbox: Pick<ContainerDetails, 'id' | 'pid'>, fresh = false): Promise<SandboxOwner | null> {
    if (!this.opts.owners) return null;
    if (fresh || !this.ownerView || this.ownerView.pidNamespace) await this.refreshOwners(sandbox);
    return ownerOf(this.ownerView!, profile);
  }
  /** `ownerFor` from the view last read (`refreshOwners`), for a decision that cannot wait. */
  ownerNow(profile: string | null): SandboxOwner | null {
    return this.opts.owners && this.ownerView ? ownerOf(this.ownerView, profile) : null;
  }

  /** Reads the process table afresh (right before a stop), with the sandbox judged as evidence of the pid namespace. */
  async refreshOwners(sandbox: Pick<ContainerDetails, 'id' | 'pid'>): Promise<void> {
    if (!this.opts.owners) return;
    this.ownerView = await this.opts.owners(this.host, { id: sandbox.id, pid: sandbox.pid });
    const partial = this.ownerView.pidNamespace;
    if (partial && !this.warnings.includes(partial)) this.warnings.push(partial);
  }

  private readonly rules = new Map<string, IdleOptions>();

  /**
   * The idle rule of a container with these labels: its profile label's own (`IdleOptions.byProfile`), else the run's.
   * One object per label (a sweep of many containers allocates nothing per container).
   */
  ruleOf(labels: Readonly<Record<string, string>>): IdleOptions {
    const label = labels[PROFILE_LABEL];
    const own = label !== undefined && this.opts.byProfile && Object.hasOwn(this.opts.byProfile, label) ? this.opts.byProfile[label]! : null;
    if (!own) return this.opts;
    let rule = this.rules.get(label!);
    if (!rule) {
      const { sweeps, maxProcesses, ...rest } = own;
      rule = { ...this.opts, ...rest };
      const withLabel = withLabelSweeps(this.opts.sweeps, sweeps);
      if (withLabel) rule.sweeps = withLabel;
      if (maxProcesses === undefined) delete rule.maxProcesses;
      else rule.maxProcesses = maxProcesses;
      this.rules.set(label!, rule);
    }
    return rule;
  }

  /** The idle threshold of a sandbox with these labels whose owner is `owner` (null: abandoned). */
  thresholdOf(owner: SandboxOwner | null, labels: Readonly<Record<string, string>> = {}): number {
    const rule = this.ruleOf(labels);
    return idleThresholdFor(
      owner !== null,
      rule.idleAfterSeconds,
      rule.idleAfterOwnedSeconds === undefined ? DEFAULT_IDLE_AFTER_OWNED_SECONDS : rule.idleAfterOwnedSeconds,
    );
  }

  /**
   * An exited container the janitor stopped within the retention: when the retention ends (ms since the epoch), else
   * null (a stale record, of a run started since, is dropped).
   */
  retainedUntil(d: Pick<ContainerDetails, 'id' | 'startedAt' | 'labels'>, asOf: Date): number | null {
    const stop = this.stops.get(d.id) ?? this.previousStops[d.id];
    if (!stop) return null;
    if (stop.startedAt !== d.startedAt) {
      this.forgetStops.add(d.id);
      return null;
    }
    return retentionEnd(stop, d.startedAt, this.idleInstant(asOf).getTime(), this.ruleOf(d.labels).stoppedRetentionSeconds ?? 0);
  }

  /** Records a stop this run made (the container's `StartedAt`, now). */
  recordStop(id: string, startedAt: string): void {
    this.stops.set(id, { startedAt, stoppedAt: this.now().toISOString() });
  }

  prev(id: string): IdleRecord | undefined {
    return this.observed.get(id) ?? this.previous[id];
  }

  /** The most processes `d` may hold and still be idle. */
  limitOf(d: Pick<ContainerDetails, 'init' | 'labels'>): number {
    return processLimit(d.init, this.ruleOf(d.labels).maxProcesses);
  }

  record(id: string, r: IdleRecord | undefined): void {
    if (r) this.observed.set(id, r);
    else this.drop(id);
  }

  drop(id: string): void {
    this.observed.delete(id);
    if (Object.hasOwn(this.previous, id)) this.forget.add(id); // nothing to write for a container never recorded
  }

  /** Idleness is measured, never projected: an --as-of later than now does not lengthen it. */
  idleInstant(asOf: Date): Date {
    return new Date(Math.min(asOf.getTime(), this.now().getTime()));
  }

  /**
   * The stop decision for `prev` if a sample taken now shows nothing since its last one (a proof not started, because
   * its last sample was in use or had no count, stays unstarted).
   */
  tentativeStop(
    prev: IdleRecord,
    now: { startedAt: string; execIds: readonly string[]; limit: number; owner?: SandboxOwner | null; labels: Readonly<Record<string, string>> },
    asOf: Date,
  ): StopDecision {
    const samples = prev.samples === 0 ? 0 : prev.samples + 1;
    const owner = now.owner ?? null;
    const decision = decideStop(
      { enabled: true, record: { ...prev, samples }, startedAt: now.startedAt, execIds: now.execIds, processLimit: now.limit },
      this.idleInstant(asOf),
      this.thresholdOf(owner, now.labels),
    );
    return ownedReason(decision, owner);
  }

  /** What the idle rule says of one running, selected, not excluded container (one sample taken). */
  async judgeRunning(
    engine: EngineClient,
    d0: ContainerDetails,
    asOf: Date,
    signal: AbortSignal | undefined,
    by: RunningJudgement = {},
  ): Promise<{ record: IdleRecord | undefined; decision: StopDecision }> {
    const { abandoned, owner = null } = by;
    // Abandoned exec trees (a sweep pass's load) are nobody's use: their execs and processes are left out.
    const d = abandoned?.execIds.size ? { ...d0, execIds: d0.execIds.filter((id) => !abandoned.execIds.has(id)) } : d0;
    const running = d.status.toLowerCase() === 'running';
    const local = running && by.localFirst ? localSample(d, this.now, this.opts.localCounters) : null;
    const taken = local ?? (running ? await this.reads(() => takeSample(engine, d, this.now, signal)) : null);
    const counted = withLocalCount(taken, d, this.opts.localCounters);
    const sample = counted?.pids !== undefined && abandoned?.processes ? { ...counted, pids: Math.max(1, counted.pids - abandoned.processes) } : counted;
    const limit = this.limitOf(d);
    const record = sample ? observe(this.prev(d.id), sample, limit) : undefined;
    this.record(d.id, record);
    // Finished execs (Podman keeps them listed) are only asked about when they could matter: a proof that could
    // hold, or processes beyond the init and the command that an exec in flight would explain.
    const asked = record && (record.samples >= 2 || (record.samples === 0 && record.last.pids !== undefined));
    const execIds = asked && d.execIds.length ? await this.reads(() => execsInFlight(engine, d.execIds, signal)) : d.execIds;
    const decision = decideStop(
      { enabled: this.ruleOf(d.labels).stopIdle, record, startedAt: d.startedAt, execIds, processLimit: limit },
      this.idleInstant(asOf),
      this.thresholdOf(owner, d.labels),
    );
    return { record, decision: ownedReason(decision, owner) };
  }

  /** Writes the observations back; with a complete sweep, first drops records of containers that no longer exist. */
  async save(engine: EngineClient, complete: boolean, signal: AbortSignal | undefined): Promise<void> {
    const store = this.opts.store;
    if (!store) return;
    if (complete) await this.forgetVanished(engine, signal);
    if (this.observed.size === 0 && this.forget.size === 0 && this.stops.size === 0 && this.forgetStops.size === 0) return;
    try {
      await store.update((cur) => ({
        next: mergeStops(mergeIdleState(parseIdleState(cur.value), this.host, this.observed, this.forget), this.host, this.stops, this.forgetStops),
        result: undefined,
      }));
    } catch (err) {
      this.warnings.push(`cannot record idle observations in ${store.location} (${errorMessage(err)})`);
    }
  }

  /** Records of containers this sweep did not see, and the engine no longer knows, are dropped. */
  private async forgetVanished(engine: EngineClient, signal: AbortSignal | undefined): Promise<void> {
    const unseen = [...new Set([...Object.keys(this.previous), ...Object.keys(this.previousStops)])].filter((id) => !this.seen.has(id));
    for (let i = 0; i < unseen.length; i += 100) {
      const chunk = unseen.slice(i, i + 100);
      try {
        const exist = new Set((await engine.list({ labels: [], ids: chunk }, signal)).map((r) => r.id));
        for (const id of chunk) {
          if (exist.has(id)) continue;
          if (Object.hasOwn(this.previous, id)) this.forget.add(id);
          if (Object.hasOwn(this.previousStops, id)) this.forgetStops.add(id);
        }
      } catch {
        return; // kept for now; dropped by a later sweep
      }
    }
  }
}

/** An owned sandbox kept by the longer threshold says so: `owner-alive`, while that threshold is not reached. */
function ownedReason(d: StopDecision, owner: SandboxOwner | null): StopDecision {
  if (!owner || d.stop || (d.why !== 'idle-too-recent' && d.why !== 'started-recently')) return d;
  return { ...d, why: 'owner-alive' };
}
