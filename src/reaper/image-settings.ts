/**
 * The image budget's settings, resolved in one place from the flags (or the library's options) and config.yaml:
 * `--images-over` else `janitor.images_over`; `--keep-image` (repeatable) plus `janitor.keep_images`;
 * `--images-min-age` (default 1h); `--all-images`. Bad values are usage errors naming where they came from.
 */
import type { HermesConfig } from '../adapters/config.js';
import { DEFAULT_IMAGES_MIN_AGE_MS } from '../defaults.js';
import { UsageError } from '../errors.js';
import { type ImageBudget, parseKeepPattern } from '../core/image-budget.js';
import { parseImageBudget } from '../core/image-size.js';
import type { ImagePolicy } from '../core/images.js';
import { ValueError } from '../core/parse-args.js';

export interface ImageInputs {
  imagesOver?: string | undefined;
  allImages?: boolean | undefined;
  imagesMinAgeMs?: number | undefined;
  keepImage?: readonly string[] | undefined;
}

export interface ImageSettings {
  budget: ImageBudget;
  policy: ImagePolicy;
}

const CONFIG_BUDGET = 'janitor.images_over';
const CONFIG_KEEP = 'janitor.keep_images';

/** The image budget of a run, or null when it is off (neither the flag nor the config key). */
export function resolveImageSettings(inputs: ImageInputs, config: HermesConfig): ImageSettings | null {
  const budget = inputs.imagesOver !== undefined ? fromFlag(inputs.imagesOver) : fromConfig(config);
  if (!budget) {
    const given = inputs.allImages ? '--all-images' : inputs.imagesMinAgeMs !== undefined ? '--images-min-age' : inputs.keepImage?.length ? '--keep-image' : null;
    if (given) throw new UsageError(`${given} applies to the image budget: add --images-over <size> (or set ${CONFIG_BUDGET} in ${config.file})`);
    return null;
  }
  const keep = [...(inputs.keepImage ?? []).map((k) => parseOr(() => parseKeepPattern(k, '--keep-image'))), ...configKeep(config)];
  return {
    budget,
    policy: { allImages: Boolean(inputs.allImages), minAgeMs: inputs.imagesMinAgeMs ?? DEFAULT_IMAGES_MIN_AGE_MS, keep },
  };
}

function parseOr<T>(fn: () => T, fix = ''): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ValueError) throw new UsageError(`${err.message}${fix}`);
    throw err;
  }
}

const fromFlag = (raw: string) => parseOr(() => parseImageBudget(raw, '--images-over'));

function fromConfig(config: HermesConfig): ImageBudget | null {
  const raw = config.get(CONFIG_BUDGET);
  if (raw === undefined || raw === null || raw === false) return null;
  if (config.problem) throw new UsageError(`${config.problem}: fix the file or pass --images-over`);
  const fix = `: fix ${CONFIG_BUDGET} in ${config.file} or pass --images-over`;
  if (typeof raw !== 'string' && typeof raw !== 'number') throw new UsageError(`${CONFIG_BUDGET} in ${config.file} must be a size such as 50GB or a percentage such as 80%${fix.slice(1)}`);
  return parseOr(() => parseImageBudget(String(raw), CONFIG_BUDGET), fix);
}

function configKeep(config: HermesConfig): RegExp[] {
  const raw = config.get(CONFIG_KEEP);
  if (raw === undefined || raw === null) return [];
  const list = typeof raw === 'string' ? [raw] : Array.isArray(raw) && raw.every((r) => typeof r === 'string') ? (raw as string[]) : null;
  if (!list) throw new UsageError(`${CONFIG_KEEP} in ${config.file} must be a regular expression or a list of them: fix the file`);
  return list.map((k) => parseOr(() => parseKeepPattern(k, CONFIG_KEEP), ` in ${config.file}: fix the file`));
}
