/**
 * The tool-loop hooks' own start-up bundle (dist/fast-path-tool-loop.cjs; see fast-path.ts): `tool-loop pre` and
 * `tool-loop post` exactly as fast-path.ts runs them, and undefined (nothing read) for anything else, which bin/
 * then hands to dist/fast-path.cjs.
 */
import type { Context } from '../../context.js';
import { runHooks } from './hook-fast-path.js';
import { TOOL_LOOP_RUNNERS } from './run-tool-loop-hook.js';

/** For the build's code-cache warm-up (scripts/fast-path-cache.cjs): the reading of a pipe, as a hook's stdin. */
export { readHookInputFd } from './read-hook-input.js';

export async function runFastPath(argv: readonly string[], context?: Context): Promise<number | undefined> {
  return argv.includes('tool-loop') ? runHooks(argv, TOOL_LOOP_RUNNERS, context) : undefined;
}
