/**
 * `status`'s images section: the images hermes used (as the state file remembers them and the engines still have
 * them), their unique bytes, the budget (janitor.images_over in config.yaml) and the oldest last use. Read-only.
 */
import type { EngineClient } from '../../adapters/engine.js';
import { hasImageCalls } from '../../adapters/engine.js';
import { filesystemBytes } from './filesystem-size.js';
import { imageUsesOf } from './uses.js';
import { type ImageBudget, budgetBytes } from './rule-budget.js';
import { imagesBytes, summarizeImages } from './rule.js';
import { errorMessage } from '../../errors.js';
import { engineOnThisHost } from '../../core/engine-place.js';

export interface ImagesStatus {
  /** Images hermes' containers used that the engines still have (null: no engine answered). */
  count: number | null;
  /** Their unique sizes summed (what removing all of them would free). */
  uniqueBytes: number | null;
  /** What they take, shared layers once: the figure the budget is compared with. */
  bytes: number | null;
  /** The budget in bytes (null: none set, or a percentage that cannot be measured here); `budgetGiven` as written. */
  budget: number | null;
  budgetGiven: string | null;
  /** The oldest last use among them (ISO 8601). */
  oldestLastUse: string | null;
  /** Why something is unknown. */
  error: string | null;
}

export async function surveyImages(home: string, engines: readonly EngineClient[], budget: ImageBudget | null, signal?: AbortSignal): Promise<ImagesStatus> {
  const out: ImagesStatus = { count: null, uniqueBytes: null, bytes: null, budget: null, budgetGiven: budget?.raw ?? null, oldestLastUse: null, error: null };
  const usable = engines.filter(hasImageCalls);
  if (usable.length === 0) return { ...out, error: 'no engine answered' };
  try {
    const uses = await imageUsesOf(home);
    let oldest: number | null = null;
    let [count, unique, bytes, total] = [0, 0, 0, 0 as number | null];
    for (const e of usable) {
      const [disk, mine] = await Promise.all([e.diskUsage(signal), uses.read(e.host)]);
      const s = summarizeImages(disk.images, mine);
      count += s.count;
      unique += s.uniqueBytes;
      bytes += imagesBytes(disk.images.filter((i) => mine.get(i.id)?.hermes));
      if (s.oldestLastUseMs !== null) oldest = oldest === null ? s.oldestLastUseMs : Math.min(oldest, s.oldestLastUseMs);
      if (budget && total !== null) {
        const root = budget.kind === 'percent' && engineOnThisHost(e.host) ? await e.imageRoot(signal) : null;
        const b = budgetBytes(budget, root ? await filesystemBytes(root) : null);
        total = b === null ? null : total + b;
      }
    }
    return {
      ...out,
      count,
      uniqueBytes: unique,
      bytes,
      budget: budget ? (budget.kind === 'bytes' ? budget.bytes : total) : null,
      oldestLastUse: oldest === null ? null : new Date(oldest).toISOString(),
    };
  } catch (err) {
    return { ...out, error: errorMessage(err) };
  }
}
