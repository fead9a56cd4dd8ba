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
  type EngineCommandOptions,
  type RunPolicy,
  addEngineOptions,
  connectEngines,
  discoverTargets,
  homeWorth,
  loadHomeConfig,
  passInput,
  perProfileOf,
  preloadEngineClient,
  resolvePolicy,
  resolveTargets,
  sayNotes,
  timeoutSignal,
  untrustedSettings,
} from '../engine-options.js';
import { byHostAndName, startProgress } from '../render-containers.js';
import { type ListSummary, chooseListReporter } from '../report/list-reporter.js';
import { outputFormat } from '../report/reporter.js';
import { type RunState, action, optionParser } from '../shared.js';
import { policyFlags, scopeOf, suggest } from '../advice.js';
import { type ListFormat, parseListFormat } from '../list-format.js';
import { UsageError } from '../../errors.js';
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
  addEngineOptions(cmd).action(
    action(state, async (opts: EngineCommandOptions & { wide?: boolean; format?: ListFormat }, command: Command) => {
      if (opts.format && (opts.json || opts.logFormat === 'json'))
        throw new UsageError('--format prints lines of text: it cannot be combined with --json or --log-format json');
      const targets = resolveTargets(command, opts, ctx);
      const signal = timeoutSignal(opts); // settings are read inside the run's --timeout
      // The engine is found (a ping) and its client loaded while the home's files are read: a list is the command
      // people run most and put in `watch -n 2`.
      const discovered = discoverTargets(targets, opts, ctx);
      discovered.catch(() => undefined); // awaited below, after the home's own errors (exit 2) are reported
      preloadEngineClient();
      const config = await loadHomeConfig(targets.home, ctx, signal, await homeWorth(targets, ctx));
      const policy = await resolvePolicy(opts, ctx, config, targets, signal);
      sayNotes(targets, opts, ctx);

      limitHeapGrowth(); // a sweep of many containers: keep promoted garbage near the live size (cli/heap.ts)
      await discovered;
      const engines = await connectEngines(targets.endpoints);
      const input = passInput({}, ctx, config, { ...targets, profiles: policy.passProfiles, lifetimeSeconds: policy.lifetimeSeconds }, { command: 'list' });
      await beforeList(input, engines, { dryRun: true, now: () => ctx.now(), signal, engines: [] });
      const reporter = chooseListReporter(ctx, opts);
      const progress = await startProgress(ctx, outputFormat(opts) === 'text', 'Inspecting');
      const across = await acrossEngines(engines, (engine) =>
        list({
          engine,
          selection: targets.selection,
          thresholdSeconds: policy.thresholdSeconds,
          ...(policy.thresholdByProfile ? { thresholdByProfile: policy.thresholdByProfile } : {}),
          held: policy.held,
          ...(policy.knownProfiles ? { knownProfiles: policy.knownProfiles } : {}),
          ...(policy.tiedRoots ? { tiedRoots: policy.tiedRoots } : {}),
          asOf: policy.asOf,
          concurrency: opts.concurrency,
          idle: policy.idle,
          ...(signal ? { signal } : {}),
          onEvent: (ev) => {
            progress.tick(ev);
            reporter.sweepEvent(ev);
          },
        }),
      );
      progress.stop();
      const failed = across.results.flatMap((r) => r.failed).sort(byHostAndName);
      const code = sweepExitCode(across, failed.length);
      await reporter.result({
        summary: summaryOf(policy, targets.selection.profile),
        containers: across.results.flatMap((r) => r.containers).sort(byHostAndName),
        failed,
        hosts: across.hosts,
        timedOut: across.timedOut,
        warnings: [...new Set(across.results.flatMap((r) => r.warnings))],
        timeoutSeconds: opts.timeout / 1000,
        exitCode: code,
        wide: Boolean(opts.wide),
        ...(opts.format ? { format: opts.format } : {}),
        advice: suggest('reap', scopeOf(command, ctx, targets.home), policyFlags(ctx.argv)),
        ...(untrustedSettings().length ? { untrustedSettings: untrustedSettings() } : {}),
      });
      return code;
    }),
  );
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
