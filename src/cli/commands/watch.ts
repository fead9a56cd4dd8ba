import { limitHeapGrowth } from '../heap.js';
import type { Command } from 'commander';
import type { HeldLock } from '../../adapters/file-lock.js';
import type { Context } from '../../context.js';
import { ExitCode, UsageError, errorMessage } from '../../errors.js';
import { reaperDisabled, sandboxDirsEvery } from '../../reaper/settings.js';
import type { EngineClient } from '../../adapters/engine.js';
import type { WatchEvent, WatchPolicy } from '../../watch/engine-watcher.js';
import { type SettingsFollower, followSettings, settingsSignature } from '../watch-settings.js';
import type { WatchMetrics } from '../../watch/metrics.js';
import {
  type ActionOptions, type EngineCommandOptions, type EngineTargets, type RunPolicy, addActionOptions, addEngineOptions, connectEngines,
  checkStopTimeout, discoverTargets, loadHomeConfig, resolvePolicy, resolveTargets,
} from '../engine-options.js';
import { takeReapLocks } from '../reap-locks.js';
import { checkSandboxRoot, ownerOfHome, rootOfHome, runSandboxDirsStep } from '../sandbox-dirs-step.js';
import { type ShellSnapshotSettings, shellSnapshotSettings } from '../../reaper/shell-snapshot-settings.js';
import { runShellSnapshotStep } from '../shell-snapshots-step.js';
import { type Reporter, chooseReporter } from '../report/reporter.js';
import { WATCH_OPTIONS } from '../engine-option-table.js';
import { type ImageSettings, resolveImageSettings } from '../../reaper/image-settings.js';
import type { WatchImages } from '../watch-images.js';
import { ENV_IMAGES_EVERY, IMAGES_EVERY_MS } from '../../defaults.js';
import { envDuration } from '../../reaper/settings.js';
import { type RunState, action, addOptions } from '../shared.js';
import { docsLine } from '../docs-page.js';
import { escapeControls } from '../../util/escape-controls.js';

interface WatchOptions extends EngineCommandOptions, ActionOptions {
  dryRun?: boolean;
  metricsListen?: { host: string | undefined; port: number };
  metricsMaxConnections: number;
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
    .addHelpText('after', HELP + docsLine('docs/watch.md'));
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
  /** How often the sandbox directories are checked (`sandboxDirsEvery`). */
  sandboxDirsEveryMs: number;
  reporter: Reporter;
  /** Aborted by SIGTERM or SIGINT. */
  stopping: AbortSignal;
  /** The image budget (`--images-over`, `janitor.images_over`), or null when off. */
  images: ImageSettings | null;
  /** `settingsSignature` of hermes' files, taken before `policy` was resolved from them. */
  baseline: string;
  /** Follows hermes' files (`watch-settings.ts`): `policy` is replaced when they change. */
  follower?: SettingsFollower;
  /** The shell-snapshot pass (on the sandbox-directory schedule); null with `--keep-shell-snapshots`. */
  shellSnapshots: ShellSnapshotSettings | null;
}

