/**
 * Parses a container's `State.FinishedAt`: RFC 3339 with 0-9 fraction digits and `Z` or a `±hh:mm` offset.
 * Pure and total: never throws.
 */
export type FinishedAt =
  | { kind: 'time' /** whole milliseconds since the epoch (floor) */; epochMs: number /** nanoseconds past epochMs, 0..999999 */; subMsNanos: number }
  | { kind: 'zero' }
  | { kind: 'invalid' };

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Days from 1970-01-01 to the given proleptic Gregorian date (valid for every year, including 1). */
export function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

export function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(m) ? 30 : 31;
}

/** Go's zero time, 0001-01-01T00:00:00Z, in epoch milliseconds. */
export const ZERO_TIME_EPOCH_MS = daysFromCivil(1, 1, 1) * 86_400_000;

export function parseFinishedAt(raw: unknown): FinishedAt {
  if (typeof raw !== 'string') return { kind: 'invalid' };
  const m = RFC3339.exec(raw);
  if (!m) return { kind: 'invalid' };
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return { kind: 'invalid' };
  if (hour > 23 || minute > 59 || second > 59) return { kind: 'invalid' };
  let offsetMinutes = 0;
  if (!m[8]) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return { kind: 'invalid' };
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const fraction = (m[7] ?? '').padEnd(9, '0');
  const nanos = Number(fraction);
  const wholeMs = (daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60) * 1000;
  const epochMs = wholeMs + Math.floor(nanos / 1_000_000);
  // Go's zero time (and anything before it, which no engine writes) means "never finished".
  if (epochMs < ZERO_TIME_EPOCH_MS || (epochMs === ZERO_TIME_EPOCH_MS && nanos === 0)) return { kind: 'zero' };
  return { kind: 'time', epochMs, subMsNanos: nanos % 1_000_000 };
}
