import type { Command } from 'commander';
import type { HeldLock } from '../../adapters/file-lock.js';
import type { Context } from '../../context.js';
import { ExitCode, UsageError, errorMessage } from '../../errors.js';
import { reaperDisabled } from '../../reaper/settings.js';
import type { WatchEvent } from '../../watch/engine-watcher.js';
import {
  type ActionOptions, type EngineCommandOptions, type EngineTargets, type RunPolicy, addActionOptions, addEngineOptions, connectEngines,
  discoverTargets, loadHomeConfig, resolvePolicy, resolveTargets,
} from '../engine-options.js';
import { takeReapLocks } from '../reap-locks.js';
import { type Reporter, chooseReporter } from '../report/reporter.js';
import { WATCH_OPTIONS } from '../engine-option-table.js';
import { type RunState, action, addOptions } from '../shared.js';

interface WatchOptions extends EngineCommandOptions, ActionOptions {
  dryRun?: boolean;
  metricsListen?: { host: string | undefined; port: number };
}

const HELP = `
Runs until SIGTERM or SIGINT (then exits 0 within 5 s). A full sweep at start and after every reconnect, then
the engine's event stream: each exited or never-started container is re-checked and removed at its deadline
(FinishedAt or Created + threshold), and each running sandbox is re-sampled when its idleness could first reach
--idle-after (and right after each exec ends), then stopped once the proof holds, re-checked right before.
It holds the reap lock of this home for each engine while it runs (a reap meanwhile answers "skipped": "locked").
Exit codes: 0 stopped by a signal (or the reaper is disabled); 2 bad usage or input; 1 an unexpected error`;

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = program
    .command('watch')
    .description('Run as a service: follow the engine event stream, remove each orphan at its deadline and stop sandboxes proven idle.')
    .addHelpText('after', HELP);
  addEngineOptions(addActionOptions(addOptions(cmd, WATCH_OPTIONS))).action(action(state, (opts: WatchOptions, command: Command) => runWatch(opts, command, ctx)));
}

/** What a watch run works on, once its flags are parsed and its settings resolved. */
interface WatchRun {
  opts: WatchOptions;
  ctx: Context;
  targets: EngineTargets;
  policy: RunPolicy;
  dryRun: boolean;
  /** Bound on each full sweep (`--timeout`, only when given). */
  sweepTimeoutMs: number;
  reporter: Reporter;
  /** Aborted by SIGTERM or SIGINT. */
  stopping: AbortSignal;
}

async function runWatch(opts: WatchOptions, command: Command, ctx: Context): Promise<number> {
  if (opts.json) throw new UsageError('watch streams its output: use --log-format json for NDJSON instead of --json');
  if (opts.asOf) throw new UsageError('--as-of does not apply to watch: it judges ages as of each moment it acts');
  (await import('../../watch/heap.js')).limitHeapGrowth();
  const reporter = await chooseReporter(ctx, opts);
  const targets = resolveTargets(command, opts, ctx);
  const config = await loadHomeConfig(targets.home);
  const policy = await resolvePolicy(opts, ctx, config, targets);
  const disabled = reaperDisabled(ctx.env, config);
  if (disabled) {
    reporter.notice({ kind: 'disabled', reason: `reaper disabled by ${disabled}`, what: 'not watching' });
    return ExitCode.OK;
  }
  const sweepTimeoutMs = command.getOptionValueSource('timeout') === 'cli' ? opts.timeout : 0;
  await discoverTargets(targets, opts, ctx);

  // Stop on SIGTERM/SIGINT: no new work at once, in-flight requests get a grace period.
  const stopping = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopping.signal.aborted) return;
    reporter.notice({ kind: 'stopping', signal: sig });
    stopping.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const run: WatchRun = { opts, ctx, targets, policy, dryRun: Boolean(opts.dryRun), sweepTimeoutMs, reporter, stopping: stopping.signal };
  let locks: HeldLock[] = [];
  try {
    // The reap lock of this home, per engine, for as long as watch runs (unless a dry run); said once when held.
    if (!run.dryRun) {
      const taken = await takeReapLocks(targets.home.home, targets.endpoints.map((e) => e.host), {
        waitMs: Infinity, signal: stopping.signal, pollMs: 1000, onWait: (held) => reporter.notice({ kind: 'waiting-for-lock', ...held }),
      });
      if ('held' in taken) return ExitCode.OK; // stopped while waiting
      locks = taken.locks;
    }
    return await serve(run);
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await Promise.all(locks.map((l) => l.release()));
  }
}

/** The service itself: every engine watched until a signal, with metrics when asked for. */
async function serve(run: WatchRun): Promise<number> {
  const { opts, targets, policy, reporter } = run;
  const { selection } = targets;
  const engines = await connectEngines(targets.endpoints);
  const profileOf = (p: string | null) => p ?? selection.profile ?? '';
  const metrics = opts.metricsListen ? await (await import('../../watch/metrics.js')).createWatchMetrics(profileOf) : null;
  const { WatchService } = await import('../../watch/service.js');
  const service = new WatchService(
    engines,
    {
      selection, thresholdSeconds: policy.thresholdSeconds, concurrency: opts.concurrency, dryRun: run.dryRun, sweepTimeoutMs: run.sweepTimeoutMs,
      idle: policy.idle, keepVolumes: Boolean(opts.keepVolumes),
    },
    (ev: WatchEvent) => {
      metrics?.observe(ev);
      reporter.watchEvent(ev);
    },
  );
  let closeServer: (() => Promise<void>) | undefined;
  try {
    if (opts.metricsListen) {
      const { serveMetrics } = await import('../../watch/metrics.js');
      const listen = opts.metricsListen;
      const srv = await serveMetrics(listen, metrics, () => service.healthy, () => {
        for (const w of service.watchers) metrics?.setTracked(w.host, w.tracked);
      }).catch((err: unknown) => {
        throw new UsageError(`cannot listen on --metrics-listen ${listen.host ?? ''}:${listen.port} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}): pick a free address`);
      });
      closeServer = srv.close;
      reporter.notice({ kind: 'metrics', url: srv.url });
    }
    reporter.notice({
      kind: 'started', hosts: engines.map((e) => e.host), thresholdSeconds: policy.thresholdSeconds, profile: selection.profile,
      dryRun: run.dryRun, stopIdle: policy.stopIdle, idleAfterSeconds: policy.idleAfterSeconds, pid: process.pid,
    });
    const done = service.run();
    if (!run.stopping.aborted) await new Promise<void>((r) => run.stopping.addEventListener('abort', () => r(), { once: true }));
    await service.stop();
    await done;
    reporter.notice({ kind: 'shutdown', tracked: service.tracked });
    return ExitCode.OK;
  } finally {
    await closeServer?.();
  }
}
