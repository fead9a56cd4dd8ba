/**
 * The image pass (`--images-over`): records the images of the run's containers before the sweep (so that a container
 * the sweep removes still counts as a use), then, on every engine that answered, while the engine's images take more
 * than the budget, removes counted images least recently used first. Rules in rule.ts (rule-budget.ts, rule-size.ts),
 * the state file in uses.ts, the run in run.ts, its settings in settings.ts, `status`'s survey in status.ts. `watch`
 * marks an image used at each create, start or destroy event of a selected container.
 */
import type { EngineClient } from '../../adapters/engine.js';
import { hasImageCalls } from '../../adapters/engine.js';
import type { ImageUses } from './uses.js';
import { UP_TO_DAYS, ago } from '../../core/ages.js';
import { checkImageBudget, checkKeepPattern } from './rule-budget.js';
import { fullImageId } from '../../core/image-facts.js';
import { parseDuration } from '../../core/parse-args.js';
import { type Selection, isExcluded, isSelected } from '../../core/selection.js';
import { diskSize } from '../../core/sizes.js';
import { ENV_IMAGES_EVERY, IMAGES_EVERY_MS } from '../../defaults.js';
import { UsageError, errorMessage } from '../../errors.js';
import { IMAGES_OVER, type ImageSettings, KEEP_IMAGES } from './settings.js';
import type { FailedImage, ImagesResult, RemovedImage } from './run.js';
import type { ImagesStatus } from './status.js';
import { plural } from '../../util/plural.js';
import type { OptionDecl } from '../../cli/option-table.js';
import type { EngineAnswer, Pass } from '../types.js';

const OPTIONS: readonly OptionDecl[] = [
  {
    flag: '--images-over',
    value: '<size>',
    parse: (v) => (checkImageBudget(v, '--images-over'), v),
    description:
      "when the engine's images take more than this (10GB or 10gb = 10x10^9 bytes, as docker images shows sizes; 10GiB, 10G or 10g = 10x2^30, as " +
      "docker run -m reads them; a bare number is bytes; or 80% of the filesystem holding them), remove images hermes' containers used, least " +
      'recently used first, until under it (default: janitor.images_over in config.yaml, else off; watch checks every 10 minutes)',
  },
  { flag: '--all-images', description: 'with --images-over: every image counts, not only those hermes containers used (docuum-style)' },
  {
    flag: '--images-min-age',
    value: '<duration>',
    parse: (v) => parseDuration(v, '--images-min-age', true),
    description: 'never remove an image used or created more recently than this (0s allowed; default 1h)',
  },
  {
    flag: '--keep-image',
    value: '<pattern>',
    repeatable: true,
    parse: (v) => checkKeepPattern(v, '--keep-image'),
    description:
      'never remove an image with a repository:tag or id matching this regular expression (RE2 syntax, linear time; repeatable; also ' +
      'janitor.keep_images in config.yaml)',
  },
];

const FAMILIES = {
  count: {
    name: 'hermes_janitor_images',
    help:
      'Images the image budget counts (hermes used, or all with --all-images), by state: "used" (still there after the pass), and what the last ' +
      'pass "removed", "kept" and "failed" on.',
    labelNames: ['state'],
  },
  bytes: {
    name: 'hermes_janitor_image_bytes',
    help: 'Bytes the counted images take after the last image pass (unique sizes, shared layers once, from GET /system/df); absent when not measured.',
    labelNames: [],
  },
} as const;

/** The pass's outcome (`--images-over`): counts by state, and the bytes the counted images take after it. */
export interface ImageGauges {
  used: number;
  removed: number;
  kept: number;
  failed: number;
  /** Null when not measured. */
  bytes: number | null;
}

/** The pass of one run: the budget and policy, the state file of uses, the run's selection. */
export interface ImagesStep {
  settings: ImageSettings;
  uses: ImageUses;
  selection: Selection;
}

/**
 * The `images` object of `reap --json`: every engine's entries (each with its `host`), bytes and counts summed; the
 * budget is the same for every engine unless a percentage of different disks (then null, see `engines`).
 */
export interface ImagesReport extends Omit<ImagesResult, 'host'> {
  /** Each engine's own figures. */
  engines: Array<{ host: string; bytesBefore: number | null; bytesAfter: number | null; budget: number | null }>;
}

/** The actions that say a container of the image exists (docuum counts the same; Podman says remove where Docker says destroy). */
const USE_ACTIONS = new Set(['create', 'start', 'destroy', 'remove']);

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

