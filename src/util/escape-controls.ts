/**
 * The one control-character escaper: text that reaches a terminal or a log line (a path an agent named, a profile,
 * a session key, a script line) stays one line and cannot move the cursor or forge another line. Escapes C0
 * (U+0000-U+001F), DEL and C1 (U+007F-U+009F) as `\uXXXX`; JSON output keeps the text as it is.
 */

// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex
const CONTROLS_G = /[\u0000-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex
const CONTROLS_AND_BACKSLASH_G = /[\u0000-\u001f\u007f-\u009f\\]/g;
/** JSON's short escapes, for `short`. */
const SHORT: Record<string, string> = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r' };

export interface EscapeOptions {
  /** Leave tabs as they are (a script line shown as written). */
  keepTab?: boolean;
  /** `\n`, `\t`, `\r`, `\b`, `\f` as JSON writes them, the rest as `\uXXXX`. */
  short?: boolean;
  /** Double backslashes too, so the escaped text reads back unambiguously (`a\u000a` vs `a\\u000a`). */
  backslash?: boolean;
}

const hex4 = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

export function escapeControls(text: string, o: EscapeOptions = {}): string {
  return text.replace(o.backslash ? CONTROLS_AND_BACKSLASH_G : CONTROLS_G, (c) => {
    if (c === '\\') return '\\\\';
    if (o.keepTab && c === '\t') return c;
    return (o.short && SHORT[c]) || hex4(c);
  });
}

/** Whether `text` holds a character `escapeControls` escapes (backslashes aside). */
export function hasControls(text: string): boolean {
  return CONTROLS.test(text);
}
