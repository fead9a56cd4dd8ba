/**
 * One `reap` of one engine, as one object: lists the selection's candidates, inspects each, removes (never forced)
 * those the policy reaps, and stops running sandboxes proven idle, re-proved right before each stop. Carries on past
 * any single failure; a 404, or a 409 on a container being removed, counts as `gone`.
 */
import type { ContainerDetails, ContainerSummary } from '../adapters/engine.js';
import { anonymousVolumes, hasSpaceCalls, isGoing } from '../adapters/engine.js';
import { type IdleRecord, idleSeconds } from '../core/idle.js';
import { type KeepReason, type Verdict, heldReason, thresholdFor, tiedLabels } from '../core/policy.js';
import { isExcluded, isSelected } from '../core/selection.js';
import { DEFAULT_STOP_TIMEOUT_SECONDS } from '../defaults.js';
import { EngineRequestError, errorMessage } from '../errors.js';
import { forEachBounded } from '../util/pool.js';
import { IdleBook } from './idle-book.js';
import { type StopOutcome, execsInFlight, readLocally, reproveAndStop, volumesGone, writableLayerBytes } from './idle-stop.js';
import type { AbandonedLoad, SweepDecisions } from '../passes/sweep-pass.js';
import { type SweepPass, addLoad, emptySweepParts, partOf, sweepPassOf, sweepsOf } from './sweep-passes.js';
import { RunGuard } from './run-guard.js';
import { candidates, consume, entryOf, vanished, verdictOf } from './sweep-rows.js';
import type { ReapRequest, ReapResult, StoppedEntry, SweepEntry, SweepEvent } from './sweep-types.js';

type Settled = Extract<StopOutcome, { kind: 'stopped' | 'proof-failed' }>;
/** A listed row, the inspect it was judged from, and the labels its rules are looked up by (`tiedLabels`). */
type Inspected = { row: ContainerSummary; details: ContainerDetails; rules: Readonly<Record<string, string>> };

/** A sweep's result before it did anything. */
export function emptyReapResult(): ReapResult {
  return { removed: [], stopped: [], kept: [], failed: [], ...emptySweepParts(), interrupted: null, warnings: [] };
}

/**
 * A sweep's decision, as its event told it, added to a result (what a run ended at its deadline reports of its sweep:
 * cli/reap-progress.ts). The listing's own events add nothing.
 */
export function addSweepEvent(r: ReapResult, ev: SweepEvent): void {
  switch (ev.type) {
    case 'removed':
      return void r.removed.push(ev.entry);
    case 'stopped':
      return void r.stopped.push(ev.entry);
    case 'kept':
      return void r.kept.push(ev.entry);
    case 'failed':
      return void r.failed.push(ev.entry);
    case 'exec-tree': {
      const part = partOf(r, sweepPassOf(ev).pass);
      if (ev.state === 'ended') part.ended.push(ev.tree);
      else if (ev.state === 'kept') part.kept.push(ev.tree);
      else part.failed.push(ev.tree);
      return;
    }
    case 'listed':
    case 'candidates':
      return;
  }
}

export class ReapSweep {
  private readonly guard: RunGuard;
  private readonly out: ReapResult = emptyReapResult();
  /** The idle observations (null when the idle rule is not applied: running containers are then not even listed). */
  private readonly book: IdleBook | null;

  constructor(private readonly req: ReapRequest) {
    this.guard = new RunGuard(req.signal);
    this.book = req.idle ? new IdleBook(req.idle, req.engine.host, this.out.warnings, req.concurrency) : null;
  }

  async run(): Promise<ReapResult> {
    const { req, book, guard, out } = this;
    await book?.load();
    let rows = await candidates(req, book ? ['exited', 'created', 'running'] : ['exited', 'created'], guard);
    if (req.onlyIds) rows = rows.filter((r) => req.onlyIds!.has(r.id));
    req.onEvent?.({ type: 'candidates', count: rows.length });
    await forEachBounded(
      consume(rows),
      req.concurrency,
      (row) => this.take(row),
      () => guard.stopped,
    );
    // Drained until empty: a container its stop slot declined is judged as usual, which queues more.
    while (book?.pending.length) await Promise.all(book.pending.splice(0));
    out.interrupted = guard.stopped ? guard.interrupted : null;
    await book?.save(req.engine, !out.interrupted && !req.onlyIds, req.signal?.aborted ? undefined : req.signal);
    return out;
  }

