/**
 * Every age and duration a person reads, said by luxon, one way: "3 hours ago", "1 month ago", "idle 3 hours",
 * "unchanged 41 days". An age is the calendar difference between an instant and the run's instant (`asOf`), in
 * UTC, in the largest whole unit (years, months, days, hours, minutes, seconds), so the same instant reads the same
 * in the `list` table, the `reap` and `watch` lines and `status`: 30 days before 31 March is "30 days ago" (1 March
 * to 31 March is not a calendar month), 60 days after a late-November finish is "1 month ago".
 *
 * Pure: the caller gives both instants. luxon (about 6 ms to load here) is loaded on the first age said, not with
 * this module: a `reap --quiet` or a `list --json` says none (the JSON outputs carry seconds and RFC 3339 instants).
 */
import { createRequire } from 'node:module';
import type * as Luxon from 'luxon';
import type { ToRelativeUnit } from 'luxon';

let luxon: typeof Luxon | undefined;
/** luxon, loaded (synchronously, its CommonJS build) on first use. */
const lib = (): typeof Luxon => (luxon ??= createRequire(import.meta.url)('luxon') as typeof Luxon);

/** The units an age is said in, largest first: luxon's own for `toRelative`. */
const AGE_UNITS: ToRelativeUnit[] = ['years', 'months', 'days', 'hours', 'minutes', 'seconds'];
/** How long a task directory sat unchanged: in days at most (its removal is decided in days). */
export const UP_TO_DAYS: ToRelativeUnit[] = ['days', 'hours', 'minutes', 'seconds'];

const utc = (ms: number) => lib().DateTime.fromMillis(ms, { zone: 'utc' });

/**
 * "3 hours ago" for an instant before `asOf` (luxon's `toRelative`: the largest of `units` with at least one, by
 * calendar difference, truncated toward zero).
 */
export function ago(instantMs: number, asOf: Date, units: ToRelativeUnit[] = AGE_UNITS): string {
  if (!Number.isFinite(instantMs)) return '-';
  // Within a second of the run's instant: "0 seconds ago" (luxon says "in 0 seconds" of the instant itself).
  const at = Math.abs(instantMs - asOf.getTime()) < 1000 ? asOf.getTime() - 1 : instantMs;
  return utc(at).toRelative({ base: utc(asOf.getTime()), locale: 'en', unit: units }) ?? '-';
}

/**
 * "3 hours": the time from `sinceMs` to `asOf` in the largest whole unit of `units` with at least one, chosen as
 * `toRelative` chooses it (each unit's own calendar difference, truncated), so "idle 2 months" and "2 months ago"
 * agree for the same instant. "0 seconds" when `sinceMs` is not before `asOf`.
 */
export function span(sinceMs: number, asOf: Date, units: ToRelativeUnit[] = AGE_UNITS): string {
  if (!Number.isFinite(sinceMs)) return '-';
  const end = utc(asOf.getTime());
  const start = utc(Math.min(sinceMs, asOf.getTime()));
  let unit: ToRelativeUnit = units[units.length - 1]!;
  let n = 0;
  for (const u of units) {
    const c = Math.trunc(end.diff(start, u).get(u));
    if (c >= 1) {
      unit = u;
      n = c;
      break;
    }
  }
  return lib().Duration.fromObject({ [unit]: n }, { locale: 'en' }).toHuman({ unitDisplay: 'long' });
}

/** `ago` for an age in seconds as of `asOf` (the instant `asOf - seconds`). */
export const agoSeconds = (seconds: number, asOf: Date): string => ago(asOf.getTime() - seconds * 1000, asOf);

/** `span` for a number of seconds ending at `asOf`. */
export const spanSeconds = (seconds: number, asOf: Date, units?: ToRelativeUnit[]): string => span(asOf.getTime() - seconds * 1000, asOf, units);
