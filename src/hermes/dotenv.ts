/**
 * A `.env` file read the way hermes-agent reads one: hermes loads `<home>/.env` and the managed `.env` with
 * python-dotenv's `load_dotenv(override=True)` (`hermes_cli/env_loader.py` `_load_dotenv_with_fallback`). This is a
 * port of python-dotenv 1.2's `parser.py` and its `${VAR}` interpolation (`main.py` `resolve_variables`,
 * `variables.py`), checked against python-dotenv 1.2.2 on the same inputs (test/unit/dotenv.test.ts).
 *
 * Not the `dotenv` npm package: its `parse()` disagrees with python-dotenv on 6 of the 15 cases checked there
 * (`a#b` is cut at `#`; `\t` and `\'` stay undecoded; `${VAR}` is not interpolated; `` `x` `` is unquoted; `KEY:v`
 * is a binding), each a value hermes would read differently.
 */

/** One `KEY=value` line; `value` null for a bare `KEY` (python-dotenv then sets nothing). */
export interface DotenvBinding {
  key: string;
  value: string | null;
}

// The regular expressions of python-dotenv's parser.py, sticky (they match at the reader's position).
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

class ParseFailure extends Error {}

class Reader {
  pos = 0;
  constructor(readonly text: string) {}
  peek(): string {
    return this.text.slice(this.pos, this.pos + 1);
  }
  read(re: RegExp): string | undefined {
    re.lastIndex = this.pos;
    const m = re.exec(this.text);
    if (!m) throw new ParseFailure();
    this.pos = re.lastIndex;
    return m[1];
  }
}

function parseKey(r: Reader): string | null {
  const c = r.peek();
  if (c === '#') return null;
  return r.read(c === "'" ? RE.singleQuotedKey : RE.unquotedKey) ?? null;
}

function parseValue(r: Reader): string {
  const c = r.peek();
  if (c === "'") return (r.read(RE.singleQuotedValue) ?? '').replace(/\\[\\']/g, (e) => ESCAPES[e[1]!]!);
  if (c === '"') return (r.read(RE.doubleQuotedValue) ?? '').replace(/\\[\\'"abfnrtv]/g, (e) => ESCAPES[e[1]!]!);
  if (c === '' || c === '\n' || c === '\r') return '';
  // An unquoted value ends at a `#` that follows whitespace (`a#b` keeps its `#`).
  return (r.read(RE.unquotedValue) ?? '').replace(/\s+#.*/, '').trimEnd();
}

/** One binding, or null for a blank line, a comment or a line python-dotenv cannot parse (it skips those too). */
function parseBinding(r: Reader): DotenvBinding | null {
  try {
    r.read(RE.multilineWhitespace);
    if (r.pos >= r.text.length) return null;
    r.read(RE.export);
    const key = parseKey(r);
    r.read(RE.whitespace);
    let value: string | null = null;
    if (r.peek() === '=') {
      r.read(RE.equalSign);
      value = parseValue(r);
    }
    r.read(RE.comment);
    r.read(RE.endOfLine);
    return key === null ? null : { key, value };
  } catch (err) {
    if (!(err instanceof ParseFailure)) throw err;
    r.read(RE.restOfLine);
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
    seen.set(key, value.replace(/\$\{([^}:]*)(?::-([^}]*))?\}/g, (_m, name: string, dflt: string | undefined) => lookup(name) ?? dflt ?? ''));
  }
  const out = new Map<string, string>();
  for (const [k, v] of seen) if (v !== null) out.set(k, v);
  return out;
}