  private take(row: ContainerSummary): Promise<void> {
    if (this.book && this.provenBefore(this.book, row)) {
      // Its stop slot's inspect is its only one (and judges it as usual when it shows anything else).
      this.book.pending.push(this.stopProvenBefore(this.book, row));
      return Promise.resolve();
    }
    return this.inspectAndJudge(row);
  }

  private keep(e: SweepEntry, reason: KeepReason): void {
    const k = { ...e, reason };
    this.out.kept.push(k);
    this.req.onEvent?.({ type: 'kept', entry: k });
  }

  private fail(e: SweepEntry, err: unknown): void {
    const f = { ...e, error: errorMessage(err) };
    this.out.failed.push(f);
    this.req.onEvent?.({ type: 'failed', entry: f });
  }

  private entry(row: ContainerSummary, d: ContainerDetails | null = null, verdict: Pick<Verdict, 'ageSeconds' | 'rule'> | null = null) {
    return entryOf({ host: this.req.engine.host, selection: this.req.selection, row }, d, verdict);
  }

  /** Inspects one listed container, then judges it. */
  private async inspectAndJudge(row: ContainerSummary): Promise<void> {
    let details: ContainerDetails | null;
    try {
      // A container that does not run may be removed: the engine measures its writable layer too (what a reap freed).
      details = await this.req.engine.inspect(row.id, this.req.signal, { size: this.req.measure !== false && row.state.toLowerCase() !== 'running' });
    } catch (err) {
      if (this.guard.absorb(err)) return;
      if (err instanceof EngineRequestError && (await vanished(this.req.engine, row.id, this.req.signal))) return this.keep(this.entry(row), 'gone');
      return this.fail(this.entry(row), err);
    }
    return this.judgeRow(row, details);
  }

  /** One container as inspected: judged, and removed, stopped or kept. */
  private async judgeRow(row: ContainerSummary, details: ContainerDetails | null): Promise<void> {
    const { req, book } = this;
    if (!details) return this.keep(this.entry(row), 'gone');
    if (!isSelected(req.selection, details.labels)) return; // relabelled since the list: not ours
    book?.seen.add(details.id);
    const rules = tiedLabels(req, details);
    const v = verdictOf(req.selection, details, req.asOf, thresholdFor(req, rules));
    const entry = this.entry(row, details, v);
    // A profile it belongs to is refused by hermes, or has its reaper off: nothing is removed or stopped for it.
    const held = heldReason(req, rules);
    if (held && !(v.verdict === 'keep' && v.reason === 'excluded')) return this.keep(entry, held);
    if (v.verdict === 'keep' && v.reason === 'running' && book) {
      book.pending.push(this.sweepPassesThenIdle(book, { row, details, rules }, entry));
      return;
    }
    if (details.status.toLowerCase() !== 'running') book?.drop(details.id);
    if (v.verdict === 'keep') return this.keep(entry, v.reason);
    // A sandbox the janitor stopped stays for the retention, so that hermes can start it again.
    const retainedUntil = v.rule === 'exited' ? (book?.retainedUntil({ ...details, labels: rules }, req.asOf) ?? null) : null;
    if (retainedUntil !== null) return this.keep({ ...entry, retainedUntil: new Date(retainedUntil).toISOString() }, 'stopped-retained');
    if (req.dryRun) {
      entry.volumes = req.keepVolumes ? [] : anonymousVolumes(details.volumes);
      if (req.measure !== false) entry.reclaimedBytes = await this.sizeOf(details, entry.volumes);
      this.out.removed.push(entry);
      req.onEvent?.({ type: 'removed', entry, dryRun: true });
      return;
    }
    if (this.guard.stopped) return;
    return this.remove(row, details, entry);
  }

