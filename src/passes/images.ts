/**
 * The image pass (`--images-over`): while the engine's images take more than the budget, the images hermes' containers
 * used, least recently used first. Rules in core/images.ts, the state file in adapters/image-uses.ts, the run in
 * reaper/images.ts.
 */
import { parseKeepPattern } from '../core/image-budget.js';
import { parseImageBudget } from '../core/image-size.js';
import type { JanitorSetting } from '../reaper/janitor-settings.js';

export const IMAGES_OVER: JanitorSetting<'size'> = {
  key: 'janitor.images_over', kind: 'size', flag: '--images-over', falseIsOff: true, parse: parseImageBudget,
  accepts: 'a size such as 50GB or 20GiB, or a percentage of the disk such as 80%',
  description: "when the engine's images take more than this, remove images hermes' containers used, least recently used first", defaultText: 'off',
};
export const KEEP_IMAGES: JanitorSetting<'list'> = {
  key: 'janitor.keep_images', kind: 'list', flag: '--keep-image', parse: parseKeepPattern, accepts: 'a regular expression or a list of them',
  description: 'never remove an image with a repository:tag or id matching one of these (added to `--keep-image`)', defaultText: 'none',
};
