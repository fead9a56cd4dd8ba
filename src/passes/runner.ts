/**
 * Running the passes of the list for `reap` and `watch`: their settings (before anything is touched), their runs in
 * the list's order, and the outcome of a run as every output takes it.
 */
import type { ReapResult } from '../reaper/sweep-types.js';
import type { Pass, PassResult, PassRunContext, PassSettingsInput } from './types.js';

/** A pass whose settings say it runs, with them. */
export interface SettledPass {
  readonly pass: Pass;
  readonly settings: unknown;
}

/** What a run of the passes gave: the outcomes (every output), and the gauges (the metrics). */
export interface PassesRun {
  /** In the list's order: the sweep passes always, the others that ran with an outcome. */
  readonly results: PassResult[];
  /** In the list's order: each pass that measured, with its gauges. */
  readonly gauges: Array<{ pass: Pass; gauges: unknown }>;
}

/** The settings of every pass that runs after the sweep, in list order; a bad one is a `UsageError` before anything runs. */
export async function settlePasses(passes: readonly Pass[], input: PassSettingsInput): Promise<SettledPass[]> {
  const out: SettledPass[] = [];
  for (const pass of passes) {
    if (pass.kind !== 'run' || !pass.settings) continue;
    const settings = await pass.settings(input);
    if (settings !== null) out.push({ pass, settings });
  }
  return out;
}

/** Before the sweep: each pass's look at the engines (a container the sweep removes still counts as a use). */
export async function beforeSweep(
  settled: readonly SettledPass[],
  engines: Parameters<NonNullable<Pass['beforeSweep']>>[1],
  ctx: PassRunContext,
): Promise<void> {
  for (const { pass, settings } of settled) await pass.beforeSweep?.(settings, engines, ctx);
}

/** Told as each pass starts and ends (`reap`'s report when its deadline ends it: cli/reap-progress.ts). */
export interface PassWatcher {
  starting(pass: Pass): void;
  done(pass: Pass, result: unknown): void;
}

/**
 * Runs the passes one after the other, in list order, and puts their outcomes with those of the sweep passes (from
 * `sweeps`, the engines' sweep results; null: no sweep ran, their outcome is empty and they have no gauges).
 */
export async function runPasses(
  passes: readonly Pass[],
  settled: readonly SettledPass[],
  ctx: PassRunContext,
  sweeps: readonly ReapResult[] | null,
  watcher?: PassWatcher,
): Promise<PassesRun> {
  const ran = new Map<Pass, { result: unknown; gauges: unknown }>();
  for (const { pass, settings } of settled) {
    if (!pass.run) continue;
    watcher?.starting(pass);
    const report = await pass.run(settings, ctx);
    ran.set(pass, report);
    watcher?.done(pass, report.result);
  }
  const out: PassesRun = { results: [], gauges: [] };
  for (const pass of passes) {
    if (pass.kind === 'sweep' && pass.fromSweeps) {
      const result = pass.fromSweeps(sweeps ?? []);
      out.results.push({ pass, result });
      const g = sweeps && pass.gaugesOf ? pass.gaugesOf(result, ctx.dryRun) : null;
      if (g !== null) out.gauges.push({ pass, gauges: g });
      continue;
    }
    const r = ran.get(pass);
    if (!r) continue;
    if (r.result !== null) out.results.push({ pass, result: r.result });
    if (r.gauges !== null) out.gauges.push({ pass, gauges: r.gauges });
  }
  return out;
}

/** How many things the passes failed on (the sweep passes' failures are reported, and do not change the exit code). */
export function passFailures(results: readonly PassResult[]): number {
  return results.filter((r) => r.pass.kind === 'run').reduce((n, r) => n + r.pass.outcome(r.result).failed.length, 0);
}

/** `--timeout` cut a pass short. */
export const passesCutShort = (results: readonly PassResult[]): boolean => results.some((r) => r.pass.cutShort(r.result));
