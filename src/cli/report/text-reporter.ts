/**
 * Output for people: one line per removed, stopped or failed container and a summary (`reap`), one timestamped
 * line per action (`watch`), problems on stderr, and a spinner on stderr while a sweep runs at a terminal. Quiet
 * (`--quiet`) keeps only failures, problems and changes of engine state.
 */
import type { Context } from '../../context.js';
import { unreachable } from '../../util/unreachable.js';
import type { SweepEntry, SweepEvent } from '../../reaper/sweep-types.js';
import type { WatchEvent } from '../../watch/engine-watcher.js';
import { holderText } from '../reap-locks.js';
import type { Pass, PassResult, TextView } from '../../passes/types.js';
import { sweepPassOf } from '../../reaper/sweep-passes.js';
import { type Progress, hostProblems, reapLine, startProgress, whenOf } from '../render-containers.js';
import type { Notice, ReapReport, Reporter } from './types.js';
import { WatchNews } from './watch-news.js';
import { escapeControls } from '../../util/escape-controls.js';

/**
 * Every line this reporter writes goes through the one escaper: container names, profiles, paths, image tags, command
 * lines and engine errors are text an agent or a user chose, and none of it may move a terminal's cursor or forge a
 * line (the line's own text is the reporter's, free of controls).
 */
const shown = (line: string) => `${escapeControls(line)}\n`;
import { diskSize } from '../../core/sizes.js';

/** `threshold 600 s`, or `thresholds per profile` where containers are judged by their own profiles' and they differ. */
export function thresholdText(seconds: number, perProfile: unknown): string {
  return perProfile ? 'thresholds per profile' : `threshold ${seconds} s`;
}

export class TextReporter implements Reporter {
  private progress: Progress | null = null;
  private readonly news = new WatchNews();
  /** Show each entry's engine (a run over several engines). */
  private showHost = false;

  constructor(
    private readonly ctx: Context,
    private readonly quiet: boolean,
  ) {}

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
        const idleFor = n.perProfile ? 'idle per profile' : `idle ${n.idleAfterSeconds} s`;
        const idle = n.stopIdle ? `${n.dryRun ? 'would stop' : 'stops'} sandboxes ${idleFor}` : 'idle sandboxes not stopped';
        const threshold = thresholdText(n.thresholdSeconds, n.perProfile);
        return this.line(`watching ${n.hosts.join(', ')} (${threshold}, ${idle}, ${scope}${n.dryRun ? ', dry run' : ''})`);
      }
      case 'stopping':
        return this.line(`stopping (${n.signal})`);
      case 'shutdown':
        return this.line(`stopped (${n.tracked} container(s) were awaiting their deadline)`);
      case 'timed-out':
        if (!(this.quiet && n.failOpen)) this.say(`timed out after --timeout ${n.timeoutSeconds}s while ${n.phase}: ended at the deadline; nothing done`);
        return;
      case 'settings':
        return this.line(
          n.problem ? `settings not reloaded: ${n.problem}; keeping the last good ones` : `settings reloaded: ${n.changes.join('; ') || 'unchanged'}`,
          true,
        );
      case 'untrusted-setting':
        return this.say(`warning: ${n.setting.detail}`);
      default:
        return unreachable(n, 'notice');
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
      for (const { pass, result } of r.passes) for (const f of pass.outcome(result).failed) this.say(pass.text.failure(f));
    }
    if (r.noEngine && !this.quiet) this.say(r.noEngine);
    // Roots refused for the run (untrusted-root), also with --quiet: nothing was removed there, and someone should know.
    // (A directory two passes refused, the session directories both session passes take, is said once.)
    for (const line of new Set(r.passes.flatMap(({ pass, result }) => (pass.refused?.(result) ?? []).map((x) => x.line)))) this.say(`warning: ${line}`);
    if (this.quiet) return;
    const view: TextView = { dryRun: r.dryRun, asOf: r.asOf, showHost };
    const lines = (place: Pass['place']) => r.passes.filter((p) => p.pass.place === place).flatMap((p) => p.pass.text.lines(p.result, view));
    // The passes on this host's files alone first: they ran whether or not an engine answered.
    for (const line of lines('host')) ctx.stdout.write(shown(line));
    // What was removed before an engine went away mid-sweep is still reported.
    const anything = r.removed.length + r.stopped.length + r.kept.length + r.failed.length > 0;
    if (!anything && !hostNews(r.passes) && !r.noEngine && r.hosts.every((h) => !h.reachable)) return;
    for (const e of r.removed) ctx.stdout.write(shown(reapLine(r.dryRun ? 'Would remove' : 'removed', e, this.when(e, r.asOf), showHost)));
    for (const e of r.stopped) ctx.stdout.write(shown(reapLine(r.dryRun ? 'Would stop' : 'stopped', e, this.when(e, r.asOf), showHost)));
    for (const line of lines('engine')) ctx.stdout.write(shown(line));
    const scope = r.profile === null ? 'all profiles' : `profile ${r.profile}`;
    const parts = r.passes.map((p) => p.pass.text.summary(p.result, { dryRun: r.dryRun, always: false })).join('');
    ctx.stdout.write(
      shown(
        `${r.dryRun ? 'Would remove' : 'Removed'} ${r.removed.length}, ${r.dryRun ? 'would stop' : 'stopped'} ${r.stopped.length}, ` +
          `kept ${r.kept.length}, failed ${r.failed.length}${parts} ` +
          `(${thresholdText(r.thresholdSeconds, r.perProfile)}, ${scope}${r.dryRun ? ', dry run' : ''}).`,
      ),
    );
    // As `docker container prune` ends: what the run freed.
    if (r.reclaimed) ctx.stdout.write(shown(`${r.dryRun ? 'Space it would reclaim' : 'Total reclaimed space'}: ${diskSize(r.reclaimed.total)}`));
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
      case 'exec-tree': {
        // A sweep pass's decision, said by its descriptor.
        const { pass, hooks } = sweepPassOf(ev);
        if (ev.state === 'ended') return this.line(hooks.endedLine(ev.tree));
        if (ev.state === 'failed') this.ctx.stderr.write(shown(`${this.ctx.now().toISOString()} ${pass.text.watchFailure(ev.tree)}`));
        return;
      }
      default:
        return unreachable(ev, 'event');
    }
  }

  /** `watch`: a pass's failures (stderr), what it did, and `checked <what>: ...`. */
  passRun(pass: Pass, result: unknown, dryRun: boolean): void {
    const now = this.ctx.now();
    // Roots refused for the run (untrusted-root), also with --quiet: nothing was removed there, and someone should know.
    for (const x of pass.refused?.(result) ?? []) this.ctx.stderr.write(shown(`${now.toISOString()} warning: ${x.line}`));
    for (const f of pass.outcome(result).failed) this.ctx.stderr.write(shown(`${now.toISOString()} ${pass.text.watchFailure(f)}`));
    for (const line of pass.text.lines(result, { dryRun, asOf: now, showHost: this.showHost })) this.line(line);
    this.line(`checked ${pass.text.summary(result, { dryRun, always: true }).replace(/^; /, '')}`);
  }

  passNotice(): void {
    // A line per container event would drown the log: the state file has it, NDJSON says it.
  }

  failOpen(problem: string | null): void {
    if (!this.quiet && problem) this.say(`${problem} (--fail-open: exit 0)`);
  }
}

