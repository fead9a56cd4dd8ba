/**
 * The shell start-up fast path: `reap --once-per D` whose stamps are all fresh exits 0 without loading
 * commander, the engine client or config.yaml. It understands only a plain command line made of the options
 * declared `startup` (engine-option-table.ts: the same declarations commander registers); anything else (another
 * option, a bad value, `--json`, `--help`) returns undefined and the full CLI runs.
 */
import { stampFresh } from '../adapters/janitor-files.js';
import { resolveEngines } from '../adapters/docker-context.js';
import { oncePerStamps } from './once-per-stamps.js';
import type { Context } from '../context.js';
import { resolveHermesHome } from '../hermes/home.js';
import { selectionFrom } from '../core/selection.js';
import { REAP_COMMAND_OPTIONS } from './engine-option-table.js';
import { GLOBAL_OPTIONS } from './global-options.js';
import { type PlainForm, parsePlainArgv } from './option-table.js';

/** `reap` with the options the fast path accepts. */
export const ONCE_PER_FORM: PlainForm = { words: ['reap'], options: REAP_COMMAND_OPTIONS.filter((d) => d.startup) };

export function oncePerFastPath(argv: readonly string[], ctx: Context): number | undefined {
  const parsed = parsePlainArgv(argv, GLOBAL_OPTIONS, [ONCE_PER_FORM]);
  if (!parsed) return undefined;
  const o = parsed.options;
  const maxAgeMs = o.get('--once-per') as number | undefined;
  if (maxAgeMs === undefined) return undefined;
  const list = (flag: string) => o.get(flag) as string[] | undefined;
  try {
    const home = resolveHermesHome({
      home: parsed.globals.get('--home') as string | undefined,
      profile: parsed.globals.get('--profile') as string | undefined,
      env: ctx.env,
      homedir: ctx.homedir,
      cwd: ctx.cwd,
    });
    const selection = selectionFrom({
      profile: o.has('--all-profiles') ? null : home.profile,
      labels: list('--label'),
      excludeLabels: list('--exclude-label'),
      profileLabel: o.get('--profile-label') as string | undefined,
    });
    const endpoints = resolveEngines(list('--host'), o.get('--context') as string | undefined, ctx.env, ctx.homedir);
    const now = ctx.now();
    return oncePerStamps(home.home, selection, endpoints).every((file) => stampFresh(file, now, maxAgeMs)) ? 0 : undefined;
  } catch {
    return undefined; // a bad value: the full CLI reports it properly
  }
}