/**
 * The image gauges of a pass (`hermes_janitor_images{state}`, `hermes_janitor_image_bytes`): images counted still
 * there (`used`), and what the run removed, kept and failed on; the bytes the counted images take after it.
 */
export function imageGauges(r: ImagesReport, dryRun: boolean): ImageGauges {
  return {
    used: r.counted - (dryRun ? 0 : r.removed.length),
    removed: dryRun ? 0 : r.removed.length,
    kept: r.kept.length,
    failed: r.failed.filter((f) => f.id !== null).length,
    bytes: r.bytesAfter,
  };
}

/** The pass on every engine that answered the run; one that did not is a failed entry (nothing removed there). */
async function runOnEngines(
  step: ImagesStep,
  engines: readonly EngineAnswer[],
  run: { dryRun: boolean; now: () => Date; signal?: AbortSignal | undefined },
): Promise<ImagesReport> {
  const { reduceImages } = await import('./run.js');
  const { filesystemBytes } = await import('./filesystem-size.js');
  const results = await Promise.all(
    engines.map(async (a): Promise<ImagesResult> => {
      const blank = { removed: [], kept: [], bytesBefore: null, bytesAfter: null, budget: null, host: a.engine.host, counted: 0 };
      if (!a.answered)
        return {
          ...blank,
          failed: [
            {
              id: null,
              error: `image pass on ${a.engine.host}: the engine did not answer (${a.error ?? 'no answer'}); no image was removed`,
              host: a.engine.host,
            },
          ],
        };
      if (!hasImageCalls(a.engine))
        return { ...blank, failed: [{ id: null, error: `image pass on ${a.engine.host}: this engine client has no image calls`, host: a.engine.host }] };
      return reduceImages({
        engine: a.engine,
        uses: step.uses,
        selection: step.selection,
        budget: step.settings.budget,
        policy: step.settings.policy,
        dryRun: run.dryRun,
        now: run.now,
        filesystemBytes,
        signal: run.signal,
      }).catch((err: unknown) => ({ ...blank, failed: [{ id: null, error: `image pass on ${a.engine.host}: ${errorMessage(err)}`, host: a.engine.host }] }));
    }),
  );
  return mergeImages(results);
}

/** `removed image sha256:0123456789ab python:3.11 (1.2 GiB, last used 2026-11-20T10:00:00.000Z)`, and the images kept in use or refused. */
function imageLines(r: ImagesReport, dryRun: boolean, showHost: boolean): string[] {
  const on = (host: string) => (showHost ? ` on ${host}` : '');
  const name = (i: { id: string; tags: string[] }) => `${i.id.slice(0, 19)} ${i.tags.join(',') || '<untagged>'}`;
  return [
    ...r.removed.map(
      (i: RemovedImage) => `${dryRun ? 'Would remove' : 'removed'} image ${name(i)} (${diskSize(i.bytes)}, last used ${i.lastUsed})${on(i.host)}`,
    ),
    ...r.kept.filter((k) => k.reason === 'in-use' || k.reason === 'conflict').map((k) => `kept image ${name(k)}: ${k.detail}${on(k.host)}`),
  ];
}

/** `status`: what hermes' containers used, against the budget. */
function render(i: ImagesStatus, now: Date): string[] {
  const budget =
    i.budgetGiven === null
      ? 'no budget (janitor.images_over or --images-over)'
      : `budget ${i.budget === null ? `${i.budgetGiven} (not measurable here)` : `${diskSize(i.budget)} (${i.budgetGiven})`}`;
  if (i.count === null || i.bytes === null || i.uniqueBytes === null) return ['Images hermes used', `  unknown: ${i.error ?? 'no engine answered'}; ${budget}`];
  const oldest = i.oldestLastUse ? `; the oldest last used ${ago(Date.parse(i.oldestLastUse), now, UP_TO_DAYS)}` : '';
  const over = i.budget !== null && i.bytes > i.budget ? ' (OVER: a reap with the budget removes the least recently used)' : '';
  return ['Images hermes used', `  ${plural(i.count, 'image')}, ${diskSize(i.bytes)} (${diskSize(i.uniqueBytes)} unique); ${budget}${over}${oldest}`];
}