/** Something a pass on this host's files alone removed or failed on: news even when no engine answered. */
function hostNews(passes: readonly PassResult[]): boolean {
  return passes.some((p) => {
    if (p.pass.place !== 'host') return false;
    const o = p.pass.outcome(p.result);
    return o.done.length + o.failed.length > 0;
  });
}

/**
 * The first problem of a run that failed open: an engine or the timeout, else the first failure of the containers
 * and then of each pass in the list's order, with how many there were.
 */
export function firstProblem(r: Pick<ReapReport, 'hosts' | 'timedOut' | 'timeoutSeconds' | 'endedAtDeadline' | 'failed' | 'passes'>): string | null {
  const run = reapProblems(r)[0];
  if (run) return run;
  const c = r.failed[0];
  if (c) return `${r.failed.length} removal(s) or stop(s) failed, first: ${c.id.slice(0, 12)}: ${c.error}`;
  for (const { pass, result } of r.passes) {
    const failed = pass.outcome(result).failed;
    if (failed.length) return `${pass.text.failedCount(failed.length)}, first: ${pass.text.failure(failed[0]!)}`;
  }
  return null;
}

/** The run-wide problems of a reap: engines that could not be reached, a run cut off by `--timeout`. */
export function reapProblems(r: Pick<ReapReport, 'hosts' | 'timedOut' | 'timeoutSeconds' | 'endedAtDeadline'>): string[] {
  const timedOut = r.endedAtDeadline
    ? `timed out after --timeout ${r.timeoutSeconds}s while ${r.endedAtDeadline}: ended at the deadline (what is listed was done before it)`
    : `timed out after --timeout ${r.timeoutSeconds}s; stopped early`;
  // An engine the run ended before it answered is said by the timeout line alone.
  const hosts = r.endedAtDeadline ? r.hosts.filter((h) => h.reachable) : r.hosts;
  return [...hostProblems(hosts), ...(r.timedOut ? [timedOut] : [])];
}
