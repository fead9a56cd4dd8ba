/**
 * The container sweep's side of the sweep passes (`Pass.sweep`, `passes/sweep-pass.ts`): they come from the one list
 * (`passes/index.ts`), in its order, and are reached through their hooks alone. Their options by pass name (the run's
 * in `IdleOptions.sweeps`, a label's in `IdleRule.sweeps`), their parts of a sweep's result (`ReapResult[name]`), the
 * pass an `exec-tree` event is of (its `nouns.event`).
 */
import { PASSES } from '../passes/index.js';
import type { AbandonedLoad, SweepDecisions, SweepHooks, SweepOptionsWhere } from '../passes/sweep-pass.js';
import type { Pass } from '../passes/types.js';
import type { SweepEvent, SweepParts } from './sweep-types.js';

/** A sweep pass of the list and its hooks. */
export interface SweepPass {
  readonly pass: Pass;
  readonly hooks: SweepHooks;
}

/** The sweep passes, in list order. */
export const SWEEP_PASSES: readonly SweepPass[] = PASSES.flatMap((pass) => (pass.sweep ? [{ pass, hooks: pass.sweep }] : []));

/** Each sweep pass's options from the run's inputs and a home's settings, by pass name (those that run; none: undefined). */
export function sweepOptions(inputs: object, where: SweepOptionsWhere): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const { pass, hooks } of SWEEP_PASSES) {
    const o = hooks.options(inputs, where);
    if (o !== null) out[pass.name] = o;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Two profiles' sweep options of one label as one: each pass's `later` where both have it, else the one there is. */
export function laterSweeps(a: Readonly<Record<string, unknown>> | undefined, b: Readonly<Record<string, unknown>> | undefined) {
  if (!a || !b) return a ?? b;
  const out: Record<string, unknown> = {};
  for (const { pass, hooks } of SWEEP_PASSES) {
    const [x, y] = [own(a, pass.name), own(b, pass.name)];
    if (x !== undefined && y !== undefined) out[pass.name] = hooks.later(x, y);
    else if ((x ?? y) !== undefined) out[pass.name] = x ?? y;
  }
  return out;
}

/** The run's sweep options with a label's over them (each pass's `withLabel`; a pass the run does not run stays off). */
export function withLabelSweeps(run: Readonly<Record<string, unknown>> | undefined, label: Readonly<Record<string, unknown>> | undefined) {
  if (!run || !label) return run;
  const out: Record<string, unknown> = { ...run };
  for (const { pass, hooks } of SWEEP_PASSES) {
    const [r, l] = [own(run, pass.name), own(label, pass.name)];
    if (r !== undefined && l !== undefined) out[pass.name] = hooks.withLabel(r, l);
  }
  return out;
}

/** The sweep passes that run under these options, in list order, each with its options. */
export function sweepsOf(sweeps: Readonly<Record<string, unknown>> | undefined): Array<SweepPass & { options: unknown }> {
  if (!sweeps) return [];
  return SWEEP_PASSES.flatMap((s) => {
    const options = own(sweeps, s.pass.name);
    return options === undefined ? [] : [{ ...s, options }];
  });
}

const own = (r: Readonly<Record<string, unknown>>, name: string): unknown => (Object.hasOwn(r, name) ? r[name] : undefined);

/** Each sweep pass's part of a sweep's result before it did anything. */
export function emptySweepParts(): SweepParts {
  return Object.fromEntries(SWEEP_PASSES.map(({ pass }) => [pass.name, { ended: [], kept: [], failed: [] }])) as unknown as SweepParts;
}

/** A sweep pass's part of a sweep's result. */
export const partOf = (r: SweepParts, pass: Pass): SweepDecisions => (r as unknown as Record<string, SweepDecisions>)[pass.name]!;

/** The sweep pass an event of a sweep pass's decision is of (its `nouns.event`). */
export function sweepPassOf(ev: Extract<SweepEvent, { type: 'exec-tree' }>): SweepPass {
  return SWEEP_PASSES.find((s) => s.pass.nouns.event === ev.type)!;
}

/** Two loads the idle rule leaves out, as one. */
export function addLoad(a: AbandonedLoad | undefined, b: AbandonedLoad): AbandonedLoad {
  if (!a) return b;
  return { execIds: new Set([...a.execIds, ...b.execIds]), processes: a.processes + b.processes };
}
