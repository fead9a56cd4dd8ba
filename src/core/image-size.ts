/**
 * The image budget as a number of bytes: bytes-iec reads sizes as Docker and docuum mean them (`50GB` is 50 x 10^9
 * bytes, `20GiB` 20 x 2^30, a plain number is bytes); `80%` stays a share of the filesystem that holds the engine's
 * images. Kept apart from core/image-budget.ts so that the option table (bundled into the start-up fast path) does not
 * load it.
 */
import bytes from 'bytes-iec';
import { type ImageBudget, checkImageBudget } from './image-budget.js';
import { ValueError } from './parse-args.js';

/** The budget as given; throws a one-line `ValueError` for a value that does not parse, or is 0. */
export function parseImageBudget(raw: string, what: string): ImageBudget {
  const percent = checkImageBudget(raw, what);
  const s = raw.trim();
  if (percent !== null) return { kind: 'percent', percent, raw: s };
  const n = bytes.parse(s);
  if (n === null || !Number.isSafeInteger(n)) throw new ValueError(`${what} must be a size such as 50GB or 20GiB, got '${raw}'`);
  if (n <= 0) throw new ValueError(`${what} must be more than 0 bytes, got '${raw}': leave it out to keep every image`);
  return { kind: 'bytes', bytes: n, raw: s };
}
