import { limitHeapGrowth } from '../heap.js';
import type { Command } from 'commander';
import type { Context } from '../../context.js';
import type { EngineClient } from '../../adapters/engine.js';
import { PASSES } from '../../passes/index.js';
import { beforeSweep, settlePasses } from '../../passes/runner.js';
import type { PassRunContext, PassSettingsInput } from '../../passes/types.js';
import { acrossEngines, sweepExitCode } from '../../reaper/run.js';
import { list } from '../../reaper/sweep.js';
import {
  judgingOf,
  type EngineCommandOptions,
  type RunPolicy,
  addEngineOptions,
  connectEngines,
  startDiscovery,
  homeWorth,
  loadHomeConfig,
  passInput,
  perProfileOf,
  resolvePolicy,
  resolveTargets,
  sayNotes,
  untrustedSettings,
} from '../engine-options.js';
import { runDeadline } from '../deadline.js';
import { byHostAndName, startProgress } from '../render-containers.js';
import { type ListReport, type ListSummary, chooseListReporter } from '../report/list-reporter.js';
import { outputFormat } from '../report/reporter.js';
import { type RunState, action, optionParser } from '../shared.js';
import { policyFlags, scopeOf, suggest } from '../advice.js';
import { type ListFormat, parseListFormat } from '../list-format.js';
import { ExitCode, UsageError } from '../../errors.js';
import type { ListedEntry } from '../../reaper/sweep-types.js';
import { docsLine } from '../docs-page.js';

/**
 * A list is a sighting for the passes that look before a sweep (with an image budget set, janitor.images_over: the
 * image each of its containers uses). Their settings come from the home's files: list has none of their flags.
 */
async function beforeList(input: PassSettingsInput, engines: EngineClient[], ctx: PassRunContext): Promise<void> {
  const settled = await settlePasses(
    PASSES.filter((p) => p.beforeSweep),
    input,
  );
  await beforeSweep(settled, engines, ctx);
}

const LIST_HELP = `
Piped, one plain line per container under a header (as docker ps prints it)
and the summary on stderr; at a terminal, lines fitted to its width.

Exit codes: 0 done
            1 a container could not be inspected
            2 bad usage or input
            3 engine unreachable, not a Docker engine, or timed out`;

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = program
    .command('list')
    .alias('ls')
    .description('List labelled containers of the selected profile(s) in any state, with the verdict reap would reach (reap, stop or keep).')
    .option('--wide', 'every column (PROFILE, HOST), the reason with its detail, nothing cut whatever the terminal width')
    .option(
      '--format <template>',
      'one line per container from a template, as docker ps --format: {{.ID}}, {{.Name}}, {{.Verdict}}, {{.Reason}}, ... (docs/reaping.md lists ' +
        'them), {{json .}}; "table ..." adds a header',
      optionParser(parseListFormat),
    )
    .addHelpText('after', `${LIST_HELP}${docsLine('docs/reaping.md')}`);
  addEngineOptions(cmd).action(action(state, (opts: ListOptions, command: Command) => runList(opts, command, ctx)));
}

type ListOptions = EngineCommandOptions & { wide?: boolean; format?: ListFormat };

