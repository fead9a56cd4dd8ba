/**
 * Output for people: one line per removed, stopped or failed container and a summary (`reap`), one timestamped
 * line per action (`watch`), problems on stderr, and a spinner on stderr while a sweep runs at a terminal. Quiet
 * (`--quiet`) keeps only failures, problems and changes of engine state.
 */
import type { Context } from '../../context.js';
import type { SweepEntry, SweepEvent } from '../../reaper/sweep.js';
import type { WatchEvent } from '../../watch/engine-watcher.js';
import { holderText } from '../reap-locks.js';
import { diskSize } from '../../core/sizes.js';
import { shownPath } from '../../core/sandbox-dirs.js';
import type { RemovedSandboxDir, SandboxDirsResult } from '../../reaper/sandbox-dirs.js';
import type { RemovedImage } from '../../reaper/images.js';
import type { ImagesReport } from '../images-step.js';
import type { EndedTree } from '../../reaper/exec-trees.js';
import type { RemovedSnapshot, ShellSnapshotsResult } from '../../reaper/shell-snapshots.js';
import { UP_TO_DAYS, span } from '../../core/ages.js';
import { type Progress, hostProblems, reapLine, startProgress, whenOf } from '../render-containers.js';
import type { Notice, ReapReport, Reporter } from './reporter.js';
import { WatchNews } from './watch-news.js';
import { escapeControls } from '../../util/escape-controls.js';

/**
 * Every line this reporter writes goes through the one escaper: container names, profiles, paths, image tags, command
 * lines and engine errors are text an agent or a user chose, and none of it may move a terminal's cursor or forge a
 * line (the line's own text is the reporter's, free of controls).
 */
const shown = (line: string) => `${escapeControls(line)}\n`;

export class TextReporter implements Reporter {
  private progress: Progress | null = null;
  private readonly news = new WatchNews();
  /** Show each entry's engine (a run over several engines). */
  private showHost = false;

  constructor(private readonly ctx: Context, private readonly quiet: boolean) {}

  /** A line on stderr, prefixed as every message of the CLI is. */
  private say(text: string): void {
    this.ctx.stderr.write(shown(`hermes-janitor: ${text}`));
  }

  /** A timestamped line on stdout (watch); `always` also with --quiet. */
  private line(text: string, always = false): void {
    if (this.quiet && !always) return;
    this.ctx.stdout.write(shown(`${this.ctx.now().toISOString()} ${text}`));
  }

  /** When, as of the run's instant: the reap's `asOf`, or now for watch's events (judged a moment ago). */
  private when(e: SweepEntry, asOf: Date = this.ctx.now()): string {
    return whenOf(e, asOf);
  }

  async sweepStarting(verb: string): Promise<void> {
    this.progress = await startProgress(this.ctx, !this.quiet, verb);
  }

  sweepEvent(ev: SweepEvent): void {
    this.progress?.tick(ev);
  }

  notice(n: Notice): void {
    switch (n.kind) {
      case 'skipped-fresh':
        return;
      case 'background':
        if (!this.quiet) this.say(`reaping in the background (pid ${n.pid}); log: ${n.log}`);
        return;
      case 'disabled':
        if (!this.quiet) this.say(`${n.reason}; ${n.what}`);
        return;
      case 'locked':
        if (n.timedOut && !(this.quiet && n.failOpen)) this.say(`timed out waiting for another reap of ${n.host} (${holderText(n.holder)})`);
        else if (!this.quiet) this.say(`another reap is running for this home on ${n.host} (${holderText(n.holder)}); skipped`);
        return;
      case 'waiting-for-lock':
        return this.line(`waiting for the reap lock of ${n.host}, held by ${holderText(n.holder)}`);
      case 'metrics':
        return this.line(`metrics on ${n.url}/metrics, health on ${n.url}/healthz`);
      case 'started': {
        this.showHost = n.hosts.length > 1;
        const scope = n.profile === null ? 'all profiles' : `profile ${n.profile}`;
        const idle = n.stopIdle ? `${n.dryRun ? 'would stop' : 'stops'} sandboxes idle ${n.idleAfterSeconds} s` : 'idle sandboxes not stopped';
        return this.line(`watching ${n.hosts.join(', ')} (threshold ${n.thresholdSeconds} s, ${idle}, ${scope}${n.dryRun ? ', dry run' : ''})`);
      }
      case 'stopping':
        return this.line(`stopping (${n.signal})`);
      case 'shutdown':
        return this.line(`stopped (${n.tracked} container(s) were awaiting their deadline)`);
      case 'settings':
        return this.line(n.problem ? `settings not reloaded: ${n.problem}; keeping the last good ones` : `settings reloaded: ${n.changes.join('; ') || 'unchanged'}`, true);
    }
  }