export const imagesPass: Pass<ImagesStep, ImagesReport, ImageGauges, FailedImage, ImagesStatus> = {
  name: 'images',
  kind: 'run',
  place: 'engine',
  nouns: { event: 'image', events: 'images', text: 'image', texts: 'images' },
  options: OPTIONS,
  keys: [IMAGES_OVER, KEEP_IMAGES],

  /** The budget (flags, else config.yaml), or null when off. A plan lists containers only: the flags are refused with one. */
  async settings(input) {
    const f = input.flags;
    const given = {
      imagesOver: f.imagesOver as string | undefined,
      allImages: f.allImages as boolean | undefined,
      imagesMinAgeMs: f.imagesMinAge as number | undefined,
      keepImage: f.keepImage as string[] | undefined,
    };
    if (input.plan && (given.imagesOver !== undefined || given.allImages || given.keepImage?.length || given.imagesMinAgeMs !== undefined)) {
      throw new UsageError('--images-over and its options cannot be combined with --plan: a plan lists containers only; run it on its own');
    }
    if (input.plan) return null;
    const { resolveImageSettings } = await import('./settings.js');
    const settings = resolveImageSettings(given, input.config);
    if (!settings) return null;
    const { imageUsesOf } = await import('./uses.js');
    return { settings, uses: await imageUsesOf(input.home), selection: input.selection };
  },

  /** Before the sweep: what each engine's selected containers use now. An engine that does not answer is left to the pass. */
  async beforeSweep(step, engines, ctx) {
    const { recordImageSightings } = await import('./run.js');
    await Promise.all(
      engines.filter(hasImageCalls).map((e) => recordImageSightings(e, step.uses, step.selection, ctx.now(), ctx.signal).catch(() => undefined)),
    );
  },

  async run(step, ctx) {
    const result = await runOnEngines(step, ctx.engines, ctx);
    return { result, gauges: imageGauges(result, ctx.dryRun) };
  },

  outcome: (r) => ({ done: r.removed, kept: r.kept, failed: r.failed }),
  cutShort: (r) => r.kept.some((k) => k.reason === 'cut-short'),
  freedBytes: (r) => r.removed.reduce((n, i) => n + i.bytes, 0),

  text: {
    lines: (r, view) => imageLines(r, view.dryRun, view.showHost),
    summary(r, { dryRun }) {
      const freed = r.removed.reduce((n, x) => n + x.bytes, 0);
      const after = r.bytesAfter === null ? '' : `, ${diskSize(r.bytesAfter)} ${dryRun ? 'would remain' : 'now'}`;
      const budget = r.budget === null ? '' : ` (budget ${diskSize(r.budget)})`;
      return (
        `; images: ${dryRun ? 'would remove' : 'removed'} ${r.removed.length} (${diskSize(freed)}${dryRun ? ' would be freed' : ' freed'}), ` +
        `kept ${r.kept.length}, failed ${r.failed.length}${after}${budget}`
      );
    },
    failure: (f) => f.error,
    watchFailure: (f) => `failed image: ${f.error}`,
    failedCount: (n) => `${plural(n, 'image')} not removed`,
  },
  ndjsonCounts: (r) => ({ bytesBefore: r.bytesBefore, bytesAfter: r.bytesAfter, budget: r.budget }),

  metrics: {
    families: [FAMILIES.count, FAMILIES.bytes],
    samples: (g) => ({
      [FAMILIES.count.name]: (['used', 'removed', 'kept', 'failed'] as const).map((state) => ({ labels: { state }, value: g[state] })),
      // Not measured: no series, not a stale one.
      [FAMILIES.bytes.name]: g.bytes === null ? null : [{ labels: {}, value: g.bytes }],
    }),
  },

  status: {
    async gather(input, ctx) {
      const { resolveImageSettings } = await import('./settings.js');
      const { surveyImages } = await import('./status.js');
      return surveyImages(input.home, ctx.engines, resolveImageSettings({}, input.config)?.budget ?? null, ctx.signal);
    },
    json: (part) => ({ images: part }),
    render,
  },

  watch: {
    every: { env: ENV_IMAGES_EVERY, defaultMs: IMAGES_EVERY_MS },
    /** A create, start or destroy of a selected container marks its image used at the event's time (the state file). */
    async onEvent(step, engine: EngineClient, ev, notice, signal) {
      if (!USE_ACTIONS.has(ev.action) || !hasImageCalls(engine)) return;
      if (!isSelected(step.selection, ev.attributes) || isExcluded(step.selection, ev.attributes)) return;
      const ref = ev.attributes.image;
      if (!ref) return;
      const atMs = Number.isFinite(ev.timeMs) ? ev.timeMs : Date.now();
      const id = /^(sha256:)?[0-9a-f]{64}$/.test(ref) ? fullImageId(ref) : await engine.imageIdOf(ref, signal);
      if (!id) return;
      await step.uses.record(engine.host, [{ id, atMs, hermes: true }]);
      notice('image-used', { host: engine.host, id, container: ev.id, action: ev.action, at: new Date(atMs).toISOString() });
    },
  },
};
