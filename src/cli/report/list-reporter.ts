/**
 * What `list` tells its caller, chosen once per run as for `reap` (reporter.ts): a JSON document (`--json`), one
 * NDJSON line per container and a summary (`--log-format json`), or the table and a summary line for people
 * (`--quiet`: problems only, and the table only when something went wrong). The command parses and runs; these write.
 */
import type { Context } from '../../context.js';
import { ExitCode } from '../../errors.js';
import type { HostOutcome } from '../../reaper/run.js';
import type { FailedEntry, ListedEntry, SweepEvent } from '../../reaper/sweep-types.js';
import { hostProblems } from '../render-containers.js';
import { renderListTable } from '../render-list-table.js';
import { writeJson } from '../shared.js';
import { ndjsonEvent, sweepEventToNdjson } from './ndjson-reporter.js';
import { outputFormat } from './reporter.js';
import { escapeControls } from '../../util/escape-controls.js';

/** The policy a list was judged under (the top-level keys of `list --json`). */
export interface ListSummary {
  asOf: string;
  thresholdSeconds: number;
  profile: string | null;
  stopIdle: boolean;
  idleAfterSeconds: number;
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
  /** `--wide`: the plain table, nothing cut. */
  wide: boolean;
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
    writeJson(this.ctx, { ...summary, containers, failed, hosts, timedOut, ...(warnings.length ? { warnings } : {}) });
  }
}

class NdjsonListReporter implements ListReporter {
  constructor(private readonly ctx: Context) {}
  sweepEvent(ev: SweepEvent): void {
    sweepEventToNdjson(this.ctx, ev);
  }
  async result(r: ListReport): Promise<void> {
    for (const w of r.warnings) ndjsonEvent(this.ctx, 'warning', { message: w });
    ndjsonEvent(this.ctx, 'summary', { ...r.summary, containers: r.containers.length, failed: r.failed.length, hosts: r.hosts, timedOut: r.timedOut });
  }
}

class TextListReporter implements ListReporter {
  constructor(private readonly ctx: Context, private readonly quiet: boolean) {}
  sweepEvent(): void {}
  async result(r: ListReport): Promise<void> {
    const { ctx } = this;
    const say = (line: string) => ctx.stderr.write(`hermes-janitor: ${escapeControls(line)}\n`);
    for (const line of hostProblems(r.hosts)) say(line);
    if (!this.quiet) for (const w of r.warnings) say(`warning: ${w}`);
    for (const f of r.failed) say(`cannot inspect ${f.id.slice(0, 12)} ${f.name}: ${f.error}`);
    if (r.timedOut) say(`timed out after --timeout ${r.timeoutSeconds}s; the list is incomplete`);
    if (this.quiet && r.exitCode === ExitCode.OK) return;
    if (r.hosts.every((h) => !h.reachable)) return;
    if (r.containers.length === 0) {
      const scope = r.summary.profile === null ? 'any profile' : `profile ${r.summary.profile}`;
      ctx.stdout.write(`No labelled containers for ${escapeControls(scope)}.\n`);
      return;
    }
    const asOf = new Date(r.summary.asOf);
    ctx.stdout.write(`${await renderListTable(ctx, r.containers, { asOf, showHost: r.hosts.length > 1, wide: r.wide })}\n`);
    const reapable = r.containers.filter((c) => c.verdict === 'reap').length;
    const stoppable = r.containers.filter((c) => c.verdict === 'stop').length;
    const s = r.summary;
    ctx.stdout.write(
      `${r.containers.length} container(s), ${reapable} to reap, ${stoppable} to stop (threshold ${s.thresholdSeconds} s, idle after ${s.idleAfterSeconds} s${s.stopIdle ? '' : ', stopping off'}, as of ${s.asOf}).\n`,
    );
  }
}

/** The reporter for the flags, chosen once per run. */
export function chooseListReporter(ctx: Context, opts: { json?: boolean; logFormat: 'text' | 'json'; quiet?: boolean }): ListReporter {
  const format = outputFormat(opts);
  if (format === 'json') return new JsonListReporter(ctx);
  if (format === 'ndjson') return new NdjsonListReporter(ctx);
  return new TextListReporter(ctx, format === 'quiet');
}
