import type { Command } from 'commander';
import type { Context } from '../../context.js';
import { clearSessionKeys, recordShutdownKeys, stuckSessionsStatus, stuckSessionsStore, suspendStuckSessions } from '../../breakers/stuck-sessions.js';
import { DEFAULT_SUSPEND_THRESHOLD } from '../../core/stuck-sessions.js';
import { parseWholeNumber } from '../../core/parse-args.js';
import { ExitCode, UsageError } from '../../errors.js';
import { type RunState, action, homeFrom, optionParser, requireVerb, warn, writeJson } from '../shared.js';
import { escapeControls, hasControls } from '../../util/escape-controls.js';
import { plural } from '../../util/plural.js';
import { docsLine } from '../docs-page.js';

const EXIT_HELP = `
Exit codes:
  0  done (suspend exits 0 also when it prints keys; a state that cannot be
     read or written is one warning on stderr, still exit 0: the breaker fails
     open)
  2  usage error`;

const STATE_HELP = `
State: <home>/.restart_failure_counts = {"<session key>": <count>} (shared
with hermes-agent; entries of the form {"count": n, ...} are read too and keep
their other fields).

Wiring: at gateway shutdown run 'record-shutdown' with the keys of the
sessions still active; at start-up run 'suspend' and do not resume the keys it
prints; after a session's successful turn run 'clear KEY'.`;

const THRESHOLD_HELP = 'suspend sessions whose count reached this';

function parseThreshold(raw: string): number {
  return parseWholeNumber(raw, '--threshold', 1);
}

/** Session keys from the command line: non-empty, without control characters (they are printed one per line). */
function checkKeys(keys: string[]): string[] {
  for (const key of keys) {
    if (key === '') throw new UsageError('a session key must not be empty');
    if (hasControls(key)) {
      throw new UsageError(`session key ${JSON.stringify(key)} contains control characters`);
    }
  }
  return keys;
}

/** A key as one printable line: control characters become \\uXXXX escapes (the JSON output is exact). */
function printable(key: string): string {
  return escapeControls(key, { backslash: true });
}

function reportProblems(ctx: Context, outcome: { warnings: string[]; error?: string }): void {
  for (const w of outcome.warnings) warn(ctx, w);
  if (outcome.error) warn(ctx, outcome.error);
}

/** Prints keys one per line, escaping the few that hold control characters (and saying so once). */
function printKeys(ctx: Context, keys: string[], line: (shown: string, key: string) => string = (shown) => shown): void {
  if (keys.some(hasControls)) warn(ctx, 'some session keys contain control characters and are printed escaped; use --json for the exact keys');
  for (const key of keys) ctx.stdout.write(`${line(hasControls(key) ? printable(key) : key, key)}\n`);
}

/** `record-shutdown KEY...`: at gateway shutdown, count the sessions still active. */
function recordShutdownVerb(stuck: Command, ctx: Context, state: RunState): void {
  stuck
    .command('record-shutdown')
    .description(
      'at gateway shutdown: add 1 to the count of each KEY (the sessions active now) and drop every other key; ' + 'with no KEY the file is left untouched',
    )
    .argument('[keys...]', 'session keys of the sessions active at shutdown')
    .option('--threshold <n>', THRESHOLD_HELP, optionParser(parseThreshold), DEFAULT_SUSPEND_THRESHOLD)
    .option('--json', 'print one JSON document with the recorded keys and the counts on stdout')
    .addHelpText('after', EXIT_HELP + docsLine('docs/breakers.md'))
    .action(
      action(state, async (keys: string[], opts: { threshold: number; json?: boolean }, cmd: Command) => {
        checkKeys(keys);
        const { home } = homeFrom(cmd, ctx);
        const outcome = await recordShutdownKeys(stuckSessionsStore(home), keys, opts.threshold);
        reportProblems(ctx, outcome);
        if (opts.json) {
          writeJson(ctx, {
            command: 'stuck-sessions record-shutdown',
            recorded: outcome.error ? [] : outcome.recorded,
            changed: outcome.changed,
            counts: outcome.counts,
            threshold: opts.threshold,
            at_threshold: outcome.atThreshold,
            state_file: outcome.location,
            warnings: outcome.warnings,
            error: outcome.error ?? null,
            // camelCase beside the keys above (kept, deprecated: docs/breakers.md)
            atThreshold: outcome.atThreshold,
            stateFile: outcome.location,
          });
        } else if (outcome.atThreshold.length > 0) {
          ctx.stderr.write(
            `stuck-sessions: ${plural(outcome.atThreshold.length, 'session')} stayed active across ${opts.threshold} or more restarts ` +
              `and will be suspended at the next start: ${outcome.atThreshold.map(printable).join(', ')}\n`,
          );
        }
        return ExitCode.OK;
      }),
    );
}

