import type { Command } from 'commander';
import type { Context } from '../../context.js';
import { ExitCode } from '../../errors.js';
import { reaperDisabled } from '../../reaper/settings.js';
import { acrossEngines } from '../../reaper/run.js';
import { reap } from '../../reaper/sweep.js';
import { type EngineCommandOptions, addEngineOptions, connectEngines, loadHome, prepareEngineRun } from '../engine-options.js';
import { byHostAndName, hostProblems, ndjsonEvent, reapLine, relativeFinished, startProgress, sweepEventToNdjson } from '../render-containers.js';
import { type RunState, action, writeJson } from '../shared.js';

interface ReapOptions extends EngineCommandOptions {
  dryRun?: boolean;
}

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = program
    .command('reap')
    .description('Remove exited hermes-agent containers whose FinishedAt is older than the threshold (never forced).')
    .option('-n, --dry-run', 'remove nothing; report what would be removed')
    .addHelpText(
      'after',
      `
Exit codes: 0 done (also when disabled); 1 at least one removal failed (the rest were processed);
            2 bad usage or input; 3 engine unreachable, or the run timed out`,
    );
  addEngineOptions(cmd).action(
    action(state, async (opts: ReapOptions, command: Command) => {
      const loaded = await loadHome(command, ctx);
      const disabled = reaperDisabled(ctx.env, loaded.config);
      if (disabled) {
        const reason = `reaper disabled by ${disabled}`;
        if (opts.json) writeJson(ctx, { disabled: true, reason });
        else if (opts.logFormat === 'json') ndjsonEvent(ctx, 'disabled', { disabled: true, reason });
        else if (!opts.quiet) ctx.stderr.write(`hermes-janitor: ${reason}; nothing done\n`);
        return ExitCode.OK;
      }
      const run = await prepareEngineRun(command, opts, ctx, loaded);
      const dryRun = Boolean(opts.dryRun);
      const engines = await connectEngines(run);
      const human = !opts.json && opts.logFormat === 'text';
      const progress = await startProgress(ctx, human && !opts.quiet, dryRun ? 'Checking' : 'Reaping');
      const across = await acrossEngines(engines, (engine) =>
        reap({
          engine,
          selection: run.selection,
          thresholdSeconds: run.threshold,
          asOf: run.asOf,
          concurrency: opts.concurrency,
          dryRun,
          ...(run.signal ? { signal: run.signal } : {}),
          onEvent: (ev) => {
            progress.tick(ev);
            if (opts.logFormat === 'json') sweepEventToNdjson(ctx, ev);
          },
        }),
      );
      progress.stop();
      const removed = across.results.flatMap((r) => r.removed).sort(byHostAndName);
      const kept = across.results.flatMap((r) => r.kept).sort(byHostAndName);
      const failed = across.results.flatMap((r) => r.failed).sort(byHostAndName);
      const unreachable = across.hosts.some((h) => !h.reachable);
      const code = across.timedOut || unreachable ? ExitCode.ENGINE : failed.length ? ExitCode.FAILED : ExitCode.OK;
      const summary = {
        dryRun,
        asOf: run.asOf.toISOString(),
        thresholdSeconds: run.threshold,
        profile: run.selection.profile,
      };
      if (opts.json) {
        writeJson(ctx, { ...summary, removed, kept, failed, hosts: across.hosts, timedOut: across.timedOut });
        return code;
      }
      if (opts.logFormat === 'json') {
        ndjsonEvent(ctx, 'summary', {
          ...summary, removed: removed.length, kept: kept.length, failed: failed.length, hosts: across.hosts, timedOut: across.timedOut,
        });
        return code;
      }
      const showHost = engines.length > 1;
      const finished = await relativeFinished([...removed, ...failed], run.asOf);
      for (const line of hostProblems(across.hosts)) ctx.stderr.write(`hermes-janitor: ${line}\n`);
      if (across.timedOut) ctx.stderr.write(`hermes-janitor: timed out after --timeout ${opts.timeout / 1000}s; stopped early\n`);
      for (const f of failed) ctx.stderr.write(`${reapLine('failed', f, finished.get(f.id) ?? '-', showHost)}\n`);
      if (opts.quiet || across.hosts.every((h) => !h.reachable)) return code;
      for (const r of removed) ctx.stdout.write(`${reapLine(dryRun ? 'would remove' : 'removed', r, finished.get(r.id) ?? '-', showHost)}\n`);
      const scope = run.selection.profile === null ? 'all profiles' : `profile ${run.selection.profile}`;
      const verb = dryRun ? 'Would remove' : 'Removed';
      ctx.stdout.write(
        `${verb} ${removed.length}, kept ${kept.length}, failed ${failed.length} (threshold ${run.threshold} s, ${scope}${dryRun ? ', dry run' : ''}).\n`,
      );
      return code;
    }),
  );
}
