/**
 * Every age and duration a person reads, one way: "3 hours ago", "1 month ago", "idle 3 hours", "unchanged 41 days"
 * (or, where a terminal is narrow, "3h ago", "1mo ago", "3h"). An age is the calendar difference between an instant
 * and the run's instant (`asOf`), in UTC, in the largest whole unit (years, months, days, hours, minutes, seconds),
 * so the same instant reads the same in the `list` table, the `reap` and `watch` lines and `status`: 30 days before
 * 31 March is "30 days ago" (1 March to 31 March is not a calendar month), 60 days after a late-November finish is
 * "1 month ago".
 *
 * The calendar difference in months and years is luxon's; in UTC a day, an hour, a minute and a second have fixed
 * lengths, so the difference in those units is a division, and an age under 28 days (no calendar month fits in it)
 * needs no calendar at all. The words are the ones luxon's English gives (`Intl.RelativeTimeFormat` and
 * `Intl.NumberFormat` for `en`: `N unit(s) ago`, `in N unit(s)`, `N unit(s)`), said here: measured on this machine,
 * luxon's first difference and first phrase cost about 60 ms and 30 ms (ICU's locale data, built on first use), then
 * about 0.7 ms per age, so a `list` of ten sandboxes paid more for its ages than for the engine.
 * test/unit/ages.test.ts checks the words against luxon's on random instants.
 *
 * Pure: the caller gives both instants. luxon (about 6 ms to load here) is loaded on the first age of 28 days or
 * more said in months or years, not with this module.
 */
import { requirePackage } from '../util/require-package.js';
import type * as Luxon from 'luxon';
import type { ToRelativeUnit } from 'luxon';

let luxon: typeof Luxon | undefined;
/** luxon, loaded (synchronously, its CommonJS build) on first use. */
const lib = (): typeof Luxon => (luxon ??= requirePackage('luxon') as typeof Luxon);

/** The units an age is said in, largest first: luxon's own for `toRelative`. */
const AGE_UNITS: ToRelativeUnit[] = ['years', 'months', 'days', 'hours', 'minutes', 'seconds'];
/** How long a task directory sat unchanged: in days at most (its removal is decided in days). */
export const UP_TO_DAYS: ToRelativeUnit[] = ['days', 'hours', 'minutes', 'seconds'];

/** How an age is said: `long` ("3 hours ago", the default) or `narrow` ("3h ago"), for a narrow terminal. */
export type AgeStyle = 'long' | 'narrow';

const utc = (ms: number) => lib().DateTime.fromMillis(ms, { zone: 'utc' });

/** Units of a fixed length in UTC, in ms. */
const FIXED_MS: Partial<Record<ToRelativeUnit, number>> = { days: 86_400_000, hours: 3_600_000, minutes: 60_000, seconds: 1000 };
/** The shortest calendar month (February): a difference under it holds no whole month or year. */
const SHORTEST_MONTH_MS = 28 * 86_400_000;
const NARROW: Partial<Record<ToRelativeUnit, string>> = { years: 'y', months: 'mo', days: 'd', hours: 'h', minutes: 'm', seconds: 's' };

/**
 * The largest of `units` with at least one whole unit from `fromMs` to `toMs` (not before it), and how many (luxon's
 * `diff(...).get(unit)`, truncated); none: zero of the smallest unit.
 */
function countOf(fromMs: number, toMs: number, units: ToRelativeUnit[]): { unit: ToRelativeUnit; n: number } {
  const calendar = units.filter((u) => FIXED_MS[u] === undefined);
  const needsCalendar = calendar.some((u) => u !== 'years' && u !== 'months') || (calendar.length > 0 && toMs - fromMs >= SHORTEST_MONTH_MS);
  const end = needsCalendar ? utc(toMs) : undefined;
  const start = needsCalendar ? utc(fromMs) : undefined;
  for (const unit of units) {
    const ms = FIXED_MS[unit];
    const n = ms !== undefined ? Math.trunc((toMs - fromMs) / ms) : end && start ? Math.trunc(end.diff(start, unit).get(unit)) : 0;
    if (n >= 1) return { unit, n };
  }
  return { unit: units[units.length - 1]!, n: 0 };
}

/** `3 hours`, `1 hour`, `0 seconds`, `1,234 days` (what `Intl` says in English), or narrow: `3h`, `1mo`. */
function said({ unit, n }: { unit: ToRelativeUnit; n: number }, style: AgeStyle): string {
  const grouped = String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  if (style === 'narrow') return `${grouped}${NARROW[unit] ?? ` ${unit}`}`;
  return `${grouped} ${n === 1 ? unit.slice(0, -1) : unit}`;
}

/**
 * "3 hours ago" for an instant before `asOf` ("in 3 hours" after it), in the largest of `units` with at least one,
 * by calendar difference, truncated toward zero.
 */
export function ago(instantMs: number, asOf: Date, units: ToRelativeUnit[] = AGE_UNITS, style: AgeStyle = 'long'): string {
  if (!Number.isFinite(instantMs)) return '-';
  // Within a second of the run's instant: "0 seconds ago" (luxon says "in 0 seconds" of the instant itself).
  const at = Math.abs(instantMs - asOf.getTime()) < 1000 ? asOf.getTime() - 1 : instantMs;
  const base = asOf.getTime();
  return at < base ? `${said(countOf(at, base, units), style)} ago` : `in ${said(countOf(base, at, units), style)}`;
}

/**
 * "3 hours": the time from `sinceMs` to `asOf` in the largest whole unit of `units` with at least one, chosen as
 * `ago` chooses it, so "idle 2 months" and "2 months ago" agree for the same instant. "0 seconds" when `sinceMs` is
 * not before `asOf`.
 */
export function span(sinceMs: number, asOf: Date, units: ToRelativeUnit[] = AGE_UNITS, style: AgeStyle = 'long'): string {
  if (!Number.isFinite(sinceMs)) return '-';
  return said(countOf(Math.min(sinceMs, asOf.getTime()), asOf.getTime(), units), style);
}

/** `ago` for an age in seconds as of `asOf` (the instant `asOf - seconds`). */
export const agoSeconds = (seconds: number, asOf: Date, style: AgeStyle = 'long'): string => ago(asOf.getTime() - seconds * 1000, asOf, AGE_UNITS, style);

/** `span` for a number of seconds ending at `asOf`. */
export const spanSeconds = (seconds: number, asOf: Date, units?: ToRelativeUnit[], style: AgeStyle = 'long'): string =>
  span(asOf.getTime() - seconds * 1000, asOf, units, style);
