/**
 * The image budget (`--images-over`, `janitor.images_over`) and keep patterns (`--keep-image`,
 * `janitor.keep_images`) as given: checked here, pure and import-free (the option table, which the start-up fast path
 * bundles, calls these). The size itself is read by bytes-iec in passes/images/rule-size.ts.
 */
import { ValueError } from '../../core/parse-args.js';

export type ImageBudget = { kind: 'bytes'; bytes: number; raw: string } | { kind: 'percent'; percent: number; raw: string };

const SIZE = /^(\d+(?:\.\d+)?)\s*([kmgtp]i?b|[kmgtp]|b)?$/i;
const PERCENT = /^(\d+(\.\d+)?)\s*%$/;

/**
 * Checks the form of a budget: `50GB`, `20GiB`, `20g`, `1500000000`, `80%`; throws a one-line `ValueError` for
 * anything else, 0 and over 100% included. Returns the percentage, or null for a size (read by `parseImageBudget`).
 */
export function checkImageBudget(raw: string, what: string): number | null {
  const s = raw.trim();
  const pct = PERCENT.exec(s);
  if (pct) {
    const percent = Number(pct[1]);
    if (!(percent > 0 && percent <= 100)) throw new ValueError(`${what} must be a percentage over 0 and at most 100%, got '${raw}'`);
    return percent;
  }
  const m = SIZE.exec(s);
  if (!m) {
    throw new ValueError(`${what} must be a size (bytes; 50GB = 50x10^9, 20GiB or 20g = 20x2^30) or a percentage of the disk (80%), got '${raw}'`);
  }
  if (!(Number(m[1]) > 0)) throw new ValueError(`${what} must be more than 0 bytes, got '${raw}': leave it out to keep every image`);
  return null;
}

/** The budget in bytes: a size as is; a percentage of `filesystemBytes` (null when that could not be measured). */
export function budgetBytes(b: ImageBudget, filesystemBytes: number | null): number | null {
  if (b.kind === 'bytes') return b.bytes;
  return filesystemBytes === null ? null : Math.floor((filesystemBytes * b.percent) / 100);
}

/**
 * The form of a keep pattern, as the option table checks it (the start-up fast path bundles it, and loads nothing):
 * not empty. The pattern itself is compiled with the run's settings (`util/linear-pattern.ts`: RE2 syntax, linear
 * time; matched against each of an image's `repository:tag` names and its id, anchored only if it anchors itself).
 */
export function checkKeepPattern(raw: string, what: string): string {
  if (raw.trim() === '') throw new ValueError(`${what} is empty: give a regular expression such as '^python:' or 'swebench/.*'`);
  return raw;
}
