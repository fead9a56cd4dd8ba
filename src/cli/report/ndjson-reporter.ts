/**
 * `--log-format json`: one JSON object per line on stdout, each with an ISO-8601 `time` and an `event`, for
 * journald and log shippers. With `--quiet` a `reap` prints nothing on success (docs/reaping.md): only what went wrong
 * (each failure, each path refused, and then the summary); `watch --quiet` keeps only failures and changes of engine
 * state.
 */
import type { Context } from '../../context.js';
import { unreachable } from '../../util/unreachable.js';
import type { Pass } from '../../passes/types.js';
import type { SweepEvent } from '../../reaper/sweep-types.js';
import type { WatchEvent } from '../../watch/engine-watcher.js';
import type { Notice, ReapReport, Reporter } from './types.js';
import { WatchNews } from './watch-news.js';
import { escapeControls, escapeJsonText } from '../../util/escape-controls.js';

/** One NDJSON line. */
export function ndjsonEvent(ctx: Context, event: string, fields: Record<string, unknown>): void {
  ctx.stdout.write(`${escapeJsonText(JSON.stringify({ time: ctx.now().toISOString(), event, ...fields }))}\n`);
}

/** The line of a sweep's decision (`list` says `container` for each). */
export function sweepEventToNdjson(ctx: Context, ev: SweepEvent, extra: Record<string, unknown> = {}): void {
  switch (ev.type) {
    case 'removed':
      return ndjsonEvent(ctx, ev.dryRun ? 'would-remove' : 'removed', { ...ev.entry, ...extra });
    case 'stopped':
      return ndjsonEvent(ctx, ev.dryRun ? 'would-stop' : 'stopped', { ...ev.entry, ...extra });
    case 'kept':
    case 'failed':
      return ndjsonEvent(ctx, ev.type, { ...ev.entry, ...extra });
    case 'listed':
      return ndjsonEvent(ctx, 'container', { ...ev.entry, ...extra });
    case 'candidates':
      return;
    case 'exec-tree':
      return ndjsonEvent(ctx, `exec-tree-${ev.state}`, { ...ev.tree, ...extra });
    default:
      return unreachable(ev, 'event');
  }
}

export class NdjsonReporter implements Reporter {
  private readonly news = new WatchNews();
  constructor(
    private readonly ctx: Context,
    private readonly quiet: boolean,
  ) {}

  private emit(event: string, fields: Record<string, unknown>): void {
    ndjsonEvent(this.ctx, event, fields);
  }

  async sweepStarting(): Promise<void> {}

  sweepEvent(ev: SweepEvent): void {
    // --quiet: a failure only (a container whose removal or stop failed, an exec tree that would not end).
    if (this.quiet && ev.type !== 'failed' && !(ev.type === 'exec-tree' && ev.state === 'failed')) return;
    sweepEventToNdjson(this.ctx, ev);
  }

  notice(n: Notice): void {
    switch (n.kind) {
      case 'skipped-fresh':
        if (!this.quiet) this.emit('skipped', { skipped: 'fresh', hosts: n.hosts });
        return;
      case 'background':
        if (!this.quiet) this.ctx.stderr.write(`hermes-janitor: reaping in the background (pid ${n.pid}); log: ${escapeControls(n.log)}\n`);
        return;
      case 'disabled':
        if (!this.quiet) this.emit('disabled', { disabled: true, reason: n.reason });
        return;
      case 'locked':
        // Skipped for another reap is a success; a --wait that ran out is not (exit 3).
        if (!this.quiet || n.timedOut) this.emit('skipped', { skipped: 'locked', ...(n.timedOut ? { timedOut: true } : {}), holder: n.holder });
        return;
      case 'waiting-for-lock':
        return this.emit('waiting-for-lock', { host: n.host, holder: n.holder });
      case 'metrics':
        return this.emit('metrics', { url: n.url });
      case 'started': {
        const { kind: _, ...fields } = n;
        return this.emit('started', fields);
      }
      case 'stopping':
        return this.emit('stopping', { signal: n.signal });
      case 'shutdown':
        return this.emit('shutdown', { tracked: n.tracked });
      case 'timed-out':
        return this.emit('timed-out', { timedOut: true, endedAtDeadline: n.phase, timeoutSeconds: n.timeoutSeconds, hosts: n.hosts });
      case 'settings':
        return this.emit('settings', { changes: n.changes, ...(n.problem ? { problem: n.problem } : {}) });
      case 'untrusted-setting': {
        const { reason: _, detail, ...fields } = n.setting;
        return this.emit('untrusted-setting', { ...fields, message: detail });
      }
      default:
        return unreachable(n, 'notice');
    }
  }

