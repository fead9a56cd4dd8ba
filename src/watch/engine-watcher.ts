/**
 * One engine under watch: subscribe to its container events, sweep it in full (so nothing that happened while
 * away is missed), then follow the events, acting at each deadline. Reconnects with capped exponential backoff
 * when the engine goes away, and never gives up on it.
 */
import type { EngineClient, EngineEvent } from '../adapters/engine.js';
import { engineLabelFilters, isSelected, type Selection } from '../core/selection.js';
import type { TiedRoot } from '../core/policy.js';
import type { Held } from '../hermes/judgement.js';
import { thresholdFor } from '../core/policy.js';
import { PROFILE_LABEL } from '../defaults.js';
import type { EngineProfileCounts } from '../adapters/metrics.js';
import { errorMessage } from '../errors.js';
import type { Pass } from '../passes/types.js';
import { countsByEngineAndProfile } from '../reaper/run-metrics.js';
import type { FailedEntry, IdleOptions, KeptEntry, ReapResult, StoppedEntry, SweepEntry, SweepEvent } from '../reaper/sweep-types.js';
import { reap } from '../reaper/sweep.js';
import { type Sleep, backoffMs, realSleep } from './backoff.js';
import { type IdleTracking, type TrackerState, applyEvent, deadlineOfKept, forgetFromSweep, newTracker, seedFromSweep } from './tracker.js';

export type EngineState = 'connecting' | 'connected' | 'disconnected';

/** What a watcher reports (logged, counted). */
export type WatchEvent =
  | { type: 'engine'; host: string; state: EngineState; error?: string; retryInMs?: number }
  | { type: 'removed'; host: string; entry: SweepEntry; dryRun: boolean; trigger: 'sweep' | 'deadline' }
  | { type: 'stopped'; host: string; entry: StoppedEntry; dryRun: boolean; trigger: 'sweep' | 'deadline' }
  | { type: 'failed'; host: string; entry: FailedEntry; trigger: 'sweep' | 'deadline' }
  | { type: 'kept'; host: string; entry: KeptEntry; trigger: 'sweep' | 'deadline' }
  | ({ type: 'sweep'; tracked: number } & RunSummary)
  | ({ type: 'deadline-check' } & RunSummary)
  | { type: 'event'; host: string; event: EngineEvent }
  | ({ host: string; trigger: 'sweep' | 'deadline' } & Extract<SweepEvent, { type: 'exec-tree' }>);

/** The end of one run (a full sweep or a deadline check) on one engine. */
export interface RunSummary {
  host: string;
  removed: number;
  stopped: number;
  kept: number;
  failed: number;
  durationMs: number;
  interrupted: boolean;
  /** `watch --dry-run`: `removed` and `stopped` count what would have been. */
  dryRun: boolean;
  warnings: string[];
  /** Per profile, as `reap --metrics-file` counts a run. */
  counts: EngineProfileCounts[];
  /** The gauges of the sweep passes (the exec trees past the bound this run ended, kept, failed to end). */
  sweepGauges: ReadonlyArray<{ pass: Pass; gauges: unknown }>;
}

/** What the policy needs for one engine. */
export interface WatchPolicy {
  selection: Selection;
  thresholdSeconds: number;
  concurrency: number;
  dryRun: boolean;
  /** Bound on each full sweep (0: none). */
  sweepTimeoutMs: number;
  /** The idle rule, as `reap` runs it (omitted: running containers are neither sampled nor stopped). */
  idle?: IdleOptions;
  /** Leave removed containers' anonymous volumes behind. */
  keepVolumes?: boolean;
  /** Each label's own threshold (`SweepRequest.thresholdByProfile`): deadlines follow the container's. */
  thresholdByProfile?: Readonly<Record<string, number>>;
  /** Labels nothing is removed or stopped for (`SweepRequest.held`). */
  held?: Readonly<Record<string, Held>>;
  /** A run over several homes: the labels some home has (`SweepRequest.knownProfiles`). */
  knownProfiles?: ReadonlySet<string>;
  /** A run over several homes: each home's sandbox roots (`SweepRequest.tiedRoots`). */
  tiedRoots?: readonly TiedRoot[];
}

