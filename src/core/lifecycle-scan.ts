/**
 * lifecycle-scan, the pure part: finds commands that restart, stop or kill the hermes gateway in a text.
 *
 * Matching works on tokens, not on one big regular expression: each logical line (backslash-newline
 * continuations folded first) is split into segments at `;`, `&` and `|`, each segment into whitespace
 * separated words, and the rules are evaluated with right-to-left passes over the words. Every step is linear
 * in the length of the text, so a multi-megabyte line cannot make the scan backtrack.
 */
import { escapeControls } from '../util/escape-controls.js';

export type LifecycleRule = 'hermes-gateway' | 'launchctl' | 'systemctl' | 'kill';

/** What each rule means, for messages. */
export const RULE_DESCRIPTIONS: Record<LifecycleRule, string> = {
  'hermes-gateway': "'hermes gateway restart|stop'",
  launchctl: 'a launchctl kickstart/unload/load/stop/restart/bootout/bootstrap/remove/disable naming the gateway',
  systemctl: "a 'systemctl restart|stop|start' naming the gateway",
  kill: 'kill/pkill/killall on a line that mentions hermes and gateway',
};

export interface LifecycleMatch {
  /** 1-based number of the (first physical) line the logical line starts on. */
  line: number;
  rule: LifecycleRule;
  /** The whole logical line (continuations folded). */
  text: string;
  /** Offset in `text` of the command word that matched. */
  column: number;
}

export interface ScanResult {
  /** The first `limit` matching lines (one match per line). */
  matches: LifecycleMatch[];
  /** How many lines matched in all. */
  total: number;
}

const LAUNCHCTL_VERBS = new Set(['kickstart', 'unload', 'load', 'stop', 'restart', 'bootout', 'bootstrap', 'remove', 'disable']);
const SYSTEMCTL_VERBS = new Set(['restart', 'stop', 'start']);
const HERMES_ACTIONS = new Set(['restart', 'stop']);
const KILL_COMMANDS = new Set(['kill', 'pkill', 'killall']);
/** systemctl options whose value is the next word (`-H host`, `--machine name`, ...). */
const SYSTEMCTL_VALUE_OPTIONS = new Set(
  [
    '-h',
    '-m',
    '-t',
    '-p',
    '-s',
    '-n',
    '-o',
    '-P',
    '--host',
    '--machine',
    '--type',
    '--property',
    '--signal',
    '--kill-whom',
    '--kill-value',
    '--lines',
    '--output',
    '--root',
    '--image',
    '--job-mode',
    '--state',
    '--what',
    '--when',
    '--timestamp',
    '--message',
    '--preset-mode',
    '--drop-in',
    '--boot-loader-entry',
    '--boot-loader-menu',
    '--reboot-argument',
    '--check-inhibitors',
  ].map((o) => o.toLowerCase()),
);
/** The gateway's service names: `hermes.gateway`, `hermes-gateway`, `hermesgateway` (and `hermes_gateway`). */
const GATEWAY_NAME = /hermes[._-]?gateway/;

/**
 * Splits text into logical lines: a line ending in an odd number of backslashes continues on the next one
 * (the backslash and the newline are removed, as a shell does).
 */
export function logicalLines(text: string): { line: number; text: string }[] {
  const physical = text.split(/\r?\n/);
  const out: { line: number; text: string }[] = [];
  let parts: string[] = [];
  let start = 1;
  for (let i = 0; i < physical.length; i++) {
    const p = physical[i]!;
    let slashes = 0;
    for (let j = p.length - 1; j >= 0 && p.charCodeAt(j) === 92; j--) slashes++;
    if (slashes % 2 === 1 && i < physical.length - 1) {
      parts.push(p.slice(0, -1));
      continue;
    }
    parts.push(p);
    out.push({ line: start, text: parts.length === 1 ? parts[0]! : parts.join('') });
    parts = [];
    start = i + 2;
  }
  return out;
}

interface Word {
  /** Lower-cased, quotes and backslashes removed, surrounding brackets and `$(` stripped. */
  norm: string;
  /** `norm` after its last `/`, `=` or `(` (the command name of a path, an assignment, a substitution). */
  cmd: string;
  /** Offset in the line. */
  at: number;
}

const LEADING = new Set(['(', '{', '[', '$', '<', '>', '!']);
const TRAILING = new Set([')', '}', ']', ',', '<', '>']);