  /** The engine's volume sizes, asked once per sweep, when a container to remove holds an anonymous volume. */
  private volumeSizes: Promise<Map<string, number>> | undefined;

  /**
   * What removing a container frees: its writable layer (measured by its inspect) and its anonymous volumes (as the
   * engine measures them: one `GET /system/df` per sweep, when one holds any). What cannot be measured counts 0.
   */
  private async sizeOf(details: ContainerDetails, volumes: readonly string[]): Promise<number> {
    let bytes = details.sizeRw ?? 0;
    const engine = this.req.engine;
    if (volumes.length > 0 && hasSpaceCalls(engine)) {
      this.volumeSizes ??= engine.volumeSizes(this.req.signal).catch(() => new Map<string, number>());
      const sizes = await this.volumeSizes;
      for (const v of volumes) bytes += sizes.get(v) ?? 0;
    }
    return bytes;
  }

  /** The removal (never forced, anonymous volumes with it unless kept), and what its refusals mean. */
  private async remove(row: ContainerSummary, details: ContainerDetails, entry: SweepEntry): Promise<void> {
    const { req } = this;
    try {
      const bytes = req.measure === false ? undefined : await this.sizeOf(details, req.keepVolumes ? [] : anonymousVolumes(details.volumes));
      const outcome = await req.engine.remove(row.id, req.signal, { volumes: !req.keepVolumes });
      if (outcome.kind === 'gone') return this.keep(entry, 'gone');
      if (outcome.kind === 'conflict') return this.settleConflict(row, entry, outcome.detail);
      entry.volumes = req.keepVolumes || details.volumes.length === 0 ? [] : await volumesGone(req.engine, details.volumes, req.signal);
      if (bytes !== undefined) entry.reclaimedBytes = bytes;
      this.out.removed.push(entry);
      req.onEvent?.({ type: 'removed', entry, dryRun: false });
    } catch (err) {
      // The DELETE may or may not have reached the engine: never report it removed.
      this.guard.absorb(err);
      return this.fail(entry, err);
    }
  }

  /** Removal already in progress, or it runs again: decided from its state, never from the engine's words. */
  private async settleConflict(row: ContainerSummary, entry: SweepEntry, detail: string): Promise<void> {
    let again: ContainerDetails | null;
    try {
      again = await this.req.engine.inspect(row.id, this.req.signal);
    } catch (err2) {
      this.guard.absorb(err2);
      return this.fail(entry, new Error(detail));
    }
    if (!again || isGoing(again.status)) return this.keep(entry, 'gone');
    if (again.running) return this.keep({ ...entry, state: again.status }, 'running');
    return this.fail(entry, new Error(detail));
  }

  /**
   * A listed running container whose idleness earlier runs already proved, as of now, provided nothing happened
   * since their last sample: it can go straight to its stop slot, whose inspect and fresh sample from its cgroup on
   * this host are the re-check right before the stop. Only where that cgroup can be read here (`localCounters`,
   * tried on the init process of the last sample); a dry run, or the rule off, judges every container the usual way.
   */
  private provenBefore(book: IdleBook, row: ContainerSummary): boolean {
    const { req } = this;
    if (req.dryRun || !book.ruleOf(row.labels).stopIdle || !book.opts.localCounters || row.state.toLowerCase() !== 'running') return false;
    if (isExcluded(req.selection, row.labels) || heldReason(req, row.labels)) return false;
    const prev = book.prev(row.id);
    // Its init process as last sampled still in its cgroup, readable here (else the re-check would need the engine).
    if (!prev?.last.pid || !readLocally(book.opts.localCounters, row.id, prev.last.pid)) return false;
    // (Whether it has an init is known at the slot's inspect, which decides again with its own limit.)
    return book.tentativeStop(prev, { startedAt: prev.last.startedAt, execIds: [], limit: Infinity, labels: row.labels }, req.asOf).stop;
  }

