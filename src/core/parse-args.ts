import { daysInMonth } from './finished-at.js';

/** Pure parsers for flag and environment values. Each returns the value or throws a one-line error. */

export class ValueError extends Error {}

/** A whole number >= min (decimal digits only: no signs, exponents or fractions). */
export function parseWholeNumber(raw: string, what: string, min = 0): number {
  const s = raw.trim();
  if (!/^\d+$/.test(s) || !Number.isSafeInteger(Number(s)) || Number(s) < min) {
    throw new ValueError(`${what} must be a whole number >= ${min}, got '${raw}'`);
  }
  return Number(s);
}

/** An integer that may be zero or negative (e.g. `--max 0` disables a breaker). */
export function parseInteger(raw: string, what: string): number {
  const s = raw.trim();
  if (!/^-?\d+$/.test(s) || !Number.isSafeInteger(Number(s))) {
    throw new ValueError(`${what} must be an integer, got '${raw}'`);
  }
  return Number(s);
}

/** A positive number of seconds, fractions allowed. */
export function parsePositiveSeconds(raw: string, what: string): number {
  const s = raw.trim();
  const n = Number(s);
  if (!/^\d+(\.\d+)?$/.test(s) || !Number.isFinite(n) || n <= 0) {
    throw new ValueError(`${what} must be a number of seconds > 0, got '${raw}'`);
  }
  return n;
}

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/** An ISO-8601 instant (`2026-11-22T10:00:00Z`; a date alone is midnight UTC; no zone means UTC). */
export function parseInstant(raw: string, what: string): Date {
  const m = ISO_8601.exec(raw.trim());
  if (m) {
    const [y, mo, d, h = 0, mi = 0, sec = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((v) => (v === undefined ? undefined : Number(v))) as number[];
    const zone = !m[8] || /^[Zz]$/.test(m[8]) ? 'Z' : m[8].replace(/^([+-]\d{2}):?(\d{2})$/, '$1:$2');
    const fraction = (m[7] ?? '').padEnd(3, '0').slice(0, 3);
    const zoneOk = zone === 'Z' || (Number(zone.slice(1, 3)) <= 23 && Number(zone.slice(4, 6)) <= 59);
    if (mo! >= 1 && mo! <= 12 && d! >= 1 && d! <= daysInMonth(y!, mo!) && h! <= 23 && mi! <= 59 && sec! <= 59 && zoneOk) {
      const pad = (n: number, w = 2) => String(n).padStart(w, '0');
      const date = new Date(`${pad(y!, 4)}-${pad(mo!)}-${pad(d!)}T${pad(h!)}:${pad(mi!)}:${pad(sec!)}.${fraction}${zone}`);
      if (!Number.isNaN(date.getTime())) return date;
    }
  }
  throw new ValueError(`${what} must be an ISO-8601 instant such as 2026-11-22T10:00:00Z, got '${raw}'`);
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration: `90s`, `30m`, `1h`, `1d`, `250ms`; a bare number is seconds. `allowZero` admits `0`. */
export function parseDuration(raw: string, what: string, allowZero = false): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(raw.trim());
  if (m) {
    const ms = Number(m[1]) * (UNIT_MS[m[2] ?? 's'] ?? 1000);
    if (Number.isFinite(ms) && (ms > 0 || (allowZero && ms === 0))) return Math.round(ms);
  }
  throw new ValueError(`${what} must be a duration such as 90s, 30m, 1h or 1d${allowZero ? ' (0 for none)' : ''}, got '${raw}'`);
}
