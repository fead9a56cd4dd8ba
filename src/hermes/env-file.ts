/**
 * A profile's `.env` as a routed turn reads it: hermes-agent `agent/secret_scope.py` `load_env_file` (no
 * interpolation, no process environment: `KEY=value` lines, `export ` prefixes, `#` comments, matching quotes with
 * the writer's `\"` and `\\` escapes reversed, `hermes_cli/config.py` `_parse_env_value`), with the line check of
 * `tools/terminal_scope.py` `_validate_dotenv` (0.21 releases that have it): a line that is not a binding, a key that
 * is not a name, an unterminated quote, or text after a closing quote other than a comment makes the whole file
 * unusable, and hermes refuses the profile's turns (`TerminalPolicyUnavailable`). Versions without that check skip
 * such lines; refusing is the reading that removes later (nothing is removed for a refused profile), so it is the
 * one followed here.
 */

/** The bindings of a profile `.env` (later lines win), or why hermes refuses it. */
export type EnvFileReading = { values: Map<string, string> } | { refused: string };

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `_strip_inline_comment`: a quoted value up to its closing quote; an unquoted one up to a `#` after whitespace. */
function stripInlineComment(raw: string): string {
  const value = raw.trim();
  if (!value) return value;
  const q = value[0];
  if (q === "'" || q === '"') {
    for (let i = 1; i < value.length; i++) {
      if (q === '"' && value[i] === '\\') {
        i++;
        continue;
      }
      if (value[i] === q)
        return value
          .slice(i + 1)
          .trimStart()
          .startsWith('#')
          ? value.slice(0, i + 1)
          : value;
    }
    return value;
  }
  // re.split(r"\s+#", value, 1)[0]: cut at the first `#` that follows whitespace (found without backtracking, so a
  // long run of spaces costs one pass, not one per space).
  let i = value.indexOf('#');
  while (i > 0 && !/\s/.test(value[i - 1]!)) i = value.indexOf('#', i + 1);
  return (i > 0 ? value.slice(0, i) : value).trim();
}

/** `_parse_env_value`: matching outer quotes removed; inside double quotes `\"` and `\\` unescaped. */
function parseValue(value: string): string {
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0]) {
    const inner = value.slice(1, -1);
    return value[0] === '"' ? inner.replace(/\\(["\\])/g, '$1') : inner;
  }
  return value;
}

/** `_validate_dotenv`'s check of one stripped, non-comment line (its `export ` prefix already removed). */
function lineProblem(line: string): string | null {
  const eq = line.indexOf('=');
  if (eq < 0 || !KEY.test(line.slice(0, eq).trim())) return 'invalid line';
  const value = line.slice(eq + 1).trim();
  const q = value[0];
  if (q !== "'" && q !== '"') return null;
  let escaped = false;
  for (let i = 1; i < value.length; i++) {
    const c = value[i];
    if (q === '"' && c === '\\' && !escaped) {
      escaped = true;
      continue;
    }
    if (c === q && !escaped) {
      const trailing = value.slice(i + 1).trimStart();
      return trailing && !trailing.startsWith('#') ? 'invalid line' : null;
    }
    escaped = false;
  }
  return 'unterminated quote on line';
}

/** A profile `.env` as a routed turn reads it (`text` decoded as UTF-8, a leading BOM dropped as `utf-8-sig` does). */
export function readEnvFile(text: string, file: string): EnvFileReading {
  const values = new Map<string, string>();
  const lines = (text.startsWith('\uFEFF') ? text.slice(1) : text).split(/\r\n|\r|\n/);
  for (const [i, raw] of lines.entries()) {
    let line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    if (line.startsWith('export ')) line = line.slice('export '.length).trimStart();
    const problem = lineProblem(line);
    if (problem) return { refused: `cannot parse ${file}: ${problem} ${i + 1}` };
    const eq = line.indexOf('=');
    const key = line.slice(0, eq).trim();
    values.set(key, parseValue(stripInlineComment(line.slice(eq + 1))));
  }
  return { values };
}