  /**
   * `provenBefore` containers: inspected in their stop slot, stopped when that inspect still shows the same running,
   * selected container with its proof holding and its cgroup shows no activity since the last sample. Anything else
   * that inspect shows is judged as usual (`judgeRow`, no second inspect); an inspect that fails is retried the
   * usual way (`inspectAndJudge`).
   */
  private async stopProvenBefore(book: IdleBook, row: ContainerSummary): Promise<void> {
    const { req } = this;
    if (this.guard.stopped) return;
    const prev = book.prev(row.id)!;
    let entry: StoppedEntry | undefined;
    const candidate = (d: ContainerDetails, execIds: readonly string[]): boolean => {
      if (!isSelected(req.selection, d.labels) || d.startedAt !== prev.last.startedAt) return false;
      const rules = tiedLabels(req, d);
      const v = verdictOf(req.selection, d, req.asOf, thresholdFor(req, rules));
      if (v.verdict !== 'keep' || v.reason !== 'running') return false;
      const base = this.entry(row, d, v);
      // Right before the stop: its owners from the process table read now (`refreshOwners` below).
      const owner = book.ownerNow(base.profile);
      const limit = book.limitOf({ init: d.init, labels: rules });
      const decision = book.tentativeStop(prev, { startedAt: d.startedAt, execIds, limit, owner, labels: rules }, req.asOf);
      if (!decision.stop) return false;
      book.seen.add(d.id);
      entry = { ...base, idleSeconds: decision.idleSeconds };
      return true;
    };
    let outcome: StopOutcome;
    try {
      // Its init as last sampled is the evidence of the pid namespace (the inspect comes inside the re-check).
      await book.refreshOwners({ id: row.id, pid: prev.last.pid ?? 0 });
      outcome = await reproveAndStop(req.engine, row.id, prev, { ...this.stopOptions(book, row.labels), candidate });
    } catch (err) {
      if (!entry) return this.inspectAndJudge(row); // the inspect failed: the usual way decides (gone, failed, run over)
      this.guard.absorb(err);
      return this.fail(entry, err);
    }
    if (outcome.kind === 'declined') return this.judgeRow(row, outcome.details);
    if (outcome.kind === 'gone') {
      book.drop(row.id);
      return this.keep(this.entry(row), 'gone');
    }
    await this.settleStop(book, outcome, entry!);
  }

  /**
   * The sweep passes over a running sandbox, in list order (the exec-tree pass: its abandoned trees ended, re-checked
   * right before each signal), then the idle rule, which leaves out the abandoned execs still running and their
   * processes.
   */
  private async sweepPassesThenIdle(book: IdleBook, seen: Inspected, base: SweepEntry): Promise<void> {
    const { details } = seen;
    let abandoned: AbandonedLoad | undefined;
    if (details.status.toLowerCase() === 'running') {
      for (const s of sweepsOf(book.ruleOf(seen.rules).sweeps)) {
        if (!s.hooks.mayRun(book.opts.localCounters, details)) continue;
        const load = await this.sweepPass(book, s, details, base);
        if (load === null) return;
        if (load) abandoned = addLoad(abandoned, load);
      }
    }
    return this.stopIfIdle(book, seen, base, abandoned);
  }

