import type { ContainerDetails, ContainerSummary, EngineClient } from '../adapters/engine.js';
import { anonymousVolumes, isGoing } from '../adapters/engine.js';
import type { StateStore } from '../adapters/state-file.js';
import {
  type IdleKeepReason, type IdleRecord, decideStop, idleSeconds, mergeIdleState, observe, parseIdleState, processLimit,
} from '../core/idle.js';
import { type KeepReason, type Rule, type Verdict, judge } from '../core/policy.js';
import { type Selection, engineLabelFilters, isExcluded, isSelected } from '../core/selection.js';
import { EngineRequestError, EngineUnreachableError, errorMessage } from '../errors.js';
import { forEachBounded, limiter } from '../util/pool.js';
import { DEFAULT_STOP_TIMEOUT_SECONDS, STATS_CONCURRENCY, STOP_CONCURRENCY } from '../defaults.js';
import { type LocalCounters, type StopOutcome, execsInFlight, readLocally, reproveAndStop, takeSample, volumesGone } from './idle-stop.js';

/** One container as reported in every output. */
export interface SweepEntry {
  /** Full container id. */
  id: string;
  name: string;
  profile: string | null;
  state: string;
  /** `State.FinishedAt`, raw. */
  finishedAt: string;
  ageSeconds: number | null;
  /** The engine it lives on. */
  host: string;
  /** The rule it falls under (`exited`, `never-started`, `idle`), or null (paused, restarting, gone...). */
  rule: Rule | null;
  /** Running containers: seconds without activity (null until two samples, or without stats). */
  idleSeconds?: number | null;
  /** Running containers that are not stopped: why (`observing`, `idle-too-recent`, `in-use`, `exec-in-flight`, ...). */
  idleReason?: IdleKeepReason;
  /**
   * Running containers under the idle rule: the processes their cgroup held at this run's sample (null where neither
   * the engine nor the cgroup gave a count). More than its init and its command: `in-use`.
   */
  processes?: number | null;
  /**
   * Removed containers: the anonymous volumes that went with them (a dry run: those that would). Listed
   * containers: the anonymous volumes they hold, present only when they hold some (status counts these).
   */
  volumes?: string[];
}
export interface KeptEntry extends SweepEntry {
  reason: KeepReason;
}
/** A running container stopped (or, in a dry run, that would be) by the idle rule. */
export interface StoppedEntry extends SweepEntry {
  idleSeconds: number;
}
export interface FailedEntry extends SweepEntry {
  error: string;
}
export interface ListedEntry extends SweepEntry {
  verdict: 'reap' | 'stop' | 'keep';
  /** Why it is kept, `expired` for a container the reaper would remove, `idle` for one it would stop. */
  reason: KeepReason | 'expired' | 'idle';
}

/** Why a sweep stopped before its end. */
export type Interruption = { kind: 'timeout' } | { kind: 'engine'; error: string };

export type SweepEvent =
  | { type: 'removed'; entry: SweepEntry; dryRun: boolean }
  | { type: 'stopped'; entry: StoppedEntry; dryRun: boolean }
  | { type: 'kept'; entry: KeptEntry }
  | { type: 'failed'; entry: FailedEntry }
  | { type: 'listed'; entry: ListedEntry }
  | { type: 'candidates'; count: number };

export interface SweepRequest {
  engine: EngineClient;
  selection: Selection;
  thresholdSeconds: number;
  /** Ages are judged as of this instant. */
  asOf: Date;
  concurrency: number;
  /** Aborting stops the sweep (a run-wide timeout); what finished is still reported. */
  signal?: AbortSignal;
  onEvent?: (event: SweepEvent) => void;
  /** Ask the engine for these containers only (full ids): `watch` re-checks one container at its deadline. */
  ids?: string[];
  /** The idle rule: observe running containers (and, in `reap`, stop idle ones). Omitted: running ones are not sampled. */
  idle?: IdleOptions;
}

