import type { Context } from '../context.js';
import { compareText } from '../util/compare-text.js';
import { NotADockerEngineError } from '../errors.js';
import { type AgeStyle, agoSeconds, spanSeconds } from '../core/ages.js';
import type { HostOutcome } from '../reaper/run.js';
import type { FailedEntry, StoppedEntry, SweepEntry, SweepEvent } from '../reaper/sweep-types.js';
import { diskSize } from '../core/sizes.js';
import { importEsm } from '../util/import-esm.js';

export const shortId = (id: string) => id.slice(0, 12);

/**
 * "3 hours ago" for an entry's FinishedAt (its Created for a never-started one), as of the run's instant: the one
 * way every output says it (core/ages.ts, luxon). "never" for Go's zero time, "-" when it has none.
 */
export function finishedAgo(e: SweepEntry, asOf: Date, style: AgeStyle = 'long'): string {
  if (e.ageSeconds === null) return e.finishedAt.startsWith('0001-') ? 'never' : '-';
  return agoSeconds(e.ageSeconds, asOf, style);
}

/** "3 hours" for a number of seconds up to the run's instant, "-" for null. */
export function idleFor(seconds: number | null | undefined, asOf: Date, style: AgeStyle = 'long'): string {
  if (seconds === null || seconds === undefined) return '-';
  return spanSeconds(seconds, asOf, undefined, style);
}

/** What a reap line says of when: "finished 3 hours ago", "created 3 hours ago" (never started) or "idle 3 hours". */
export function whenOf(e: SweepEntry, asOf: Date): string {
  if (e.rule === 'idle') return `idle ${idleFor(e.idleSeconds, asOf)}`;
  if (e.rule === 'never-started') return `created ${finishedAgo(e, asOf)}`;
  return `finished ${finishedAgo(e, asOf)}`;
}

/** Sorts for stable output: by host, then name, then id (code-unit order: the same in every locale). */
export function byHostAndName<T extends SweepEntry>(a: T, b: T): number {
  return compareText(a.host, b.host) || compareText(a.name, b.name) || compareText(a.id, b.id);
}

/** `, writable layer 20.0 MiB`: the cost of a stop (`unknown` when the engine gave no size), or '' when not measured. */
function layerPart(e: SweepEntry): string {
  if (e.writableLayerBytes === undefined) return '';
  return `, writable layer ${e.writableLayerBytes === null ? 'unknown' : diskSize(e.writableLayerBytes)}`;
}

/**
 * One human line per removed, stopped or failed container: `stopped <id> <name> (profile p, idle 3 hours, writable
 * layer 20.0 MiB)`; a dry run says `Would remove` / `Would stop` (`when`: "finished 3 hours ago" or "idle 3 hours").
 */
export function reapLine(
  kind: 'removed' | 'Would remove' | 'stopped' | 'Would stop' | 'failed' | 'kept',
  e: SweepEntry | FailedEntry,
  when: string,
  showHost: boolean,
): string {
  const where = showHost ? ` on ${e.host}` : '';
  const layer = kind === 'stopped' || kind === 'Would stop' ? layerPart(e) : '';
  const base = `${kind} ${shortId(e.id)} ${e.name || '-'} (profile ${e.profile ?? '-'}, ${when}${layer})${where}`;
  if ('error' in e) return `${base}: ${e.error}`;
  const s = e as StoppedEntry;
  return s.killed ? `${base}: killed by the engine after ${s.graceSeconds ?? '?'} s (it ignored SIGTERM)` : base;
}

/** Human lines for engines that could not be reached (or are not engines: that line names the address itself). */
export function hostProblems(hosts: HostOutcome[]): string[] {
  return hosts
    .filter((h) => !h.reachable)
    .map((h) => (NotADockerEngineError.says(h.host, h.error) ? h.error! : `engine ${h.host} unreachable: ${h.error ?? 'unknown error'}`));
}

/** A spinner on stderr, only when it is a terminal and output is for humans. */
export interface Progress {
  tick(ev: SweepEvent): void;
  stop(): void;
}

export async function startProgress(ctx: Context, enabled: boolean, verb: string): Promise<Progress> {
  if (!enabled || !ctx.stderr.isTTY) return { tick: () => undefined, stop: () => undefined };
  const { default: ora } = await importEsm<typeof import('ora')>('ora');
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
