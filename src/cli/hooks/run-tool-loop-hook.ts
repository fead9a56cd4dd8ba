/**
 * Running the tool-loop hooks (`tool-loop pre|post`): read the hook JSON, count it with the tool-loop breaker, print
 * its answer in the input's dialect. Exits 0 (fail open), or 2 where the dialect's only answer is exit 2 with the
 * text on stderr. Keeps stdout for the harness. Loaded by the fast path: no commander here.
 */
import type { Context } from '../../context.js';
import type { Dialect } from '../../core/hook-dialects.js';
import { ENV_TOOL_LOOP_WARN_ONLY } from '../../defaults.js';
import { ExitCode, errorMessage } from '../../errors.js';
import { type Runners, get } from './hook-fast-path.js';
import { type ToolLoopWhy, createToolLoop, defaultToolLoopDir } from '../../breakers/tool-loop.js';
import { failOpen, ownErrorWhat } from './hook-fail-open.js';
import { hookWarn, writeLine } from './hook-stdio.js';
import { readInput } from './read-hook-input.js';

export interface ToolLoopRun {
  event: 'pre' | 'post' | 'prompt';
  /** The hermes home (histories live in `<home>/tool-loop/`). */
  home: string;
  threshold?: number;
  cycleThreshold?: number;
  failureThreshold?: number;
  sameOutcome?: number;
  sameFailure?: number;
  pollLimit?: number;
  /** `--dialect`; else recognised from the input. */
  dialect?: Dialect;
  json?: boolean;
  /** Read the input from this file descriptor rather than `ctx.stdin` (see {@link readHookInputFd}). */
  stdinFd?: number;
}

type Loop = ReturnType<typeof createToolLoop>;
type Result = Partial<Awaited<ReturnType<Loop['pre']>>> & { action: string; why: string; warnings: string[] };

/** `HERMES_JANITOR_TOOL_LOOP_WARN_ONLY`: on when `1`, `true`, `yes` or `on` (any case); anything else is off. */
export function warnOnlyFromEnv(env: Context['env']): boolean {
  const v = env[ENV_TOOL_LOOP_WARN_ONLY];
  return v !== undefined && /^(?:1|true|yes|on)$/i.test(v.trim());
}

/** `--json`: one document describing the decision and the history (instead of the answer). */
function describe(loop: Loop, event: 'pre' | 'post' | 'prompt', r: Result): Record<string, unknown> {
  return {
    hook: event,
    action: r.action,
    why: r.why,
    stage: r.stage ?? null,
    output: r.output ?? null,
    exit: r.exit ?? null,
    dialect: r.dialect ?? null,
    session: r.session ?? null,
    count: r.count ?? null,
    dir: loop.location,
    state: r.state ?? null,
    threshold: loop.threshold,
    cycleThreshold: loop.cycleThreshold,
    failureThreshold: loop.failureThreshold,
    sameOutcome: loop.sameOutcome,
    sameFailure: loop.sameFailure,
    pollLimit: loop.pollLimit,
    warnOnly: loop.warnOnly,
    warnings: r.warnings,
  };
}

/** Decisions that failed open on the hook's own error rather than on its input (recorded for `status`). */
const OWN_ERRORS: ReadonlySet<string> = new Set<ToolLoopWhy>(['state-error', 'internal-error']);

/** A tool hook: reads the input, counts, prints a deny or failing answer when due. Returns 0, or 2 (see above). */
export async function runToolLoopHook(ctx: Context, run: ToolLoopRun): Promise<number> {
  const name = `tool-loop ${run.event}`;
  try {
    const reading = readInput(ctx, run.stdinFd);
    const { threshold, cycleThreshold, failureThreshold, sameOutcome, sameFailure, pollLimit, dialect } = run;
    const limits = { threshold, cycleThreshold, failureThreshold, sameOutcome, sameFailure, pollLimit };
    const loop = createToolLoop({ dir: defaultToolLoopDir(run.home), ...limits, warnOnly: warnOnlyFromEnv(ctx.env), dialect, now: () => ctx.now() });
    const input = await reading;
    const result: Result =
      input.problem !== undefined
        ? { action: 'allow', why: 'malformed-input', warnings: [`${input.problem}; the call is not counted`] }
        : await loop[run.event](input.payload as Parameters<Loop['pre']>[0]);
    // The hook's own error (its history cannot be kept, a fault): one line, recorded for `status`.
    const own = OWN_ERRORS.has(result.why);
    if (own) await failOpen(ctx, name, ownErrorWhat(name, result.warnings), run.home);
    if (run.json) {
      if (!own) for (const w of result.warnings) hookWarn(ctx, `${name}: ${w}`);
      writeLine(ctx, describe(loop, run.event, result), true);
    } else if (result.exit) {
      // stderr is the answer the agent hands the model: only the reason goes there.
      ctx.stderr.write(`${result.exit.stderr}\n`);
      return ExitCode.HOOK_ANSWER;
    } else {
      if (!own) for (const w of result.warnings) hookWarn(ctx, `${name}: ${w}`);
      if (result.output) writeLine(ctx, result.output, false);
    }
  } catch (err) {
    return failOpen(ctx, name, `internal error: ${errorMessage(err)}`, run.home);
  }
  return ExitCode.OK;
}

/** The fast path's runners of `tool-loop pre` and `tool-loop post` (see hook-fast-path.ts). */
export const TOOL_LOOP_RUNNERS: Runners = {
  'tool-loop pre': (ctx, home, o, stdinFd) =>
    runToolLoopHook(ctx, {
      event: 'pre',
      home,
      threshold: get(o, '--threshold'),
      sameOutcome: get(o, '--same-outcome'),
      sameFailure: get(o, '--same-failure'),
      pollLimit: get(o, '--poll-limit'),
      cycleThreshold: get(o, '--cycle-threshold'),
      dialect: get(o, '--dialect'),
      json: o.has('--json'),
      stdinFd,
    }),
  'tool-loop post': (ctx, home, o, stdinFd) =>
    runToolLoopHook(ctx, {
      event: 'post',
      home,
      failureThreshold: get(o, '--failure-threshold'),
      dialect: get(o, '--dialect'),
      json: o.has('--json'),
      stdinFd,
    }),
  'tool-loop prompt': (ctx, home, o, stdinFd) => runToolLoopHook(ctx, { event: 'prompt', home, dialect: get(o, '--dialect'), json: o.has('--json'), stdinFd }),
};
