/** Markdown for CI step summaries (`$GITHUB_STEP_SUMMARY`) from `reap --json` output. */
import { spanSeconds } from '../core/ages.js';
import { diskSize } from '../core/sizes.js';

interface Row {
  id?: unknown;
  name?: unknown;
  profile?: unknown;
  state?: unknown;
  finishedAt?: unknown;
  ageSeconds?: unknown;
  host?: unknown;
  reason?: unknown;
  error?: unknown;
  idleSeconds?: unknown;
  writableLayerBytes?: unknown;
}

/** Escapes a value for a Markdown table cell. */
function cell(v: unknown): string {
  const s = v === null || v === undefined || v === '' ? '-' : String(v);
  return s
    .replace(/\\/g, '\\\\')
    .replace(/\|/g, '\\|')
    .replace(/[\r\n]+/g, ' ')
    .replace(/</g, '&lt;');
}

/** An age or idle time in seconds as of the report's instant: "3 hours" (core/ages.ts, the one way every output says it). */
function age(v: unknown, asOf: Date): string {
  return typeof v === 'number' && Number.isFinite(v) ? spanSeconds(v, asOf) : '-';
}

interface Extra {
  head: string;
  key: 'reason' | 'error' | 'idleSeconds';
  /** The stops' table: the cost of each stop (the writable layer's size). */
  layer?: boolean;
}

/** A writable layer's size, `-` when not measured. */
const layer = (v: unknown): string => (typeof v === 'number' && Number.isFinite(v) ? diskSize(v) : '-');

function table(title: string, rows: Row[], extra: Extra | null, asOf: Date): string {
  if (rows.length === 0) return `**${title}:** none\n`;
  const head = ['Container', 'Name', 'Profile', 'State', 'Age', 'Engine', ...(extra ? [extra.head] : []), ...(extra?.layer ? ['Writable layer'] : [])];
  const lines = [`**${title}:** ${rows.length}`, '', `| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const r of rows) {
    const id = typeof r.id === 'string' ? r.id.slice(0, 12) : r.id;
    lines.push(
      `| \`${cell(id)}\` | ${cell(r.name)} | ${cell(r.profile)} | ${cell(r.state)} | ${age(r.ageSeconds, asOf)} | ${cell(r.host)} ` +
        `|${extra ? ` ${extra.key === 'idleSeconds' ? age(r.idleSeconds, asOf) : cell(r[extra.key])} |` : ''}` +
        `${extra?.layer ? ` ${layer(r.writableLayerBytes)} |` : ''}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The step summary for one `reap --json` document (or a clear note when it is not one). */
export function reapSummaryMarkdown(doc: unknown): string {
  const d = (doc ?? {}) as Record<string, unknown>;
  const out: string[] = ['## hermes-janitor reap', ''];
  if (d.disabled === true) return `${out.join('\n')}Reaper disabled: ${cell(d.reason)}\n`;
  if (typeof d.skipped === 'string') return `${out.join('\n')}Skipped (${cell(d.skipped)}).\n`;
  if (!Array.isArray(d.removed) || !Array.isArray(d.kept) || !Array.isArray(d.failed)) {
    return `${out.join('\n')}No report: the reap did not produce its JSON document (see the step log).\n`;
  }
  const scope = d.profile === null ? 'all profiles' : `profile \`${cell(d.profile)}\``;
  out.push(`${d.dryRun ? 'Dry run: nothing was removed. ' : ''}Threshold ${cell(d.thresholdSeconds)} s, ${scope}, as of ${cell(d.asOf)}.`, '');
  const hosts = Array.isArray(d.hosts) ? (d.hosts as Array<Record<string, unknown>>) : [];
  for (const h of hosts.filter((x) => x.reachable === false)) out.push(`> Engine ${cell(h.host)} unreachable: ${cell(h.error)}`, '');
  if (d.timedOut === true) out.push('> The run timed out; the report covers what finished.', '');
  // The document's own instant (a summary is rendered right after its run: now, for a document without one).
  const given = new Date(typeof d.asOf === 'string' ? d.asOf : NaN);
  const asOf = Number.isFinite(given.getTime()) ? given : new Date();
  out.push(table(d.dryRun ? 'Would remove' : 'Removed', d.removed as Row[], null, asOf));
  if (Array.isArray(d.stopped))
    out.push(table(d.dryRun ? 'Would stop (idle)' : 'Stopped (idle)', d.stopped as Row[], { head: 'Idle', key: 'idleSeconds', layer: true }, asOf));
  out.push(table('Kept', d.kept as Row[], { head: 'Reason', key: 'reason' }, asOf));
  out.push(table('Failed', d.failed as Row[], { head: 'Error', key: 'error' }, asOf));
  return `${out.join('\n')}`;
}