async function runWatch(opts: WatchOptions, command: Command, ctx: Context): Promise<number> {
  if (opts.json) throw new UsageError('watch streams its output: use --log-format json for NDJSON instead of --json');
  if (opts.asOf) throw new UsageError('--as-of does not apply to watch: it judges ages as of each moment it acts');
  if (!opts.metricsListen && command.getOptionValueSource('metricsMaxConnections') === 'cli') {
    throw new UsageError('--metrics-max-connections needs --metrics-listen: give the address to serve metrics on');
  }
  limitHeapGrowth(); // a sweep of many containers: keep promoted garbage near the live size (cli/heap.ts)
  const reporter = await chooseReporter(ctx, opts);
  const targets = resolveTargets(command, opts, ctx);
  const baseline = await settingsSignature(targets.home.home, ctx.env); // before reading: a change meanwhile is seen
  const files = await loadHomeConfig(targets.home, ctx);
  const policy = await resolvePolicy(opts, ctx, files, targets);
  const disabled = reaperDisabled(files.hermes, ctx.env);
  if (disabled) {
    reporter.notice({ kind: 'disabled', reason: `reaper disabled by ${disabled}`, what: 'not watching' });
    return ExitCode.OK;
  }
  const sweepTimeoutMs = command.getOptionValueSource('timeout') === 'cli' ? opts.timeout : 0;
  if (sweepTimeoutMs > 0) checkStopTimeout(opts, command);
  const sandboxDirsEveryMs = sandboxDirsEvery(ctx.env);
  const images = resolveImageSettings({ imagesOver: opts.imagesOver, allImages: opts.allImages, imagesMinAgeMs: opts.imagesMinAge, keepImage: opts.keepImage }, files.config);
  // A sandbox root that is not a directory is bad input: exit 2 before anything is watched, locked or removed.
  if (policy.sandboxDirsOlderThanMs !== null) await checkSandboxRoot(rootOfHome(policy.sources.sandboxRoot, targets.home.home));
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
  const snapshots = shellSnapshotSettings({ lifetimeSeconds: opts.lifetime, keep: opts.keepShellSnapshots }, ctx.env, files, ownerOfHome(targets.home.home));
  const run: WatchRun = {
    opts, ctx, targets, policy, baseline, dryRun: Boolean(opts.dryRun), sweepTimeoutMs, sandboxDirsEveryMs, reporter, stopping: stopping.signal, images,
    shellSnapshots: snapshots.keep ? null : snapshots,
  };
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

/**
 * The sandbox-directory check of `watch` (the removal pass with `--sandbox-dirs-older-than`, the measure behind the
 * metrics with `--metrics-listen`): first once every engine is connected (or after a minute), then once an hour
 * (`HERMES_JANITOR_SANDBOX_DIRS_EVERY`). An engine that is not connected at a check counts as not answering: nothing is
 * removed then. Null when neither is asked for.
 */
async function scheduleSandboxDirs(
  run: WatchRun, service: { watchers: ReadonlyArray<{ engine: EngineClient; state: string }>; healthy: boolean }, metrics: WatchMetrics | null,
): Promise<{ stop(): Promise<void> } | null> {
  const olderThanMs = run.policy.sandboxDirsOlderThanMs;
  if (olderThanMs === null && !metrics && !run.shellSnapshots) return null;
  let current: Promise<void> = Promise.resolve();
  const check = async () => {
    await run.follower?.check(); // hermes' files as they are now (the root may have moved)
    const root = rootOfHome(run.policy.sources.sandboxRoot, run.targets.home.home); // checked by runWatch before anything started
    const answers = service.watchers.map((w) => ({ engine: w.engine, answered: w.state === 'connected', ...(w.state === 'connected' ? {} : { error: `not connected (${w.state})` }) }));
    // Each check within --timeout when given (as each sweep is), and stopped by SIGTERM; its reads run in slices, so
    // /healthz, the deadlines and the engine stream keep their turns meanwhile.
    const signal = run.sweepTimeoutMs > 0 ? AbortSignal.any([run.stopping, AbortSignal.timeout(run.sweepTimeoutMs)]) : run.stopping;
    if (olderThanMs !== null || metrics) {
      const { result, gauges } = await runSandboxDirsStep(
        { roots: [root], olderThanMs, dryRun: run.dryRun, now: () => run.ctx.now(), signal, gauges: Boolean(metrics) }, answers,
      );
      if (result && !run.stopping.aborted) run.reporter.sandboxDirsPass(result, run.dryRun);
      if (gauges) metrics?.setSandboxDirs(gauges);
    }
    const snaps = run.shellSnapshots && !run.stopping.aborted ? await runShellSnapshotStep(run.shellSnapshots, run.dryRun, () => run.ctx.now(), signal) : null;
    if (snaps) {
      run.reporter.shellSnapshotsPass(snaps, run.dryRun);
      metrics?.setShellSnapshots((await import('../../reaper/shell-snapshots.js')).snapshotGauges(snaps));
    }
  };
  const tick = () => {
    current = current.then(check).catch((err: unknown) => {
      run.ctx.stderr.write(`${run.ctx.now().toISOString()} sandbox dirs: ${escapeControls(errorMessage(err))}\n`);
    });
  };
  let timer: NodeJS.Timeout | undefined;
  const started = Date.now();
  const first = setInterval(() => {
    if (!service.healthy && Date.now() - started < 60_000) return;
    clearInterval(first);
    tick();
    timer = setInterval(tick, run.sandboxDirsEveryMs);
  }, 250);
  return {
    async stop() {
      clearInterval(first);
      clearInterval(timer);
      await current;
    },
  };
}

/** `--images-over`: image uses from the events, and the image pass every `HERMES_JANITOR_IMAGES_EVERY` (10 min). */
async function startImages(run: WatchRun, metrics: WatchMetrics | null): Promise<WatchImages | null> {
  if (!run.images) return null;
  const { imagesStepFor } = await import('../images-step.js');
  const step = await imagesStepFor(run.images, run.targets.home.home, {
    selection: run.targets.selection, dryRun: run.dryRun, now: () => run.ctx.now(), signal: run.stopping,
  });
  const { WatchImages } = await import('../watch-images.js');
  return new WatchImages({
    step, reporter: run.reporter, everyMs: envDuration(run.ctx.env, ENV_IMAGES_EVERY) ?? IMAGES_EVERY_MS, stderr: run.ctx.stderr, stopping: run.stopping,
    ...(metrics ? { onGauges: (g) => metrics.setImages(g) } : {}),
  });
}

/** The service itself: every engine watched until a signal, with metrics when asked for. */
async function serve(run: WatchRun): Promise<number> {
  const { opts, targets, policy, reporter } = run;
  const { selection } = targets;
  const engines = await connectEngines(targets.endpoints);
  const profileOf = (p: string | null) => p ?? selection.profile ?? '';
  const metrics = opts.metricsListen ? await (await import('../../watch/metrics.js')).createWatchMetrics(profileOf) : null;
  const images = await startImages(run, metrics);
  const byHost = new Map(engines.map((e) => [e.host, e]));
  const { WatchService } = await import('../../watch/service.js');
  const watchPolicy: WatchPolicy = {
    selection, thresholdSeconds: policy.thresholdSeconds, concurrency: opts.concurrency, dryRun: run.dryRun, sweepTimeoutMs: run.sweepTimeoutMs,
    idle: policy.idle, keepVolumes: Boolean(opts.keepVolumes),
  };
  const service = new WatchService(
    engines,
    watchPolicy,
    (ev: WatchEvent) => {
      metrics?.observe(ev);
      if (images && ev.type === 'event') images.onEvent(byHost.get(ev.host)!, ev.event);
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
      }, opts.metricsMaxConnections).catch((err: unknown) => {
        throw new UsageError(`cannot listen on --metrics-listen ${listen.host ?? ''}:${listen.port} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}): pick a free address`);
      });
      closeServer = srv.close;
      reporter.notice({ kind: 'metrics', url: srv.url });
    }
    reporter.notice({
      kind: 'started', hosts: engines.map((e) => e.host), thresholdSeconds: policy.thresholdSeconds, profile: selection.profile,
      dryRun: run.dryRun, stopIdle: policy.stopIdle, idleAfterSeconds: policy.idleAfterSeconds, pid: process.pid,
    });
    // hermes' files changed: the watchers judge by the new threshold and idle rule from their next sweep or check.
    run.follower = followSettings(run, (next) => {
      run.policy = next;
      watchPolicy.thresholdSeconds = next.thresholdSeconds;
      watchPolicy.idle = next.idle;
    }, (n) => reporter.notice(n));
    const done = service.run();
    const dirs = await scheduleSandboxDirs(run, service, metrics);
    images?.start(
      () => service.watchers.map((w) => ({ engine: w.engine, answered: w.state === 'connected', ...(w.state === 'connected' ? {} : { error: `not connected (${w.state})` }) })),
      () => service.healthy,
    );
    if (!run.stopping.aborted) await new Promise<void>((r) => run.stopping.addEventListener('abort', () => r(), { once: true }));
    run.follower.stop();
    await dirs?.stop();
    await images?.stop();
    await service.stop();
    await done;
    reporter.notice({ kind: 'shutdown', tracked: service.tracked });
    return ExitCode.OK;
  } finally {
    await closeServer?.();
  }
}