/** The idle rule's settings for a sweep. */
export interface IdleOptions {
  /** Stop idle sandboxes (else they are only observed). */
  stopIdle: boolean;
  /** Idle threshold in seconds. */
  idleAfterSeconds: number;
  /** Seconds the engine's stop waits before its SIGKILL (default 10). */
  stopTimeoutSeconds?: number;
  /** Where the observations live between runs (`<home>/janitor/idle.json`); default: nothing kept. */
  store?: StateStore;
  /** The clock samples are stamped with (default: the real one); judging uses `asOf`. */
  now?: () => Date;
  /**
   * The re-check right before a stop reads the container's cgroup on this host with this, where it can prove the
   * cgroup is the container's; else (and when omitted) it asks the engine's one-shot stats.
   */
  localCounters?: LocalCounters;
  /**
   * The most processes a container may hold and still be idle (`--idle-max-processes`); default: its init and its
   * command (2 with `HostConfig.Init`, else 1).
   */
  maxProcesses?: number;
}

export interface ReapRequest extends SweepRequest {
  dryRun: boolean;
  /** Only these ids are considered (a plan being applied); others are neither touched nor reported. */
  onlyIds?: ReadonlySet<string>;
  /** Leave anonymous volumes behind (default: they go with their container). */
  keepVolumes?: boolean;
}

export interface ReapResult {
  removed: SweepEntry[];
  /** Running sandboxes stopped by the idle rule (a dry run: those that would be). */
  stopped: StoppedEntry[];
  kept: KeptEntry[];
  failed: FailedEntry[];
  interrupted: Interruption | null;
  /** Non-fatal problems (the idle state could not be read or written). */
  warnings: string[];
}

export interface ListResult {
  containers: ListedEntry[];
  /** Containers that could not be inspected. */
  failed: FailedEntry[];
  interrupted: Interruption | null;
  warnings: string[];
}

/** Tracks the first engine failure or the run's abort; stops new work once either happens. */
class RunGuard {
  interrupted: Interruption | null = null;
  constructor(private readonly signal: AbortSignal | undefined) {}
  get stopped(): boolean {
    if (!this.interrupted && this.signal?.aborted) this.interrupted = { kind: 'timeout' };
    return this.interrupted !== null;
  }
  /** Returns true when the error ended the run (engine gone or run aborted), false when it is per-container. */
  absorb(err: unknown): boolean {
    if (this.signal?.aborted) {
      this.interrupted ??= { kind: 'timeout' };
      return true;
    }
    if (err instanceof EngineUnreachableError) {
      this.interrupted ??= { kind: 'engine', error: err.message };
      return true;
    }
    return false;
  }
}

function entryOf(
  host: string, sel: Selection, s: ContainerSummary, d: ContainerDetails | null, ageSeconds: number | null, rule: Rule | null = null,
): SweepEntry {
  const labels = d?.labels ?? s.labels;
  return {
    id: d?.id ?? s.id,
    name: d?.name || s.name,
    profile: labels[sel.profileLabel] ?? null,
    state: d?.status || s.state,
    finishedAt: d?.finishedAt ?? '',
    ageSeconds,
    host,
    rule,
  };
}

function verdictOf(sel: Selection, d: ContainerDetails, asOf: Date, threshold: number): Verdict {
  return judge(
    {
      running: d.running, finishedAt: d.finishedAt, excluded: isExcluded(sel, d.labels), status: d.status,
      startedAt: d.startedAt, created: d.created,
    },
    asOf,
    threshold,
  );
}

/**
 * The idle observations of one engine during a sweep: loaded at the start, merged back (under the state file's
 * lock) at the end. Records of containers that no longer run, or no longer exist, are dropped.
 */
class IdleBook {
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

