/**
 * The hook forms the start-up fast path runs without commander: `[--home H] [--profile P] stop-hook [options]`,
 * `tool-loop pre [options]`, `tool-loop post [options]`, each with exactly the options declared in hook-options.ts.
 * Anything else returns undefined, having read nothing, and commander handles it with its usual messages.
 */
import type { Context } from '../context.js';
import { resolveHermesHome } from '../core/hermes-home.js';
import { GLOBAL_OPTIONS } from './global-options.js';
import { HOOK_FORMS, type HookFormName } from './hook-options.js';
import { parsePlainArgv } from './option-table.js';
import { runStopHook } from './run-stop-hook.js';
import { runToolLoopHook } from './run-tool-loop-hook.js';

export interface FastPathOptions {
  /** Read the hook input from this descriptor (the process's own stdin, 0) instead of `ctx.stdin`. */
  stdinFd?: number;
}

type Options = Map<string, unknown>;
/** An option's parsed value (typed by its declaration in hook-options.ts). */
const get = <T>(o: Options, flag: string) => o.get(flag) as T | undefined;
type Runner = (ctx: Context, home: string, o: Options, stdinFd: number | undefined) => Promise<number>;

const RUNNERS: Record<HookFormName, Runner> = {
  'stop-hook': (ctx, home, o, stdinFd) =>
    runStopHook(ctx, { home, marker: get(o, '--marker'), maxBlocks: get(o, '--max-blocks'), dialect: get(o, '--dialect'), json: o.has('--json'), stdinFd }),
  'tool-loop pre': (ctx, home, o, stdinFd) =>
    runToolLoopHook(ctx, {
      event: 'pre',
      home,
      threshold: get(o, '--threshold'),
      cycleThreshold: get(o, '--cycle-threshold'),
      dialect: get(o, '--dialect'),
      json: o.has('--json'),
      stdinFd,
    }),
  'tool-loop post': (ctx, home, o, stdinFd) =>
    runToolLoopHook(ctx, { event: 'post', home, failureThreshold: get(o, '--failure-threshold'), dialect: get(o, '--dialect'), json: o.has('--json'), stdinFd }),
};

/** Runs a plain hook invocation without commander; undefined (nothing read) when argv is not one. */
export async function runHookFastPath(argv: readonly string[], ctx: Context, options: FastPathOptions = {}): Promise<number | undefined> {
  const parsed = parsePlainArgv(argv, GLOBAL_OPTIONS, HOOK_FORMS);
  if (!parsed) return undefined;
  let home: string;
  try {
    const g = parsed.globals;
    home = resolveHermesHome({ home: g.get('--home') as string | undefined, profile: g.get('--profile') as string | undefined, env: ctx.env, homedir: ctx.homedir, cwd: ctx.cwd }).home;
  } catch {
    return undefined; // a bad profile: commander reports it
  }
  return RUNNERS[parsed.form.name](ctx, home, parsed.options, options.stdinFd);
}
