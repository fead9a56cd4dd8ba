import { limitHeapGrowth } from '../heap.js';
import type { Command } from 'commander';
import type { Context } from '../../context.js';
import { ExitCode } from '../../errors.js';
import { acrossEngines, sweepExitCode } from '../../reaper/run.js';
import { list } from '../../reaper/sweep.js';
import {
  type EngineCommandOptions, addEngineOptions, connectEngines, discoverTargets, loadHomeConfig, resolvePolicy, resolveTargets, timeoutSignal,
} from '../engine-options.js';
import { byHostAndName, hostProblems, renderTable, startProgress } from '../render-containers.js';
import { ndjsonEvent, sweepEventToNdjson } from '../report/ndjson-reporter.js';
import { type RunState, action, writeJson } from '../shared.js';

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = program
    .command('list')
    .alias('ls')
    .description('List labelled containers of the selected profile(s) in any state, with the verdict reap would reach (reap, stop or keep).')
    .addHelpText('after', '\nExit codes: 0 done; 1 a container could not be inspected; 2 bad usage or input; 3 engine unreachable or timed out');
  addEngineOptions(cmd).action(
    action(state, async (opts: EngineCommandOptions, command: Command) => {
      const targets = resolveTargets(command, opts, ctx);
      const policy = await resolvePolicy(opts, ctx, await loadHomeConfig(targets.home, ctx), targets);
      const signal = timeoutSignal(opts);
      limitHeapGrowth(); // a sweep of many containers: keep promoted garbage near the live size (cli/heap.ts)
      await discoverTargets(targets, opts, ctx);
      const engines = await connectEngines(targets.endpoints);
      const human = !opts.json && opts.logFormat === 'text';
      const progress = await startProgress(ctx, human && !opts.quiet, 'Inspecting');
      const across = await acrossEngines(engines, (engine) =>
        list({
          engine,
          selection: targets.selection,
          thresholdSeconds: policy.thresholdSeconds,
          ...(policy.thresholdByProfile ? { thresholdByProfile: policy.thresholdByProfile } : {}),
          asOf: policy.asOf,
          concurrency: opts.concurrency,
          idle: policy.idle,
          ...(signal ? { signal } : {}),
          onEvent: (ev) => {
            progress.tick(ev);
            if (opts.logFormat === 'json') sweepEventToNdjson(ctx, ev);
          },
        }),
      );
      progress.stop();
      const containers = across.results.flatMap((r) => r.containers).sort(byHostAndName);
      const failed = across.results.flatMap((r) => r.failed).sort(byHostAndName);
      const warnings = [...new Set(across.results.flatMap((r) => r.warnings))];
      const code = sweepExitCode(across, failed.length);
      const summary = {
        asOf: policy.asOf.toISOString(),
        thresholdSeconds: policy.thresholdSeconds,
        profile: targets.selection.profile,
        stopIdle: policy.stopIdle,
        idleAfterSeconds: policy.idleAfterSeconds,
      };
      if (opts.json) {
        writeJson(ctx, { ...summary, containers, failed, hosts: across.hosts, timedOut: across.timedOut, ...(warnings.length ? { warnings } : {}) });
        return code;
      }
      if (opts.logFormat === 'json') {
        for (const w of warnings) ndjsonEvent(ctx, 'warning', { message: w });
        ndjsonEvent(ctx, 'summary', { ...summary, containers: containers.length, failed: failed.length, hosts: across.hosts, timedOut: across.timedOut });
        return code;
      }
      for (const line of hostProblems(across.hosts)) ctx.stderr.write(`hermes-janitor: ${line}\n`);
      if (!opts.quiet) for (const w of warnings) ctx.stderr.write(`hermes-janitor: warning: ${w}\n`);
      for (const f of failed) ctx.stderr.write(`hermes-janitor: cannot inspect ${f.id.slice(0, 12)} ${f.name}: ${f.error}\n`);
      if (across.timedOut) ctx.stderr.write(`hermes-janitor: timed out after --timeout ${opts.timeout / 1000}s; the list is incomplete\n`);
      if (opts.quiet && code === ExitCode.OK) return code;
      if (across.hosts.every((h) => !h.reachable)) return code;
      if (containers.length === 0) {
        const scope = targets.selection.profile === null ? 'any profile' : `profile ${targets.selection.profile}`;
        ctx.stdout.write(`No labelled containers for ${scope}.\n`);
      } else {
        ctx.stdout.write(`${await renderTable(ctx, containers, policy.asOf, engines.length > 1)}\n`);
        const reapable = containers.filter((c) => c.verdict === 'reap').length;
        const stoppable = containers.filter((c) => c.verdict === 'stop').length;
        ctx.stdout.write(
          `${containers.length} container(s), ${reapable} to reap, ${stoppable} to stop (threshold ${policy.thresholdSeconds} s, idle after ${policy.idleAfterSeconds} s${policy.stopIdle ? '' : ', stopping off'}, as of ${policy.asOf.toISOString()}).\n`,
        );
      }
      return code;
    }),
  );
}