  /** Writes the observations back; with a complete sweep, first drops records of containers that no longer exist. */
  async save(engine: EngineClient, complete: boolean, signal: AbortSignal | undefined): Promise<void> {
    const store = this.opts.store;
    if (!store) return;
    if (complete) {
      const unseen = Object.keys(this.previous).filter((id) => !this.seen.has(id));
      for (let i = 0; i < unseen.length; i += 100) {
        const chunk = unseen.slice(i, i + 100);
        try {
          const exist = new Set((await engine.list({ labels: [], ids: chunk }, signal)).map((r) => r.id));
          for (const id of chunk) if (!exist.has(id)) this.forget.add(id);
        } catch {
          break; // kept for now; dropped by a later sweep
        }
      }
    }
    if (this.observed.size === 0 && this.forget.size === 0) return;
    try {
      await store.update((cur) => ({ next: mergeIdleState(parseIdleState(cur.value), this.host, this.observed, this.forget), result: undefined }));
    } catch (err) {
      this.warnings.push(`cannot record idle observations in ${store.location} (${errorMessage(err)})`);
    }
  }
}

/** Idleness is measured, never projected: an --as-of later than now does not lengthen it. */
function idleInstant(asOf: Date, book: IdleBook): Date {
  return new Date(Math.min(asOf.getTime(), book.now().getTime()));
}

/** What the idle rule says of one running, selected, not excluded container (one sample taken). */
async function judgeRunning(
  engine: EngineClient, book: IdleBook, d: ContainerDetails, asOf: Date, signal: AbortSignal | undefined,
): Promise<{ record: IdleRecord | undefined; decision: ReturnType<typeof decideStop> }> {
  const sample = d.status.toLowerCase() === 'running' ? await book.reads(() => takeSample(engine, d, book.now, signal)) : null;
  const limit = book.limitOf(d);
  const record = sample ? observe(book.prev(d.id), sample, limit) : undefined;
  book.record(d.id, record);
  // Finished execs (Podman keeps them listed) are only asked about when they could matter: a proof that could
  // hold, or processes beyond the init and the command that an exec in flight would explain.
  const asked = record && (record.samples >= 2 || (record.samples === 0 && record.last.pids !== undefined));
  const execIds = asked && d.execIds.length ? await book.reads(() => execsInFlight(engine, d.execIds, signal)) : d.execIds;
  const decision = decideStop(
    { enabled: book.opts.stopIdle, record, startedAt: d.startedAt, execIds, processLimit: limit },
    idleInstant(asOf, book),
    book.opts.idleAfterSeconds,
  );
  return { record, decision };
}

/**
 * After an inspect failed with something other than 404: is the container simply gone? Podman, for one, answers
 * 500 for a container removed a moment ago. Decided by the engine's own listing, never by the error's text.
 */
async function vanished(engine: EngineClient, id: string, signal: AbortSignal | undefined): Promise<boolean> {
  try {
    const rows = await engine.list({ labels: [], ids: [id] }, signal);
    return !rows.some((r) => r.id === id);
  } catch {
    return false;
  }
}

/** Hands the rows over one at a time and lets go of each as it is taken, so a 100k-row list is not held to the end. */
function* consume<T>(rows: Array<T | undefined>): Generator<T> {
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as T;
    rows[i] = undefined;
    yield row;
  }
}

async function candidates(req: SweepRequest, status: string[] | undefined, guard: RunGuard): Promise<ContainerSummary[]> {
  try {
    const rows = await req.engine.list(
      { labels: engineLabelFilters(req.selection), ...(status ? { status } : {}), ...(req.ids ? { ids: req.ids } : {}) },
      req.signal,
    );
    return rows.filter((r) => isSelected(req.selection, r.labels));
  } catch (err) {
    if (guard.absorb(err)) return [];
    throw err;
  }
}

/**
 * Lists exited containers of the selection, inspects each, and removes (never forced) those the policy reaps.
 * Carries on past any single failure; a 404 or a 409 on a container being removed counts as `gone`.
 */
