/**
 * What the engine commands (`reap`, `watch`) tell their caller, and the one place the output format is chosen:
 * text (for people), quiet (failures only), JSON (`--json`: one document) or NDJSON (`--log-format json`: one line
 * per event). The commands parse, run and hand what happened to the reporter; the reporter alone writes.
 */
import type { Context } from '../../context.js';
import type { Reporter } from './types.js';

export type * from './types.js';

export type OutputFormat = 'text' | 'quiet' | 'json' | 'ndjson';

/** The output format from the flags: `--json`, else `--log-format json`, else `--quiet`, else text. */
export function outputFormat(opts: { json?: boolean | undefined; logFormat: 'text' | 'json'; quiet?: boolean | undefined }): OutputFormat {
  if (opts.json) return 'json';
  if (opts.logFormat === 'json') return 'ndjson';
  return opts.quiet ? 'quiet' : 'text';
}

/** The reporter for the flags, chosen once per run. */
export async function chooseReporter(ctx: Context, opts: { json?: boolean; logFormat: 'text' | 'json'; quiet?: boolean }): Promise<Reporter> {
  const format = outputFormat(opts);
  if (format === 'json') return new (await import('./json-reporter.js')).JsonReporter(ctx);
  if (format === 'ndjson') return new (await import('./ndjson-reporter.js')).NdjsonReporter(ctx, Boolean(opts.quiet));
  const { TextReporter } = await import('./text-reporter.js');
  return new TextReporter(ctx, format === 'quiet');
}
