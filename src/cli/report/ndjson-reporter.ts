/**
 * `--log-format json`: one JSON object per line on stdout, each with an ISO-8601 `time` and an `event`, for
 * journald and log shippers. `watch --quiet` keeps only failures and changes of engine state.
 */
import type { Context } from '../../context.js';
import type { SandboxDirsResult } from '../../reaper/sandbox-dirs.js';
import type { ImagesReport } from '../images-step.js';
import type { ImageUseNotice } from './reporter.js';
import type { ShellSnapshotsResult } from '../../reaper/shell-snapshots.js';
import type { SweepEvent } from '../../reaper/sweep.js';
import type { WatchEvent } from '../../watch/engine-watcher.js';
import type { Notice, ReapReport, Reporter } from './reporter.js';
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
  }
}

export class NdjsonReporter implements Reporter {
  private readonly news = new WatchNews();
  constructor(private readonly ctx: Context, private readonly quiet: boolean) {}

  private emit(event: string, fields: Record<string, unknown>): void {
    ndjsonEvent(this.ctx, event, fields);
  }

  async sweepStarting(): Promise<void> {}

  sweepEvent(ev: SweepEvent): void {
    sweepEventToNdjson(this.ctx, ev);
  }

  notice(n: Notice): void {
    switch (n.kind) {
      case 'skipped-fresh':
        return this.emit('skipped', { skipped: 'fresh', hosts: n.hosts });
      case 'background':
        if (!this.quiet) this.ctx.stderr.write(`hermes-janitor: reaping in the background (pid ${n.pid}); log: ${escapeControls(n.log)}\n`);
        return;
      case 'disabled':
        return this.emit('disabled', { disabled: true, reason: n.reason });
      case 'locked':
        return this.emit('skipped', { skipped: 'locked', ...(n.timedOut ? { timedOut: true } : {}), holder: n.holder });
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
      case 'settings':
        return this.emit('settings', { changes: n.changes, ...(n.problem ? { problem: n.problem } : {}) });
    }
  }

  async reapResult(r: ReapReport): Promise<void> {
    for (const w of r.warnings) this.emit('warning', { message: w });
    if (r.noEngine) this.emit('no-engine', { message: r.noEngine });
    const dirs = r.sandboxDirs;
    if (dirs) this.sandboxDirs(dirs, r.dryRun);
    if (r.images) this.images(r.images, r.dryRun);
    const snaps = r.shellSnapshots;
    if (snaps) this.shellSnapshots(snaps, r.dryRun);
    this.emit('summary', {
      dryRun: r.dryRun, asOf: r.asOf.toISOString(), thresholdSeconds: r.thresholdSeconds, profile: r.profile,
      stopIdle: r.stopIdle, idleAfterSeconds: r.idleAfterSeconds,
      removed: r.removed.length, stopped: r.stopped.length, kept: r.kept.length, failed: r.failed.length, hosts: r.hosts,
      timedOut: r.timedOut,
      ...(dirs ? { sandboxDirs: { removed: dirs.removed.length, kept: dirs.kept.length, failed: dirs.failed.length } } : {}),
      ...(r.images ? { images: imageCounts(r.images) } : {}),
      ...(snaps ? { shellSnapshots: { removed: snaps.removed.length, kept: snaps.kept.length, failed: snaps.failed.length } } : {}),
    });
  }

  /** One line per shell snapshot the pass removed (or would), kept or failed on. */
  shellSnapshots(s: ShellSnapshotsResult, dryRun: boolean): void {
    this.refusedTempDirs(s);
    for (const d of s.removed) this.emit(dryRun ? 'would-remove-shell-snapshot' : 'removed-shell-snapshot', { ...d });
    for (const d of s.kept) this.emit('kept-shell-snapshot', { ...d });
    for (const d of s.failed) this.emit('failed-shell-snapshot', { ...d });
  }

