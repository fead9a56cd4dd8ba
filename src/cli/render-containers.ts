import type { Context } from '../context.js';
import type { HostOutcome } from '../reaper/run.js';
import type { FailedEntry, ListedEntry, SweepEntry, SweepEvent } from '../reaper/sweep.js';

/** "12 minutes ago" for a FinishedAt, relative to the run's instant; "-" when it has none. */
export async function relativeFinished(entries: SweepEntry[], asOf: Date): Promise<Map<string, string>> {
  const { DateTime } = await import('luxon');
  const base = DateTime.fromJSDate(asOf);
  const out = new Map<string, string>();
  for (const e of entries) {
    if (e.ageSeconds === null) out.set(e.id, e.finishedAt.startsWith('0001-') ? 'never' : '-');
    else out.set(e.id, base.minus({ milliseconds: Math.round(e.ageSeconds * 1000) }).toRelative({ base }) ?? '-');
  }
  return out;
}

export const shortId = (id: string) => id.slice(0, 12);

const AGO_UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['year', 31_536_000], ['month', 2_592_000], ['day', 86_400], ['hour', 3600], ['minute', 60], ['second', 1],
];
let rtf: Intl.RelativeTimeFormat | undefined;

/**
 * "3 hours ago" for one entry, formatted as it is written: `reap` prints a line per removed container, and a
 * sweep of 100k containers must not build 100k luxon DateTimes first (the `list` table uses luxon).
 */
export function finishedAgo(e: SweepEntry): string {
  if (e.ageSeconds === null) return e.finishedAt.startsWith('0001-') ? 'never' : '-';
  rtf ??= new Intl.RelativeTimeFormat('en', { numeric: 'always' });
  const past = -e.ageSeconds;
  const [unit, size] = AGO_UNITS.find(([, s]) => Math.abs(past) >= s) ?? ['second', 1];
  return rtf.format(Math.trunc(past / size), unit);
}

/** "3 hours" for a number of seconds (the largest whole unit), "-" for null. */
export function idleFor(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '-';
  const [unit, size] = AGO_UNITS.find(([, s]) => seconds >= s) ?? ['second', 1];
  const n = Math.trunc(seconds / size);
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** What a reap line says of when: "finished 3 hours ago", "created 3 hours ago" (never started) or "idle 3 hours". */
export function whenOf(e: SweepEntry): string {
  if (e.rule === 'idle') return `idle ${idleFor(e.idleSeconds)}`;
  if (e.rule === 'never-started') return `created ${finishedAgo(e)}`;
  return `finished ${finishedAgo(e)}`;
}

/** The `list` table (cli-table3). */
export async function renderTable(ctx: Context, rows: ListedEntry[], asOf: Date, showHost: boolean): Promise<string> {
  const { default: Table } = await import('cli-table3');
  const finished = await relativeFinished(rows, asOf);
  const head = ['ID', 'NAME', 'PROFILE', 'STATE', 'FINISHED', 'IDLE', 'VERDICT', 'REASON', ...(showHost ? ['HOST'] : [])];
  const color = Boolean(ctx.stdout.isTTY) && !ctx.env.NO_COLOR;
  const table = new Table({ head, style: { head: color ? ['bold'] : [], border: color ? ['grey'] : [] } });
  for (const r of rows) {
    table.push([
      shortId(r.id), r.name, r.profile ?? '-', r.state, finished.get(r.id) ?? '-',
      r.idleSeconds !== undefined ? idleFor(r.idleSeconds) : '', r.verdict, reasonCell(r),
      ...(showHost ? [r.host] : []),
    ]);
  }
  return table.toString();
}

/** The REASON cell: `running (idle-too-recent)`, `running (in-use: 4 processes)`. */
function reasonCell(r: ListedEntry): string {
  if (!r.idleReason) return r.reason;
  if (r.idleReason === 'in-use' && typeof r.processes === 'number') return `${r.reason} (in-use: ${r.processes} processes)`;
  return `${r.reason} (${r.idleReason})`;
}

/** Sorts for stable output: by host, then name, then id. */
export function byHostAndName<T extends SweepEntry>(a: T, b: T): number {
  return a.host.localeCompare(b.host) || a.name.localeCompare(b.name) || a.id.localeCompare(b.id);
}

/**
 * One human line per removed, stopped or failed container: `stopped <id> <name> (profile p, idle 3 hours)`; a dry run
 * says `Would remove` / `Would stop` (`when`: "finished 3 hours ago" or "idle 3 hours").
 */
export function reapLine(
  kind: 'removed' | 'Would remove' | 'stopped' | 'Would stop' | 'failed' | 'kept', e: SweepEntry | FailedEntry, when: string, showHost: boolean,
): string {
  const where = showHost ? ` on ${e.host}` : '';
  const base = `${kind} ${shortId(e.id)} ${e.name || '-'} (profile ${e.profile ?? '-'}, ${when})${where}`;
  return 'error' in e ? `${base}: ${e.error}` : base;
}

/** Human lines for engines that could not be reached. */
export function hostProblems(hosts: HostOutcome[]): string[] {
  return hosts.filter((h) => !h.reachable).map((h) => `engine ${h.host} unreachable: ${h.error ?? 'unknown error'}`);
}

/** A spinner on stderr, only when it is a terminal and output is for humans. */
export interface Progress {
  tick(ev: SweepEvent): void;
  stop(): void;
}

export async function startProgress(ctx: Context, enabled: boolean, verb: string): Promise<Progress> {
  if (!enabled || !ctx.stderr.isTTY) return { tick: () => undefined, stop: () => undefined };
  const { default: ora } = await import('ora');
  const spinner = ora({ text: `${verb}...`, stream: ctx.stderr as NodeJS.WritableStream }).start();
  let total = 0;
  let done = 0;
  return {
    tick(ev) {
      if (ev.type === 'candidates') total += ev.count;
      else done++;
      spinner.text = `${verb}: ${done}/${total}`;
    },
    stop: () => spinner.stop(),
  };
}
