/**
 * Running the tool-loop hooks (`tool-loop pre|post`): read the hook JSON, count it with the tool-loop breaker, print
 * its answer. Always exits 0 (fail open) and keeps stdout for the harness. Loaded by the fast path: no commander here.
 */
import type { Context } from '../context.js';
import { ExitCode, errorMessage } from '../errors.js';
import { hookWarn, writeLine } from './hook-stdio.js';
import { readInput } from './read-hook-input.js';

export interface ToolLoopRun {
  event: 'pre' | 'post';
  /** The hermes home (histories live in `<home>/tool-loop/`). */
  home: string;
  threshold?: number;
  failureThreshold?: number;
  json?: boolean;
  /** Read the input from this file descriptor rather than `ctx.stdin` (see {@link readHookInputFd}). */
  stdinFd?: number;
}

/** The PreToolUse/PostToolUse hook: reads the input, counts, prints a deny/block answer when due. Always returns 0. */
export async function runToolLoopHook(ctx: Context, run: ToolLoopRun): Promise<number> {
  const name = `tool-loop ${run.event}`;
  try {
    const reading = readInput(ctx, run.stdinFd); // meanwhile, the breaker loads
    const { createToolLoop, defaultToolLoopDir } = await import('../breakers/tool-loop.js');
    const loop = createToolLoop({
      dir: defaultToolLoopDir(run.home),
      threshold: run.threshold,
      failureThreshold: run.failureThreshold,
      now: () => ctx.now(),
    });
    const input = await reading;
    const result =
      input.problem !== undefined
        ? { action: 'allow' as const, why: 'malformed-input' as const, warnings: [`${input.problem}; the call is not counted`] }
        : await loop[run.event](input.payload as Parameters<typeof loop.pre>[0]);
    for (const w of result.warnings) hookWarn(ctx, `${name}: ${w}`);
    if (run.json) {
      const r = result as Partial<Awaited<ReturnType<typeof loop.pre>>>;
      writeLine(
        ctx,
        {
          hook: run.event,
          action: result.action,
          why: result.why,
          output: r.output ?? null,
          session: r.session ?? null,
          count: r.count ?? null,
          dir: loop.location,
          state: r.state ?? null,
          threshold: loop.threshold,
          failureThreshold: loop.failureThreshold,
          warnings: result.warnings,
        },
        true,
      );
    } else if ('output' in result && result.output) {
      writeLine(ctx, result.output, false);
    }
  } catch (err) {
    hookWarn(ctx, `${name}: internal error: ${errorMessage(err)}; the call is allowed`);
  }
  return ExitCode.OK;
}

