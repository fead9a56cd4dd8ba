/**
 * The `list` table, in the shape `docker ps` prints: one header, one line per container, columns separated by runs
 * of spaces, no rules, and no colour off a terminal, so `list | grep`, `| head`, `| less`, `| awk` and `watch -n`
 * read it. The PROFILE column shows only when more than one profile is listed, HOST only when more than one engine
 * is; `-` stands where a time does not apply (a running container's finish, an idleness not measured). REASON is a
 * short word (`expired`, `idle`, `in-use`, `idle-too-recent`, ...); its detail (`in-use: 4 processes`,
 * `owner-alive: pid 4812`) is in `--wide`, `--json` and `status`.
 *
 * Piped, nothing is cut. At a terminal every line fits its width where it can: first long names are shortened (to
 * 16 characters, and only in a way that keeps them apart: the part that tells one from the others stays), then the
 * times are said narrow (`3h ago`), then profiles and hosts are shortened, then ids to the shortest prefix that
 * still tells them apart, then names to the least that does; REASON is never cut. `--wide` cuts nothing and shows every column, PROFILE and HOST included.
 */
import { requirePackage } from '../util/require-package.js';
import type CliTable3 from 'cli-table3';
import type { Context } from '../context.js';
import type { AgeStyle } from '../core/ages.js';
import type { ListedEntry } from '../reaper/sweep-types.js';
import { escapeControls } from '../util/escape-controls.js';
import { finishedAgo, idleFor, shortId } from './render-containers.js';
import { diskSize } from '../core/sizes.js';

/** Columns between two cells. */
const GAP = 2;
/** Width assumed when a terminal does not say its own. */
const DEFAULT_COLUMNS = 80;
const ELLIPSIS = '…';

export interface TableOptions {
  asOf: Date;
  /** More than one engine: a HOST column. */
  showHost: boolean;
  /** `--wide`: every column, nothing cut. */
  wide: boolean;
}

/** FINISHED: `-` for a container that has not finished (running, never started: Go's zero time). */
export function finishedCell(r: ListedEntry, asOf: Date, style: AgeStyle = 'long'): string {
  if (r.ageSeconds === null && r.finishedAt.startsWith('0001-')) return r.rule === 'never-started' ? finishedAgo(r, asOf, style) : '-';
  if (r.state.toLowerCase() === 'running') return '-';
  return finishedAgo(r, asOf, style);
}

/**
 * The REASON word: why `reap` would remove it (`expired`), stop it (`idle`), or keep it (`too-recent`, `excluded`,
 * ...); for a running container kept, why the idle rule keeps it (`in-use`, `idle-too-recent`, `owner-alive`, ...).
 */
export function reasonWord(r: ListedEntry): string {
  return r.reason === 'running' && r.idleReason ? r.idleReason : r.reason;
}

/**
 * The REASON with its detail (`--wide`): `in-use: 4 processes`, `owner-alive: pid 4812 serves all-profiles` (what the
 * owner serves: all-profiles, allowlist or profile; `--json` has why); for one `reap` would stop, the cost of the
 * stop: `idle: writable layer 20.0 MiB`; else the word.
 */
export function reasonDetail(r: ListedEntry): string {
  if (r.verdict === 'stop' && typeof r.writableLayerBytes === 'number') return `${r.reason}: writable layer ${diskSize(r.writableLayerBytes)}`;
  if (r.idleReason === 'in-use' && typeof r.processes === 'number') return `in-use: ${r.processes} processes`;
  if (r.idleReason === 'owner-alive' && r.owner) {
    return `owner-alive: ${r.owner.pid === null ? 'owners not visible' : `pid ${r.owner.pid}${r.owner.serves ? ` serves ${r.owner.serves}` : ''}`}`;
  }
  return reasonWord(r);
}

/** One column: its header, its cells, and how it gives way at a narrow terminal. */
interface Column {
  head: string;
  cells: string[];
  /** Shortened, keeping its values apart, when a line is too wide. */
  shortens?: true;
  /** Its cells said again in another age style (FINISHED, IDLE). */
  restyle?: (style: AgeStyle) => string[];
}

