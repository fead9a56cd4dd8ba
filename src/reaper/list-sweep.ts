/** One `list` of one engine: every selected container in any state, with the verdict `reap` would reach. */
import type { ContainerDetails, ContainerSummary } from '../adapters/engine.js';
import { anonymousVolumes } from '../adapters/engine.js';
import { type Verdict, heldReason, thresholdFor, tiedLabels } from '../core/policy.js';
import { isSelected } from '../core/selection.js';
import { errorMessage } from '../errors.js';
import { forEachBounded } from '../util/pool.js';
import { IdleBook } from './idle-book.js';
import type { AbandonedLoad } from '../passes/sweep-pass.js';
import { addLoad, sweepsOf } from './sweep-passes.js';
import { writableLayerBytes } from './idle-stop.js';
import { RunGuard } from './run-guard.js';
import { candidates, consume, entryOf, verdictOf } from './sweep-rows.js';
import type { ListResult, ListedEntry, SweepRequest } from './sweep-types.js';

export class ListSweep {
  private readonly guard: RunGuard;
  private readonly out: ListResult = { containers: [], failed: [], interrupted: null, warnings: [] };
  private readonly book: IdleBook | null;

  constructor(private readonly req: SweepRequest) {
    this.guard = new RunGuard(req.signal);
    this.book = req.idle ? new IdleBook(req.idle, req.engine.host, this.out.warnings, req.concurrency) : null;
  }

  async run(): Promise<ListResult> {
    const { req, book, guard, out } = this;
    await book?.load();
    const rows = await candidates(req, undefined, guard);
    req.onEvent?.({ type: 'candidates', count: rows.length });
    await forEachBounded(
      consume(rows),
      req.concurrency,
      (row) => this.take(row),
      () => guard.stopped,
    );
    if (book) await Promise.all(book.pending);
    out.interrupted = guard.stopped ? guard.interrupted : null;
    await book?.save(req.engine, !out.interrupted, req.signal?.aborted ? undefined : req.signal);
    return out;
  }

  private emit(entry: ListedEntry): void {
    this.out.containers.push(entry);
    this.req.onEvent?.({ type: 'listed', entry });
  }

  private async take(row: ContainerSummary): Promise<void> {
    const { req, book } = this;
    let details: ContainerDetails | null;
    try {
      details = await req.engine.inspect(row.id, req.signal);
    } catch (err) {
      if (this.guard.absorb(err)) return;
      const f = { ...entryOf({ host: req.engine.host, selection: req.selection, row }), error: errorMessage(err) };
      this.out.failed.push(f);
      req.onEvent?.({ type: 'failed', entry: f });
      return;
    }
    if (details && !isSelected(req.selection, details.labels)) return;
    const v: Verdict = details
      ? verdictOf(req.selection, details, req.asOf, thresholdFor(req, tiedLabels(req, details)))
      : { verdict: 'keep', reason: 'gone', ageSeconds: null, rule: null };
    const entry: ListedEntry = {
      ...entryOf({ host: req.engine.host, selection: req.selection, row }, details, v),
      verdict: v.verdict,
      reason: v.verdict === 'keep' ? v.reason : 'expired',
    };
    // Taken from this inspect, so status needs no second one per container.
    const held = details ? anonymousVolumes(details.volumes) : [];
    if (held.length > 0) entry.volumes = held;
    // A profile it belongs to is refused by hermes, or has its reaper off: nothing is removed or stopped for it.
    const hold = details && !(v.verdict === 'keep' && v.reason === 'excluded') ? heldReason(req, tiedLabels(req, details)) : null;
    if (hold) {
      book?.seen.add(details!.id);
      return this.emit({ ...entry, verdict: 'keep', reason: hold });
    }
    if (details) book?.seen.add(details.id);
    if (details && book && v.verdict === 'keep' && v.reason === 'running') {
      // Judged apart from the inspect workers, so the samples of the sweep go out together.
      book.pending.push(this.judgeIdle(book, details, entry));
      return;
    }
    if (details && details.status.toLowerCase() !== 'running') book?.drop(details.id);
    const retainedUntil =
      details && book && v.verdict === 'reap' && v.rule === 'exited' ? book.retainedUntil({ ...details, labels: tiedLabels(req, details) }, req.asOf) : null;
    if (retainedUntil !== null) {
      entry.verdict = 'keep';
      entry.reason = 'stopped-retained';
      entry.retainedUntil = new Date(retainedUntil).toISOString();
    }
    this.emit(entry);
  }

  /** The sandbox's running execs (`entry.execs`) by the sweep passes, and the abandoned ones the idle rule leaves out. */
  private async surveyExecs(book: IdleBook, details: ContainerDetails, entry: ListedEntry): Promise<AbandonedLoad | undefined> {
    const sweeps = sweepsOf(book.ruleOf(tiedLabels(this.req, details)).sweeps);
    if (sweeps.length === 0 || details.status.toLowerCase() !== 'running') return undefined;
    entry.execs = [];
    let abandoned: AbandonedLoad | undefined;
    for (const { hooks, options } of sweeps) {
      if (!hooks.mayRun(book.opts.localCounters, details)) continue;
      const asOf = book.idleInstant(this.req.asOf);
      const survey = await book.reads(() =>
        hooks.survey(this.req.engine, details, options, { asOf, signal: this.req.signal, execStarts: book.opts.execStarts }),
      );
      entry.execs = [...entry.execs, ...hooks.views(survey)];
      abandoned = addLoad(abandoned, hooks.load(survey));
    }
    return abandoned;
  }

  /** A running container's idle verdict (`stop` when `reap` would stop it now), from this run's sample. */
  private async judgeIdle(book: IdleBook, details: ContainerDetails, entry: ListedEntry): Promise<void> {
    try {
      const owner = await book.ownerFor(entry.profile, details);
      if (owner) entry.owner = owner;
      const abandoned = await this.surveyExecs(book, details, entry);
      const rules = { ...details, labels: tiedLabels(this.req, details) };
      const { record, decision } = await book.judgeRunning(this.req.engine, rules, this.req.asOf, this.req.signal, { abandoned, owner, localFirst: true });
      entry.idleSeconds = decision.idleSeconds;
      entry.processes = record ? (record.last.pids ?? null) : null;
      if (decision.stop) {
        entry.verdict = 'stop';
        entry.reason = 'idle';
        // The cost of the stop `reap` would make (only for those: the engine walks the layer).
        entry.writableLayerBytes = await book.reads(() => writableLayerBytes(this.req.engine, details.id, this.req.signal));
      } else {
        entry.idleReason = decision.why;
      }
    } catch (err) {
      if (this.guard.absorb(err)) return;
      entry.idleSeconds = null;
      entry.idleReason = 'stats-unavailable';
      entry.processes = null;
    }
    this.emit(entry);
  }
}
