/**
 * What makes two equal results, or two equal calls, look different: timestamps, clock times, durations, ids, process
 * ids and temporary paths. The tool-loop breaker masks them before it compares, so a poll that only moves a clock is
 * no progress, and a call whose only change is a cache-busting timestamp is the same call. Pure.
 *
 * Masked in results (`maskResult`): ISO 8601 and common log date-times, clock times (`12:34:56`), epoch times (10 or 13
 * digits), durations (`0.52s`, `120 ms`, `3m12s`), UUIDs, hex ids of 16 or more digits with a letter and a digit in
 * them, process ids (`PID 4711`, `pid=4711`, `PGID: 4711`), and paths under /tmp, /var/tmp, /var/folders and /private/var.
 * Masked in arguments (`maskArguments`): the same, but durations and process ids stay (`sleep 30` is not `sleep 60`).
 * Plain numbers stay in both: `progress 10%` and `progress 20%` differ.
 */

const DATE_TIME = /\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?/g;
const DATE = /\b\d{4}-\d{2}-\d{2}\b/g;
const CLOCK = /\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b/g;
const EPOCH = /\b1\d{9}(?:\d{3})?(?:\.\d+)?\b/g;
// Its end is `(?!\w)`, not `\b`: the same test here (a unit's last letter is a word character), but V8 took 1.3-1.8 ms to
// compile `\b` after the alternation on its first use (0.2 ms this way), which every `tool-loop post` pays.
const DURATION = /\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|sec|secs|seconds?|m|mins?|minutes?|h|hours?)(?!\w)/g;
const UUID = /\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g;
const HEX = /\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{16,}\b/g;
const PID = /\b(?:PGID|PID|pid|pgid)(?:\s*[:=]\s*|\s+)\d+/g;
const TEMP_PATH = /(?:\/private)?\/(?:var\/)?(?:tmp|folders)\/[^\s"'\\,;)\]}]*/g;

/**
 * Whether a text has an ASCII digit: every pattern above but UUID and TEMP_PATH needs one (`\d`), and a text without
 * one (`make`, `npm test`) skips them. A pattern's first use costs V8 a compile of 20-300 us, which a hook pays.
 */
function hasDigit(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) return true;
  }
  return false;
}

const maskTemp = (text: string) => (text.includes('tmp/') || text.includes('folders/') ? text.replace(TEMP_PATH, '<tmp>') : text);

function maskCommon(text: string): string {
  const t = text.includes('-') ? text.replace(UUID, '<id>') : text;
  return hasDigit(t) ? t.replace(DATE_TIME, '<time>').replace(DATE, '<date>').replace(CLOCK, '<time>').replace(HEX, '<hex>') : t;
}

/** A result's text with its volatile parts masked. */
export function maskResult(text: string): string {
  const t = maskCommon(text);
  return maskTemp(hasDigit(t) ? t.replace(PID, '<pid>').replace(EPOCH, '<time>').replace(DURATION, '<duration>') : t);
}

/** A call's canonical arguments with their volatile parts masked (durations and process ids stay). */
export function maskArguments(text: string): string {
  const t = maskCommon(text);
  return maskTemp(hasDigit(t) ? t.replace(EPOCH, '<time>') : t);
}

/** The most of a result that is compared: its first and last half of this, and its length. */
const MAX_COMPARED = 256 * 1024;

/**
 * A 53-bit hash of a string, as 14 hex digits (cyrb53: two 32-bit lanes of multiply-xor). Not for security: two
 * results that differ are taken for equal with a chance of about 2^-53, and a hook on every tool call cannot pay for
 * SHA-256 over a large result in V8's interpreter.
 */
export function quickHash(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  const n = 4294967296 * (2097151 & h2) + (h1 >>> 0);
  return n.toString(16).padStart(14, '0');
}

/** A result read as text: a string as is, anything else as its JSON (key order as sent). */
function resultText(result: unknown): string {
  if (typeof result === 'string') return result;
  try {
    return JSON.stringify(result) ?? '';
  } catch {
    return String(result);
  }
}

/** A result's digest: `<14 hex>` of its masked text, or `-` for an empty one (nothing to compare: never "the same"). */
export const EMPTY_RESULT = '-';

/** A line that says nothing: a label with nothing after it, `(empty)`, `(none)`, `0`, `false`, or a masked part. */
const SAYS_NOTHING =
  /^\s*(?:(?:[A-Za-z][A-Za-z ]{0,30}:)?\s*(?:\(empty\)|\(none\)|0|false|null)?|(?:[A-Za-z][A-Za-z ]{0,30}:?)?\s*(?:<pid>|<time>|<duration>|<tmp>))\s*$/;

/** The text of a result's string leaves (keys and other values left out), so `{"stdout": "", "stderr": ""}` has none. */
function leaves(value: unknown, out: string[], depth = 0): void {
  if (typeof value === 'string') out.push(value);
  else if (typeof value === 'number' && value !== 0) out.push(String(value));
  else if (typeof value === 'boolean' || value === null || value === undefined || typeof value !== 'object' || depth > 32) return;
  else if (Array.isArray(value)) for (const v of value) leaves(v, out, depth + 1);
  else for (const v of Object.values(value)) leaves(v, out, depth + 1);
}

/**
 * Whether a result says nothing: no text at all, or only empty fields, labels without values and masked parts
 * (`{"stdout": "", "stderr": "", "interrupted": false}`, `Output: (empty)\nProcess Group PGID: 4500`). Such a result
 * never shows that nothing progresses: many different calls rightly give it.
 */
export function resultIsEmpty(result: unknown): boolean {
  const out: string[] = [];
  leaves(result, out);
  for (const text of out)
    for (const line of maskResult(text.length > MAX_COMPARED ? text.slice(0, MAX_COMPARED) : text).split('\n')) if (!SAYS_NOTHING.test(line)) return false;
  return true;
}

/**
 * The digest of a call's result, after masking its volatile parts (`maskResult`). An empty result (nothing, `""`,
 * `{}`, `[]`, whitespace) is `EMPTY_RESULT`. Results longer than 256 KiB are compared by their first and last 128 KiB
 * and their length.
 */
export function resultDigest(result: unknown): string {
  let text = resultText(result);
  if (text.length > MAX_COMPARED) text = `${text.slice(0, MAX_COMPARED / 2)}\u0000${text.length}\u0000${text.slice(-MAX_COMPARED / 2)}`;
  if (resultIsEmpty(result)) return EMPTY_RESULT;
  return quickHash(maskResult(text));
}