/** The idle rule as the tracker needs it: null unless idle sandboxes are stopped. */
export function idleTracking(policy: WatchPolicy, labels: Readonly<Record<string, string>> = {}): IdleTracking | null {
  const label = labels[PROFILE_LABEL];
  const own = label !== undefined && policy.idle?.byProfile && Object.hasOwn(policy.idle.byProfile, label) ? policy.idle.byProfile[label] : undefined;
  const rule = policy.idle ? (own ?? policy.idle) : undefined;
  return rule?.stopIdle ? { idleAfterSeconds: rule.idleAfterSeconds } : null;
}

/** The labels a container of `profile` (its label value) is judged by. */
const labelsOf = (profile: string | null): Record<string, string> => (profile === null ? {} : { [PROFILE_LABEL]: profile });

/** The request of every run of `watch` (full sweep or deadline check): the very one `reap` makes. */
/** One sweep's own part of a request: its instant, its signal, and where its events go. */
interface SweepRun {
  asOf: Date;
  signal: AbortSignal;
  onEvent?: Parameters<typeof reap>[0]['onEvent'];
  /** When each exec started, from the `exec_start` events seen (ms), by exec id. */
  execStarts?: ReadonlyMap<string, number>;
  /** When the run's `--timeout` runs out (`Date.now()` ms): stops are cut to fit (`SweepRequest.deadlineMs`). */
  deadlineMs?: number;
}

function reapRequest(engine: EngineClient, policy: WatchPolicy, { asOf, signal, onEvent, execStarts, deadlineMs }: SweepRun) {
  return {
    engine,
    selection: policy.selection,
    thresholdSeconds: policy.thresholdSeconds,
    asOf,
    concurrency: policy.concurrency,
    dryRun: policy.dryRun,
    signal,
    ...(deadlineMs !== undefined ? { deadlineMs } : {}),
    ...(policy.idle ? { idle: execStarts ? { ...policy.idle, execStarts } : policy.idle } : {}),
    ...(policy.keepVolumes ? { keepVolumes: true } : {}),
    ...(policy.thresholdByProfile ? { thresholdByProfile: policy.thresholdByProfile } : {}),
    ...(policy.held ? { held: policy.held } : {}),
    ...(policy.knownProfiles ? { knownProfiles: policy.knownProfiles } : {}),
    ...(policy.tiedRoots ? { tiedRoots: policy.tiedRoots } : {}),
    ...(onEvent ? { onEvent } : {}),
  };
}

export interface WatcherDeps {
  /** The passes that run inside the sweep, for their gauges (`passes/index.ts`, kind `sweep`); default none. */
  sweepPasses?: readonly Pass[];
  clock?: () => number;
  sleep?: Sleep;
  /** Ping while connected this often, to notice an engine that went silent (default 30 s). */
  heartbeatMs?: number;
  /** Containers checked per deadline batch. */
  batchSize?: number;
  /** Retry a container whose removal failed after this long (default 60 s). */
  retryFailedMs?: number;
  /**
   * A run bounded by `--timeout` begins (a full sweep, a deadline check): `watch`'s supervisor ends the work past its
   * deadline whatever it is doing (cli/watch-supervisor.ts). Returns the run's end.
   */
  supervise?: (label: string, deadlineMs: number) => () => void;
}

/** Which failure keeps a container tracked for another try, how long later. */
const DEFAULT_RETRY_FAILED_MS = 60_000;
/** `exec_start` times kept by `watch` (an exec of a container removed without its `exec_die` is dropped in turn). */
const EXEC_STARTS_KEPT = 10_000;

/**
 * The action at a deadline: re-inspects these containers and removes only what the policy still allows. It is
 * the very sweep `reap` runs, narrowed to these ids, so every rule `reap` has applies here unchanged.
 */
export function recheckDue(engine: EngineClient, policy: WatchPolicy, ids: string[], run: SweepRun): Promise<ReapResult> {
  return reap({ ...reapRequest(engine, policy, run), ids, onlyIds: new Set(ids) });
}

