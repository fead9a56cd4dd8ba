/**
 * A `.env` file read the way hermes-agent reads one: hermes loads `<home>/.env` and the managed `.env` with
 * python-dotenv's `load_dotenv(override=True)` (`hermes_cli/env_loader.py` `_load_dotenv_with_fallback`). This is a
 * port of python-dotenv 1.2's `parser.py` and its `${VAR}` interpolation (`main.py` `resolve_variables`,
 * `variables.py`), checked against python-dotenv 1.2.2 on the same inputs (test/fixtures/dotenv, test/unit/dotenv.test.ts).
 *
 * Not the `dotenv` npm package: its `parse()` disagrees with python-dotenv on 6 of the 15 cases checked there
 * (`a#b` is cut at `#`; `\t` and `\'` stay undecoded; `${VAR}` is not interpolated; `` `x` `` is unquoted; `KEY:v`
 * is a binding), each a value hermes would read differently.
 *
 * Written as a scanner, not with python-dotenv's regular expressions: those backtrack (`\s+#.*` over a run of
 * spaces, `${` without its `}`), so a file another user writes could make a root run spend minutes on one line (a
 * 200 KB line took 31 s). Each function below says which expression it stands for; every character is looked at a
 * bounded number of times, so the time is proportional to the file (test/unit/dotenv.test.ts checks a 1 MiB line and
 * compares the scanner with the expressions on random files).
 */

/** One `KEY=value` line; `value` null for a bare `KEY` (python-dotenv then sets nothing). */
export interface DotenvBinding {
  key: string;
  value: string | null;
}

const ESCAPES: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

/** JavaScript's `\s` for one UTF-16 unit (the port's own, as its regular expressions had it). */
const WS = /\s/;
function isSpace(c: number): boolean {
  if (c === 32 || (c >= 9 && c <= 13)) return true;
  return c >= 0x80 && WS.test(String.fromCharCode(c));
}
const CR = 13;
const LF = 10;
/** `[^\S\r\n]`: white space other than a line break. */
const isBlank = (c: number) => c !== CR && c !== LF && isSpace(c);

class ParseFailure extends Error {}
const FAIL = new ParseFailure();

class Reader {
  pos = 0;
  constructor(readonly text: string) {}
  code(at = this.pos): number {
    return at < this.text.length ? this.text.charCodeAt(at) : -1;
  }
  /** The end of a run of `pred` from `from`. */
  skip(from: number, pred: (c: number) => boolean): number {
    let i = from;
    while (i < this.text.length && pred(this.text.charCodeAt(i))) i++;
    return i;
  }
  /** The end of the line from `from` (the first `\r` or `\n`, or the end of the text). */
  lineEnd(from: number): number {
    return this.skip(from, (c) => c !== CR && c !== LF);
  }
}

/** `(?:export[^\S\r\n]+)?` */
function readExport(r: Reader): void {
  if (!r.text.startsWith('export', r.pos)) return;
  const end = r.skip(r.pos + 6, isBlank);
  if (end > r.pos + 6) r.pos = end;
}

/** `'([^']+)'` for a quoted key, `([^=#\s]+)` otherwise; null for a comment (`#`). */
function readKey(r: Reader): string | null {
  const c = r.code();
  if (c === 0x23) return null;
  if (c === 0x27) {
    const close = r.text.indexOf("'", r.pos + 1);
    if (close <= r.pos + 1) throw FAIL; // no closing quote, or nothing between
    const key = r.text.slice(r.pos + 1, close);
    r.pos = close + 1;
    return key;
  }
  const end = r.skip(r.pos, (x) => x !== 0x3d && x !== 0x23 && !isSpace(x));
  if (end === r.pos) throw FAIL;
  const key = r.text.slice(r.pos, end);
  r.pos = end;
  return key;
}

/**
 * `'((?:\\'|[^'])*)'` (or the same with `"`), as the regular expression engine answers it: taken greedily, `\q` pairs
 * and other characters run to the first unpaired quote; a value that runs to the end of the text without one ends
 * instead at its last `\q` pair (backtracking gives that pair's backslash to the value and takes its quote as the
 * closing one); without any pair it does not match.
 */
function readQuoted(r: Reader, quote: number): string {
  const t = r.text;
  let i = r.pos + 1;
  let lastPair = -1;
  for (;;) {
    if (i >= t.length) {
      if (lastPair < 0) throw FAIL;
      const value = t.slice(r.pos + 1, lastPair + 1);
      r.pos = lastPair + 2;
      return value;
    }
    const c = t.charCodeAt(i);
    if (c === 0x5c && t.charCodeAt(i + 1) === quote) {
      lastPair = i;
      i += 2;
    } else if (c === quote) {
      const value = t.slice(r.pos + 1, i);
      r.pos = i + 1;
      return value;
    } else i++;
  }
}

/**
 * `([^\r\n]*)` then `re.sub(r"\s+#.*", "", part).rstrip()`: the value is cut at the first run of white space that a
 * `#` follows (`a#b` keeps its `#`).
 */
function readUnquoted(r: Reader): string {
  const end = r.lineEnd(r.pos);
  const part = r.text.slice(r.pos, end);
  r.pos = end;
  let cut = part.length;
  for (let i = 0; i < part.length; ) {
    if (!isSpace(part.charCodeAt(i))) {
      i++;
      continue;
    }
    let j = i;
    while (j < part.length && isSpace(part.charCodeAt(j))) j++;
    if (part.charCodeAt(j) === 0x23) {
      cut = i;
      break;
    }
    i = j;
  }
  return part.slice(0, cut).trimEnd();
}

