/**
 * Running the Stop hook (`stop-hook` with no verb): read the hook JSON, decide with the stop-hook breaker, print its
 * answer. Always exits 0 (fail open) and keeps stdout for the harness. Loaded by the fast path: no commander here.
 */
import type { Context } from '../../context.js';
import type { Dialect } from '../../core/hook-dialects.js';
import { ENV_MAX_STOP_BLOCKS } from '../../defaults.js';
import { ExitCode, errorMessage } from '../../errors.js';
import { type Runners, get } from './hook-fast-path.js';
import { type StopHookWhy, createStopHook, defaultMarkerPath } from '../../breakers/stop-hook.js';
import { failOpen, ownErrorWhat } from './hook-fail-open.js';
import { hookWarn, writeLine } from './hook-stdio.js';
import { parseWholeNumber } from '../../core/parse-args.js';
import { COUNT_FLAG_MIN } from './hook-options.js';
import { resolvePathArg } from '../path-arg.js';
import { readInput } from './read-hook-input.js';

export interface StopHookRun {
  /** The hermes home (the default marker lives under it). */
  home: string;
  /** `--marker` */
  marker?: string;
  /** `--max-blocks`; else `$HERMES_JANITOR_MAX_STOP_BLOCKS`; else the dialect's default (see `defaultMaxBlocks`). */
  maxBlocks?: number;
  /** `--dialect`; else recognised from the input. */
  dialect?: Dialect;
  /** `--json` */
  json?: boolean;
  /** Read the input from this file descriptor rather than `ctx.stdin` (see {@link readHookInputFd}). */
  stdinFd?: number;
}

/**
 * `HERMES_JANITOR_MAX_STOP_BLOCKS`, when set: an integer >= 1. An invalid value is a warning and the default
 * applies (a hook never fails on its environment).
 */
export async function maxBlocksFromEnv(env: Context['env'], warnings: string[]): Promise<number | undefined> {
  const raw = env[ENV_MAX_STOP_BLOCKS];
  if (raw === undefined || raw.trim() === '') return undefined;
  try {
    return parseWholeNumber(raw, ENV_MAX_STOP_BLOCKS, COUNT_FLAG_MIN['--max-blocks']);
  } catch (err) {
    warnings.push(`${errorMessage(err)}; using the default`);
    return undefined;
  }
}

/** Decisions that failed open on the hook's own error rather than on its input (recorded for `status`). */
const OWN_ERRORS: ReadonlySet<string> = new Set<StopHookWhy>(['save-failed', 'read-failed', 'internal-error']);

/** The Stop hook: reads the input, decides, prints the answer in the input's dialect. Always returns 0. */
export async function runStopHook(ctx: Context, run: StopHookRun): Promise<number> {
  const warnings: string[] = [];
  try {
    const reading = readInput(ctx, run.stdinFd);
    const maxBlocks = run.maxBlocks ?? (await maxBlocksFromEnv(ctx.env, warnings));
    const marker = run.marker !== undefined ? resolvePathArg(ctx, run.marker) : defaultMarkerPath(run.home);
    const hook = createStopHook({ marker, maxBlocks, dialect: run.dialect, now: () => ctx.now() });
    const input = await reading;
    const result =
      input.problem !== undefined
        ? { action: 'allow' as const, why: 'malformed-input' as const, warnings: [`${input.problem}; allowing the stop`] }
        : await hook.decide(input.payload as Parameters<typeof hook.decide>[0]);
    warnings.push(...result.warnings);
    // The hook's own error (its marker cannot be read or saved, a fault): one line, recorded for `status`.
    if (OWN_ERRORS.has(result.why)) await failOpen(ctx, 'stop-hook', ownErrorWhat('stop-hook', warnings), run.home);
    else for (const w of warnings) hookWarn(ctx, `stop-hook: ${w}`);
    const r = result as Partial<Awaited<ReturnType<typeof hook.decide>>>;
    if (run.json) {
      const doc = { hook: 'stop', action: result.action, why: result.why, output: r.output ?? null, marker, state: r.marker ?? null };
      writeLine(ctx, { ...doc, maxBlocks: r.maxBlocks ?? hook.maxBlocks, dialect: r.dialect ?? null, warnings }, true);
    } else if (r.output) {
      writeLine(ctx, r.output, false);
    }
  } catch (err) {
    return failOpen(ctx, 'stop-hook', `internal error: ${errorMessage(err)}`, run.home);
  }
  return ExitCode.OK;
}

/** The fast path's runner of `stop-hook` (see hook-fast-path.ts). */
export const STOP_HOOK_RUNNERS: Runners = {
  'stop-hook': (ctx, home, o, stdinFd) =>
    runStopHook(ctx, { home, marker: get(o, '--marker'), maxBlocks: get(o, '--max-blocks'), dialect: get(o, '--dialect'), json: o.has('--json'), stdinFd }),
};