  /** A temp directory refused for the run (`untrusted-root`): `{dir, from, reason, detail}`. */
  private refusedTempDirs(s: ShellSnapshotsResult): void {
    for (const t of s.tempDirs) if (t.reason) this.emit('refused-temp-dir', { dir: t.dir, from: t.from, reason: t.reason, detail: t.problem });
  }

  shellSnapshotsPass(result: ShellSnapshotsResult, dryRun: boolean): void {
    if (this.quiet) {
      this.refusedTempDirs(result);
      for (const d of result.failed) this.emit('failed-shell-snapshot', { ...d });
      return;
    }
    this.shellSnapshots(result, dryRun);
    this.emit('shell-snapshots', { removed: result.removed.length, kept: result.kept.length, failed: result.failed.length, dryRun });
  }

  /** One line per sandbox directory the pass removed (or would), kept or failed on. */
  sandboxDirs(dirs: SandboxDirsResult, dryRun: boolean): void {
    for (const d of dirs.refused ?? []) this.emit('refused-sandbox-root', { ...d });
    for (const d of dirs.removed) this.emit(dryRun ? 'would-remove-sandbox-dir' : 'removed-sandbox-dir', { ...d });
    for (const d of dirs.kept) this.emit('kept-sandbox-dir', { ...d });
    for (const d of dirs.failed) this.emit('failed-sandbox-dir', { ...d });
  }

  /** One line per image the pass removed (or would), kept or failed on. */
  images(images: ImagesReport, dryRun: boolean): void {
    for (const i of images.removed) this.emit(dryRun ? 'would-remove-image' : 'removed-image', { ...i });
    for (const i of images.kept) this.emit('kept-image', { ...i });
    for (const i of images.failed) this.emit('failed-image', { ...i });
  }

  imageUsed(use: ImageUseNotice): void {
    if (!this.quiet) this.emit('image-used', { ...use });
  }

  imagesPass(result: ImagesReport, dryRun: boolean): void {
    if (this.quiet) {
      for (const i of result.failed) this.emit('failed-image', { ...i });
      return;
    }
    this.images(result, dryRun);
    this.emit('images', { ...imageCounts(result), dryRun });
  }

  watchEvent(ev: WatchEvent): void {
    if (this.quiet && ev.type !== 'failed' && ev.type !== 'engine') return;
    switch (ev.type) {
      case 'sweep':
        for (const w of this.news.freshWarnings(ev.warnings)) this.emit('warning', { message: w });
        return this.emit('sweep', {
          host: ev.host, removed: ev.removed, stopped: ev.stopped, kept: ev.kept, failed: ev.failed, tracked: ev.tracked,
          durationSeconds: ev.durationMs / 1000, interrupted: ev.interrupted, dryRun: ev.dryRun, ...(ev.warnings.length ? { warnings: ev.warnings } : {}),
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
          host: ev.host, state: ev.state, error: ev.error ?? null, ...(ev.retryInMs !== undefined ? { retryInSeconds: ev.retryInMs / 1000 } : {}),
        });
      case 'event':
        return;
    }
  }

  sandboxDirsPass(result: SandboxDirsResult, dryRun: boolean): void {
    if (this.quiet) {
      for (const d of result.refused ?? []) this.emit('refused-sandbox-root', { ...d });
      for (const d of result.failed) this.emit('failed-sandbox-dir', { ...d });
      return;
    }
    this.sandboxDirs(result, dryRun);
    this.emit('sandbox-dirs', { removed: result.removed.length, kept: result.kept.length, failed: result.failed.length, dryRun });
  }

  failOpen(): void {}
}

/** The image pass in a summary line: counts and bytes. */
function imageCounts(r: ImagesReport) {
  return { removed: r.removed.length, kept: r.kept.length, failed: r.failed.length, bytesBefore: r.bytesBefore, bytesAfter: r.bytesAfter, budget: r.budget };
}
