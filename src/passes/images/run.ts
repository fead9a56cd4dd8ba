/**
 * The image pass of `reap` and `watch` (`--images-over`): records which images hermes' containers use, then, while
 * the engine's images take more than the budget, removes counted images least recently used first, each re-checked
 * right before (no container of any kind uses it), by id and without force. Rules in passes/images/rule.ts, the state file
 * in passes/images/uses.ts.
 */
import type { ContainerSummary, EngineClient, EngineImageCalls, EngineImages } from '../../adapters/engine.js';
import type { ImageUses } from './uses.js';
import { type ImageBudget, budgetBytes } from './rule-budget.js';
import type { ImageFacts } from '../../core/image-facts.js';
import {
  type ImageKeepReason,
  type ImageUse,
  type ImagePolicy,
  type ImageStep,
  type Sighting,
  imageWalk,
  imagesBytes,
  overBudget,
  uniqueBytes,
} from './rule.js';
import { type Selection, engineLabelFilters, isExcluded, isSelected } from '../../core/selection.js';
import { errorMessage } from '../../errors.js';
import { engineOnThisHost } from '../../core/engine-place.js';

export type ImageEngine = EngineClient & EngineImageCalls;

export interface RemovedImage {
  id: string;
  tags: string[];
  /** What removing it freed (or would free): its unique size. */
  bytes: number;
  /** Its last use as remembered (ISO 8601). */
  lastUsed: string;
  host: string;
}

export interface KeptImage {
  id: string;
  /** `in-use`, `recent`, `keep-pattern`, `conflict` (the engine refused: its words in `detail`), `gone`, `cut-short`. */
  reason: ImageKeepReason;
  detail: string;
  tags: string[];
  host: string;
}

export interface FailedImage {
  /** Null when the pass itself could not run (the budget could not be measured, the engine did not answer). */
  id: string | null;
  error: string;
  host: string;
}

/** One engine's pass: the `images` object of `reap --json`. */
export interface ImagesResult {
  removed: RemovedImage[];
  kept: KeptImage[];
  failed: FailedImage[];
  /** What the engine's images took before (as `docker system df` reports it), null when not measured. */
  bytesBefore: number | null;
  /** After the removals, as the engine reports it again (a dry run: what would remain). */
  bytesAfter: number | null;
  /** The budget in bytes (null: a percentage that could not be measured). */
  budget: number | null;
  host: string;
  /** How many images counted (hermes used, or all with `allImages`) before the removals. */
  counted: number;
}

export interface ImagePassOptions {
  engine: ImageEngine;
  uses: ImageUses;
  /** The run's selection: its containers' images are hermes'. */
  selection: Selection;
  budget: ImageBudget;
  policy: ImagePolicy;
  dryRun: boolean;
  now: () => Date;
  /** Total bytes of the filesystem holding `path` (statfs), or null when it cannot be measured here. */
  filesystemBytes: (path: string) => Promise<number | null>;
  signal?: AbortSignal | undefined;
}

/**
 * Records the images of the selection's containers as used now, and forgets images the engine no longer has.
 * Returns the engine's images (for the pass that follows). Throws when the engine does not answer.
 */
export async function recordImageSightings(
  engine: ImageEngine,
  uses: ImageUses,
  selection: Selection,
  at: Date,
  signal?: AbortSignal,
): Promise<{ disk: EngineImages; uses: Awaited<ReturnType<ImageUses['record']>> }> {
  const [disk, rows] = await Promise.all([engine.diskUsage(signal), engine.listWithImages({ labels: engineLabelFilters(selection) }, signal)]);
  const present = new Set(disk.images.map((i) => i.id));
  const sightings: Sighting[] = hermesImages(rows, selection).map((id) => ({ id, atMs: at.getTime(), hermes: true }));
  return { disk, uses: await uses.record(engine.host, sightings, present) };
}

function hermesImages(rows: readonly ContainerSummary[], selection: Selection): string[] {
  const ids = new Set<string>();
  for (const r of rows) if (r.imageId && isSelected(selection, r.labels) && !isExcluded(selection, r.labels)) ids.add(r.imageId);
  return [...ids];
}

interface Pass {
  opts: ImagePassOptions;
  out: ImagesResult;
  /** What the engine's images take now, as predicted from the removals so far. */
  bytesNow: number;
  budget: number;
  uses: ReadonlyMap<string, ImageUse>;
}