const cell = (s: string) => escapeControls(s);

function columnsOf(rows: ListedEntry[], o: TableOptions): Column[] {
  const showProfile = o.wide || new Set(rows.map((r) => r.profile ?? '-')).size > 1;
  const showHost = o.wide || o.showHost;
  const finished = (style: AgeStyle) => rows.map((r) => finishedCell(r, o.asOf, style));
  const idle = (style: AgeStyle) => rows.map((r) => (r.idleSeconds !== undefined ? idleFor(r.idleSeconds, o.asOf, style) : '-'));
  const cols: Array<Column | false> = [
    { head: 'ID', cells: rows.map((r) => shortId(r.id)) },
    { head: 'NAME', cells: rows.map((r) => cell(r.name || '-')), shortens: true },
    showProfile && { head: 'PROFILE', cells: rows.map((r) => cell(r.profile ?? '-')), shortens: true },
    { head: 'STATE', cells: rows.map((r) => cell(r.state)) },
    { head: 'FINISHED', cells: finished('long'), restyle: finished },
    { head: 'IDLE', cells: idle('long'), restyle: idle },
    { head: 'VERDICT', cells: rows.map((r) => r.verdict) },
    showHost && { head: 'HOST', cells: rows.map((r) => cell(r.host)), shortens: true },
    { head: 'REASON', cells: rows.map((r) => cell(o.wide ? reasonDetail(r) : reasonWord(r))) },
  ];
  return cols.filter((c): c is Column => c !== false);
}

/** The widest of a column's header and cells (a loop: a list of 100k containers is too many arguments for Math.max). */
const longest = (values: readonly string[], least = 0) => values.reduce((n, s) => Math.max(n, s.length), least);
const widthOf = (c: Column) => longest(c.cells, c.head.length);
const lineWidth = (cols: Column[]) => cols.reduce((n, c) => n + widthOf(c), 0) + GAP * (cols.length - 1);

/** How many of a value's first (`prefix`) or last (`suffix`) characters tell it apart from every other value. */
interface Apart {
  prefix: number;
  suffix: number;
}

/** One past the longest prefix `values` share with a neighbour in sorted order, for each value (at most its length). */
function apartAt(values: readonly string[]): Map<string, number> {
  const sorted = [...new Set(values)].sort();
  const common = (a: string | undefined, b: string) => {
    if (a === undefined) return 0;
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    return i;
  };
  const out = new Map<string, number>();
  sorted.forEach((v, i) => out.set(v, Math.min(v.length, Math.max(common(sorted[i - 1], v), common(sorted[i + 1], v)) + 1)));
  return out;
}

const reversed = (s: string) => [...s].reverse().join('');

/** For each value, the prefix and the suffix that tell it apart from the others. */
function distinguishing(values: readonly string[]): Map<string, Apart> {
  const prefixes = apartAt(values);
  const suffixes = apartAt(values.map(reversed));
  return new Map(values.map((v) => [v, { prefix: prefixes.get(v)!, suffix: suffixes.get(reversed(v))! }]));
}

/**
 * `value` in at most `width` characters: whole when it fits, else a head, an ellipsis and a tail, the head long
 * enough to hold the prefix that tells it apart where that fits, else the tail long enough for the suffix.
 */
export function shorten(value: string, width: number, apart: Apart = { prefix: 0, suffix: 0 }): string {
  if (value.length <= width) return value;
  if (width <= 1) return ELLIPSIS.slice(0, width);
  const room = width - 1;
  let head = Math.max(Math.ceil(room / 2), apart.prefix);
  if (apart.prefix > room && apart.suffix <= room) head = room - Math.max(Math.floor(room / 2), apart.suffix);
  head = Math.min(room, head);
  const tail = room - head;
  return `${value.slice(0, head)}${ELLIPSIS}${tail > 0 ? value.slice(value.length - tail) : ''}`;
}

/** `values` shortened to `width`, each keeping what tells it apart where it can. */
function shortenAll(values: readonly string[], width: number, apart = distinguishing(values)): string[] {
  return values.map((v) => shorten(v, width, apart.get(v)));
}

