import path from 'node:path';
import type { Context } from '../context.js';

/** A path given on the command line: `~/` is the user's home, relative paths resolve against the cwd. */
export function resolvePathArg(ctx: Context, p: string): string {
  if (p === '~' || p.startsWith('~/')) return path.join(ctx.homedir, p.slice(1));
  return path.resolve(ctx.cwd, p);
}
