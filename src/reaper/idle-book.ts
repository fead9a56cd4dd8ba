/**
 * The idle observations of one engine during a sweep: loaded at the start, judged per running container, merged
 * back (under the state file's lock) at the end. Records of containers that no longer run, or no longer exist,
 * are dropped.
 */
import type { ContainerDetails, EngineClient } from '../adapters/engine.js';
import { type IdleRecord, decideStop, mergeIdleState, observe, parseIdleState, processLimit } from '../core/idle.js';
import { STATS_CONCURRENCY, STOP_CONCURRENCY } from '../defaults.js';
import { errorMessage } from '../errors.js';
import { limiter } from '../util/pool.js';
import type { AbandonedLoad } from './exec-trees.js';
import { execsInFlight, takeSample, withLocalCount } from './idle-stop.js';
import type { IdleOptions } from './sweep.js';

export type StopDecision = ReturnType<typeof decideStop>;

export class IdleBook {
  readonly observed = new Map<string, IdleRecord>();
  readonly forget = new Set<string>();
  readonly seen = new Set<string>();
  private previous: Record<string, IdleRecord> = {};
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
      this.previous = parseIdleState(r.value).engines[this.host] ?? {};
    } catch (err) {
      this.warnings.push(`cannot read the idle state ${this.opts.store.location} (${errorMessage(err)}); observing afresh`);
    }
  }

  prev(id: string): IdleRecord | undefined {
    return this.observed.get(id) ?? this.previous[id];
  }

  /** The most processes `d` may hold and still be idle. */
  limitOf(d: Pick<ContainerDetails, 'init'>): number {
    return processLimit(d.init, this.opts.maxProcesses);
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
  tentativeStop(prev: IdleRecord, now: { startedAt: string; execIds: readonly string[]; limit: number }, asOf: Date): StopDecision {
    const samples = prev.samples === 0 ? 0 : prev.samples + 1;
    return decideStop(
      { enabled: true, record: { ...prev, samples }, startedAt: now.startedAt, execIds: now.execIds, processLimit: now.limit },
      this.idleInstant(asOf),
      this.opts.idleAfterSeconds,
    );
  }

  /** What the idle rule says of one running, selected, not excluded container (one sample taken). */
  async judgeRunning(
    engine: EngineClient, d0: ContainerDetails, asOf: Date, signal: AbortSignal | undefined, abandoned?: AbandonedLoad,
  ): Promise<{ record: IdleRecord | undefined; decision: StopDecision }> {
    // Abandoned exec trees (exec-trees.ts) are nobody's use: their execs and processes are left out.
    const d = abandoned?.execIds.size ? { ...d0, execIds: d0.execIds.filter((id) => !abandoned.execIds.has(id)) } : d0;
    const taken = d.status.toLowerCase() === 'running' ? await this.reads(() => takeSample(engine, d, this.now, signal)) : null;
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
      { enabled: this.opts.stopIdle, record, startedAt: d.startedAt, execIds, processLimit: limit },
      this.idleInstant(asOf),
      this.opts.idleAfterSeconds,
    );
    return { record, decision };
  }

  /** Writes the observations back; with a complete sweep, first drops records of containers that no longer exist. */
  async save(engine: EngineClient, complete: boolean, signal: AbortSignal | undefined): Promise<void> {
    const store = this.opts.store;
    if (!store) return;
    if (complete) await this.forgetVanished(engine, signal);
    if (this.observed.size === 0 && this.forget.size === 0) return;
    try {
      await store.update((cur) => ({ next: mergeIdleState(parseIdleState(cur.value), this.host, this.observed, this.forget), result: undefined }));
    } catch (err) {
      this.warnings.push(`cannot record idle observations in ${store.location} (${errorMessage(err)})`);
    }
  }

  /** Records of containers this sweep did not see, and the engine no longer knows, are dropped. */
  private async forgetVanished(engine: EngineClient, signal: AbortSignal | undefined): Promise<void> {
    const unseen = Object.keys(this.previous).filter((id) => !this.seen.has(id));
    for (let i = 0; i < unseen.length; i += 100) {
      const chunk = unseen.slice(i, i + 100);
      try {
        const exist = new Set((await engine.list({ labels: [], ids: chunk }, signal)).map((r) => r.id));
        for (const id of chunk) if (!exist.has(id)) this.forget.add(id);
      } catch {
        return; // kept for now; dropped by a later sweep
      }
    }
  }
}