/** python-dotenv's `decode_escapes`: each escape `re` finds, decoded. */
const decodeEscapes = (s: string, re: RegExp) => (s.includes('\\') ? s.replace(re, (e) => ESCAPES[e[1]!]!) : s);

function readValue(r: Reader): string {
  const c = r.code();
  if (c === 0x27) return decodeEscapes(readQuoted(r, c), /\\[\\']/g);
  if (c === 0x22) return decodeEscapes(readQuoted(r, c), /\\[\\'"abfnrtv]/g);
  if (c === -1 || c === LF || c === CR) return '';
  return readUnquoted(r);
}

/** `(?:[^\S\r\n]*#[^\r\n]*)?` then `[^\S\r\n]*(?:\r\n|\n|\r|$)`. */
function readLineRest(r: Reader): void {
  const blank = r.skip(r.pos, isBlank);
  if (r.code(blank) === 0x23) r.pos = r.lineEnd(blank);
  const at = r.skip(r.pos, isBlank);
  const c = r.code(at);
  if (c === CR && r.code(at + 1) === LF) r.pos = at + 2;
  else if (c === CR || c === LF) r.pos = at + 1;
  else if (c === -1) r.pos = at;
  else throw FAIL;
}

/** One binding, or null for a blank line, a comment or a line python-dotenv cannot parse (it skips those too). */
function parseBinding(r: Reader): DotenvBinding | null {
  try {
    r.pos = r.skip(r.pos, isSpace);
    if (r.pos >= r.text.length) return null;
    readExport(r);
    const key = readKey(r);
    r.pos = r.skip(r.pos, isBlank);
    let value: string | null = null;
    if (r.code() === 0x3d) {
      r.pos = r.skip(r.pos + 1, isBlank);
      value = readValue(r);
    }
    readLineRest(r);
    return key === null ? null : { key, value };
  } catch (err) {
    if (!(err instanceof ParseFailure)) throw err;
    // `[^\r\n]*(?:\r|\n|\r\n)?` from where the reading stopped.
    const end = r.lineEnd(r.pos);
    r.pos = end + (r.code(end) === CR || r.code(end) === LF ? 1 : 0);
    return null;
  }
}

/** The bindings of a `.env` text, in order (a leading UTF-8 BOM dropped, as hermes' `utf-8-sig` decode does). */
export function parseDotenv(text: string): DotenvBinding[] {
  const r = new Reader(text.startsWith('\uFEFF') ? text.slice(1) : text);
  const out: DotenvBinding[] = [];
  while (r.pos < r.text.length) {
    const before = r.pos;
    const b = parseBinding(r);
    if (b) out.push(b);
    if (r.pos === before) break; // nothing consumed: the rest is unparseable
  }
  return out;
}

/**
 * `${NAME}` and `${NAME:-default}` in a value (`variables.py` `_posix_variable`: `\$\{([^}:]*)(?::-([^}]*))?\}`),
 * each replaced by `lookup`'s answer. Scanned once: where the closing `}` is, for every position, is worked out from
 * the end first, so a value full of `${` without a `}` costs no more than any other.
 */
export function interpolate(value: string, lookup: (name: string, dflt: string | undefined) => string): string {
  let i = value.indexOf('${');
  if (i < 0) return value;
  const n = value.length;
  // nextStop[i]: the first `}` or `:` at or after i; nextClose[i]: the first `}` at or after i (n: none).
  const nextStop = new Int32Array(n + 2).fill(n);
  const nextClose = new Int32Array(n + 2).fill(n);
  for (let j = n - 1; j >= 0; j--) {
    const c = value.charCodeAt(j);
    nextClose[j] = c === 0x7d ? j : nextClose[j + 1]!;
    nextStop[j] = c === 0x7d || c === 0x3a ? j : nextStop[j + 1]!;
  }
  let out = '';
  let cursor = 0;
  while (i >= 0) {
    const k = nextStop[i + 2]!;
    let end = -1;
    let dflt: string | undefined;
    if (k < n && value.charCodeAt(k) === 0x7d) end = k;
    else if (k < n && value.charCodeAt(k + 1) === 0x2d) {
      const m = nextClose[k + 2]!;
      if (m < n) {
        end = m;
        dflt = value.slice(k + 2, m);
      }
    }
    if (end < 0) {
      i = value.indexOf('${', i + 1);
      continue;
    }
    out += value.slice(cursor, i) + lookup(value.slice(i + 2, k), dflt);
    cursor = end + 1;
    i = value.indexOf('${', cursor);
  }
  return out + value.slice(cursor);
}

/**
 * The values `load_dotenv(override=True)` sets: `${NAME}` and `${NAME:-default}` in each value resolved against the
 * environment as it stands (`env`) with the file's earlier values on top; bare keys set nothing; a later binding of
 * a key replaces an earlier one.
 */
export function dotenvValues(bindings: DotenvBinding[], env: Record<string, string | undefined>): Map<string, string> {
  const seen = new Map<string, string | null>();
  for (const { key, value } of bindings) {
    if (value === null) {
      seen.set(key, null);
      continue;
    }
    const lookup = (name: string): string | undefined => {
      if (seen.has(name)) return seen.get(name) ?? '';
      return env[name];
    };
    seen.set(
      key,
      interpolate(value, (name, dflt) => lookup(name) ?? dflt ?? ''),
    );
  }
  const out = new Map<string, string>();
  for (const [k, v] of seen) if (v !== null) out.set(k, v);
  return out;
}