export async function reap(req: ReapRequest): Promise<ReapResult> {
  const guard = new RunGuard(req.signal);
  const out: ReapResult = { removed: [], stopped: [], kept: [], failed: [], interrupted: null, warnings: [] };
  const { engine, selection, onEvent } = req;
  const book = req.idle ? new IdleBook(req.idle, engine.host, out.warnings, req.concurrency) : null;
  await book?.load();
  let rows = await candidates(req, book ? ['exited', 'created', 'running'] : ['exited', 'created'], guard);
  if (req.onlyIds) rows = rows.filter((r) => req.onlyIds!.has(r.id));
  onEvent?.({ type: 'candidates', count: rows.length });

  const keep = (e: SweepEntry, reason: KeepReason) => {
    const k = { ...e, reason };
    out.kept.push(k);
    onEvent?.({ type: 'kept', entry: k });
  };
  const fail = (e: SweepEntry, err: unknown) => {
    const f = { ...e, error: errorMessage(err) };
    out.failed.push(f);
    onEvent?.({ type: 'failed', entry: f });
  };

  /** One container as inspected: judged, and removed, stopped or kept. */
  const judgeRow = async (row: ContainerSummary, details: ContainerDetails | null): Promise<void> => {
    let entry = entryOf(engine.host, selection, row, null, null);
    if (!details) return keep(entry, 'gone');
    if (!isSelected(selection, details.labels)) return; // relabelled since the list: not ours
    book?.seen.add(details.id);
    const v = verdictOf(selection, details, req.asOf, req.thresholdSeconds);
    entry = entryOf(engine.host, selection, row, details, v.ageSeconds, v.rule);
    if (v.verdict === 'keep' && v.reason === 'running' && book) {
      book.pending.push(stopIfIdle(req, book, guard, details, entry, out, keep, fail));
      return;
    }
    if (details.status.toLowerCase() !== 'running') book?.drop(details.id);
    if (v.verdict === 'keep') return keep(entry, v.reason);
    if (req.dryRun) {
      entry.volumes = req.keepVolumes ? [] : anonymousVolumes(details.volumes);
      out.removed.push(entry);
      onEvent?.({ type: 'removed', entry, dryRun: true });
      return;
    }
    if (guard.stopped) return;
    try {
      await engine.remove(row.id, req.signal, { volumes: !req.keepVolumes });
      entry.volumes = req.keepVolumes || details.volumes.length === 0 ? [] : await volumesGone(engine, details.volumes, req.signal);
      out.removed.push(entry);
      onEvent?.({ type: 'removed', entry, dryRun: false });
    } catch (err) {
      if (err instanceof EngineRequestError && err.statusCode === 404) return keep(entry, 'gone');
      if (err instanceof EngineRequestError && err.statusCode === 409) {
        // Removal already in progress, or it runs again: decide from its state, never from the message.
        let again: ContainerDetails | null;
        try {
          again = await engine.inspect(row.id, req.signal);
        } catch (err2) {
          guard.absorb(err2);
          return fail(entry, err);
        }
        if (!again || isGoing(again.status)) return keep(entry, 'gone');
        if (again.running) return keep({ ...entry, state: again.status }, 'running');
        return fail(entry, err);
      }
      // The DELETE may or may not have reached the engine: never report it removed.
      guard.absorb(err);
      return fail(entry, err);
    }
  };
  /** Inspects one listed container, then judges it. */
  const inspectAndJudge = async (row: ContainerSummary): Promise<void> => {
    let details: ContainerDetails | null;
    try {
      details = await engine.inspect(row.id, req.signal);
    } catch (err) {
      if (guard.absorb(err)) return;
      const entry = entryOf(engine.host, selection, row, null, null);
      if (err instanceof EngineRequestError && (await vanished(engine, row.id, req.signal))) return keep(entry, 'gone');
      return fail(entry, err);
    }
    return judgeRow(row, details);
  };

  await forEachBounded(
    consume(rows),
    req.concurrency,
    async (row) => {
      if (book && provenBefore(req, book, row)) {
        // Its stop slot's inspect is its only one (and judges it as usual when it shows anything else).
        book.pending.push(stopProvenBefore(req, book, guard, row, out, keep, fail, judgeRow, inspectAndJudge));
        return;
      }
      return inspectAndJudge(row);
    },
    () => guard.stopped,
  );
  // Drained until empty: a container its stop slot declined is judged as usual, which queues more.
  while (book?.pending.length) await Promise.all(book.pending.splice(0));
  out.interrupted = guard.stopped ? guard.interrupted : null;
  await book?.save(engine, !out.interrupted && !req.onlyIds, req.signal?.aborted ? undefined : req.signal);
  return out;
}