export class EngineWatcher {
  readonly tracker: TrackerState = newTracker();
  state: EngineState = 'connecting';
  private readonly clock: () => number;
  private readonly sleep: Sleep;
  private readonly heartbeatMs: number;
  private readonly batchSize: number;
  private readonly retryFailedMs: number;
  private readonly sweepPasses: readonly Pass[];
  private readonly supervise: WatcherDeps['supervise'];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private checking: Promise<void> | null = null;
  private connection: AbortController | null = null;
  private stopping = false;
  /**
   * Dry run: the idle period (start of its proof, ms) each container's would-stop was said for. A dry run stops
   * nothing, so the same sandbox is found idle again at every idle re-check; the log says it once per idle period,
   * and again only once activity or a restart reset the proof (a new start of idleness).
   */
  private readonly wouldStopSaid = new Map<string, number>();
  /** When each exec started, from the engine's `exec_start` events (`timeNano`), by exec id; an exec's age where seen. */
  private readonly execStarts = new Map<string, number>();

  constructor(
    readonly engine: EngineClient,
    private readonly policy: WatchPolicy,
    private readonly report: (ev: WatchEvent) => void,
    /** Aborted at shutdown: in-flight requests end (the service gives them a grace period first). */
    private readonly hardSignal: AbortSignal,
    deps: WatcherDeps = {},
  ) {
    this.clock = deps.clock ?? Date.now;
    this.sleep = deps.sleep ?? realSleep;
    this.heartbeatMs = deps.heartbeatMs ?? 30_000;
    this.batchSize = deps.batchSize ?? 100;
    this.retryFailedMs = deps.retryFailedMs ?? DEFAULT_RETRY_FAILED_MS;
    this.sweepPasses = (deps.sweepPasses ?? []).filter((p) => p.kind === 'sweep' && p.fromSweeps && p.gaugesOf);
    this.supervise = deps.supervise;
  }

  /** A run of this engine bounded by `--timeout` (when given) begins at `startedMs`: its end, and its deadline. */
  private bounded(label: string, startedMs: number): { end: () => void; deadlineMs?: number; signal?: AbortSignal } {
    const ms = this.policy.sweepTimeoutMs;
    if (!(ms > 0)) return { end: () => undefined };
    const deadlineMs = startedMs + ms;
    return { end: this.supervise?.(`${label} of ${this.host}`, deadlineMs) ?? (() => undefined), deadlineMs, signal: AbortSignal.timeout(ms) };
  }

  /** The idle rule as the tracker needs it, from the policy as it stands (`watch` reloads hermes' settings). */
  /** The idle rule of a container with these labels (its profile's own, else the run's). */
  private idleOf(labels: Readonly<Record<string, string>>): IdleTracking | null {
    return idleTracking(this.policy, labels);
  }

  get host(): string {
    return this.engine.host;
  }

  /** The threshold a container of `profile` (its label value) is judged by. */
  private thresholdOf(profile: string | null): number {
    return thresholdFor(this.policy, labelsOf(profile));
  }

  get tracked(): number {
    return this.tracker.deadlines.size;
  }

  private setState(state: EngineState, extra: { error?: string; retryInMs?: number } = {}): void {
    if (this.state === state) return; // each change of state is logged once
    this.state = state;
    this.report({ type: 'engine', host: this.host, state, ...extra });
  }

  /** Runs until `stop` aborts: connect, sweep, follow; on loss wait and start over. */
  async run(stop: AbortSignal): Promise<void> {
    let attempt = 0;
    while (!stop.aborted) {
      const conn = new AbortController();
      this.connection = conn;
      const onStop = () => conn.abort();
      stop.addEventListener('abort', onStop, { once: true });
      let heartbeat: NodeJS.Timeout | undefined;
      try {
        const stream = await this.engine.events({ labels: engineLabelFilters(this.policy.selection) }, conn.signal);
        // Subscribed: nothing from now on is missed. Resync from scratch, then follow.
        this.tracker.deadlines.clear();
        this.tracker.lastEventMs.clear();
        const following = this.follow(stream, conn.signal);
        following.catch(() => undefined);
        await this.sweep(conn.signal);
        if (conn.signal.aborted) throw new Error('connection lost during the sweep');
        this.setState('connected');
        attempt = 0;
        heartbeat = setInterval(() => {
          this.engine.ping(conn.signal).catch(() => conn.abort(new Error('the engine stopped answering pings')));
        }, this.heartbeatMs);
        heartbeat.unref();
        this.arm();
        await following;
        if (!stop.aborted) throw new Error('the event stream ended');
      } catch (err) {
        if (stop.aborted) break;
        const delay = backoffMs(attempt++);
        const reason = conn.signal.aborted && conn.signal.reason instanceof Error ? conn.signal.reason : err;
        this.setState('disconnected', { error: errorMessage(reason), retryInMs: delay });
        conn.abort();
        this.disarm();
        await this.checking;
        await this.sleep(delay, stop);
      } finally {
        clearInterval(heartbeat);
        stop.removeEventListener('abort', onStop);
        conn.abort();
      }
    }
    this.stopping = true;
    this.disarm();
  }