  async reapResult(r: ReapReport): Promise<void> {
    this.progress?.stop();
    const { ctx } = this;
    const showHost = r.hosts.length > 1;
    if (!this.quiet) for (const w of r.warnings) this.say(`warning: ${w}`);
    if (!r.failOpen) {
      for (const p of reapProblems(r)) this.say(p);
      for (const f of r.failed) ctx.stderr.write(shown(reapLine('failed', f, this.when(f, r.asOf), showHost)));
      for (const f of r.sandboxDirs?.failed ?? []) this.say(f.error);
      for (const f of r.images?.failed ?? []) this.say(f.error);
      for (const f of r.execTrees.failed) this.say(`failed to end exec tree ${f.execId.slice(0, 12)} in ${f.container}: ${f.error}`);
      for (const f of r.shellSnapshots?.failed ?? []) this.say(f.error);
    }
    if (r.noEngine && !this.quiet) this.say(r.noEngine);
    // Roots refused for the run (untrusted-root), also with --quiet: nothing was removed there, and someone should know.
    for (const line of refusedRoots(r.sandboxDirs, r.shellSnapshots)) this.say(`warning: ${line}`);
    if (this.quiet) return;
    for (const d of r.shellSnapshots?.removed ?? []) ctx.stdout.write(shown(snapshotLine(d, r.dryRun, r.asOf)));
    // What was removed before an engine went away mid-sweep is still reported.
    const anything = r.removed.length + r.stopped.length + r.kept.length + r.failed.length > 0;
    const snapshotNews = (r.shellSnapshots?.removed.length ?? 0) + (r.shellSnapshots?.failed.length ?? 0) > 0;
    if (!anything && !snapshotNews && !r.noEngine && r.hosts.every((h) => !h.reachable)) return;
    for (const e of r.removed) ctx.stdout.write(shown(reapLine(r.dryRun ? 'Would remove' : 'removed', e, this.when(e, r.asOf), showHost)));
    for (const e of r.stopped) ctx.stdout.write(shown(reapLine(r.dryRun ? 'Would stop' : 'stopped', e, this.when(e, r.asOf), showHost)));
    for (const d of r.sandboxDirs?.removed ?? []) ctx.stdout.write(shown(this.sandboxDirLine(d, r)));
    for (const line of imageLines(r.images, r.dryRun, showHost)) ctx.stdout.write(shown(line));
    for (const t of r.execTrees.ended) ctx.stdout.write(shown(execTreeLine(t)));
    const scope = r.profile === null ? 'all profiles' : `profile ${r.profile}`;
    ctx.stdout.write(
      shown(
        `${r.dryRun ? 'Would remove' : 'Removed'} ${r.removed.length}, ${r.dryRun ? 'would stop' : 'stopped'} ${r.stopped.length}, ` +
          `kept ${r.kept.length}, failed ${r.failed.length}${sandboxDirsCounts(r)}${imagesCounts(r.images, r.dryRun)}${execTreeCounts(r)}${snapshotCounts(r.shellSnapshots, r.dryRun)} (threshold ${r.thresholdSeconds} s, ${scope}${r.dryRun ? ', dry run' : ''}).`,
      ),
    );
  }

  /** `removed sandbox dir <path> (<size>, unchanged 41 days)`; a dry run says `Would remove sandbox dir`. */
  private sandboxDirLine(d: RemovedSandboxDir, r: Pick<ReapReport, 'dryRun' | 'asOf'>): string {
    const unchanged = span(Date.parse(d.lastChange), r.asOf, UP_TO_DAYS);
    return `${r.dryRun ? 'Would remove' : 'removed'} sandbox dir ${shownPath(d.path)} (${diskSize(d.bytes)}, unchanged ${unchanged})`;
  }

