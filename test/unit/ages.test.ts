/**
 * Ages as people read them: the words luxon gives (`toRelative`, `Duration.toHuman`, English), also where the janitor
 * says them without luxon (ages under 28 days, and any age in days at most), on random instants.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DateTime, Duration, type ToRelativeUnit } from 'luxon';
import { UP_TO_DAYS, ago, span } from '../../src/core/ages.js';

const AGE_UNITS: ToRelativeUnit[] = ['years', 'months', 'days', 'hours', 'minutes', 'seconds'];
const utc = (ms: number) => DateTime.fromMillis(ms, { zone: 'utc' });

/** What core/ages.ts said with luxon alone (before ages under 28 days were said without it). */
function luxonAgo(instantMs: number, asOf: Date, units: ToRelativeUnit[]): string {
  const at = Math.abs(instantMs - asOf.getTime()) < 1000 ? asOf.getTime() - 1 : instantMs;
  return utc(at).toRelative({ base: utc(asOf.getTime()), locale: 'en', unit: units }) ?? '-';
}
function luxonSpan(sinceMs: number, asOf: Date, units: ToRelativeUnit[]): string {
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
  return Duration.fromObject({ [unit]: n }, { locale: 'en' }).toHuman({ unitDisplay: 'long' });
}

const DAY = 86_400_000;
const asOfArb = fc.integer({ min: Date.parse('2000-01-01T00:00:00Z'), max: Date.parse('2040-01-01T00:00:00Z') });
// Mostly short ages, some around the 28-day edge, some long, a few in the future.
const deltaArb = fc.oneof(
  fc.integer({ min: 0, max: 90_000 }),
  fc.integer({ min: 0, max: 3 * DAY }),
  fc.integer({ min: 27 * DAY, max: 29 * DAY }),
  fc.integer({ min: 0, max: 800 * DAY }),
  fc.integer({ min: -3 * DAY, max: 0 }),
);

describe('ages', () => {
  it('say what luxon says, in every unit set the janitor uses', () => {
    fc.assert(
      fc.property(asOfArb, deltaArb, fc.constantFrom(AGE_UNITS, UP_TO_DAYS), (asOfMs, delta, units) => {
        const asOf = new Date(asOfMs);
        assert.equal(ago(asOfMs - delta, asOf, units), luxonAgo(asOfMs - delta, asOf, units));
        assert.equal(span(asOfMs - delta, asOf, units), luxonSpan(asOfMs - delta, asOf, units));
      }),
      { numRuns: 3000 },
    );
  });

  it('examples', () => {
    const asOf = new Date('2026-11-27T12:00:00Z');
    const at = (iso: string) => Date.parse(iso);
    assert.equal(ago(at('2026-11-27T09:00:00Z'), asOf), '3 hours ago');
    assert.equal(ago(at('2026-11-27T11:59:59.500Z'), asOf), '0 seconds ago');
    assert.equal(ago(at('2026-11-26T11:00:00Z'), asOf), '1 day ago');
    assert.equal(ago(at('2026-09-27T12:00:00Z'), asOf), '2 months ago');
    assert.equal(ago(at('2026-11-27T15:00:00Z'), asOf), 'in 3 hours');
    assert.equal(span(at('2026-11-27T11:00:00Z'), asOf), '1 hour');
    assert.equal(span(at('2023-11-27T11:00:00Z'), asOf, UP_TO_DAYS), '1,096 days');
  });
});