  /** Applies events as they come; throws when the stream is lost. */
  private async follow(stream: AsyncIterable<EngineEvent>, signal: AbortSignal): Promise<void> {
    for await (const ev of stream) {
      if (signal.aborted) return;
      // A profile selected by several label values is not filtered by the engine (`engineLabelFilters`): here.
      const sel = this.policy.selection;
      if (sel.profileValues && sel.profileValues.length > 1 && Object.hasOwn(ev.attributes, sel.profileLabel) && !isSelected(sel, ev.attributes)) continue;
      this.report({ type: 'event', host: this.host, event: ev });
      this.noteExec(ev);
      const t = applyEvent(this.tracker, ev, thresholdFor(this.policy, ev.attributes), this.clock, this.idleOf(ev.attributes));
      if (t.kind === 'forgotten') this.wouldStopSaid.delete(t.id);
      if (t.kind !== 'ignored' && (t.kind !== 'activity' || t.recheckAt !== undefined)) this.arm();
    }
  }

  /** Keeps `exec_start` times (at most EXEC_STARTS_KEPT, oldest dropped first); an `exec_die` drops its exec. */
  private noteExec(ev: EngineEvent): void {
    const execId = ev.attributes.execID;
    if (!execId) return;
    if (ev.action === 'exec_die') this.execStarts.delete(execId);
    else if (ev.action === 'exec_start' && Number.isFinite(ev.timeMs)) {
      this.execStarts.set(execId, ev.timeMs);
      if (this.execStarts.size > EXEC_STARTS_KEPT) this.execStarts.delete(this.execStarts.keys().next().value!);
    }
  }

  private async sweep(signal: AbortSignal): Promise<void> {
    const started = this.clock();
    const run = this.bounded('the sweep', started);
    let r: ReapResult;
    try {
      r = await reap(
        reapRequest(this.engine, this.policy, {
          asOf: new Date(started),
          signal: AbortSignal.any([signal, this.hardSignal, ...(run.signal ? [run.signal] : [])]),
          onEvent: (ev) => this.onSweepEvent(ev, 'sweep', started),
          execStarts: this.execStarts,
          ...(run.deadlineMs !== undefined ? { deadlineMs: run.deadlineMs } : {}),
        }),
      );
    } finally {
      run.end();
    }
    this.report({ type: 'sweep', tracked: this.tracked, ...this.summary(r, started) });
    if (r.interrupted?.kind === 'engine') throw new Error(r.interrupted.error);
  }

  private summary(r: ReapResult, startedMs: number): RunSummary {
    return {
      host: this.host,
      removed: r.removed.length,
      stopped: r.stopped.length,
      kept: r.kept.length,
      failed: r.failed.length,
      durationMs: this.clock() - startedMs,
      interrupted: r.interrupted !== null,
      dryRun: this.policy.dryRun,
      warnings: r.warnings,
      counts: countsByEngineAndProfile([{ host: this.host, result: r }], this.policy.selection.profile, this.policy.dryRun),
      sweepGauges: this.sweepPasses.map((pass) => ({ pass, gauges: pass.gaugesOf!(pass.fromSweeps!([r]), this.policy.dryRun) })),
    };
  }