/** `suspend`: at start-up, print the keys at the threshold and reset the counts. */
function suspendVerb(stuck: Command, ctx: Context, state: RunState): void {
  stuck
    .command('suspend')
    .description(
      'at start-up: print the keys whose count reached the threshold, one per line, then delete the file ' +
        '(exit 0 also when keys are printed; do not resume those sessions)',
    )
    .option('--threshold <n>', THRESHOLD_HELP, optionParser(parseThreshold), DEFAULT_SUSPEND_THRESHOLD)
    .option('--json', 'print {"suspended": [keys], "counts": {key: count}} on stdout instead of the list')
    .addHelpText('after', EXIT_HELP + docsLine('docs/breakers.md'))
    .action(
      action(state, async (opts: { threshold: number; json?: boolean }, cmd: Command) => {
        const { home } = homeFrom(cmd, ctx);
        const outcome = await suspendStuckSessions(stuckSessionsStore(home), opts.threshold);
        reportProblems(ctx, outcome);
        if (opts.json) {
          writeJson(ctx, { suspended: outcome.suspended, counts: outcome.counts });
        } else {
          printKeys(ctx, outcome.suspended);
          if (outcome.suspended.length > 0) {
            ctx.stderr.write(
              `stuck-sessions: suspending ${plural(outcome.suspended.length, 'session')} that stayed active across ` +
                `${opts.threshold} or more restarts; counts reset (${outcome.location} deleted)\n`,
            );
          }
        }
        return ExitCode.OK;
      }),
    );
}

/** `clear KEY...`: after a session's successful turn, drop its count. */
function clearVerb(stuck: Command, ctx: Context, state: RunState): void {
  stuck
    .command('clear')
    .description("after a session's successful turn: drop its count; the file is deleted when no key is left")
    .argument('<keys...>', 'session keys')
    .option('--json', 'print one JSON document with the cleared keys and the counts on stdout')
    .addHelpText('after', EXIT_HELP + docsLine('docs/breakers.md'))
    .action(
      action(state, async (keys: string[], opts: { json?: boolean }, cmd: Command) => {
        checkKeys(keys);
        const { home } = homeFrom(cmd, ctx);
        const outcome = await clearSessionKeys(stuckSessionsStore(home), keys);
        reportProblems(ctx, outcome);
        if (opts.json) {
          writeJson(ctx, {
            command: 'stuck-sessions clear',
            cleared: outcome.cleared,
            counts: outcome.counts,
            file_deleted: outcome.deleted,
            state_file: outcome.location,
            warnings: outcome.warnings,
            error: outcome.error ?? null,
            // camelCase beside the keys above (kept, deprecated: docs/breakers.md)
            fileDeleted: outcome.deleted,
            stateFile: outcome.location,
          });
        } else if (!outcome.error) {
          const missing = keys.filter((k) => !outcome.cleared.includes(k));
          if (missing.length > 0) ctx.stderr.write(`stuck-sessions: no count to clear for ${missing.map((k) => JSON.stringify(k)).join(', ')}\n`);
        }
        return ExitCode.OK;
      }),
    );
}

/** `status`: show the counts (read-only). */
function statusVerb(stuck: Command, ctx: Context, state: RunState): void {
  stuck
    .command('status')
    .description('show the counts: one "<count><TAB><key>" line per session on stdout, a summary on stderr')
    .option('--threshold <n>', THRESHOLD_HELP, optionParser(parseThreshold), DEFAULT_SUSPEND_THRESHOLD)
    .option('--json', 'print one JSON document with the counts on stdout')
    .addHelpText('after', EXIT_HELP + docsLine('docs/breakers.md'))
    .action(
      action(state, async (opts: { threshold: number; json?: boolean }, cmd: Command) => {
        const { home } = homeFrom(cmd, ctx);
        const outcome = await stuckSessionsStatus(stuckSessionsStore(home), opts.threshold);
        reportProblems(ctx, outcome);
        if (opts.json) {
          writeJson(ctx, {
            command: 'stuck-sessions status',
            counts: outcome.counts,
            threshold: opts.threshold,
            at_threshold: outcome.atThreshold,
            state_file: outcome.location,
            warnings: outcome.warnings,
            error: outcome.error ?? null,
            // camelCase beside the keys above (kept, deprecated: docs/breakers.md)
            atThreshold: outcome.atThreshold,
            stateFile: outcome.location,
          });
        } else if (!outcome.error) {
          const keys = Object.keys(outcome.counts);
          printKeys(ctx, keys, (shown, k) => `${outcome.counts[k] ?? 0}\t${shown}`);
          ctx.stderr.write(
            `stuck-sessions: ${plural(keys.length, 'session')} counted in ${outcome.location}; ` +
              `${outcome.atThreshold.length} at or over the threshold ${opts.threshold} (suspended at the next start)\n`,
          );
        }
        return ExitCode.OK;
      }),
    );
}

export function register(program: Command, ctx: Context, state: RunState): void {
  const stuck = requireVerb(program.command('stuck-sessions'))
    .description('Suspend sessions that are still active at every gateway restart, instead of replaying them forever.')
    .addHelpText('after', `${STATE_HELP}\n${EXIT_HELP}${docsLine('docs/breakers.md')}`);
  for (const verb of [recordShutdownVerb, suspendVerb, clearVerb, statusVerb]) verb(stuck, ctx, state);
}