  /**
   * One sweep pass over a running sandbox: its survey (the entry's `execs`), its act, and what the idle rule leaves
   * out (undefined: a survey that failed, said as a warning; null: the run was cut).
   */
  private async sweepPass(
    book: IdleBook,
    s: SweepPass & { options: unknown },
    details: ContainerDetails,
    base: SweepEntry,
  ): Promise<AbandonedLoad | undefined | null> {
    const { req } = this;
    try {
      const asOf = book.idleInstant(req.asOf);
      const survey = await book.reads(() => s.hooks.survey(req.engine, details, s.options, { asOf, signal: req.signal, execStarts: book.opts.execStarts }));
      base.execs = [...(base.execs ?? []), ...s.hooks.views(survey)];
      const report = await book.acts(() =>
        s.hooks.act(req.engine, details, survey, s.options, {
          dryRun: req.dryRun,
          stopTimeoutSeconds: book.opts.stopTimeoutSeconds ?? DEFAULT_STOP_TIMEOUT_SECONDS,
          now: book.now,
          signal: req.signal,
          container: base.name,
        }),
      );
      this.reportTrees(s, report);
      return s.hooks.load(survey, new Set(report.ended.map((e) => e.execId)));
    } catch (err) {
      if (this.guard.absorb(err)) return null;
      this.out.warnings.push(`cannot survey the execs of ${base.name} (${errorMessage(err)})`);
      return undefined;
    }
  }

  /** A sweep pass's decisions on one sandbox: into its part of the result, each as an event. */
  private reportTrees(s: SweepPass, r: SweepDecisions): void {
    const t = partOf(this.out, s.pass);
    for (const tree of r.ended) {
      t.ended.push(tree);
      this.req.onEvent?.({ type: 'exec-tree', state: 'ended', tree });
    }
    for (const tree of r.kept) {
      t.kept.push(tree);
      this.req.onEvent?.({ type: 'exec-tree', state: 'kept', tree });
    }
    for (const tree of r.failed) {
      t.failed.push(tree);
      this.req.onEvent?.({ type: 'exec-tree', state: 'failed', tree });
    }
  }

  /** A running container under the idle rule: sampled, and stopped when the proof holds and holds again right now. */
  private async stopIfIdle(book: IdleBook, seen: Inspected, entryBase: SweepEntry, abandoned?: AbandonedLoad): Promise<void> {
    let base = entryBase;
    const { req } = this;
    const { details } = seen;
    // A proof already gathered by earlier runs: if it suffices as of now, provided nothing happened since its last
    // sample, the re-check's fresh sample is this run's only one (one pass of the engine's stats collector, not two).
    const prev = book.prev(details.id);
    let owner: Awaited<ReturnType<IdleBook['ownerFor']>> = null;
    try {
      owner = await book.ownerFor(base.profile, details);
    } catch (err) {
      if (this.guard.absorb(err)) return;
      return this.keep({ ...base, idleSeconds: null, idleReason: 'stats-unavailable', processes: null }, 'running');
    }
    if (owner) base = { ...base, owner };
    if (!req.dryRun && book.ruleOf(seen.rules).stopIdle && prev && prev.last.startedAt === details.startedAt && details.status.toLowerCase() === 'running') {
      let tentative: ReturnType<IdleBook['tentativeStop']> | null = null;
      try {
        const mine = details.execIds.filter((id) => !abandoned?.execIds.has(id));
        const execIds = mine.length ? await book.reads(() => execsInFlight(req.engine, mine, req.signal)) : [];
        const limit = book.limitOf({ init: details.init, labels: seen.rules });
        tentative = book.tentativeStop(prev, { startedAt: details.startedAt, execIds, limit, owner, labels: seen.rules }, req.asOf);
      } catch (err) {
        if (this.guard.absorb(err)) return;
      }
      if (tentative?.stop) return this.reproveThenStop(book, prev, seen, { ...base, idleSeconds: tentative.idleSeconds });
    }
    let judged: Awaited<ReturnType<IdleBook['judgeRunning']>>;
    try {
      judged = await book.judgeRunning(req.engine, { ...details, labels: seen.rules }, req.asOf, req.signal, { abandoned, owner });
    } catch (err) {
      if (this.guard.absorb(err)) return;
      return this.keep({ ...base, idleSeconds: null, idleReason: 'stats-unavailable', processes: null }, 'running');
    }
    const { record, decision } = judged;
    const processes = record ? (record.last.pids ?? null) : null;
    if (!decision.stop) return this.keep({ ...base, idleSeconds: decision.idleSeconds, idleReason: decision.why, processes }, 'running');
    const entry: StoppedEntry = { ...base, idleSeconds: decision.idleSeconds, processes };
    if (req.dryRun) {
      entry.writableLayerBytes = await this.layerOf(book, entry.id);
      this.out.stopped.push(entry);
      req.onEvent?.({ type: 'stopped', entry, dryRun: true });
      return;
    }
    return this.reproveThenStop(book, record!, seen, entry);
  }

