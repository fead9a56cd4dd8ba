/**
 * The image budget as a number of bytes: bytes-iec reads sizes as Docker and docuum mean them (`50GB` is 50 x 10^9
 * bytes, `20GiB` 20 x 2^30, a plain number is bytes; Docker's one-letter `20g` is 20 x 2^30, as `docker run -m`); `80%` stays a share of the ' +
   'filesystem that holds the engine's
 * images. Kept apart from passes/images/rule-budget.ts so that the option table (bundled into the start-up fast path) does not
 * load it.
 */
import { bytesIec } from '../../util/bytes-iec.js';
import { type ImageBudget, checkImageBudget } from './rule-budget.js';
import { ValueError } from '../../core/parse-args.js';

/**
 * Docker's one-letter spellings (`10g`, `512m`, as `docker run --memory` takes them) are binary multiples: `10g` is
 * 10 GiB. Two-letter `GB` stays decimal (10^9, as `docker images` and docuum show sizes) and `GiB` binary.
 */
function dockerLetter(s: string): string {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgtp])$/i.exec(s);
  return m ? `${m[1]}${m[2]!.toUpperCase()}iB` : s;
}

/** The budget as given; throws a one-line `ValueError` for a value that does not parse, or is 0. */
export function parseImageBudget(raw: string, what: string): ImageBudget {
  const percent = checkImageBudget(raw, what);
  const s = raw.trim();
  if (percent !== null) return { kind: 'percent', percent, raw: s };
  const n = bytesIec().parse(dockerLetter(s));
  if (n === null || !Number.isSafeInteger(n)) throw new ValueError(`${what} must be a size such as 50GB or 20GiB, got '${raw}'`);
  if (n <= 0) throw new ValueError(`${what} must be more than 0 bytes, got '${raw}': leave it out to keep every image`);
  return { kind: 'bytes', bytes: n, raw: s };
}