/** Quotes and backslashes, which a shell removes from a word (`\\hermes`, `"herm"es` run `hermes`). */
const QUOTING = /["'\\`]/g;

function normalize(raw: string): string {
  const s = raw.replace(QUOTING, '');
  let a = 0;
  let b = s.length;
  while (a < b && LEADING.has(s[a]!)) a++;
  while (b > a && TRAILING.has(s[b - 1]!)) b--;
  return s.slice(a, b).toLowerCase();
}

/** Words of a line, grouped into command segments (split at `;`, `&`, `|`). */
function segmentsOf(line: string): Word[][] {
  const segments: Word[][] = [];
  let current: Word[] = [];
  // U+FFFD (an undecodable byte) and NUL separate words too: they cannot glue themselves onto a command.
  const re = /[^\s;&|\ufffd\u0000]+|[;&|]/g;
  for (let m = re.exec(line); m !== null; m = re.exec(line)) {
    const tok = m[0];
    if (tok === ';' || tok === '&' || tok === '|') {
      if (current.length > 0) segments.push(current);
      current = [];
      continue;
    }
    const norm = normalize(tok);
    if (norm === '') continue;
    // The command name: after an assignment or a command substitution (`x=$(hermes`), then after the path.
    const cut = Math.max(norm.lastIndexOf('('), norm.lastIndexOf('='), norm.lastIndexOf('/'));
    current.push({ norm, cmd: cut >= 0 ? norm.slice(cut + 1) : norm, at: m.index });
  }
  if (current.length > 0) segments.push(current);
  return segments;
}

function isOption(w: Word | undefined): boolean {
  return w !== undefined && w.norm.length > 1 && w.norm.startsWith('-');
}

/** The offset of the first command word in a segment that matches a rule, or -1. */
function matchSegment(words: Word[]): { rule: LifecycleRule; at: number } | null {
  const n = words.length;
  // nameAfter[i]: some word at or after i names the gateway.
  const nameAfter = new Uint8Array(n + 1);
  // nextWord[i]: the first non-option word at or after i (launchctl).
  const nextWord = new Int32Array(n + 1);
  // systemctlVerb[i]: the first word at or after i that is neither an option nor an option's value.
  const systemctlVerb = new Int32Array(n + 2);
  // hermesAction[i]: from i, options (with values) lead to `restart`/`stop`.
  const hermesAction = new Uint8Array(n + 2);
  // hermesGateway[i]: from i, options (with values) lead to `gateway`, then to an action.
  const hermesGateway = new Uint8Array(n + 2);
  nextWord[n] = n;
  systemctlVerb[n] = n;
  systemctlVerb[n + 1] = n;
  for (let i = n - 1; i >= 0; i--) {
    const w = words[i]!;
    const opt = isOption(w);
    nameAfter[i] = nameAfter[i + 1]! | (GATEWAY_NAME.test(w.norm) ? 1 : 0);
    nextWord[i] = opt ? nextWord[i + 1]! : i;
    if (opt) {
      const takesValue = SYSTEMCTL_VALUE_OPTIONS.has(w.norm) && i + 1 < n;
      systemctlVerb[i] = takesValue ? systemctlVerb[i + 2]! : systemctlVerb[i + 1]!;
    } else {
      systemctlVerb[i] = i;
    }
    const valueNext = i + 1 < n && !isOption(words[i + 1]);
    if (HERMES_ACTIONS.has(w.norm)) hermesAction[i] = 1;
    else if (opt) hermesAction[i] = hermesAction[i + 1]! | (valueNext ? hermesAction[i + 2]! : 0);
    if (w.norm === 'gateway' && hermesAction[i + 1]) hermesGateway[i] = 1;
    else if (opt) hermesGateway[i] = hermesGateway[i + 1]! | (valueNext ? hermesGateway[i + 2]! : 0);
  }
  for (let i = 0; i < n; i++) {
    const w = words[i]!;
    if (w.cmd === 'hermes' && hermesGateway[i + 1]) return { rule: 'hermes-gateway', at: w.at };
    if (w.cmd === 'launchctl') {
      const v = nextWord[i + 1]!;
      if (v < n && LAUNCHCTL_VERBS.has(words[v]!.norm) && nameAfter[v + 1]) return { rule: 'launchctl', at: w.at };
    }
    if (w.cmd === 'systemctl') {
      const v = systemctlVerb[i + 1]!;
      if (v < n && SYSTEMCTL_VERBS.has(words[v]!.norm) && nameAfter[v + 1]) return { rule: 'systemctl', at: w.at };
    }
  }
  return null;
}

/** The rule a logical line matches, if any. */
export function matchLine(line: string): { rule: LifecycleRule; at: number } | null {
  const segments = segmentsOf(line);
  for (const words of segments) {
    const found = matchSegment(words);
    if (found) return found;
  }
  // kill/pkill/killall anywhere on the line, with hermes and gateway anywhere on it.
  let killAt = -1;
  for (const words of segments) {
    for (const w of words) {
      if (KILL_COMMANDS.has(w.cmd)) {
        killAt = w.at;
        break;
      }
    }
    if (killAt >= 0) break;
  }
  if (killAt >= 0) {
    const plain = line.replace(QUOTING, '').toLowerCase();
    if (plain.includes('hermes') && plain.includes('gateway')) return { rule: 'kill', at: killAt };
  }
  return null;
}

/** Scans a text (already decoded) for gateway lifecycle commands: one match per logical line. */
export function scanText(text: string, limit = 100): ScanResult {
  const matches: LifecycleMatch[] = [];
  let total = 0;
  for (const { line, text: t } of logicalLines(text)) {
    const found = matchLine(t);
    if (!found) continue;
    total++;
    if (matches.length < limit) matches.push({ line, rule: found.rule, text: t, column: found.at });
  }
  return { matches, total };
}

/** Longest line shown whole; longer lines are shown as an excerpt around the match. */
export const DISPLAY_MAX = 400;

/**
 * A line fit for a terminal: control characters escaped, and a long line cut to an excerpt around the match.
 */
export function displayLine(text: string, column = 0): string {
  let shown = text;
  if (text.length > DISPLAY_MAX) {
    const from = Math.max(0, Math.min(column - 100, text.length - DISPLAY_MAX));
    shown = `${from > 0 ? '…' : ''}${text.slice(from, from + DISPLAY_MAX)}${from + DISPLAY_MAX < text.length ? '…' : ''}`;
  }
  return escapeControls(shown, { keepTab: true });
}

/**
 * Decodes bytes as UTF-8 with U+FFFD for every invalid sequence, so invalid bytes never stop the scan (and,
 * being word separators to the scanner, never glue themselves onto a command name).
 */
export function decodeScript(bytes: Uint8Array): string {
  return new TextDecoder('utf-8').decode(bytes);
}
