/**
 * The stop hook's own start-up bundle (dist/fast-path-stop-hook.cjs; see fast-path.ts): `stop-hook` exactly as
 * fast-path.ts runs it, and undefined (nothing read) for anything else, which bin/ then hands to dist/fast-path.cjs.
 */
import type { Context } from '../../context.js';
import { runHooks } from './hook-fast-path.js';
import { STOP_HOOK_RUNNERS } from './run-stop-hook.js';

/** For the build's code-cache warm-up (scripts/fast-path-cache.cjs): the reading of a pipe, as a hook's stdin. */
export { readHookInputFd } from './read-hook-input.js';

export async function runFastPath(argv: readonly string[], context?: Context): Promise<number | undefined> {
  return argv.includes('stop-hook') ? runHooks(argv, STOP_HOOK_RUNNERS, context) : undefined;
}