async function runList(opts: ListOptions, command: Command, ctx: Context): Promise<number> {
  if (opts.format && (opts.json || opts.logFormat === 'json'))
    throw new UsageError('--format prints lines of text: it cannot be combined with --json or --log-format json');
  const targets = resolveTargets(command, opts, ctx);
  // The run's --timeout (from the process's start): settings are read inside it, and past it the run is ended
  // whatever it is doing, with what it listed so far (cli/deadline.ts).
  const deadline = runDeadline(opts.timeout, 'list', ctx);
  const { signal } = deadline;
  deadline.phase('reading settings');
  // The engine is found (a ping) and its client loaded while the home's files are read: a list is the command
  // people run most and put in `watch -n 2`.
  const discovered = startDiscovery(targets, opts, ctx);
  const config = await loadHomeConfig(targets.home, ctx, signal, await homeWorth(targets, ctx));
  const policy = await resolvePolicy(opts, ctx, config, targets, signal);
  sayNotes(targets, opts, ctx);

  limitHeapGrowth(); // a sweep of many containers: keep promoted garbage near the live size (cli/heap.ts)
  deadline.phase('finding the engine');
  await discovered;
  const engines = await connectEngines(targets.endpoints);
  const input = passInput({}, ctx, config, { ...targets, profiles: policy.passProfiles, lifetimeSeconds: policy.lifetimeSeconds }, { command: 'list' });
  deadline.phase('recording image uses');
  await beforeList(input, engines, { dryRun: true, now: () => ctx.now(), signal, engines: [] });
  const reporter = chooseListReporter(ctx, opts);
  const progress = await startProgress(ctx, outputFormat(opts) === 'text', 'Inspecting');
  deadline.cleanup(() => progress.stop());
  const frame = listFrame(opts, command, ctx, policy, { profile: targets.selection.profile, home: targets.home });
  // Ended at the deadline: what was listed so far, timed out (exit 3).
  const seen: ListedEntry[] = [];
  const hosts = engines.map((e) => ({ host: e.host, reachable: false, error: 'no answer before the deadline' }));
  deadline.phase('listing');
  deadline.onHardStop(() => {
    void reporter.result({ ...frame, containers: seen.sort(byHostAndName), failed: [], hosts, timedOut: true, warnings: [], exitCode: ExitCode.ENGINE });
    return ExitCode.ENGINE;
  });
  const across = await acrossEngines(engines, (engine) =>
    list({
      engine,
      selection: targets.selection,
      ...judgingOf(policy),
      asOf: policy.asOf,
      concurrency: opts.concurrency,
      idle: policy.idle,
      ...(signal ? { signal } : {}),
      onEvent: (ev) => {
        if (ev.type === 'candidates') Object.assign(hosts.find((h) => h.host === engine.host)!, { reachable: true, error: null });
        if (ev.type === 'listed') seen.push(ev.entry);
        progress.tick(ev);
        reporter.sweepEvent(ev);
      },
    }),
  );
  progress.stop();
  const failed = across.results.flatMap((r) => r.failed).sort(byHostAndName);
  const code = sweepExitCode(across, failed.length);
  deadline.writing();
  await reporter.result({
    ...frame,
    containers: across.results.flatMap((r) => r.containers).sort(byHostAndName),
    failed,
    hosts: across.hosts,
    timedOut: across.timedOut,
    warnings: [...new Set(across.results.flatMap((r) => r.warnings))],
    exitCode: code,
    ...(untrustedSettings().length ? { untrustedSettings: untrustedSettings() } : {}),
  });
  return code;
}

/** The parts of a list's report that do not depend on what was listed. */
function listFrame(
  opts: ListOptions,
  command: Command,
  ctx: Context,
  policy: RunPolicy,
  where: { profile: string | null; home: Parameters<typeof scopeOf>[2] },
): Pick<ListReport, 'summary' | 'timeoutSeconds' | 'wide' | 'format' | 'advice'> {
  return {
    summary: summaryOf(policy, where.profile),
    timeoutSeconds: opts.timeout / 1000,
    wide: Boolean(opts.wide),
    ...(opts.format ? { format: opts.format } : {}),
    advice: suggest('reap', scopeOf(command, ctx, where.home), policyFlags(ctx.argv)),
  };
}

/** The policy a list judged by, as its summary says it (thresholds per profile where they differ). */
function summaryOf(policy: RunPolicy, profile: string | null): ListSummary {
  return {
    asOf: policy.asOf.toISOString(),
    thresholdSeconds: policy.thresholdSeconds,
    profile,
    stopIdle: policy.stopIdle,
    idleAfterSeconds: policy.idleAfterSeconds,
    ...(perProfileOf(policy) ?? {}),
  };
}
