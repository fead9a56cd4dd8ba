/**
 * The image step of `reap` and `watch` (`--images-over`): records the images of the run's containers before the
 * sweep (so a container the sweep removes still counts as a use), then runs the image pass on every engine that
 * answered (rules in core/images.ts, the pass in reaper/images.ts). Loaded only when the budget is on.
 */
import type { EngineClient } from '../adapters/engine.js';
import { hasImageCalls } from '../adapters/engine.js';
import { filesystemBytes } from '../adapters/filesystem-size.js';
import { type ImageUses, imageUsesOf } from '../adapters/image-uses.js';
import type { Selection } from '../core/selection.js';
import { errorMessage } from '../errors.js';
import { type ImagesResult, recordImageSightings, reduceImages } from '../reaper/images.js';
import type { ImageSettings } from '../reaper/image-settings.js';
import type { EngineAnswer } from './sandbox-dirs-step.js';
import type { ImageGauges } from '../adapters/metrics.js';

export interface ImagesStep {
  settings: ImageSettings;
  uses: ImageUses;
  selection: Selection;
  dryRun: boolean;
  now: () => Date;
  signal?: AbortSignal | undefined;
}

/**
 * The `images` object of `reap --json`: every engine's entries (each with its `host`), bytes and counts summed; the
 * budget is the same for every engine unless a percentage of different disks (then null, see `engines`).
 */
export interface ImagesReport extends Omit<ImagesResult, 'host'> {
  /** Each engine's own figures. */
  engines: Array<{ host: string; bytesBefore: number | null; bytesAfter: number | null; budget: number | null }>;
}

export async function imagesStepFor(settings: ImageSettings, home: string, rest: Omit<ImagesStep, 'settings' | 'uses'>): Promise<ImagesStep> {
  return { settings, uses: await imageUsesOf(home), ...rest };
}

/** Before the sweep: what each engine's selected containers use now. An engine that does not answer is left to the pass. */
export async function recordSightings(step: ImagesStep, engines: readonly EngineClient[]): Promise<void> {
  await Promise.all(
    engines.filter(hasImageCalls).map((e) => recordImageSightings(e, step.uses, step.selection, step.now(), step.signal).catch(() => undefined)),
  );
}

/** The pass on every engine that answered the run; one that did not is a failed entry (nothing removed there). */
export async function runImagesStep(step: ImagesStep, engines: readonly EngineAnswer[]): Promise<ImagesReport> {
  const results = await Promise.all(
    engines.map(async (a): Promise<ImagesResult> => {
      const blank = { removed: [], kept: [], bytesBefore: null, bytesAfter: null, budget: null, host: a.engine.host, counted: 0 };
      if (!a.answered) return { ...blank, failed: [{ id: null, error: `image pass on ${a.engine.host}: the engine did not answer (${a.error ?? 'no answer'}); no image was removed`, host: a.engine.host }] };
      if (!hasImageCalls(a.engine)) return { ...blank, failed: [{ id: null, error: `image pass on ${a.engine.host}: this engine client has no image calls`, host: a.engine.host }] };
      return reduceImages({
        engine: a.engine, uses: step.uses, selection: step.selection, budget: step.settings.budget, policy: step.settings.policy,
        dryRun: step.dryRun, now: step.now, filesystemBytes, signal: step.signal,
      }).catch((err: unknown) => ({ ...blank, failed: [{ id: null, error: `image pass on ${a.engine.host}: ${errorMessage(err)}`, host: a.engine.host }] }));
    }),
  );
  return mergeImages(results);
}

/**
 * The image gauges of a pass (`hermes_janitor_images{state}`, `hermes_janitor_image_bytes`): images counted still
 * there (`used`), and what the run removed, kept and failed on; the bytes the counted images take after it.
 */
export function imageGauges(r: ImagesReport, dryRun: boolean): ImageGauges {
  return {
    used: r.counted - (dryRun ? 0 : r.removed.length), removed: dryRun ? 0 : r.removed.length, kept: r.kept.length,
    failed: r.failed.filter((f) => f.id !== null).length, bytes: r.bytesAfter,
  };
}

const sum = (xs: Array<number | null>) => (xs.some((x) => x === null) ? null : xs.reduce<number>((n, x) => n + x!, 0));

export function mergeImages(results: readonly ImagesResult[]): ImagesReport {
  const budgets = new Set(results.map((r) => r.budget));
  return {
    removed: results.flatMap((r) => r.removed),
    kept: results.flatMap((r) => r.kept),
    failed: results.flatMap((r) => r.failed),
    bytesBefore: sum(results.map((r) => r.bytesBefore)),
    bytesAfter: sum(results.map((r) => r.bytesAfter)),
    budget: budgets.size === 1 ? [...budgets][0]! : null,
    engines: results.map((r) => ({ host: r.host, bytesBefore: r.bytesBefore, bytesAfter: r.bytesAfter, budget: r.budget })),
    counted: results.reduce((n, r) => n + r.counted, 0),
  };
}