  watchEvent(ev: WatchEvent): void {
    switch (ev.type) {
      case 'sweep':
      case 'deadline-check':
        if (!this.quiet) for (const w of this.news.freshWarnings(ev.warnings)) this.ctx.stderr.write(shown(`${this.ctx.now().toISOString()} warning: ${w}`));
        if (ev.type === 'sweep') {
          this.line(
            `swept ${ev.host}: ${ev.dryRun ? 'would remove' : 'removed'} ${ev.removed}, ${ev.dryRun ? 'would stop' : 'stopped'} ${ev.stopped}, ` +
              `kept ${ev.kept}, failed ${ev.failed}; ` +
              `${ev.tracked} awaiting their deadline or idle check (${(ev.durationMs / 1000).toFixed(2)} s)`,
          );
        }
        return;
      case 'removed':
        return this.line(reapLine(ev.dryRun ? 'Would remove' : 'removed', ev.entry, this.when(ev.entry), this.showHost));
      case 'stopped':
        return this.line(reapLine(ev.dryRun ? 'Would stop' : 'stopped', ev.entry, this.when(ev.entry), this.showHost));
      case 'failed':
        this.ctx.stderr.write(shown(`${this.ctx.now().toISOString()} ${reapLine('failed', ev.entry, this.when(ev.entry), this.showHost)}`));
        return;
      case 'kept':
        if (this.quiet || !this.news.keptIsNews(ev) || ev.entry.idleReason !== 'in-use') return;
        return this.line(reapLine('kept', ev.entry, `in use: ${ev.entry.processes} processes`, this.showHost));
      case 'engine':
        if (ev.state === 'connected') return this.line(`engine ${ev.host}: connected`, true);
        if (ev.state === 'disconnected') {
          const retry = (ev.retryInMs ?? 0) / 1000;
          return this.line(`engine ${ev.host}: disconnected (${ev.error ?? 'unknown error'}); retrying in ${retry}s and then with backoff up to 30s`, true);
        }
        return;
      case 'event':
        return;
      case 'exec-tree':
        if (ev.state === 'ended') return this.line(execTreeLine(ev.tree));
        if (ev.state === 'failed') this.ctx.stderr.write(shown(`${this.ctx.now().toISOString()} failed to end exec tree ${ev.tree.execId.slice(0, 12)} in ${ev.tree.container}: ${ev.tree.error}`));
        return;
    }
  }

  sandboxDirsPass(result: SandboxDirsResult, dryRun: boolean): void {
    const now = this.ctx.now();
    for (const line of refusedRoots(result, undefined)) this.ctx.stderr.write(shown(`${now.toISOString()} warning: ${line}`));
    for (const f of result.failed) this.ctx.stderr.write(shown(`${now.toISOString()} failed sandbox dir: ${f.error}`));
    for (const d of result.removed) this.line(this.sandboxDirLine(d, { dryRun, asOf: now }));
    const bytes = result.removed.reduce((n, x) => n + x.bytes, 0);
    this.line(
      `checked sandbox dirs: ${dryRun ? 'would remove' : 'removed'} ${result.removed.length} (${diskSize(bytes)}), kept ${result.kept.length}, failed ${result.failed.length}`,
    );
  }

  imageUsed(): void {
    // A line per container event would drown the log: the state file has it, NDJSON says it.
  }

  imagesPass(result: ImagesReport, dryRun: boolean): void {
    for (const f of result.failed) this.ctx.stderr.write(shown(`${this.ctx.now().toISOString()} failed image: ${f.error}`));
    for (const l of imageLines(result, dryRun, this.showHost)) this.line(l);
    this.line(`checked images${imagesCounts(result, dryRun).replace(/^; images/, '')}`);
  }

  shellSnapshotsPass(result: ShellSnapshotsResult, dryRun: boolean): void {
    const now = this.ctx.now();
    for (const line of refusedRoots(undefined, result)) this.ctx.stderr.write(shown(`${now.toISOString()} warning: ${line}`));
    for (const f of result.failed) this.ctx.stderr.write(shown(`${now.toISOString()} failed ${f.error}`));
    for (const d of result.removed) this.line(snapshotLine(d, dryRun, now));
    this.line(`checked shell snapshots${snapshotCounts(result, dryRun, true).replace(/^; shell snapshots/, '')}`);
  }

  failOpen(problem: string | null): void {
    if (!this.quiet && problem) this.say(`${problem} (--fail-open: exit 0)`);
  }
}

/** The one line of each root refused for the run (`untrusted-root`): sandbox roots, then temp directories. */
export function refusedRoots(dirs: SandboxDirsResult | undefined, snaps: ShellSnapshotsResult | undefined): string[] {
  return [...(dirs?.refused ?? []).map((r) => r.detail), ...(snaps?.tempDirs ?? []).filter((t) => t.reason).map((t) => t.problem ?? t.dir)];
}

/** `ended exec tree <id> in <container> (running 25 minutes, 6 processes)`. */
export function execTreeLine(t: EndedTree): string {
  const running = span(0, new Date(t.ageSeconds * 1000), UP_TO_DAYS);
  return `ended exec tree ${t.execId.slice(0, 12)} in ${t.container} (running ${running}, ${t.processes} ${t.processes === 1 ? 'process' : 'processes'})`;
}

