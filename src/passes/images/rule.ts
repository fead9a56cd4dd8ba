/**
 * Images hermes used, kept within a disk budget: which images count, in which order they go (least recently used
 * first), what each frees and when the budget is met. Pure: the engine's answers, the remembered uses and the clock
 * in; decisions out. The pass that asks the engine again and removes is `run.ts`; the state file `uses.ts`; an
 * image's facts as the engine adapters read them, `core/image-facts.ts`.
 *
 * Sizes are the engine's (`GET /system/df`): removing an image frees its `Size - SharedSize` (layers shared with
 * other images stay), so "under the budget" is what the engine reports afterwards, not a sum of tag sizes.
 */
import type { ImageFacts } from '../../core/image-facts.js';
import type { KeepPattern } from '../../util/linear-pattern.js';

/** What the janitor remembers of one image on one engine. */
export interface ImageUse {
  /** The last time a container of it was seen (ms), or for an image never seen used, when it was first seen. */
  lastUsedMs: number;
  /** A hermes-labelled container of the run's selection used it. */
  hermes: boolean;
}

/** The state file's document: per engine address, per image id, the last use. */
export interface ImageUsesDoc {
  version: 1;
  engines: Record<string, Record<string, { lastUsed: string; hermes: boolean }>>;
}

export type ImageKeepReason = 'in-use' | 'recent' | 'keep-pattern' | 'conflict' | 'gone' | 'cut-short';

/** What removing an image frees: its unique size. */
export function uniqueBytes(img: ImageFacts): number {
  return Math.max(0, img.size - Math.max(0, img.sharedSize));
}

/**
 * What these images take on disk, from the engine's sizes: each one's unique size, plus the layers they share
 * counted once (the largest shared size: exact when the shared layers are one common base, as hermes' task images
 * built on one base are). For every image of the engine, `LayersSize` when the engine gives it (Docker: what
 * `docker system df` reports; Podman 4 reports 0).
 */
export function imagesBytes(images: readonly ImageFacts[], layersSize = 0): number {
  if (layersSize > 0) return layersSize;
  let unique = 0;
  let shared = 0;
  for (const i of images) {
    unique += uniqueBytes(i);
    shared = Math.max(shared, Math.max(0, i.sharedSize));
  }
  return unique + shared;
}

/** The remembered uses of one engine, from the state document (entries that do not parse are dropped). */
export function usesOf(doc: unknown, host: string): Map<string, ImageUse> {
  const out = new Map<string, ImageUse>();
  const engines = (doc as Partial<ImageUsesDoc> | null)?.engines;
  const mine = engines && typeof engines === 'object' ? (engines as Record<string, unknown>)[host] : undefined;
  if (!mine || typeof mine !== 'object') return out;
  for (const [id, v] of Object.entries(mine as Record<string, { lastUsed?: unknown; hermes?: unknown }>)) {
    const ms = typeof v?.lastUsed === 'string' ? Date.parse(v.lastUsed) : NaN;
    if (Number.isFinite(ms)) out.set(id, { lastUsedMs: ms, hermes: v.hermes === true });
  }
  return out;
}

/** Sightings to record: an image id, when, and whether a hermes container was the user. */
export interface Sighting {
  id: string;
  atMs: number;
  hermes: boolean;
}

/**
 * The document with these sightings recorded for `host` (a last use only moves forward; hermes once, hermes for
 * good) and, when `present` is given, the images the engine no longer has forgotten.
 */
export function recordUses(doc: unknown, host: string, sightings: readonly Sighting[], present?: ReadonlySet<string>): ImageUsesDoc {
  const old = doc as Partial<ImageUsesDoc> | null;
  const engines: ImageUsesDoc['engines'] = {};
  if (old && typeof old === 'object' && old.engines && typeof old.engines === 'object') {
    for (const [h, m] of Object.entries(old.engines)) if (h !== host) engines[h] = m;
  }
  const uses = usesOf(doc, host);
  for (const s of sightings) {
    const before = uses.get(s.id);
    uses.set(s.id, { lastUsedMs: Math.max(before?.lastUsedMs ?? -Infinity, s.atMs), hermes: s.hermes || before?.hermes === true });
  }
  const mine: ImageUsesDoc['engines'][string] = {};
  for (const [id, u] of uses) {
    if (present && !present.has(id)) continue;
    mine[id] = { lastUsed: new Date(u.lastUsedMs).toISOString(), hermes: u.hermes };
  }
  engines[host] = mine;
  return { version: 1, engines };
}

/** The rules of one pass. */
export interface ImagePolicy {
  /** Every image counts (docuum-style), not only those hermes used. */
  allImages: boolean;
  /** An image whose last use (or creation) is more recent than this stays (ms). */
  minAgeMs: number;
  /** An image with a name or id matching one of these stays. */
  keep: readonly KeepPattern[];
}

/** One counted image in the order the pass walks them: least recently used first. */
export interface ImageStep {
  image: ImageFacts;
  lastUsedMs: number;
  /** Why it stays whatever the budget (a keep pattern, too recent), else null: a candidate. */
  keep: { reason: ImageKeepReason; detail: string } | null;
}

/**
 * The counted images (hermes-used ones, or every image with `allImages`; an image never seen counts as used when
 * first seen, at `nowMs`), least recently used first (ties by id), each with the rule that keeps it, if any.
 */
export function imageWalk(images: readonly ImageFacts[], uses: ReadonlyMap<string, ImageUse>, policy: ImagePolicy, nowMs: number): ImageStep[] {
  const steps: ImageStep[] = [];
  for (const image of images) {
    const use = uses.get(image.id);
    if (!policy.allImages && !use?.hermes) continue;
    const lastUsedMs = use?.lastUsedMs ?? nowMs;
    steps.push({ image, lastUsedMs, keep: keepRule(image, lastUsedMs, policy, nowMs) });
  }
  return steps.sort((a, b) => a.lastUsedMs - b.lastUsedMs || (a.image.id < b.image.id ? -1 : a.image.id > b.image.id ? 1 : 0));
}

function keepRule(image: ImageFacts, lastUsedMs: number, policy: ImagePolicy, nowMs: number): ImageStep['keep'] {
  const names = [...image.tags, image.id];
  const pattern = policy.keep.find((re) => names.some((n) => re.test(n)));
  if (pattern) return { reason: 'keep-pattern', detail: `matches --keep-image ${pattern.source}` };
  const newest = Math.max(lastUsedMs, image.createdMs);
  if (nowMs - newest < policy.minAgeMs) {
    return { reason: 'recent', detail: `used or created ${Math.max(0, Math.round((nowMs - newest) / 1000))} s ago, under --images-min-age` };
  }
  return null;
}

/** Over the budget: more bytes than it allows. */
export function overBudget(bytesNow: number, budget: number): boolean {
  return bytesNow > budget;
}

/** A summary of the counted images (for `status` and the metrics). */
export interface ImageSummary {
  count: number;
  uniqueBytes: number;
  /** The oldest last use (ms), or null when none. */
  oldestLastUseMs: number | null;
}

export function summarizeImages(images: readonly ImageFacts[], uses: ReadonlyMap<string, ImageUse>): ImageSummary {
  let count = 0;
  let bytes = 0;
  let oldest: number | null = null;
  for (const i of images) {
    const u = uses.get(i.id);
    if (!u?.hermes) continue;
    count++;
    bytes += uniqueBytes(i);
    oldest = oldest === null ? u.lastUsedMs : Math.min(oldest, u.lastUsedMs);
  }
  return { count, uniqueBytes: bytes, oldestLastUseMs: oldest };
}
