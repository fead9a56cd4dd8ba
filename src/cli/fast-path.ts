/**
 * Start-up fast paths, for the callers that run the janitor most often: agent harnesses calling a hook on every
 * tool call or turn (`stop-hook`, `tool-loop pre|post`), and shell start-up files (`reap --once-per D` while its
 * stamps are fresh). These run without commander and without the rest of the CLI. The build also bundles this
 * module into one CommonJS file (dist/fast-path.cjs) that bin/ tries first, because loading one file is much
 * cheaper than loading the ES module graph. Anything unusual returns undefined and the full CLI runs.
 */
import { type Context, processContext } from '../context.js';
import { runHookFastPath } from './hook-fast-path.js';
import { rawStdioContext } from './hook-stdio.js';

/** For the build's code-cache warm-up (scripts/fast-path-cache.cjs): the reading of a pipe, as a hook's stdin. */
export { readHookInputFd } from './read-hook-input.js';
import { oncePerFastPath } from './once-per-fast-path.js';

const HOOKS = new Set(['stop-hook', 'tool-loop']);

/** Cheap test on argv: could a fast path apply? */
function mayTakeFastPath(argv: readonly string[]): boolean {
  return argv.some((a) => HOOKS.has(a) || a.startsWith('--once-per'));
}

/**
 * Runs a fast path when one applies, returning its exit code; undefined when the full CLI must run. Without a
 * context (a real process), hooks read fd 0 and write fds 1 and 2 directly instead of setting up Node's streams.
 */
export async function runFastPath(argv: readonly string[], context?: Context): Promise<number | undefined> {
  if (!mayTakeFastPath(argv)) return undefined;
  const ctx = context ?? processContext(argv);
  if (argv.includes('reap')) {
    const code = oncePerFastPath(argv, ctx);
    if (code !== undefined) return code;
  }
  if (argv.some((a) => HOOKS.has(a))) {
    return context ? runHookFastPath(argv, ctx) : runHookFastPath(argv, rawStdioContext(ctx), { stdinFd: 0 });
  }
  return undefined;
}
