/**
 * `list --format TEMPLATE`: one line per container from a template of fields, as `docker ps --format` takes it:
 * `{{.Name}}` is a field, `{{json .}}` the whole entry as JSON (the element `list --json` prints), `\t` and `\n` a tab
 * and a newline, and a template starting with `table ` prints a header and lines up its tab-separated columns. Every
 * field's text goes through the control-character escaper (`{{json .}}` through its JSON form, as `--json` does), so a
 * container's name cannot start another line or reorder what follows.
 */
import type { AgeStyle } from '../core/ages.js';
import { ValueError } from '../core/parse-args.js';
import type { ListedEntry } from '../reaper/sweep.js';
import { escapeControls, escapeJsonText } from '../util/escape-controls.js';
import { finishedAgo, idleFor, shortId } from './render-containers.js';
import { finishedCell, reasonDetail, reasonWord } from './render-list-table.js';

/** One field: its header in a `table` template, and its text for an entry as of an instant. */
interface Field {
  head: string;
  text: (r: ListedEntry, asOf: Date, style: AgeStyle) => string;
}

const orDash = (v: string | number | null | undefined) => (v === null || v === undefined || v === '' ? '-' : String(v));

/** The fields, by name (as `{{.Name}}` names them). */
export const LIST_FIELDS: Readonly<Record<string, Field>> = {
  ID: { head: 'ID', text: (r) => shortId(r.id) },
  FullID: { head: 'ID', text: (r) => r.id },
  Name: { head: 'NAME', text: (r) => r.name || '-' },
  Profile: { head: 'PROFILE', text: (r) => orDash(r.profile) },
  State: { head: 'STATE', text: (r) => r.state },
  Finished: { head: 'FINISHED', text: (r, asOf, style) => finishedCell(r, asOf, style) },
  FinishedAt: { head: 'FINISHED AT', text: (r) => r.finishedAt },
  Age: { head: 'AGE', text: (r, asOf, style) => (r.ageSeconds === null ? '-' : finishedAgo(r, asOf, style)) },
  AgeSeconds: { head: 'AGE SECONDS', text: (r) => orDash(r.ageSeconds) },
  Idle: { head: 'IDLE', text: (r, asOf, style) => (r.idleSeconds !== undefined ? idleFor(r.idleSeconds, asOf, style) : '-') },
  IdleSeconds: { head: 'IDLE SECONDS', text: (r) => orDash(r.idleSeconds) },
  Verdict: { head: 'VERDICT', text: (r) => r.verdict },
  Reason: { head: 'REASON', text: (r) => reasonWord(r) },
  Detail: { head: 'DETAIL', text: (r) => reasonDetail(r) },
  Rule: { head: 'RULE', text: (r) => orDash(r.rule) },
  Processes: { head: 'PROCESSES', text: (r) => orDash(r.processes) },
  Host: { head: 'HOST', text: (r) => r.host },
};

type Piece = { text: string } | { field: Field } | { json: true };

/** A parsed `--format` template. */
export interface ListFormat {
  /** `table ...`: a header line, the tab-separated columns lined up. */
  table: boolean;
  pieces: Piece[];
}

/** Parses a template; a field that does not exist, or `{{` that is not a field, is a one-line error naming the fields. */
export function parseListFormat(raw: string): ListFormat {
  let body = raw;
  const table = /^table(\s|$)/.test(body);
  if (table) body = body.replace(/^table\s*/, '');
  body = body.trim().replace(/\\t/g, '\t').replace(/\\n/g, '\n');
  if (table && body === '') body = '{{.ID}}\t{{.Name}}\t{{.State}}\t{{.Finished}}\t{{.Idle}}\t{{.Verdict}}\t{{.Reason}}';
  const pieces: Piece[] = [];
  const re = /\{\{\s*(.*?)\s*\}\}/g;
  let last = 0;
  for (let m = re.exec(body); m; m = re.exec(body)) {
    if (m.index > last) pieces.push({ text: body.slice(last, m.index) });
    pieces.push(pieceOf(m[1]!, raw));
    last = m.index + m[0].length;
  }
  if (last < body.length) pieces.push({ text: body.slice(last) });
  if (pieces.some((p) => 'text' in p && p.text.includes('{{'))) throw new ValueError(`--format: unclosed '{{' in '${escapeControls(raw)}'`);
  return { table, pieces };
}

function pieceOf(action: string, raw: string): Piece {
  if (/^json\s+\.$/.test(action)) return { json: true };
  const m = /^\.([A-Za-z]+)$/.exec(action);
  const field = m ? LIST_FIELDS[m[1]!] : undefined;
  if (field) return { field };
  throw new ValueError(
    `--format: unknown field '{{${escapeControls(action)}}}' in '${escapeControls(raw)}': use ${Object.keys(LIST_FIELDS)
      .map((k) => `{{.${k}}}`)
      .join(', ')} or {{json .}}`,
  );
}

/** The lines of `rows` under the template (and the header, for a `table` template), each ending in a newline. */
export function renderListFormat(f: ListFormat, rows: readonly ListedEntry[], asOf: Date): string {
  const lineOf = (r: ListedEntry) =>
    f.pieces.map((p) => ('text' in p ? p.text : 'json' in p ? escapeJsonText(JSON.stringify(r)) : escapeControls(p.field.text(r, asOf, 'long')))).join('');
  if (!f.table) return rows.map((r) => `${lineOf(r)}\n`).join('');
  const head = f.pieces.map((p) => ('text' in p ? p.text : 'json' in p ? 'JSON' : p.field.head)).join('');
  const lines = [head, ...rows.map(lineOf)].map((l) => l.split('\t'));
  const widths: number[] = [];
  for (const cells of lines) cells.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return lines
    .map(
      (cells) =>
        `${cells
          .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
          .join('   ')
          .trimEnd()}\n`,
    )
    .join('');
}
