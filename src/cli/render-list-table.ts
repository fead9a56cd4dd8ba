/**
 * The `list` table. At a terminal it reads like `docker ps`: one line per container, no rules, columns sized to
 * their contents and fitted to the terminal's width (the reason, last, is cut first, then the name, then the host,
 * with an ellipsis), the PROFILE column only when more than one profile is shown, and `-` where a time does not
 * apply (a running container's finish, an idleness not measured); `--wide` cuts nothing. Piped, it stays the
 * bordered cli-table3 table it always was, cell for cell (scripts parse it), unless `--wide` asks for the plain one.
 */
import type { Context } from '../context.js';
import type { ListedEntry } from '../reaper/sweep-types.js';
import { finishedAgo, idleFor, shortId } from './render-containers.js';
import { diskSize } from '../core/sizes.js';

/** Columns between two cells in the plain layout. */
const GAP = 2;
/**
 * Which columns give way, in order, and down to what width, when a line is wider than the terminal: the reason
 * first, then the name, then the host, each to a width that still says something; then the reason and the name
 * down to their headers' width. What is still too wide then wraps.
 */
const CUTS: Array<[column: string, least: number]> = [['REASON', 12], ['NAME', 16], ['HOST', 16], ['REASON', 6], ['NAME', 8]];
/** Width assumed when a terminal does not say its own. */
const DEFAULT_COLUMNS = 80;

export interface TableOptions {
  asOf: Date;
  /** More than one engine: a HOST column. */
  showHost: boolean;
  /** `--wide`: the plain layout, nothing cut. */
  wide: boolean;
}

/** FINISHED: `-` for a container that has not finished (running, never started: Go's zero time). */
export function finishedCell(r: ListedEntry, asOf: Date): string {
  if (r.ageSeconds === null && r.finishedAt.startsWith('0001-')) return r.rule === 'never-started' ? finishedAgo(r, asOf) : '-';
  if (r.state.toLowerCase() === 'running') return '-';
  return finishedAgo(r, asOf);
}

/**
 * The plain table's REASON: a running container's idle reason alone (its STATE already says running):
 * `idle-too-recent`, `in-use: 4 processes`; for one `reap` would stop, the cost of the stop: `idle: writable layer
 * 20.0 MiB`.
 */
function shortReason(r: ListedEntry): string {
  if (r.verdict === 'stop' && typeof r.writableLayerBytes === 'number') return `${r.reason}: writable layer ${diskSize(r.writableLayerBytes)}`;
  if (r.reason !== 'running' || !r.idleReason) return reasonCell(r);
  return idleDetail(r);
}

/** `in-use: 4 processes`, `owner-alive: pid 4812`, else the idle reason alone. */
function idleDetail(r: ListedEntry): string {
  if (r.idleReason === 'in-use' && typeof r.processes === 'number') return `in-use: ${r.processes} processes`;
  if (r.idleReason === 'owner-alive' && r.owner) return `owner-alive: ${r.owner.pid === null ? 'owners not visible' : `pid ${r.owner.pid}`}`;
  return r.idleReason ?? '';
}

/** The REASON cell: `running (idle-too-recent)`, `running (in-use: 4 processes)`, `running (owner-alive: pid 4812)`. */
export function reasonCell(r: ListedEntry): string {
  if (!r.idleReason) return r.reason;
  return `${r.reason} (${idleDetail(r)})`;
}

function columnsOf(rows: ListedEntry[], o: TableOptions): { head: string[]; cells: string[][] } {
  const showProfile = new Set(rows.map((r) => r.profile ?? '-')).size > 1;
  const head = ['ID', 'NAME', ...(showProfile ? ['PROFILE'] : []), 'STATE', 'FINISHED', 'IDLE', 'VERDICT', ...(o.showHost ? ['HOST'] : []), 'REASON'];
  const cells = rows.map((r) => [
    shortId(r.id), r.name || '-', ...(showProfile ? [r.profile ?? '-'] : []), r.state, finishedCell(r, o.asOf),
    r.idleSeconds !== undefined ? idleFor(r.idleSeconds, o.asOf) : '-', r.verdict, ...(o.showHost ? [r.host] : []), shortReason(r),
  ]);
  return { head, cells };
}

const cut = (s: string, width: number) => (s.length <= width ? s : `${s.slice(0, Math.max(0, width - 1))}…`);

/** Column widths that fit `columns`, cutting REASON, then NAME, then HOST down to their least; null = uncut. */
export function fitWidths(head: string[], natural: number[], columns: number | null): number[] {
  const widths = [...natural];
  if (columns === null) return widths;
  const total = () => widths.reduce((a, b) => a + b, 0) + GAP * (widths.length - 1);
  for (const [name, least] of CUTS) {
    const i = head.indexOf(name);
    if (i < 0 || total() <= columns) continue;
    widths[i] = Math.max(Math.min(least, widths[i]!), widths[i]! - (total() - columns));
  }
  return widths;
}

/** The plain layout: one line per row, the last column unpadded. `columns` null: nothing cut. */
export function plainTable(head: string[], cells: string[][], o: { columns: number | null; bold: boolean }): string {
  const natural = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const widths = fitWidths(head, natural, o.columns);
  const line = (row: string[]) => row.map((c, i) => (i === row.length - 1 ? cut(c, widths[i]!) : cut(c, widths[i]!).padEnd(widths[i]!))).join(' '.repeat(GAP)).trimEnd();
  const top = line(head);
  return [o.bold ? `\u001b[1m${top}\u001b[22m` : top, ...cells.map(line)].join('\n');
}

/** The `list` table for `rows` (see the header for which layout when). */
export async function renderListTable(ctx: Context, rows: ListedEntry[], o: TableOptions): Promise<string> {
  const color = Boolean(ctx.stdout.isTTY) && !ctx.env.NO_COLOR;
  if (ctx.stdout.isTTY || o.wide) {
    const { head, cells } = columnsOf(rows, o);
    const columns = o.wide ? null : ((ctx.stdout as { columns?: number }).columns ?? DEFAULT_COLUMNS);
    return plainTable(head, cells, { columns, bold: color });
  }
  return boxedTable(rows, o);
}

/** The piped table as it always was: every column, `never` for Go's zero time, an empty IDLE where not sampled. */
async function boxedTable(rows: ListedEntry[], o: TableOptions): Promise<string> {
  const { default: Table } = await import('cli-table3');
  const head = ['ID', 'NAME', 'PROFILE', 'STATE', 'FINISHED', 'IDLE', 'VERDICT', 'REASON', ...(o.showHost ? ['HOST'] : [])];
  const table = new Table({ head, style: { head: [], border: [] } });
  for (const r of rows) {
    table.push([
      shortId(r.id), r.name, r.profile ?? '-', r.state, finishedAgo(r, o.asOf),
      r.idleSeconds !== undefined ? idleFor(r.idleSeconds, o.asOf) : '', r.verdict, reasonCell(r), ...(o.showHost ? [r.host] : []),
    ]);
  }
  return table.toString();
}