  private onSweepEvent(ev: Parameters<NonNullable<Parameters<typeof reap>[0]['onEvent']>>[0], trigger: 'sweep' | 'deadline', startedMs: number): void {
    switch (ev.type) {
      case 'removed':
        this.tracker.deadlines.delete(ev.entry.id);
        this.wouldStopSaid.delete(ev.entry.id);
        this.report({ type: 'removed', host: this.host, entry: ev.entry, dryRun: ev.dryRun, trigger });
        return;
      case 'failed': {
        seedFromSweep(this.tracker, ev.entry.id, this.clock() + this.retryFailedMs, startedMs);
        this.report({ type: 'failed', host: this.host, entry: ev.entry, trigger });
        return;
      }
      case 'stopped': {
        // Stopped: its `die` event brings the exit deadline; until then, one as of now (its FinishedAt is about
        // now). A dry run looks again one idle threshold later.
        const after = this.policy.dryRun ? (this.idleOf(labelsOf(ev.entry.profile))?.idleAfterSeconds ?? 0) : this.thresholdOf(ev.entry.profile);
        seedFromSweep(this.tracker, ev.entry.id, this.clock() + after * 1000, startedMs);
        if (ev.dryRun) {
          // Idle seconds are as of the run's asOf (startedMs): their difference is the proof's `since`, to the ms.
          const since = Math.round(startedMs - ev.entry.idleSeconds * 1000);
          const said = this.wouldStopSaid.get(ev.entry.id) === since;
          this.wouldStopSaid.set(ev.entry.id, since);
          if (said) return;
        }
        this.report({ type: 'stopped', host: this.host, entry: ev.entry, dryRun: ev.dryRun, trigger });
        return;
      }
      case 'exec-tree':
        this.report({ ...ev, host: this.host, trigger });
        return;
      case 'kept': {
        const at = deadlineOfKept(ev.entry, this.thresholdOf(ev.entry.profile), { asOfMs: startedMs, idle: this.idleOf(labelsOf(ev.entry.profile)) });
        if (at !== null) seedFromSweep(this.tracker, ev.entry.id, at, startedMs);
        else if (trigger === 'deadline') forgetFromSweep(this.tracker, ev.entry.id, startedMs);
        if (trigger === 'deadline') this.report({ type: 'kept', host: this.host, entry: ev.entry, trigger });
        return;
      }
      case 'candidates':
      case 'listed':
        return; // the sweep's own progress: watch reports each container's outcome
    }
  }

  /** One timer, for the earliest deadline. */
  private arm(): void {
    if (this.stopping || this.state !== 'connected' || this.checking) return;
    const next = this.tracker.deadlines.peek();
    if (!next) return this.disarm();
    if (next.at === this.timerAt && this.timer) return;
    this.disarm();
    this.timerAt = next.at;
    const delay = Math.min(Math.max(0, next.at - this.clock()), 2 ** 31 - 1);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.checking = this.checkDue().finally(() => {
        this.checking = null;
        this.arm();
      });
    }, delay);
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Acts on every deadline that has passed, earliest first, in batches. */
  private async checkDue(): Promise<void> {
    const conn = this.connection;
    while (conn && !conn.signal.aborted) {
      const now = this.clock();
      const due = this.tracker.deadlines.popDue(now, this.batchSize);
      if (due.length === 0) return;
      const ids = due.map((d) => d.id);
      const started = now;
      const run = this.bounded('a deadline check', started);
      const answered = new Set<string>();
      let r: ReapResult;
      try {
        r = await recheckDue(this.engine, this.policy, ids, {
          asOf: new Date(now),
          signal: AbortSignal.any([conn.signal, this.hardSignal, ...(run.signal ? [run.signal] : [])]),
          onEvent: (ev) => {
            if ('entry' in ev) answered.add(ev.entry.id);
            this.onSweepEvent(ev, 'deadline', started);
          },
          execStarts: this.execStarts,
          ...(run.deadlineMs !== undefined ? { deadlineMs: run.deadlineMs } : {}),
        });
      } catch (err) {
        // Unexpected: keep them for the next sweep, and start over.
        for (const d of due) this.tracker.deadlines.set(d.id, d.at);
        conn.abort(err instanceof Error ? err : new Error(String(err)));
        return;
      } finally {
        run.end();
      }
      this.report({ type: 'deadline-check', ...this.summary(r, started) });
      if (r.interrupted?.kind === 'timeout' && !conn.signal.aborted) {
        // Cut by --timeout: what it did not come to is checked again in the next batch.
        for (const d of due) if (!answered.has(d.id)) this.tracker.deadlines.set(d.id, d.at);
        continue;
      }
      if (r.interrupted) {
        // Not re-checked: the resync after reconnecting covers them.
        if (r.interrupted.kind === 'engine') conn.abort(new Error(r.interrupted.error));
        return;
      }
    }
  }
}
