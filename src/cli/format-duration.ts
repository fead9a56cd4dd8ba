/**
 * A duration in ms as a person writes it and `parseDuration` reads it back: `10s`, `90s`, `30m`, `1h`, `1d`, `250ms`
 * (the largest unit it is a whole number of). Cheap to import: the option tables use it for their defaults.
 */
const UNITS: Array<[string, number]> = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
];

export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  for (const [unit, size] of UNITS) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}
