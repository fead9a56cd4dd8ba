/**
 * The hook forms the start-up fast path runs without commander: `[--home H] [--profile P] stop-hook [options]`,
 * `tool-loop pre [options]`, `tool-loop post [options]`, each with exactly the options declared in hook-options.ts.
 * Anything else returns undefined, having read nothing, and commander handles it with its usual messages.
 */
import { type Context, processContext } from '../../context.js';
import { resolveHomeDir } from '../../hermes/home.js';
import { homeAccess, rootRules } from '../../adapters/trust.js';
import { GLOBAL_OPTIONS } from '../global-options.js';
import { HOOK_FORMS, type HookFormName } from './hook-options.js';
import { rawStdioContext } from './hook-stdio.js';
import { parsePlainArgv } from '../option-table.js';

export interface FastPathOptions {
  /** Read the hook input from this descriptor (the process's own stdin, 0) instead of `ctx.stdin`. */
  stdinFd?: number;
}

type Options = Map<string, unknown>;
/** An option's parsed value (typed by its declaration in hook-options.ts). */
export const get = <T>(o: Options, flag: string) => o.get(flag) as T | undefined;
/** Runs one hook form with its parsed options. */
export type Runner = (ctx: Context, home: string, o: Options, stdinFd: number | undefined) => Promise<number>;
/** The hook forms a fast path runs (each bundle of the build takes only its own: see fast-path.ts). */
export type Runners = Partial<Record<HookFormName, Runner>>;

/**
 * Runs a plain hook invocation without commander; undefined (nothing read) when argv is not one, or is one of a
 * form `runners` does not run.
 */
export async function runHookFastPath(argv: readonly string[], ctx: Context, runners: Runners, options: FastPathOptions = {}): Promise<number | undefined> {
  const parsed = parsePlainArgv(argv, GLOBAL_OPTIONS, HOOK_FORMS);
  const run = parsed && runners[parsed.form.name];
  if (!parsed || !run) return undefined;
  let home: string;
  try {
    const g = parsed.globals;
    home = resolveHomeDir({
      home: g.get('--home') as string | undefined,
      profile: g.get('--profile') as string | undefined,
      env: ctx.env,
      homedir: ctx.homedir,
      cwd: ctx.cwd,
    });
    // As root over a home another user owns, the full CLI runs the hook with that user's rights (cli/shared.ts homeFrom).
    if (rootRules() && homeAccess(home).owner) return undefined;
  } catch {
    return undefined; // a bad profile, or a home several users can change: commander reports it
  }
  return run(ctx, home, parsed.options, options.stdinFd);
}

/**
 * The hook fast path for `runners`' forms. Without a context (a real process, as bin/ runs it), the input is read from
 * fd 0 and the answer written to fds 1 and 2 directly, instead of setting up Node's streams.
 */
export function runHooks(argv: readonly string[], runners: Runners, context?: Context): Promise<number | undefined> {
  return context ? runHookFastPath(argv, context, runners) : runHookFastPath(argv, rawStdioContext(processContext(argv)), runners, { stdinFd: 0 });
}