/**
 * A listed running container whose idleness earlier runs already proved, as of now, provided nothing happened since
 * their last sample: it can go straight to its stop slot, whose inspect and fresh sample from its cgroup on this
 * host are the re-check right before the stop. Only where that cgroup can be read here (`localCounters`, tried on
 * the init process of the last sample); a dry run, or the rule off, judges every container the usual way.
 */
function provenBefore(req: ReapRequest, book: IdleBook, row: ContainerSummary): boolean {
  if (req.dryRun || !book.opts.stopIdle || !book.opts.localCounters || row.state.toLowerCase() !== 'running') return false;
  if (isExcluded(req.selection, row.labels)) return false;
  const prev = book.prev(row.id);
  // Its init process as last sampled still in its cgroup, readable here (else the re-check would need the engine).
  if (!prev?.last.pid || !readLocally(book.opts.localCounters, row.id, prev.last.pid)) return false;
  // (Whether it has an init is known at the slot's inspect, which decides again with its own limit.)
  return tentativeStop(book, prev, { startedAt: prev.last.startedAt, execIds: [], limit: Infinity }, req.asOf).stop;
}

/**
 * The stop decision for `prev` if a sample taken now shows nothing since its last one (a proof not started, because
 * its last sample was in use or had no count, stays unstarted).
 */
function tentativeStop(
  book: IdleBook, prev: IdleRecord, now: { startedAt: string; execIds: readonly string[]; limit: number }, asOf: Date,
): ReturnType<typeof decideStop> {
  const samples = prev.samples === 0 ? 0 : prev.samples + 1;
  return decideStop(
    { enabled: true, record: { ...prev, samples }, startedAt: now.startedAt, execIds: now.execIds, processLimit: now.limit },
    idleInstant(asOf, book),
    book.opts.idleAfterSeconds,
  );
}

/**
 * `provenBefore` containers: inspected in their stop slot, stopped when that inspect still shows the same running,
 * selected container with its proof holding and its cgroup shows no activity since the last sample. Anything else
 * that inspect shows is judged as usual (`judgeRow`, no second inspect); an inspect that fails is retried the
 * usual way (`inspectAndJudge`).
 */
async function stopProvenBefore(
  req: ReapRequest, book: IdleBook, guard: RunGuard, row: ContainerSummary, out: ReapResult,
  keep: (e: SweepEntry, reason: KeepReason) => void, fail: (e: SweepEntry, err: unknown) => void,
  judgeRow: (row: ContainerSummary, details: ContainerDetails | null) => Promise<void>,
  inspectAndJudge: (row: ContainerSummary) => Promise<void>,
): Promise<void> {
  if (guard.stopped) return;
  const prev = book.prev(row.id)!;
  let entry: StoppedEntry | undefined;
  const candidate = (d: ContainerDetails, execIds: readonly string[]): boolean => {
    if (!isSelected(req.selection, d.labels) || d.startedAt !== prev.last.startedAt) return false;
    const v = verdictOf(req.selection, d, req.asOf, req.thresholdSeconds);
    if (v.verdict !== 'keep' || v.reason !== 'running') return false;
    const decision = tentativeStop(book, prev, { startedAt: d.startedAt, execIds, limit: book.limitOf(d) }, req.asOf);
    if (!decision.stop) return false;
    book.seen.add(d.id);
    entry = { ...entryOf(req.engine.host, req.selection, row, d, v.ageSeconds, v.rule), idleSeconds: decision.idleSeconds };
    return true;
  };
  let outcome: StopOutcome;
  try {
    outcome = await reproveAndStop(req.engine, row.id, prev, { ...stopOptions(req, book), candidate });
  } catch (err) {
    if (!entry) return inspectAndJudge(row); // the inspect failed: the usual way decides (gone, failed, run over)
    guard.absorb(err);
    return fail(entry, err);
  }
  if (outcome.kind === 'declined') return judgeRow(row, outcome.details);
  if (outcome.kind === 'gone') {
    book.drop(row.id);
    return keep(entryOf(req.engine.host, req.selection, row, null, null), 'gone');
  }
  settleStop(req, book, outcome, entry!, out, keep);
}