/** The summary's part for the exec trees, when there were any: `; exec trees: ended 1, kept 0, failed 0`. */
function execTreeCounts(r: ReapReport): string {
  const t = r.execTrees;
  if (t.ended.length + t.kept.length + t.failed.length === 0) return '';
  return `; exec trees: ended ${t.ended.length}, kept ${t.kept.length}, failed ${t.failed.length}`;
}

/** `removed shell snapshot /tmp/hermes-snap-<id>.sh (uid 1000, unchanged 3 days, 2 secret-looking names)`. */
function snapshotLine(d: RemovedSnapshot, dryRun: boolean, asOf: Date): string {
  const names = d.secretNames === null ? '' : `, ${d.secretNames.length} secret-looking ${d.secretNames.length === 1 ? 'name' : 'names'}`;
  const more = d.files.length > 1 ? `, ${d.files.length} files` : '';
  return `${dryRun ? 'Would remove' : 'removed'} shell snapshot ${shownPath(d.path)} (uid ${d.owner}, unchanged ${span(Date.parse(d.lastChange), asOf, UP_TO_DAYS)}${names}${more})`;
}

/** The summary's part for the shell snapshots: `; shell snapshots: removed 2, kept 1, failed 0`. */
function snapshotCounts(s: ShellSnapshotsResult | undefined, dryRun: boolean, always = false): string {
  // In reap's summary only when something was (or would be) removed or failed: kept snapshots alone are no news.
  if (!s || (!always && s.removed.length + s.failed.length === 0)) return '';
  return `; shell snapshots: ${dryRun ? 'would remove' : 'removed'} ${s.removed.length}, kept ${s.kept.length}, failed ${s.failed.length}`;
}

/** The summary's part for the sandbox directories: `; sandbox dirs: removed 2 (1.2 GiB), kept 5, failed 0`. */
function sandboxDirsCounts(r: ReapReport): string {
  const d = r.sandboxDirs;
  if (!d) return '';
  const bytes = d.removed.reduce((n, x) => n + x.bytes, 0);
  return `; sandbox dirs: ${r.dryRun ? 'would remove' : 'removed'} ${d.removed.length} (${diskSize(bytes)}), kept ${d.kept.length}, failed ${d.failed.length}`;
}

/** `removed image sha256:0123456789ab python:3.11 (1.2 GiB, last used 2026-11-20T10:00:00.000Z)`, and the images kept in use or refused. */
function imageLines(r: ImagesReport | undefined, dryRun: boolean, showHost: boolean): string[] {
  if (!r) return [];
  const on = (host: string) => (showHost ? ` on ${host}` : '');
  const name = (i: { id: string; tags: string[] }) => `${i.id.slice(0, 19)} ${i.tags.join(',') || '<untagged>'}`;
  return [
    ...r.removed.map((i: RemovedImage) => `${dryRun ? 'Would remove' : 'removed'} image ${name(i)} (${diskSize(i.bytes)}, last used ${i.lastUsed})${on(i.host)}`),
    ...r.kept.filter((k) => k.reason === 'in-use' || k.reason === 'conflict').map((k) => `kept image ${name(k)}: ${k.detail}${on(k.host)}`),
  ];
}

/** The summary's part for images: `; images: removed 3 (1.2 GiB), kept 1, failed 0, 4.1 GiB of budget 5.0 GiB`. */
function imagesCounts(r: ImagesReport | undefined, dryRun: boolean): string {
  if (!r) return '';
  const freed = r.removed.reduce((n, x) => n + x.bytes, 0);
  const after = r.bytesAfter === null ? '' : `, ${diskSize(r.bytesAfter)} ${dryRun ? 'would remain' : 'now'}`;
  const budget = r.budget === null ? '' : ` (budget ${diskSize(r.budget)})`;
  return `; images: ${dryRun ? 'would remove' : 'removed'} ${r.removed.length} (${diskSize(freed)}${dryRun ? ' would be freed' : ' freed'}), kept ${r.kept.length}, failed ${r.failed.length}${after}${budget}`;
}

/** The run-wide problems of a reap: engines that could not be reached, a run cut off by `--timeout`. */
export function reapProblems(r: Pick<ReapReport, 'hosts' | 'timedOut' | 'timeoutSeconds'>): string[] {
  return [...hostProblems(r.hosts), ...(r.timedOut ? [`timed out after --timeout ${r.timeoutSeconds}s; stopped early`] : [])];
}