/** The least width at which `values`, shortened, are still as many different values as they were (at least 2). */
export function leastDistinctWidth(values: readonly string[]): number {
  const distinct = new Set(values).size;
  const apart = distinguishing(values);
  const natural = longest(values);
  let least = natural;
  for (let w = natural - 1; w >= 2; w--) {
    if (new Set(shortenAll(values, w, apart)).size !== distinct) break;
    least = w;
  }
  return least;
}

/** The least length at which the prefixes of `ids` are still as many different values (at least `floor`). */
function leastIdWidth(ids: readonly string[], floor: number): number {
  const distinct = new Set(ids).size;
  let w = floor;
  while (w < longest(ids) && new Set(ids.map((id) => id.slice(0, w))).size !== distinct) w++;
  return w;
}

/**
 * Fits the columns to `columns` characters, one step at a time until a line fits (see the header): names to 16,
 * narrow times, profiles to 10 and hosts to 16, names to 10, ids to the shortest prefix that still tells them apart
 * (an id prefix is what `docker` takes), then names, profiles and hosts to the least that keeps them apart. What is
 * still too wide then wraps; REASON is never cut.
 */
function fit(cols: Column[], columns: number): void {
  const originals = new Map(cols.map((c) => [c, c.cells]));
  const excess = () => lineWidth(cols) - columns;
  const shortenTo = (head: string, floor: number) => {
    const c = cols.find((x) => x.head === head);
    if (!c || excess() <= 0) return;
    const values = originals.get(c)!;
    const target = Math.max(floor, c.head.length, leastDistinctWidth(values), widthOf(c) - excess());
    if (target < widthOf(c)) c.cells = shortenAll(values, target);
  };
  const steps: Array<() => void> = [
    () => shortenTo('NAME', 16),
    () => {
      for (const c of cols) if (c.restyle) c.cells = c.restyle('narrow');
    },
    () => shortenTo('PROFILE', 10),
    () => shortenTo('HOST', 16),
    () => shortenTo('NAME', 10),
    () => {
      const id = cols[0]!;
      const width = Math.max(leastIdWidth(id.cells, 4), widthOf(id) - excess());
      id.cells = id.cells.map((c) => c.slice(0, width));
    },
    () => shortenTo('NAME', 0),
    () => shortenTo('PROFILE', 0),
    () => shortenTo('HOST', 0),
  ];
  for (const step of steps) {
    if (excess() <= 0) return;
    step();
  }
}

/** cli-table3 drawing no rules: columns `GAP` spaces apart, no padding, no colour of its own (the shape `docker ps` prints). */
const NO_RULES = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: ' '.repeat(GAP),
};

/**
 * The table's lines, laid out by cli-table3 (loaded here, on the first table: about 10 ms; it measures a cell's width as
 * a terminal shows it): one per row under the header, no rules, trailing spaces trimmed.
 */
function plain(cols: Column[], bold: boolean): string {
  const Table = requirePackage('cli-table3') as typeof CliTable3;
  const table = new Table({ chars: NO_RULES, style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true } });
  table.push(
    cols.map((c) => c.head),
    ...cols[0]!.cells.map((_, r) => cols.map((c) => c.cells[r]!)),
  );
  const [top = '', ...rows] = table
    .toString()
    .split('\n')
    .map((l) => l.trimEnd());
  return [bold ? `\u001b[1m${top}\u001b[22m` : top, ...rows].join('\n');
}

/**
 * The `list` table for `rows` (see the header): fitted to the terminal's width at a terminal (bold header unless
 * `NO_COLOR`), uncut and plain when piped or with `--wide`.
 */
export function renderListTable(ctx: Context, rows: ListedEntry[], o: TableOptions): string {
  const tty = Boolean(ctx.stdout.isTTY);
  const cols = columnsOf(rows, o);
  if (tty && !o.wide) fit(cols, (ctx.stdout as { columns?: number }).columns || DEFAULT_COLUMNS);
  return plain(cols, tty && !ctx.env.NO_COLOR);
}