/** A running container under the idle rule: sampled, and stopped when the proof holds and holds again right now. */
async function stopIfIdle(
  req: ReapRequest, book: IdleBook, guard: RunGuard, details: ContainerDetails, base: SweepEntry, out: ReapResult,
  keep: (e: SweepEntry, reason: KeepReason) => void, fail: (e: SweepEntry, err: unknown) => void,
): Promise<void> {
  const { engine } = req;
  // A proof already gathered by earlier runs: if it suffices as of now, provided nothing happened since its last
  // sample, the re-check's fresh sample is this run's only one (one pass of the engine's stats collector, not two).
  const prev = book.prev(details.id);
  if (!req.dryRun && book.opts.stopIdle && prev && prev.last.startedAt === details.startedAt && details.status.toLowerCase() === 'running') {
    let tentative: ReturnType<typeof decideStop> | null = null;
    try {
      const execIds = details.execIds.length ? await book.reads(() => execsInFlight(engine, details.execIds, req.signal)) : [];
      tentative = tentativeStop(book, prev, { startedAt: details.startedAt, execIds, limit: book.limitOf(details) }, req.asOf);
    } catch (err) {
      if (guard.absorb(err)) return;
    }
    if (tentative?.stop) return reproveThenStop(req, book, guard, prev, details, { ...base, idleSeconds: tentative.idleSeconds }, out, keep, fail);
  }
  let judged: Awaited<ReturnType<typeof judgeRunning>>;
  try {
    judged = await judgeRunning(engine, book, details, req.asOf, req.signal);
  } catch (err) {
    if (guard.absorb(err)) return;
    return keep({ ...base, idleSeconds: null, idleReason: 'stats-unavailable', processes: null }, 'running');
  }
  const { record, decision } = judged;
  const processes = record ? (record.last.pids ?? null) : null;
  if (!decision.stop) return keep({ ...base, idleSeconds: decision.idleSeconds, idleReason: decision.why, processes }, 'running');
  const entry: StoppedEntry = { ...base, idleSeconds: decision.idleSeconds, processes };
  if (req.dryRun) {
    out.stopped.push(entry);
    req.onEvent?.({ type: 'stopped', entry, dryRun: true });
    return;
  }
  return reproveThenStop(req, book, guard, record!, details, entry, out, keep, fail);
}

