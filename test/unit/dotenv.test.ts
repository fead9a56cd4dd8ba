/**
 * The `.env` scanner (src/hermes/dotenv.ts) against the regular-expression port of python-dotenv it replaced (kept here
 * as the oracle: python-dotenv 1.2.2's own expressions, checked against it on test/fixtures/dotenv), on random files
 * made of the characters that matter to the grammar; and its time on files a user can write to make a root run spend
 * minutes (the expressions took 2.4 s for a 50 KB line of spaces, quadratically more for longer ones).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type DotenvBinding, dotenvValues, interpolate, parseDotenv } from '../../src/hermes/dotenv.js';

// ---- The oracle: the port as it was, python-dotenv's expressions one for one (sticky: they match at the position).
const RE = {
  multilineWhitespace: /\s*/y,
  whitespace: /[^\S\r\n]*/y,
  export: /(?:export[^\S\r\n]+)?/y,
  singleQuotedKey: /'([^']+)'/y,
  unquotedKey: /([^=#\s]+)/y,
  equalSign: /(=[^\S\r\n]*)/y,
  singleQuotedValue: /'((?:\\'|[^'])*)'/y,
  doubleQuotedValue: /"((?:\\"|[^"])*)"/y,
  unquotedValue: /([^\r\n]*)/y,
  comment: /(?:[^\S\r\n]*#[^\r\n]*)?/y,
  endOfLine: /[^\S\r\n]*(?:\r\n|\n|\r|$)/y,
  restOfLine: /[^\r\n]*(?:\r|\n|\r\n)?/y,
};
const ESCAPES: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };
class Fail extends Error {}
class Reader {
  pos = 0;
  constructor(readonly text: string) {}
  peek(): string {
    return this.text.slice(this.pos, this.pos + 1);
  }
  read(re: RegExp): string | undefined {
    re.lastIndex = this.pos;
    const m = re.exec(this.text);
    if (!m) throw new Fail();
    this.pos = re.lastIndex;
    return m[1];
  }
}
function oracleValue(r: Reader): string {
  const c = r.peek();
  if (c === "'") return (r.read(RE.singleQuotedValue) ?? '').replace(/\\[\\']/g, (e) => ESCAPES[e[1]!]!);
  if (c === '"') return (r.read(RE.doubleQuotedValue) ?? '').replace(/\\[\\'"abfnrtv]/g, (e) => ESCAPES[e[1]!]!);
  if (c === '' || c === '\n' || c === '\r') return '';
  return (r.read(RE.unquotedValue) ?? '').replace(/\s+#.*/, '').trimEnd();
}
function oracleBinding(r: Reader): DotenvBinding | null {
  try {
    r.read(RE.multilineWhitespace);
    if (r.pos >= r.text.length) return null;
    r.read(RE.export);
    const c = r.peek();
    const key = c === '#' ? null : (r.read(c === "'" ? RE.singleQuotedKey : RE.unquotedKey) ?? null);
    r.read(RE.whitespace);
    let value: string | null = null;
    if (r.peek() === '=') {
      r.read(RE.equalSign);
      value = oracleValue(r);
    }
    r.read(RE.comment);
    r.read(RE.endOfLine);
    return key === null ? null : { key, value };
  } catch (err) {
    if (!(err instanceof Fail)) throw err;
    r.read(RE.restOfLine);
    return null;
  }
}
function oracle(text: string): DotenvBinding[] {
  const r = new Reader(text.startsWith('\uFEFF') ? text.slice(1) : text);
  const out: DotenvBinding[] = [];
  while (r.pos < r.text.length) {
    const before = r.pos;
    const b = oracleBinding(r);
    if (b) out.push(b);
    if (r.pos === before) break;
  }
  return out;
}
const oracleInterpolate = (value: string, lookup: (name: string, dflt: string | undefined) => string) =>
  value.replace(/\$\{([^}:]*)(?::-([^}]*))?\}/g, (_m, name: string, dflt: string | undefined) => lookup(name, dflt));
// ---- end of the oracle

/** Characters the grammar cares about, plus a few plain and non-ASCII blanks (not U+2028/2029, see below). */
const PIECES = [
  'A',
  'b',
  'Z9',
  '_',
  '=',
  ' = ',
  '#',
  ' #',
  "'",
  '"',
  '\\',
  "\\'",
  '\\"',
  '\\n',
  '\\t',
  '\n',
  '\r',
  '\r\n',
  ' ',
  '\t',
  '\v',
  '\u00a0',
  '\u3000',
  'export ',
  'export',
  '$',
  '${',
  '}',
  ':',
  ':-',
  '${A}',
  '${A:-d}',
  ':',
  '`',
  '\uFEFF',
  'é',
];
const dotenvText = fc.array(fc.constantFrom(...PIECES), { maxLength: 60 }).map((p) => p.join(''));

describe('.env scanner', () => {
  it('reads every file as the regular expressions did (random files of the characters that matter, 20,000 of them)', () => {
    fc.assert(
      fc.property(dotenvText, (text) => {
        assert.deepEqual(parseDotenv(text), oracle(text), JSON.stringify(text));
      }),
      { numRuns: 20_000 },
    );
  });

  it('interpolates ${NAME} and ${NAME:-default} as the regular expression did', () => {
    const lookup = (name: string, dflt: string | undefined) => `<${name}|${dflt ?? '-'}>`;
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('$', '{', '}', ':', '-', '${', 'A', ':-', ' ', '$${'), { maxLength: 40 }).map((p) => p.join('')),
        (v) => {
          assert.equal(interpolate(v, lookup), oracleInterpolate(v, lookup), JSON.stringify(v));
        },
      ),
      { numRuns: 20_000 },
    );
  });

  it('cuts an unquoted value at a "#" after white space up to the end of the line, as python-dotenv does (U+2028 included: the old port stopped there)', () => {
    // Python's `.` takes U+2028; JavaScript's did not, so the old port kept what followed it.
    assert.deepEqual(parseDotenv('A=x #c\u2028d\n'), [{ key: 'A', value: 'x' }]);
    assert.deepEqual(parseDotenv('A=a#b  #c\nB=${A}/x'), [
      { key: 'A', value: 'a#b' },
      { key: 'B', value: '${A}/x' },
    ]);
  });

  // Not a timing goal (benchmarks hold those): the regular expressions were quadratic on these files (a 200 KB line of
  // spaces took 31 s, so 1 MiB some minutes), so a bound far above a linear parse on a loaded machine (20-45 ms quiet,
  // 1.2 s seen at load 17) still catches them.
  it('reads 1 MiB files that made the expressions backtrack without backtracking (each in under 30 s)', () => {
    const M = 1024 * 1024;
    const files: Record<string, string> = {
      'one line of spaces': `A=x${' '.repeat(M)}y\nTERMINAL_LIFETIME_SECONDS=42\n`,
      'an unterminated quote': `A="${'x'.repeat(M)}\nTERMINAL_LIFETIME_SECONDS=42\n`,
      'escaped quotes without an end': `A='${"\\'".repeat(M / 2)}x\nTERMINAL_LIFETIME_SECONDS=42\n`,
      '${ without }': `A=${'${'.repeat(M / 2)}\nTERMINAL_LIFETIME_SECONDS=42\n`,
      '${X:- without }': `A=${'${X:-'.repeat(M / 5)}\nTERMINAL_LIFETIME_SECONDS=42\n`,
      'blanks before a #': `A=${' \t'.repeat(M / 2)}#\nTERMINAL_LIFETIME_SECONDS=42\n`,
    };
    for (const [what, text] of Object.entries(files)) {
      const t = performance.now();
      const values = dotenvValues(parseDotenv(text), {});
      const ms = performance.now() - t;
      assert.equal(values.get('TERMINAL_LIFETIME_SECONDS'), '42', what);
      assert.ok(ms < 30_000, `${what}: ${ms.toFixed(0)} ms`);
    }
  });
});
