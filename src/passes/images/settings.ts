/**
 * The image budget's settings, resolved in one place from the flags (or the library's options) and config.yaml:
 * `--images-over` else `janitor.images_over`; `--keep-image` (repeatable) plus `janitor.keep_images`;
 * `--images-min-age` (default 1h); `--all-images`. Bad values are usage errors naming where they came from.
 */
import type { HermesConfig } from '../../adapters/config.js';
import { DEFAULT_IMAGES_MIN_AGE_MS } from '../../defaults.js';
import { UsageError } from '../../errors.js';
import { type ImageBudget, checkKeepPattern } from './rule-budget.js';
import type { KeepPattern } from '../../util/linear-pattern.js';
import { parseImageBudget } from './rule-size.js';
import type { ImagePolicy } from './rule.js';
import { ValueError } from '../../core/parse-args.js';
import { linearPattern } from '../../util/linear-pattern.js';
import { type JanitorSetting, readJanitorSetting } from '../../reaper/janitor-settings.js';

export interface ImageInputs {
  imagesOver?: string | undefined;
  allImages?: boolean | undefined;
  imagesMinAgeMs?: number | undefined;
  keepImage?: readonly string[] | undefined;
}

export const IMAGES_OVER: JanitorSetting<'size'> = {
  key: 'janitor.images_over',
  kind: 'size',
  flag: '--images-over',
  falseIsOff: true,
  parse: parseImageBudget,
  accepts: 'a size such as 50GB or 20GiB, or a percentage of the disk such as 80%',
  description: "when the engine's images take more than this, remove images hermes' containers used, least recently used first",
  defaultText: 'off',
  // Removes what the defaults keep: a user without engine rights cannot turn it on for root.
  keepsMore: { more: 'nothing' },
};
/** A keep pattern as given, compiled in linear time (`util/linear-pattern.ts`); throws a one-line `ValueError`. */
export function keepPattern(raw: string, what: string): KeepPattern {
  return linearPattern(checkKeepPattern(raw, what), what);
}

export const KEEP_IMAGES: JanitorSetting<'list'> = {
  key: 'janitor.keep_images',
  kind: 'list',
  flag: '--keep-image',
  parse: keepPattern,
  accepts: 'a regular expression (RE2 syntax) or a list of them',
  description: 'never remove an image with a repository:tag or id matching one of these (added to `--keep-image`)',
  defaultText: 'none',
  // Their patterns widen nothing root must keep (the budget is the operator's; `--keep-image` keeps), and are not run as root.
  keepsMore: { more: 'nothing' },
};

export interface ImageSettings {
  budget: ImageBudget;
  policy: ImagePolicy;
}

/** The image budget of a run, or null when it is off (neither the flag nor the config key). */
export function resolveImageSettings(inputs: ImageInputs, config: HermesConfig): ImageSettings | null {
  const budget = inputs.imagesOver !== undefined ? fromFlag(inputs.imagesOver) : fromConfig(config);
  if (!budget) {
    const given = inputs.allImages
      ? '--all-images'
      : inputs.imagesMinAgeMs !== undefined
        ? '--images-min-age'
        : inputs.keepImage?.length
          ? '--keep-image'
          : null;
    if (given) throw new UsageError(`${given} applies to the image budget: add --images-over <size> (or set ${IMAGES_OVER.key} in ${config.file})`);
    return null;
  }
  const keep = [...(inputs.keepImage ?? []).map((k) => parseOr(() => keepPattern(k, '--keep-image'))), ...configKeep(config)];
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

const fromConfig = (config: HermesConfig): ImageBudget | null => (readJanitorSetting(config, IMAGES_OVER) as ImageBudget | undefined) ?? null;

const configKeep = (config: HermesConfig): KeepPattern[] => (readJanitorSetting(config, KEEP_IMAGES) as KeepPattern[] | undefined) ?? [];
