import { shellQuote } from '../advice.js';
import type { Command } from 'commander';
import type { Context } from '../../context.js';
import { type RestartGuardReport, createRestartGuard } from '../../breakers/restart-guard.js';
import { type RestartGuardSettings, MAX_STORED_BOOTS } from '../../core/restart-guard.js';
import { parseInteger, parsePositiveSeconds } from '../../core/parse-args.js';
import { ExitCode } from '../../errors.js';
import { type RunState, action, homeFrom, optionParser, requireVerb, warn, writeJson } from '../shared.js';
import { plural } from '../../util/plural.js';
import { docsLine } from '../docs-page.js';

const EXIT_HELP = `
Exit codes:
  0  proceed (also when the state cannot be read or written: the breaker fails
     open, with one warning on stderr)
  1  tripped: the caller should hold back (skip auto-resuming interrupted
     sessions)
  2  usage error`;

const CLEAR_EXIT_HELP = `
Exit codes:
  0  cleared, or nothing to clear (a failure to delete is a warning: exit 0)
  2  usage error`;

const STATE_HELP = `
State: <home>/gateway/restart_loop.json = {"boots": [<epoch seconds>, ...]}
(shared with hermes-agent; at most the ${MAX_STORED_BOOTS} newest boots are kept).
Settings: --max/--window, else gateway.restart_loop_guard.max_restarts and
.window_seconds in <home>/config.yaml, else 3 boots within 60 s.`;

function parseMax(raw: string): number {
  return parseInteger(raw, '--max');
}

function parseWindow(raw: string): number {
  return parsePositiveSeconds(raw, '--window');
}

interface GuardOptions {
  max?: number;
  window?: number;
  json?: boolean;
}

/** A word safe to paste into a POSIX shell. */
function seconds(n: number): string {
  return `${Number.isInteger(n) ? n : Number(n.toFixed(3))} s`;
}

/** Epoch seconds (fractions allowed) as an ISO-8601 instant; null when there is none. */
function isoOfEpoch(epoch: number | null | undefined): string | null {
  return typeof epoch === 'number' && Number.isFinite(epoch) ? new Date(Math.round(epoch * 1000)).toISOString() : null;
}

function outcomeJson(subcommand: string, outcome: RestartGuardReport) {
  const v = outcome.verdict;
  const settings: RestartGuardSettings = outcome.settings;
  return {
    command: `restart-guard ${subcommand}`,
    decision: outcome.tripped ? 'tripped' : 'proceed',
    tripped: outcome.tripped,
    enabled: settings.max > 0,
    count: v?.count ?? null,
    max: settings.max,
    window_seconds: settings.windowSeconds,
    now: v?.now ?? null,
    window_start: v?.cutoff ?? null,
    state_file: outcome.location,
    state: outcome.state ?? null,
    warnings: outcome.warnings,
    error: outcome.error ?? null,
    // The same in the one JSON style (camelCase, ISO 8601); the keys above stay, deprecated (docs/breakers.md).
    windowSeconds: settings.windowSeconds,
    asOf: isoOfEpoch(v?.now),
    windowStart: isoOfEpoch(v?.cutoff),
    stateFile: outcome.location,
    boots: (outcome.state?.boots ?? []).map(isoOfEpoch),
  };
}

function guardFor(cmd: Command, ctx: Context, opts: GuardOptions) {
  const { home } = homeFrom(cmd, ctx);
  return { home, guard: createRestartGuard({ home, max: opts.max, windowSeconds: opts.window, now: () => ctx.now() }) };
}

function reportProblems(ctx: Context, outcome: { warnings?: string[]; error?: string }): void {
  for (const w of outcome.warnings ?? []) warn(ctx, w);
  if (outcome.error) warn(ctx, outcome.error);
}

function addSettingsOptions(cmd: Command): Command {
  return cmd
    .option(
      '--max <n>',
      `trip at this many boots inside the window; 0 or below never trips (above ${MAX_STORED_BOOTS} counts as ${MAX_STORED_BOOTS}; default: config, else 3)`,
      optionParser(parseMax),
    )
    .option('--window <seconds>', 'the rolling window in seconds (values below 1 count as 1; default: config, else 60)', optionParser(parseWindow))
    .option('--json', 'print one JSON document with the decision and the state on stdout');
}

