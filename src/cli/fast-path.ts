/**
 * Start-up fast paths, for the callers that run the janitor most often: agent harnesses calling a hook on every
 * tool call or turn (`stop-hook`, `tool-loop pre|post`), and shell start-up files (`reap --once-per D` while its
 * stamps are fresh). These run without commander and without the rest of the CLI. Anything unusual returns
 * undefined and the full CLI runs.
 *
 * The build bundles the fast paths into CommonJS files that bin/ tries first, because loading one file (with V8's
 * code cache for it) is much cheaper than loading the ES module graph: this module as dist/fast-path.cjs (every fast
 * path), and each hook's own, smaller, as dist/fast-path-tool-loop.cjs (fast-path-tool-loop.ts) and
 * dist/fast-path-stop-hook.cjs (fast-path-stop-hook.ts): a hook's start-up pays for reading and deserialising
 * its own code only.
 */
import { type Context, processContext } from '../context.js';
import { type Runners, runHooks } from './hooks/hook-fast-path.js';
import { STOP_HOOK_RUNNERS } from './hooks/run-stop-hook.js';
import { TOOL_LOOP_RUNNERS } from './hooks/run-tool-loop-hook.js';

/** For the build's code-cache warm-up (scripts/fast-path-cache.cjs): the reading of a pipe, as a hook's stdin. */
export { readHookInputFd } from './hooks/read-hook-input.js';

const HOOKS = new Set(['stop-hook', 'tool-loop']);
const RUNNERS: Runners = { ...STOP_HOOK_RUNNERS, ...TOOL_LOOP_RUNNERS };

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
  if (argv.includes('reap')) {
    // Imported on demand: its option tables and engine helpers are no part of a hook's start-up.
    const { oncePerFastPath } = await import('./once-per-fast-path.js');
    const code = oncePerFastPath(argv, context ?? processContext(argv));
    if (code !== undefined) return code;
  }
  return argv.some((a) => HOOKS.has(a)) ? runHooks(argv, RUNNERS, context) : undefined;
}
