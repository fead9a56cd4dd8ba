/**
 * What `list` tells its caller, chosen once per run as for `reap` (reporter.ts): a JSON document (`--json`), one
 * NDJSON line per container and a summary (`--log-format json`), the lines of a `--format` template, or the table
 * and its summary for people (`--quiet`: problems only, and the table only when something went wrong). The command
 * parses and runs; these write.
 */
import type { Context } from '../../context.js';
import { ExitCode } from '../../errors.js';
import type { HostOutcome } from '../../reaper/run.js';
import type { FailedEntry, ListedEntry, SweepEvent } from '../../reaper/sweep-types.js';
import { hostProblems } from '../render-containers.js';
import { renderListTable } from '../render-list-table.js';
import { type ListFormat, renderListFormat } from '../list-format.js';
import { escapeControls } from '../../util/escape-controls.js';
import { writeJson } from '../shared.js';
import type { UntrustedSetting } from '../../core/setting-worth.js';
import { ndjsonEvent, sweepEventToNdjson } from './ndjson-reporter.js';
import { outputFormat } from './reporter.js';

/** The policy a list was judged under (the top-level keys of `list --json`). */
export interface ListSummary {
  asOf: string;
  thresholdSeconds: number;
  profile: string | null;
  stopIdle: boolean;
  idleAfterSeconds: number;
  /** Each label's thresholds, when they differ (the summary says "thresholds per profile"). */
  thresholdByProfile?: Record<string, number>;
  idleAfterByProfile?: Record<string, number>;
}

/** The end of a `list`. */
export interface ListReport {
  summary: ListSummary;
  containers: ListedEntry[];
  failed: FailedEntry[];
  hosts: HostOutcome[];
  timedOut: boolean;
  warnings: string[];
  /** `--timeout`, in seconds (for the "timed out" line). */
  timeoutSeconds: number;
  exitCode: number;
  /** `--wide`: every column, nothing cut. */
  wide: boolean;
  /** `--format`: one line per container from this template instead of the table. */
  format?: ListFormat;
  /** The command that acts on what was listed (`reap` with this list's selection and engine), to paste. */
  advice?: string;
  /** The settings refused for the run (`untrusted-setting`), when any (text: each a warning line, also with `--quiet`). */
  untrustedSettings?: UntrustedSetting[];
}

export interface ListReporter {
  /** A decision of the running sweep, as it is made. */
  sweepEvent(ev: SweepEvent): void;
  result(r: ListReport): Promise<void>;
}

class JsonListReporter implements ListReporter {
  constructor(private readonly ctx: Context) {}
  sweepEvent(): void {}
  async result(r: ListReport): Promise<void> {
    const { summary, containers, failed, hosts, timedOut, warnings } = r;
    const untrustedSettings = r.untrustedSettings?.length ? { untrustedSettings: r.untrustedSettings } : {};
    writeJson(this.ctx, { ...summary, containers, failed, hosts, timedOut, ...(warnings.length ? { warnings } : {}), ...untrustedSettings });
  }
}

class NdjsonListReporter implements ListReporter {
  constructor(private readonly ctx: Context) {}
  sweepEvent(ev: SweepEvent): void {
    sweepEventToNdjson(this.ctx, ev);
  }
  async result(r: ListReport): Promise<void> {
    for (const w of r.warnings) ndjsonEvent(this.ctx, 'warning', { message: w });
    for (const { reason: _, detail, ...u } of r.untrustedSettings ?? []) ndjsonEvent(this.ctx, 'untrusted-setting', { ...u, message: detail });
    ndjsonEvent(this.ctx, 'summary', { ...r.summary, containers: r.containers.length, failed: r.failed.length, hosts: r.hosts, timedOut: r.timedOut });
  }
}

class TextListReporter implements ListReporter {
  constructor(
    private readonly ctx: Context,
    private readonly quiet: boolean,
  ) {}
  sweepEvent(): void {}
  async result(r: ListReport): Promise<void> {
    const { ctx } = this;
    const say = (line: string) => ctx.stderr.write(`hermes-janitor: ${escapeControls(line)}\n`);
    for (const line of hostProblems(r.hosts)) say(line);
    if (!this.quiet) for (const w of r.warnings) say(`warning: ${w}`);
    for (const u of r.untrustedSettings ?? []) ctx.stderr.write(`hermes-janitor: warning: ${u.detail}\n`);
    for (const f of r.failed) say(`cannot inspect ${f.id.slice(0, 12)} ${escapeControls(f.name)}: ${f.error}`);
    if (r.timedOut) say(`timed out after --timeout ${r.timeoutSeconds}s; the list is incomplete`);
    if (this.quiet && r.exitCode === ExitCode.OK) return;
    if (r.hosts.every((h) => !h.reachable)) return;
    const asOf = new Date(r.summary.asOf);
    if (r.format) {
      ctx.stdout.write(renderListFormat(r.format, r.containers, asOf));
      return;
    }
    // At a terminal the summary follows the table; piped, stdout holds the table alone (as docker ps prints it) and
    // the summary goes to stderr.
    const tty = Boolean(ctx.stdout.isTTY);
    const note = (line: string) => (tty ? ctx.stdout.write(`${escapeControls(line)}\n`) : say(line));
    if (r.containers.length > 0 || !tty) {
      ctx.stdout.write(`${renderListTable(ctx, r.containers, { asOf, showHost: r.hosts.length > 1, wide: r.wide })}\n`);
    }
    for (const line of listSummary(r)) note(line);
  }
}

/** Whether the list may have left containers out: a timeout, an engine not reached, a container not inspected. */
const incomplete = (r: ListReport) => r.timedOut || r.failed.length > 0 || r.hosts.some((h) => !h.reachable);

/**
 * The summary under the table, on lines of their own: the counts, the policy, and what to run (with the selection
 * and engine of this list). A list that may be incomplete never says there is nothing.
 */
export function listSummary(r: ListReport): string[] {
  const s = r.summary;
  const scope = s.profile === null ? 'any profile' : `profile ${escapeControls(s.profile)}`;
  const partial = incomplete(r);
  if (r.containers.length === 0) {
    return [partial ? `No labelled containers listed for ${scope}, but the list is incomplete (see above).` : `No labelled containers for ${scope}.`];
  }
  const reapable = r.containers.filter((c) => c.verdict === 'reap').length;
  const stoppable = r.containers.filter((c) => c.verdict === 'stop').length;
  const out = [
    `${r.containers.length} container(s), ${reapable} to reap, ${stoppable} to stop${partial ? ' (incomplete: see above)' : ''}.`,
    `${s.thresholdByProfile ? 'Thresholds per profile' : `Threshold ${s.thresholdSeconds} s, idle after ${s.idleAfterSeconds} s`}` +
      `${s.stopIdle ? '' : ', stopping off'}, ` +
      `as of ${s.asOf.replace(/\.\d+Z$/, 'Z')}.`,
  ];
  if (reapable + stoppable > 0 && r.advice) out.push(`To ${reapable ? 'remove' : 'stop'} ${reapable && stoppable ? 'and stop ' : ''}them: ${r.advice}`);
  return out;
}

/** The reporter for the flags, chosen once per run. */
export function chooseListReporter(ctx: Context, opts: { json?: boolean; logFormat: 'text' | 'json'; quiet?: boolean }): ListReporter {
  const format = outputFormat(opts);
  if (format === 'json') return new JsonListReporter(ctx);
  if (format === 'ndjson') return new NdjsonListReporter(ctx);
  return new TextListReporter(ctx, format === 'quiet');
}