/** The pass on one engine. Never throws: a failure of the whole pass is a `failed` entry with a null id. */
export async function reduceImages(opts: ImagePassOptions): Promise<ImagesResult> {
  const host = opts.engine.host;
  const out: ImagesResult = { removed: [], kept: [], failed: [], bytesBefore: null, bytesAfter: null, budget: null, host, counted: 0 };
  try {
    const nowMs = opts.now().getTime();
    const seen = await recordImageSightings(opts.engine, opts.uses, opts.selection, opts.now(), opts.signal);
    let uses = seen.uses;
    if (opts.policy.allImages) {
      // docuum's rule for an image never seen used: it counts as used when first seen.
      const unseen = seen.disk.images.filter((i) => !uses.has(i.id)).map((i) => ({ id: i.id, atMs: nowMs, hermes: false }));
      if (unseen.length) uses = await opts.uses.record(host, unseen);
    }
    out.bytesBefore = countedBytes(seen.disk, uses, opts.policy.allImages);
    out.budget = await resolveBudget(opts);
    if (out.budget === null) {
      out.failed.push({ id: null, error: percentProblem(opts), host });
      return out;
    }
    const p: Pass = { opts, out, bytesNow: out.bytesBefore, budget: out.budget, uses };
    const walk = imageWalk(seen.disk.images, uses, opts.policy, nowMs);
    out.counted = walk.length;
    for (const step of walk) {
      if (!overBudget(p.bytesNow, p.budget)) break;
      // --timeout: a removal already sent finishes at the engine; the rest is kept, and the run says it timed out.
      if (opts.signal?.aborted) {
        keep(p, step.image, 'cut-short', 'the run was cut short (--timeout) before this image');
        break;
      }
      const cut = await oneImage(p, step).then(
        () => false,
        (err: unknown) => {
          if (!opts.signal?.aborted) throw err;
          return true;
        },
      );
      if (cut) {
        keep(p, step.image, 'cut-short', 'the run was cut short (--timeout) at this image');
        break;
      }
    }
    out.bytesAfter = opts.dryRun || out.removed.length === 0 || opts.signal?.aborted ? p.bytesNow : await measured(opts, uses, p.bytesNow);
  } catch (err) {
    if (opts.signal?.aborted && out.bytesBefore === null) throw opts.signal.reason ?? err;
    out.failed.push({ id: null, error: `image pass on ${host}: ${errorMessage(err)}`, host });
  }
  return out;
}

/**
 * What the counted images take: every image of the engine with `allImages` (its `LayersSize`), else those hermes
 * used (their unique sizes, shared layers once).
 */
function countedBytes(disk: EngineImages, uses: ReadonlyMap<string, ImageUse>, allImages: boolean): number {
  return allImages ? imagesBytes(disk.images, disk.layersSize) : imagesBytes(disk.images.filter((i) => uses.get(i.id)?.hermes));
}

/** What the counted images take as the engine reports it now (the prediction when it does not answer). */
async function measured(opts: ImagePassOptions, uses: ReadonlyMap<string, ImageUse>, predicted: number): Promise<number> {
  const disk = await opts.engine.diskUsage(opts.signal).catch(() => null);
  return disk ? countedBytes(disk, uses, opts.policy.allImages) : predicted;
}

async function resolveBudget(opts: ImagePassOptions): Promise<number | null> {
  if (opts.budget.kind === 'bytes') return opts.budget.bytes;
  if (!engineOnThisHost(opts.engine.host)) return null;
  const root = await opts.engine.imageRoot(opts.signal);
  return root === null ? null : budgetBytes(opts.budget, await opts.filesystemBytes(root));
}

function percentProblem(opts: ImagePassOptions): string {
  const why = engineOnThisHost(opts.engine.host)
    ? "the filesystem of the engine's data directory (GET /info DockerRootDir) cannot be measured on this host"
    : 'the engine is not on this host, so the filesystem holding its images cannot be measured';
  return `--images-over ${opts.budget.raw} on ${opts.engine.host}: ${why}; give a size instead (50GB, 20GiB); no image was removed`;
}

function keep(p: Pass, image: ImageFacts, reason: ImageKeepReason, detail: string): void {
  p.out.kept.push({ id: image.id, reason, detail, tags: image.tags, host: p.out.host });
}

const userLine = (users: readonly ContainerSummary[]) =>
  `used by ${users.length} container(s), first ${users[0]!.name || users[0]!.id.slice(0, 12)} (${users[0]!.state})`;

/** One counted image, over the budget: kept by its rule, by a container that uses it now, or removed. */
async function oneImage(p: Pass, step: ImageStep): Promise<void> {
  const { opts } = p;
  const { image } = step;
  if (step.keep) return keep(p, image, step.keep.reason, step.keep.detail);
  // Right before acting: does any container, in any state and with any labels, use it (or an image built on it)?
  const users = await opts.engine.imageUsers(image.id, opts.signal);
  if (users.length) return keep(p, image, 'in-use', userLine(users));
  const removed: RemovedImage = {
    id: image.id,
    tags: image.tags,
    bytes: uniqueBytes(image),
    lastUsed: new Date(step.lastUsedMs).toISOString(),
    host: p.out.host,
  };
  if (opts.dryRun) {
    p.out.removed.push(removed);
    p.bytesNow -= removed.bytes;
    return;
  }
  let outcome;
  try {
    outcome = await opts.engine.removeImage(image.id, opts.signal);
  } catch (err) {
    p.out.failed.push({
      id: image.id,
      error: `remove image ${image.id.slice(7, 19)} (${image.tags[0] ?? 'untagged'}): ${errorMessage(err)}`,
      host: p.out.host,
    });
    return;
  }
  if (outcome.kind === 'removed') {
    p.out.removed.push(removed);
    p.bytesNow -= removed.bytes;
    return;
  }
  if (outcome.kind === 'gone') {
    // Someone else removed it (another reap): what the images take now is the engine's word, not this pass's sum.
    keep(p, image, 'gone', 'no longer there (removed by someone else)');
    p.bytesNow = await measured(opts, p.uses, p.bytesNow);
    return;
  }
  // 409: a container started using it since the check, or the engine will not remove it without force.
  const now = await opts.engine.imageUsers(image.id, opts.signal).catch(() => []);
  if (now.length) return keep(p, image, 'in-use', `${userLine(now)}: the engine refused the removal (409)`);
  keep(p, image, 'conflict', `the engine refused the removal: ${outcome.detail}`);
}
