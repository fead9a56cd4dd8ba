/**
 * A hook's own error never stops the agent it guards: a mistyped or removed flag, a bad value, a state file it
 * cannot write, a hermes home that is not a directory, any internal error. The hook exits 0 with its dialect's
 * "allow / no decision" answer (it prints nothing), writes one warning line on stderr, and records the mistake
 * beside the breaker's state (breakers/hook-errors.ts) so that `status` names it: nobody reads a hook's stderr.
 * Loaded by the fast path, but run only when something went wrong: a call that went well does none of this.
 */
import { statSync } from 'node:fs';
import { recordHookError } from '../../breakers/hook-errors.js';
import { dropToOwner, homeAccess, rootRules } from '../../adapters/trust.js';
import type { Context } from '../../context.js';
import { ExitCode, errorMessage } from '../../errors.js';
import { escapeForWarning, hookWarn, oneLine } from './hook-stdio.js';

/** What a hook does when it fails open: the stop hook lets the session stop, a tool hook lets the call run. */
export const letThrough = (hook: string): string => (hook === 'stop-hook' ? 'allowing the stop' : 'the call is allowed');

/** Whether `home` is there and is not a directory (a `HERMES_HOME` that names a file). Never throws. */
function notADirectory(home: string): boolean {
  try {
    return !statSync(home).isDirectory();
  } catch {
    return false;
  }
}

/**
 * As root over a home another user owns, the rest of this (failing) hook runs as that user: the mistake is recorded
 * in their home with their rights (adapters/trust.ts), never root's. Throws what keeps the home from being judged.
 */
function asHomeOwner(home: string): void {
  if (!rootRules()) return;
  const { owner } = homeAccess(home);
  if (owner) dropToOwner(owner);
}

/**
 * Fails open on a hook's own error `what` (one line, without the let-through part): records it under `home` when
 * there is one, then writes the one warning line (which says whether it was recorded). Returns exit code 0.
 */
export async function failOpen(ctx: Context, hook: string, mistake: string, home: string | undefined): Promise<number> {
  // Recorded as it is shown: one line, escaped (it may quote argv or input; status prints it to a terminal).
  let what = escapeForWarning(oneLine(mistake, 1000));
  let note: string;
  if (home === undefined) note = ' (not recorded: no hermes home)';
  else if (notADirectory(home)) {
    // Nothing can be recorded there, and what failed is most likely that: say it first.
    what = `the hermes home ${home} is not a directory (check $HERMES_HOME or --home): ${what}`;
    note = ' (not recorded)';
  } else {
    try {
      asHomeOwner(home);
      await recordHookError(home, hook, what, ctx.now());
      note = " (recorded: see 'hermes-janitor status')";
    } catch (err) {
      note = ` (not recorded: ${errorMessage(err)})`;
    }
  }
  hookWarn(ctx, `${hook}: ${what}; ${letThrough(hook)}${note}`);
  return ExitCode.OK;
}

/**
 * The warnings of a decision that failed open on the hook's own error, as one `what`: each without the
 * let-through part the breaker appended.
 */
export function ownErrorWhat(hook: string, warnings: readonly string[]): string {
  const tail = `; ${letThrough(hook)}`;
  return warnings.map((w) => (w.endsWith(tail) ? w.slice(0, -tail.length) : w)).join('; ');
}