export function register(program: Command, ctx: Context, state: RunState): void {
  const guard = requireVerb(program.command('restart-guard'))
    .description(
      'Rolling-window breaker for restart-interrupted gateway boots: run check-and-record at each boot that finds ' +
        'interrupted sessions; when it trips (exit 1), do not auto-resume them.',
    )
    .addHelpText('after', `${STATE_HELP}\n${EXIT_HELP}${docsLine('docs/breakers.md')}`);
  addSettingsOptions(
    guard.command('check-and-record').description('drop boots older than the window, record this boot, and trip when the boots in the window reach --max'),
  )
    .addHelpText('after', EXIT_HELP + docsLine('docs/breakers.md'))
    .action(action(state, (opts: GuardOptions, cmd: Command) => checkAndRecord(ctx, opts, cmd)));
  addSettingsOptions(guard.command('status').description('read-only: show the boots inside the window; exit 1 when tripped'))
    .addHelpText('after', EXIT_HELP + docsLine('docs/breakers.md'))
    .action(action(state, (opts: GuardOptions, cmd: Command) => status(ctx, opts, cmd)));
  guard
    .command('clear')
    .description('delete the state (after fixing whatever kept restarting the gateway)')
    .option('--json', 'print one JSON document with the outcome on stdout')
    .addHelpText('after', CLEAR_EXIT_HELP + docsLine('docs/breakers.md'))
    .action(action(state, (opts: { json?: boolean }, cmd: Command) => clear(ctx, opts, cmd)));
}

/** `check-and-record`: at a boot that found interrupted sessions. */
async function checkAndRecord(ctx: Context, opts: GuardOptions, cmd: Command): Promise<number> {
  const { home, guard } = guardFor(cmd, ctx, opts);
  const outcome = await guard.checkAndRecord();
  reportProblems(ctx, outcome);
  if (opts.json) writeJson(ctx, outcomeJson('check-and-record', outcome));
  if (!(outcome.tripped && outcome.verdict)) return ExitCode.OK;
  const v = outcome.verdict;
  ctx.stderr.write(
    `hermes-janitor: restart-guard tripped: ${plural(v.count, 'restart-interrupted boot')} within ${seconds(Math.max(1, v.windowSeconds))} ` +
      `(max ${v.max}). Hold back: do not auto-resume the interrupted sessions; a human should look at what keeps ` +
      `restarting the gateway. To clear it: hermes-janitor --home ${shellQuote(home)} restart-guard clear ` +
      `(or delete ${outcome.location})\n`,
  );
  return ExitCode.TRIPPED;
}

/** `status`: read-only. */
async function status(ctx: Context, opts: GuardOptions, cmd: Command): Promise<number> {
  const { home, guard } = guardFor(cmd, ctx, opts);
  const outcome = await guard.status();
  reportProblems(ctx, outcome);
  if (opts.json) writeJson(ctx, outcomeJson('status', outcome));
  const v = outcome.verdict;
  if (v && !opts.json) {
    const inWindow = `${plural(v.count, 'boot')} within the last ${seconds(Math.max(1, v.windowSeconds))}`;
    const verdictText = !v.enabled ? `disabled (max ${v.max})` : v.tripped ? `TRIPPED (max ${v.max})` : `ok (max ${v.max})`;
    ctx.stderr.write(`restart-guard: ${verdictText}: ${inWindow}; state ${outcome.location}\n`);
    if (v.tripped) ctx.stderr.write(`restart-guard: to clear it: hermes-janitor --home ${shellQuote(home)} restart-guard clear\n`);
  }
  return outcome.tripped ? ExitCode.TRIPPED : ExitCode.OK;
}

/** `clear`: after fixing whatever kept restarting the gateway. */
async function clear(ctx: Context, opts: { json?: boolean }, cmd: Command): Promise<number> {
  const { guard } = guardFor(cmd, ctx, {});
  const outcome = await guard.clear();
  reportProblems(ctx, outcome);
  if (opts.json) {
    writeJson(ctx, {
      command: 'restart-guard clear',
      decision: 'proceed',
      cleared: outcome.existed && !outcome.error,
      state_file: outcome.location,
      state: null,
      error: outcome.error ?? null,
      stateFile: outcome.location,
    });
  } else if (!outcome.error) {
    ctx.stderr.write(
      outcome.existed ? `restart-guard: cleared ${outcome.location}\n` : `restart-guard: nothing to clear (${outcome.location} does not exist)\n`,
    );
  }
  return ExitCode.OK;
}