  /** The options of this sweep's re-checks and stops. */
  private stopOptions(book: IdleBook, labels: Readonly<Record<string, string>>) {
    const maxProcesses = book.ruleOf(labels).maxProcesses;
    return {
      stopTimeoutSeconds: book.opts.stopTimeoutSeconds ?? DEFAULT_STOP_TIMEOUT_SECONDS,
      ...(maxProcesses !== undefined ? { maxProcesses } : {}),
      now: book.now,
      read: book.reads,
      act: book.acts,
      ...(book.opts.localCounters ? { localCounters: book.opts.localCounters } : {}),
      ...(this.req.signal ? { signal: this.req.signal } : {}),
      ...(this.req.deadlineMs !== undefined ? { deadlineMs: this.req.deadlineMs } : {}),
    };
  }

  /**
   * The cost of a stop (`writableLayerBytes`): measured once the sandbox is stopped (its layer is then what hermes'
   * reaper would remove; nothing is added between the re-check and the stop), or for a dry run at the decision.
   */
  private layerOf(book: IdleBook, id: string): Promise<number | null> {
    return book.reads(() => writableLayerBytes(this.req.engine, id, this.req.signal));
  }

  /** Reports a stop's outcome (other than `gone` and `declined`) and updates the container's record. */
  private async settleStop(book: IdleBook, outcome: Settled, entry: StoppedEntry): Promise<void> {
    if (outcome.kind === 'proof-failed') {
      book.record(entry.id, outcome.record);
      const processes = outcome.record ? (outcome.record.last.pids ?? null) : (entry.processes ?? null);
      const idle = idleSeconds(outcome.record, book.idleInstant(this.req.asOf));
      return this.keep({ ...entry, idleSeconds: idle, idleReason: outcome.why, processes }, 'running');
    }
    book.drop(entry.id);
    book.recordStop(entry.id, outcome.sample.startedAt);
    const stopped: StoppedEntry = {
      ...entry,
      state: 'exited',
      processes: outcome.sample.pids ?? null,
      graceSeconds: outcome.graceSeconds,
      ...(outcome.killed !== undefined ? { killed: outcome.killed } : {}),
      writableLayerBytes: await this.layerOf(book, entry.id),
    };
    this.out.stopped.push(stopped);
    this.req.onEvent?.({ type: 'stopped', entry: stopped, dryRun: false });
  }

  /**
   * The re-check right before acting (fresh inspect and sample against `record.last`), then the stop (`reproveAndStop`).
   * A container the re-check found restarted is judged as usual from the inspect that saw it (its proof starts again).
   */
  private async reproveThenStop(book: IdleBook, record: IdleRecord, seen: Inspected, entry: StoppedEntry): Promise<void> {
    if (this.guard.stopped) return;
    let outcome: StopOutcome;
    try {
      // Right before acting: its owners from the process table read now (a hermes started since lengthens the threshold).
      const owner = await book.ownerFor(entry.profile, seen.details, true);
      if (owner && entry.idleSeconds < book.thresholdOf(owner, seen.rules)) return this.keep({ ...entry, owner, idleReason: 'owner-alive' }, 'running');
      outcome = await reproveAndStop(this.req.engine, entry.id, record, { ...this.stopOptions(book, seen.rules), inspected: seen.details });
    } catch (err) {
      this.guard.absorb(err);
      return this.fail(entry, err);
    }
    if (outcome.kind === 'declined') return this.judgeRow(seen.row, outcome.details);
    if (outcome.kind === 'gone') {
      book.drop(entry.id);
      return this.keep(entry, 'gone');
    }
    await this.settleStop(book, outcome, entry);
  }
}