  async reapResult(r: ReapReport): Promise<void> {
    if (!this.quiet) for (const w of r.warnings) this.emit('warning', { message: w });
    if (r.noEngine && !this.quiet) this.emit('no-engine', { message: r.noEngine });
    // The sweep passes' decisions were said as they were made (`exec-tree-ended`, ...).
    const ran = r.passes.filter((p) => p.pass.kind === 'run');
    // A directory two passes refused (the session directories are both the shell-snapshot and session-file passes'): once.
    const said = new Set<string>();
    for (const p of ran) {
      if (this.quiet) this.failures(p.pass, p.result, said);
      else this.entries(p.pass, p.result, r.dryRun, said);
    }
    // --quiet: nothing more on success; the summary of a run that did not succeed (which engine, a timeout, how many failed).
    if (this.quiet && !troubled(r)) return;
    this.emit('summary', {
      dryRun: r.dryRun,
      asOf: r.asOf.toISOString(),
      thresholdSeconds: r.thresholdSeconds,
      profile: r.profile,
      stopIdle: r.stopIdle,
      idleAfterSeconds: r.idleAfterSeconds,
      removed: r.removed.length,
      stopped: r.stopped.length,
      kept: r.kept.length,
      failed: r.failed.length,
      hosts: r.hosts,
      timedOut: r.timedOut,
      ...(r.endedAtDeadline ? { endedAtDeadline: r.endedAtDeadline } : {}),
      ...Object.fromEntries(ran.map((p) => [p.pass.name, counts(p.pass, p.result)])),
      reclaimedBytes: r.reclaimed?.total ?? 0,
    });
  }

  /** One line per entry a pass removed (or would), kept or failed on: `removed-<noun>`, `kept-<noun>`, `failed-<noun>`. */
  private entries(pass: Pass, result: unknown, dryRun: boolean, said?: Set<string>): void {
    this.refused(pass, result, said);
    const o = pass.outcome(result);
    const noun = pass.nouns.event;
    for (const d of o.done) this.emit(dryRun ? `would-remove-${noun}` : `removed-${noun}`, { ...d });
    for (const d of o.kept) this.emit(`kept-${noun}`, { ...d });
    for (const d of o.failed) this.emit(`failed-${noun}`, { ...d });
  }

  /** What a pass refused for the run before looking (`refused-sandbox-root`, `refused-temp-dir`), also with `--quiet`. */
  private refused(pass: Pass, result: unknown, said?: Set<string>): void {
    for (const r of pass.refused?.(result) ?? []) {
      const key = JSON.stringify([r.event, r.fields]);
      if (said?.has(key)) continue;
      said?.add(key);
      this.emit(r.event, r.fields);
    }
  }

  /** What a pass refused for the run and what it failed on (`--quiet`). */
  private failures(pass: Pass, result: unknown, said?: Set<string>): void {
    this.refused(pass, result, said);
    for (const d of pass.outcome(result).failed) this.emit(`failed-${pass.nouns.event}`, { ...d });
  }

  /** `watch`: a pass's entries and its counts (`--quiet`: what it refused and its failures only). */
  passRun(pass: Pass, result: unknown, dryRun: boolean): void {
    if (this.quiet) {
      this.failures(pass, result);
      return;
    }
    this.entries(pass, result, dryRun);
    this.emit(pass.nouns.events, { ...counts(pass, result), dryRun });
  }

  passNotice(_pass: Pass, event: string, fields: Record<string, unknown>): void {
    if (!this.quiet) this.emit(event, fields);
  }

  watchEvent(ev: WatchEvent): void {
    if (this.quiet && ev.type !== 'failed' && ev.type !== 'engine') return;
    switch (ev.type) {
      case 'sweep':
        for (const w of this.news.freshWarnings(ev.warnings)) this.emit('warning', { message: w });
        return this.emit('sweep', {
          host: ev.host,
          removed: ev.removed,
          stopped: ev.stopped,
          kept: ev.kept,
          failed: ev.failed,
          tracked: ev.tracked,
          durationSeconds: ev.durationMs / 1000,
          interrupted: ev.interrupted,
          dryRun: ev.dryRun,
          ...(ev.warnings.length ? { warnings: ev.warnings } : {}),
        });
      case 'deadline-check':
        for (const w of this.news.freshWarnings(ev.warnings)) this.emit('warning', { message: w });
        return;
      case 'kept':
        if (!this.news.keptIsNews(ev)) return;
        return sweepEventToNdjson(this.ctx, ev, { trigger: ev.trigger });
      case 'removed':
      case 'stopped':
      case 'failed':
        return sweepEventToNdjson(this.ctx, ev, { trigger: ev.trigger });
      case 'exec-tree':
        if (ev.state === 'kept') return; // said by every sweep while kept: only what changes is logged
        return sweepEventToNdjson(this.ctx, ev, { host: ev.host, trigger: ev.trigger });
      case 'engine':
        return this.emit('engine', {
          host: ev.host,
          state: ev.state,
          error: ev.error ?? null,
          ...(ev.retryInMs !== undefined ? { retryInSeconds: ev.retryInMs / 1000 } : {}),
        });
      case 'event':
        return;
      default:
        return unreachable(ev, 'event');
    }
  }

  failOpen(): void {}
}

/** A run that did not succeed: a failure (a container's, a pass's), an engine that did not answer, a timeout. */
function troubled(r: ReapReport): boolean {
  return (
    r.failed.length > 0 ||
    r.timedOut ||
    r.hosts.some((h) => !h.reachable) ||
    r.passes.some((p) => p.pass.kind === 'run' && p.pass.outcome(p.result).failed.length > 0)
  );
}

/** A pass's counts in a summary line: removed (or ended), kept, failed, and what else it counts (bytes). */
function counts(pass: Pass, result: unknown): Record<string, unknown> {
  const o = pass.outcome(result);
  return { removed: o.done.length, kept: o.kept.length, failed: o.failed.length, ...pass.ndjsonCounts?.(result) };
}
