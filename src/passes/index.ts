/**
 * The one list of cleanup passes. Every output (text, JSON, NDJSON), `reap`'s failure and fail-open lines,
 * `--timeout`, the metrics (file and endpoint), `status` and `watch`'s scheduling take the passes from here, in this
 * order (the order their parts appear in each output). A new pass is a folder (`passes/<pass>/`: its rule, its I/O,
 * its run, its settings, its status part and its descriptor, `pass.ts`), added here: no reporter, command or metrics
 * file names it.
 */
import type { OptionDecl } from '../cli/option-table.js';
import type { JanitorSetting } from '../reaper/janitor-settings.js';
import { SWEEP_SETTINGS } from '../reaper/janitor-settings.js';
import { execTreesPass } from './exec-trees/pass.js';
import { imagesPass } from './images/pass.js';
import { sandboxDirsPass } from './sandbox-dirs/pass.js';
import { sessionFilesPass } from './session-files/pass.js';
import { shellSnapshotsPass } from './shell-snapshots/pass.js';
import type { Pass } from './types.js';

export const PASSES: readonly Pass[] = [sandboxDirsPass, imagesPass, execTreesPass, shellSnapshotsPass, sessionFilesPass];

/** The flags of every pass, in list order (`reap` and `watch` register them after their own). */
export const passOptions = (passes: readonly Pass[] = PASSES): OptionDecl[] => passes.flatMap((p) => p.options ?? []);

/** Every `janitor.*` key: the sweep's, then each pass's (the docs' table). */
export const janitorSettings = (passes: readonly Pass[] = PASSES): JanitorSetting[] => [...SWEEP_SETTINGS, ...passes.flatMap((p) => p.keys ?? [])];
