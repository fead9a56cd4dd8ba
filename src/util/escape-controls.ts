/**
 * The one control-character escaper: text that reaches a terminal or a log line (a path an agent named, a profile,
 * a session key, a script line, a hook's unreadable input) stays one line and cannot move the cursor, forge
 * another line or reorder what follows. Escapes, the widest range any caller needs: C0 (U+0000-U+001F), DEL and C1
 * (U+007F-U+009F), the line and paragraph separators, the bidirectional embeddings, overrides and isolates
 * (U+202A-U+202E, U+2066-U+2069), U+FFFD (what undecodable bytes became) and lone surrogates; as `\uXXXX` (or
 * `\xNN` below U+0100 with `bytes`). JSON output keeps the text exact: `escapeJsonText` writes the same characters
 * as JSON escapes (which `JSON.stringify` leaves raw above U+007E), so a JSON string reads back unchanged and no byte of
 * it reaches a terminal as a control.
 */

const RANGE = [
  String.raw`[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufffd]`,
  String.raw`[\ud800-\udbff](?![\udc00-\udfff])`,
  String.raw`(?<![\ud800-\udbff])[\udc00-\udfff]`,
].join('|');
const CONTROLS = new RegExp(RANGE);
const CONTROLS_G = new RegExp(RANGE, 'g');
const CONTROLS_AND_BACKSLASH_G = new RegExp(`${RANGE}|\\\\`, 'g');
/** JSON's short escapes, for `short`. */
const SHORT: Record<string, string> = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r' };

export interface EscapeOptions {
  /** Leave tabs as they are (a script line shown as written). */
  keepTab?: boolean;
  /** `\n`, `\t`, `\r`, `\b`, `\f` as JSON writes them, the rest as `\uXXXX`. */
  short?: boolean;
  /** Double backslashes too, so the escaped text reads back unambiguously (`a\u000a` vs `a\\u000a`). */
  backslash?: boolean;
  /** Below U+0100 as `\xNN` (a byte as a hook harness sent it), the rest as `\uXXXX`. */
  bytes?: boolean;
}

const hex4 = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
const hex2 = (c: string) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;

export function escapeControls(text: string, o: EscapeOptions = {}): string {
  return text.replace(o.backslash ? CONTROLS_AND_BACKSLASH_G : CONTROLS_G, (c) => {
    if (c === '\\') return '\\\\';
    if (o.keepTab && c === '\t') return c;
    return (o.short && SHORT[c]) || (o.bytes && c.charCodeAt(0) < 0x100 ? hex2(c) : hex4(c));
  });
}

/** Whether `text` holds a character `escapeControls` escapes (backslashes aside). */
export function hasControls(text: string): boolean {
  return CONTROLS.test(text);
}

/**
 * JSON text (what `JSON.stringify` wrote, pretty or not) with every character `escapeControls` escapes written as a
 * JSON `\uXXXX` escape: C1, DEL, the separators and bidirectional controls, which `JSON.stringify` leaves raw. Inside
 * a string that is the same string once parsed; outside strings there are none (the newlines of pretty JSON stay).
 */
export function escapeJsonText(json: string): string {
  return json.replace(CONTROLS_G, (c) => (c === '\n' ? c : hex4(c)));
}
