/**
 * Property tests for the reaper's pure core: `FinishedAt` parsing agrees with an independent BigInt reference
 * (and with Date.parse at millisecond precision) for generated RFC 3339 strings, and never throws on anything;
 * the verdict never reaps a running, future, zero, unparseable or too-young container, for any clock and any
 * lifetime, and always reaps an old enough one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseFinishedAt } from '../../src/core/finished-at.js';
import { judge, thresholdSeconds } from '../../src/core/policy.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 1000);
const NS_PER_MS = 1_000_000n;
const NS_PER_S = 1_000_000_000n;

const floorDiv = (a: bigint, b: bigint) => (a >= 0n ? a / b : -((-a + b - 1n) / b));
const mod = (a: bigint, b: bigint) => a - floorDiv(a, b) * b;
const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Days in a month, by the JavaScript calendar (independent of the code under test). */
function daysIn(year: number, month: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 0);
  return d.getUTCDate();
}

interface Parts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** 0-9 digits. */
  fraction: string;
  /** 'Z', 'z' or an offset in minutes east of UTC. */
  zone: 'Z' | 'z' | number;
  /** How a zero offset is written when `zone` is a number: '+' or '-'. */
  zeroSign: '+' | '-';
  sep: 'T' | 't';
}

function render(p: Parts): string {
  const date = `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}${p.sep}${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}`;
  const frac = p.fraction ? `.${p.fraction}` : '';
  if (typeof p.zone === 'string') return `${date}${frac}${p.zone}`;
  const sign = p.zone > 0 ? '+' : p.zone < 0 ? '-' : p.zeroSign;
  const abs = Math.abs(p.zone);
  return `${date}${frac}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

const offsetOf = (p: Parts) => (typeof p.zone === 'number' ? p.zone : 0);

/** The instant a string denotes, in nanoseconds since the epoch (reference: JavaScript Date + BigInt). */
function referenceNs(p: Parts): bigint {
  const d = new Date(0);
  d.setUTCFullYear(p.year, p.month - 1, p.day);
  d.setUTCHours(p.hour, p.minute, p.second, 0);
  const nanos = BigInt(p.fraction.padEnd(9, '0'));
  return BigInt(d.getTime()) * NS_PER_MS + nanos - BigInt(offsetOf(p)) * 60n * NS_PER_S;
}

const ZERO_NS = referenceNs({ year: 1, month: 1, day: 1, hour: 0, minute: 0, second: 0, fraction: '', zone: 'Z', zeroSign: '+', sep: 'T' });

const digits = fc.string({ unit: fc.constantFrom(...'0123456789'.split('')), maxLength: 9 });
const zone = fc.oneof(fc.constantFrom<'Z' | 'z'>('Z', 'z'), fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }), fc.constant(0));
const parts: fc.Arbitrary<Parts> = fc
  .record({
    year: fc.oneof(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1960, max: 2100 }), fc.constantFrom(1, 2, 9999)),
    month: fc.integer({ min: 1, max: 12 }),
    dayPick: fc.integer({ min: 1, max: 31 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    fraction: digits,
    zone,
    zeroSign: fc.constantFrom<'+' | '-'>('+', '-'),
    sep: fc.constantFrom<'T' | 't'>('T', 't'),
  })
  .map(({ dayPick, ...r }) => ({ ...r, day: Math.min(dayPick, daysIn(r.year, r.month)) }));

/** Formats an instant (ns since the epoch) as RFC 3339 with 9 fraction digits (or Go's trimmed form) and an offset. */
function formatNs(ns: bigint, offsetMinutes: number, trim: boolean, zoneStyle: 'Z' | 'offset'): string | null {
  const local = ns + BigInt(offsetMinutes) * 60n * NS_PER_S;
  const iso = new Date(Number(floorDiv(local, NS_PER_MS))).toISOString();
  if (!/^\d{4}-/.test(iso)) return null; // outside years 0000-9999
  if (iso.startsWith('0000')) return null;
  let fraction = mod(local, NS_PER_S).toString().padStart(9, '0');
  if (trim) fraction = fraction.replace(/0+$/, '');
  const frac = fraction ? `.${fraction}` : '';
  if (zoneStyle === 'Z' && offsetMinutes === 0) return `${iso.slice(0, 19)}${frac}Z`;
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${iso.slice(0, 19)}${frac}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

const clock = fc.date({ min: new Date('0002-01-01T00:00:00Z'), max: new Date('9998-12-31T00:00:00Z'), noInvalidDate: true });
const lifetime = fc.oneof(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 10_000_000 }));
const offsetMinutes = fc.oneof(fc.constant(0), fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }));
const fmtStyle = fc.record({ trim: fc.boolean(), zoneStyle: fc.constantFrom<'Z' | 'offset'>('Z', 'offset') });

describe('parseFinishedAt (property)', () => {
  it('agrees with a BigInt reference on generated RFC 3339 strings (0-9 fraction digits, Z and offsets)', () => {
    fc.assert(
      fc.property(parts, (p) => {
        const raw = render(p);
        const got = parseFinishedAt(raw);
        const ns = referenceNs(p);
        if (ns <= ZERO_NS) {
          assert.deepEqual(got, { kind: 'zero' }, raw);
          return;
        }
        assert.deepEqual(got, { kind: 'time', epochMs: Number(floorDiv(ns, NS_PER_MS)), subMsNanos: Number(mod(ns, NS_PER_MS)) }, raw);
      }),
      { numRuns: RUNS },
    );
  });

  it('agrees with Date.parse to the millisecond', () => {
    fc.assert(
      fc.property(parts, (p) => {
        const raw = render(p);
        const got = parseFinishedAt(raw);
        fc.pre(got.kind === 'time');
        const ms3 = render({ ...p, sep: 'T', zone: p.zone === 'z' ? 'Z' : p.zone, fraction: p.fraction.padEnd(3, '0').slice(0, 3) });
        const viaDate = Date.parse(ms3);
        fc.pre(!Number.isNaN(viaDate));
        assert.equal(got.kind === 'time' && got.epochMs, viaDate, `${raw} vs ${ms3}`);
      }),
      { numRuns: RUNS },
    );
  });

  it('round-trips every instant written the way Docker writes it (RFC3339Nano, trailing zeros trimmed)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: ZERO_NS + 1n, max: 253_402_214_400n * NS_PER_S - 1n }), offsetMinutes, fmtStyle, (ns, off, style) => {
        const raw = formatNs(ns, off, style.trim, style.zoneStyle);
        fc.pre(raw !== null);
        const got = parseFinishedAt(raw);
        assert.deepEqual(got, { kind: 'time', epochMs: Number(floorDiv(ns, NS_PER_MS)), subMsNanos: Number(mod(ns, NS_PER_MS)) }, raw!);
      }),
      { numRuns: RUNS },
    );
  });

  it('calls out-of-range fields, 10+ fraction digits and missing zones invalid', () => {
    const broken = parts.chain((p) =>
      fc.constantFrom(
        render({ ...p, month: 13 }),
        render({ ...p, month: 0 }),
        render({ ...p, day: daysIn(p.year, p.month) + 1 }),
        render({ ...p, day: 0 }),
        render({ ...p, hour: 24 }),
        render({ ...p, minute: 60 }),
        render({ ...p, second: 60 }),
        render({ ...p, fraction: `${p.fraction}0123456789`.slice(0, 10) }),
        render({ ...p, zone: 24 * 60 }),
        render({ ...p, zone: 'Z' }).slice(0, -1),
        render({ ...p, zone: 'Z' }).replace(/[Tt]/, ' '),
        render({ ...p, zone: 'Z', fraction: p.fraction || '5' }).replace('.', ','),
        ` ${render(p)}`,
        `${render(p)}\n`,
      ),
    );
    fc.assert(
      fc.property(broken, (raw) => {
        assert.deepEqual(parseFinishedAt(raw), { kind: 'invalid' }, raw);
      }),
      { numRuns: RUNS },
    );
  });

  it('never throws, whatever it is given, and only ever answers a well-formed result', () => {
    const mutated = fc.tuple(parts, fc.nat(), fc.string({ maxLength: 3 }), fc.nat({ max: 3 })).map(([p, at, ins, del]) => {
      const s = render(p);
      const i = at % (s.length + 1);
      return s.slice(0, i) + ins + s.slice(i + del);
    });
    const anyInput = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary', maxLength: 64 }),
      fc.string({ unit: fc.constantFrom(...'0123456789-:.TZz+ tT'.split('')), maxLength: 40 }),
      mutated,
      fc.anything(),
    );
    fc.assert(
      fc.property(anyInput, (raw) => {
        const got = parseFinishedAt(raw);
        assert.ok(['time', 'zero', 'invalid'].includes(got.kind));
        if (got.kind === 'time') {
          assert.ok(Number.isSafeInteger(got.epochMs));
          assert.ok(Number.isInteger(got.subMsNanos) && got.subMsNanos >= 0 && got.subMsNanos < 1_000_000);
        }
      }),
      { numRuns: RUNS * 3 },
    );
  });
});

describe('judge (property)', () => {
  const asOfNs = (d: Date) => BigInt(d.getTime()) * NS_PER_MS;
  const anyFinishedAt = fc.oneof(parts.map(render), fc.string(), fc.constant('0001-01-01T00:00:00Z'));

  it('never reaps a running container, for any FinishedAt, clock and lifetime', () => {
    fc.assert(
      fc.property(anyFinishedAt, clock, lifetime, (finishedAt, asOf, life) => {
        const v = judge({ running: true, finishedAt }, asOf, thresholdSeconds(life));
        assert.deepEqual([v.verdict, v.verdict === 'keep' && v.reason], ['keep', 'running']);
      }),
      { numRuns: RUNS },
    );
  });

  it('never reaps a FinishedAt in the future of the clock', () => {
    fc.assert(
      fc.property(clock, fc.bigInt({ min: 1n, max: 400n * 24n * 3600n * NS_PER_S }), offsetMinutes, fmtStyle, lifetime, (asOf, ahead, off, style, life) => {
        const raw = formatNs(asOfNs(asOf) + ahead, off, style.trim, style.zoneStyle);
        fc.pre(raw !== null);
        const v = judge({ running: false, finishedAt: raw! }, asOf, thresholdSeconds(life));
        assert.equal(v.verdict, 'keep', raw!);
        assert.equal(v.verdict === 'keep' && v.reason, 'future-finished-at', raw!);
        assert.ok(v.ageSeconds !== null && v.ageSeconds <= 0);
      }),
      { numRuns: RUNS },
    );
  });

  it('never reaps the zero time (in any spelling) or anything before it', () => {
    const zeroes = fc.oneof(
      fc.constantFrom(
        '0001-01-01T00:00:00Z',
        '0001-01-01T00:00:00.000000000Z',
        '0001-01-01t00:00:00z',
        '0001-01-01T00:00:00+00:00',
        '0001-01-01T00:00:00-00:00',
      ),
      // The same instant, or one before it, written with an east offset.
      fc.integer({ min: 0, max: 23 * 60 + 59 }).map((east) => formatNs(ZERO_NS, east, false, 'offset')!),
      fc.integer({ min: 1, max: 23 * 60 + 59 }).map((east) => `0001-01-01T00:00:00+${pad(Math.floor(east / 60))}:${pad(east % 60)}`),
    );
    fc.assert(
      fc.property(zeroes, clock, lifetime, (raw, asOf, life) => {
        const v = judge({ running: false, finishedAt: raw }, asOf, thresholdSeconds(life));
        assert.deepEqual(v, { verdict: 'keep', reason: 'zero-finished-at', ageSeconds: null, rule: 'exited' }, raw);
      }),
      { numRuns: RUNS },
    );
  });

  it('never-started: never reaps a created container younger than the threshold by its Created time, or with an unparseable one', () => {
    fc.assert(
      fc.property(anyFinishedAt, clock, lifetime, (created, asOf, life) => {
        const input = { running: false, finishedAt: '0001-01-01T00:00:00Z', status: 'created', startedAt: '0001-01-01T00:00:00Z', created };
        const v = judge(input, asOf, thresholdSeconds(life));
        assert.equal(v.rule, 'never-started');
        const p = parseFinishedAt(created);
        if (p.kind !== 'time') return assert.equal(v.verdict, 'keep');
        const ageMs = asOf.getTime() - p.epochMs;
        if (ageMs < thresholdSeconds(life) * 1000) assert.equal(v.verdict, 'keep', created);
        if (ageMs > thresholdSeconds(life) * 1000) assert.equal(v.verdict, 'reap', created);
      }),
      { numRuns: RUNS },
    );
  });

  it('never reaps an unparseable FinishedAt', () => {
    const junk = fc.oneof(fc.string(), fc.string({ unit: fc.constantFrom(...'0123456789-:.TZ+'.split('')), maxLength: 36 }));
    fc.assert(
      fc.property(junk, clock, lifetime, (raw, asOf, life) => {
        fc.pre(parseFinishedAt(raw).kind === 'invalid');
        const v = judge({ running: false, finishedAt: raw }, asOf, thresholdSeconds(life));
        assert.deepEqual(v, { verdict: 'keep', reason: 'unparseable-finished-at', ageSeconds: null, rule: 'exited' });
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps every container younger than the threshold and reaps every one at or past it (to the nanosecond)', () => {
    fc.assert(
      fc.property(
        clock,
        lifetime,
        fc.double({ min: 0, max: 3, noNaN: true }),
        fc.bigInt({ min: -2n, max: 2n }),
        offsetMinutes,
        fmtStyle,
        (asOf, life, scale, nudge, off, style) => {
          const threshold = thresholdSeconds(life);
          const thresholdNs = BigInt(threshold) * NS_PER_S;
          // Ages spread from 0 to 3x the threshold, with extra weight right at the boundary.
          let age = BigInt(Math.floor(scale * threshold * 1e6)) * 1000n;
          if (scale > 0.99 && scale < 1.01) age = thresholdNs + nudge;
          if (age < 0n) age = 0n;
          const raw = formatNs(asOfNs(asOf) - age, off, style.trim, style.zoneStyle);
          fc.pre(raw !== null && parseFinishedAt(raw).kind === 'time');
          const v = judge({ running: false, finishedAt: raw! }, asOf, threshold);
          if (age < thresholdNs) {
            assert.equal(v.verdict === 'keep' && v.reason, 'too-recent', `${raw} age ${age} ns < ${threshold} s`);
          } else {
            assert.equal(v.verdict, 'reap', `${raw} age ${age} ns >= ${threshold} s`);
          }
          assert.ok(v.ageSeconds !== null && Math.abs(v.ageSeconds - Number(age) / 1e9) <= 1e-6 * Math.max(1, Number(age) / 1e9));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('a reaped container stays reaped for every later clock, and is never reaped under a longer lifetime earlier', () => {
    fc.assert(
      fc.property(parts.map(render), clock, fc.integer({ min: 0, max: 10 ** 9 }), lifetime, lifetime, (raw, asOf, laterMs, l1, l2) => {
        const v = judge({ running: false, finishedAt: raw }, asOf, thresholdSeconds(l1));
        fc.pre(v.verdict === 'reap');
        const later = new Date(asOf.getTime() + laterMs);
        fc.pre(!Number.isNaN(later.getTime()));
        assert.equal(judge({ running: false, finishedAt: raw }, later, thresholdSeconds(l1)).verdict, 'reap');
        if (thresholdSeconds(l2) <= thresholdSeconds(l1)) {
          assert.equal(judge({ running: false, finishedAt: raw }, asOf, thresholdSeconds(l2)).verdict, 'reap');
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('never reaps an excluded container', () => {
    fc.assert(
      fc.property(anyFinishedAt, clock, lifetime, fc.boolean(), (finishedAt, asOf, life, running) => {
        const v = judge({ running, finishedAt, excluded: true }, asOf, thresholdSeconds(life));
        assert.equal(v.verdict, 'keep');
      }),
      { numRuns: RUNS },
    );
  });
});