/** The options of a sweep's re-checks and stops. */
function stopOptions(req: ReapRequest, book: IdleBook) {
  return {
    stopTimeoutSeconds: book.opts.stopTimeoutSeconds ?? DEFAULT_STOP_TIMEOUT_SECONDS,
    ...(book.opts.maxProcesses !== undefined ? { maxProcesses: book.opts.maxProcesses } : {}),
    now: book.now,
    read: book.reads,
    act: book.acts,
    ...(book.opts.localCounters ? { localCounters: book.opts.localCounters } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
  };
}

/** Reports a stop's outcome (other than `gone` and `declined`) and updates the container's record. */
function settleStop(
  req: ReapRequest, book: IdleBook, outcome: Extract<StopOutcome, { kind: 'stopped' | 'proof-failed' }>, entry: StoppedEntry, out: ReapResult,
  keep: (e: SweepEntry, reason: KeepReason) => void,
): void {
  if (outcome.kind === 'proof-failed') {
    book.record(entry.id, outcome.record);
    const processes = outcome.record ? (outcome.record.last.pids ?? null) : (entry.processes ?? null);
    return keep({ ...entry, idleSeconds: idleSeconds(outcome.record, idleInstant(req.asOf, book)), idleReason: outcome.why, processes }, 'running');
  }
  book.drop(entry.id);
  const stopped = { ...entry, state: 'exited', processes: outcome.sample.pids ?? null };
  out.stopped.push(stopped);
  req.onEvent?.({ type: 'stopped', entry: stopped, dryRun: false });
}

/** The re-check right before acting (fresh inspect and sample against `record.last`), then the stop (`reproveAndStop`). */
async function reproveThenStop(
  req: ReapRequest, book: IdleBook, guard: RunGuard, record: IdleRecord, inspected: ContainerDetails, entry: StoppedEntry, out: ReapResult,
  keep: (e: SweepEntry, reason: KeepReason) => void, fail: (e: SweepEntry, err: unknown) => void,
): Promise<void> {
  if (guard.stopped) return;
  try {
    const outcome = await reproveAndStop(req.engine, entry.id, record, { ...stopOptions(req, book), inspected });
    if (outcome.kind === 'gone' || outcome.kind === 'declined' /* only with a candidate check */) {
      book.drop(entry.id);
      return keep(entry, 'gone');
    }
    settleStop(req, book, outcome, entry, out, keep);
  } catch (err) {
    guard.absorb(err);
    return fail(entry, err);
  }
}

/** Every selected container in any state, with the verdict the reaper would reach. */
export async function list(req: SweepRequest): Promise<ListResult> {
  const guard = new RunGuard(req.signal);
  const out: ListResult = { containers: [], failed: [], interrupted: null, warnings: [] };
  const book = req.idle ? new IdleBook(req.idle, req.engine.host, out.warnings, req.concurrency) : null;
  await book?.load();
  const rows = await candidates(req, undefined, guard);
  req.onEvent?.({ type: 'candidates', count: rows.length });
  await forEachBounded(
    consume(rows),
    req.concurrency,
    async (row) => {
      let details: ContainerDetails | null;
      try {
        details = await req.engine.inspect(row.id, req.signal);
      } catch (err) {
        if (guard.absorb(err)) return;
        const f = { ...entryOf(req.engine.host, req.selection, row, null, null), error: errorMessage(err) };
        out.failed.push(f);
        req.onEvent?.({ type: 'failed', entry: f });
        return;
      }
      if (details && !isSelected(req.selection, details.labels)) return;
      const v: Verdict = details
        ? verdictOf(req.selection, details, req.asOf, req.thresholdSeconds)
        : { verdict: 'keep', reason: 'gone', ageSeconds: null, rule: null };
      const entry: ListedEntry = {
        ...entryOf(req.engine.host, req.selection, row, details, v.ageSeconds, v.rule),
        verdict: v.verdict,
        reason: v.verdict === 'keep' ? v.reason : 'expired',
      };
      // Taken from this inspect, so status needs no second one per container.
      const held = details ? anonymousVolumes(details.volumes) : [];
      if (held.length > 0) entry.volumes = held;
      if (details) book?.seen.add(details.id);
      const emit = () => {
        out.containers.push(entry);
        req.onEvent?.({ type: 'listed', entry });
      };
      if (details && book && v.verdict === 'keep' && v.reason === 'running') {
        // Judged apart from the inspect workers, so the samples of the sweep go out together.
        book.pending.push(
          judgeRunning(req.engine, book, details, req.asOf, req.signal).then(
            ({ record, decision }) => {
              entry.idleSeconds = decision.idleSeconds;
              entry.processes = record ? (record.last.pids ?? null) : null;
              if (decision.stop) {
                entry.verdict = 'stop';
                entry.reason = 'idle';
              } else {
                entry.idleReason = decision.why;
              }
              emit();
            },
            (err: unknown) => {
              if (guard.absorb(err)) return;
              entry.idleSeconds = null;
              entry.idleReason = 'stats-unavailable';
              entry.processes = null;
              emit();
            },
          ),
        );
        return;
      }
      if (details && details.status.toLowerCase() !== 'running') book?.drop(details.id);
      emit();
    },
    () => guard.stopped,
  );
  if (book) await Promise.all(book.pending);
  out.interrupted = guard.stopped ? guard.interrupted : null;
  await book?.save(req.engine, !out.interrupted, req.signal?.aborted ? undefined : req.signal);
  return out;
}
