import { limitHeapGrowth } from '../heap.js';
import type { Command } from 'commander';
import type { HeldLock } from '../../adapters/file-lock.js';
import type { Context } from '../../context.js';
import { ExitCode, NotADockerEngineError, UsageError, errorMessage } from '../../errors.js';
import { envDuration, reaperDisabled } from '../../reaper/settings.js';
import { ENV_HEARTBEAT_EVERY, WATCH_HEARTBEAT_MS } from '../../defaults.js';
import type { EngineClient } from '../../adapters/engine.js';
import type { WatchEvent, WatchPolicy } from '../../watch/engine-watcher.js';
import type { WatchMetrics } from '../../watch/metrics.js';
import { type SettingsFollower, followSettings, settingsSignature } from '../watch-settings.js';
import {
  judgingOf,
  type ActionOptions,
  type EngineCommandOptions,
  type EngineTargets,
  type HomeFiles,
  type RunPolicy,
  addActionOptions,
  addEngineOptions,
  connectEngines,
  checkStopTimeout,
  discoverTargets,
  homeWorth,
  loadHomeConfig,
  passInput,
  resolvePolicy,
  resolveTargets,
  noticeUntrusted,
  perProfileOf,
  sayNotes,
} from '../engine-options.js';
import { takeReapLocks } from '../reap-locks.js';
import { type Reporter, chooseReporter } from '../report/reporter.js';
import { WATCH_OPTIONS } from '../engine-option-table.js';
import { PASSES } from '../../passes/index.js';
import type { EngineAnswer } from '../../passes/types.js';
import { WatchPasses, type WatchPassesDeps } from '../watch-passes.js';
import { WatchKeeper } from '../watch-keeper.js';
import { escapeControls } from '../../util/escape-controls.js';
import { type RunState, action, addOptions } from '../shared.js';
import { docsLine } from '../docs-page.js';
import { watchLink } from '../watch-link.js';

interface WatchOptions extends EngineCommandOptions, ActionOptions {
  dryRun?: boolean;
  metricsListen?: { host: string | undefined; port: number };
  metricsMaxConnections: number;
}

const HELP = `
Runs until SIGTERM or SIGINT (then exits 0 within 5 s). A full sweep at start
and after every reconnect, then the engine's event stream: each exited or
never-started container is re-checked and removed at its deadline (FinishedAt
or Created + threshold), and each running sandbox is re-sampled when its
idleness could first reach --idle-after (and right after each exec ends), then
stopped once the proof holds, re-checked right before. It holds the reap lock
of this home for each engine while it runs (a reap meanwhile answers
"skipped": "locked").

Exit codes: 0 stopped by a signal (or the reaper is disabled)
            1 an unexpected error
            2 bad usage or input
            3 not a Docker engine`;

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = program
    .command('watch')
    .description('Run as a service: follow the engine event stream, remove each orphan at its deadline and stop sandboxes proven idle.')
    .addHelpText('after', HELP + docsLine('docs/watch.md'));
  addEngineOptions(addActionOptions(addOptions(cmd, WATCH_OPTIONS))).action(
    action(state, (opts: WatchOptions, command: Command) => runWatch(opts, command, ctx)),
  );
}

/** What a watch run works on, once its flags are parsed and its settings resolved. */
interface WatchRun {
  opts: WatchOptions;
  ctx: Context;
  targets: EngineTargets;
  policy: RunPolicy;
  dryRun: boolean;
  /** The home's files `policy` was resolved from (replaced with it when they change). */
  files: HomeFiles;
  /** Bumped each time hermes' files change and `policy` and `files` are replaced. */
  generation: number;
  /** Bound on each full sweep (`--timeout`, only when given). */
  sweepTimeoutMs: number;
  reporter: Reporter;
  /** Aborted by SIGTERM or SIGINT. */
  stopping: AbortSignal;
  /** `settingsSignature` of hermes' files, taken before `policy` was resolved from them. */
  baseline: string;
  /** What the home's settings are worth (decided once: `homeWorth`). */
  worth: HomeFiles['worth'];
  /** Follows hermes' files (`watch-settings.ts`): `policy` is replaced when they change. */
  follower?: SettingsFollower;
  /** How often it pings each engine and, while every one is connected, beats (`HERMES_JANITOR_HEARTBEAT_EVERY`). */
  heartbeatMs: number;
  /** Its record and stamps for `status` and `reap --once-per` (not in a dry run). */
  keeper?: WatchKeeper;
  /** The signal that stopped it. */
  stoppedBy?: NodeJS.Signals;
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
  const files = await loadHomeConfig(targets.home, ctx, undefined, await homeWorth(targets, ctx));
  const policy = await resolvePolicy(opts, ctx, files, targets);
  // Over several homes each label's own profiles say it (`reaper-off`), not the run home's switch.
  const disabled = targets.multiHome ? null : reaperDisabled(files.hermes, ctx.env);
  if (disabled) {
    reporter.notice({ kind: 'disabled', reason: `reaper disabled by ${disabled}`, what: 'not watching' });
    return ExitCode.OK;
  }
  const sweepTimeoutMs = command.getOptionValueSource('timeout') === 'cli' ? opts.timeout : 0;
  const heartbeatMs = envDuration(ctx.env, ENV_HEARTBEAT_EVERY) ?? WATCH_HEARTBEAT_MS;
  if (sweepTimeoutMs > 0) checkStopTimeout(opts, command);
  const stopping = new AbortController();
  const run: WatchRun = {
    opts,
    ctx,
    targets,
    policy,
    files,
    generation: 0,
    baseline,
    worth: files.worth,
    dryRun: Boolean(opts.dryRun),
    sweepTimeoutMs,
    reporter,
    stopping: stopping.signal,
    heartbeatMs,
  };
  // Every pass's settings and schedule: bad input (a sandbox root that is not a directory, a bad interval) is exit 2
  // before anything is watched, locked or removed.
  const passes = await WatchPasses.create(PASSES, passDeps(run, opts.metricsListen !== undefined));
  sayNotes(targets, opts, ctx);
  noticeUntrusted(reporter);
  await discoverTargets(targets, opts, ctx);

  // Stop on SIGTERM/SIGINT: no new work at once, in-flight requests get a grace period.
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopping.signal.aborted) return;
    run.stoppedBy = sig;
    reporter.notice({ kind: 'stopping', signal: sig });
    stopping.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  let locks: HeldLock[] = [];
  try {
    // The reap lock of this home, per engine, for as long as watch runs (unless a dry run); said once when held.
    if (!run.dryRun) {
      const taken = await lockAndKeep(run);
      if (taken === null) return ExitCode.OK; // stopped while waiting
      locks = taken;
    }
    return await serve(run, passes);
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await Promise.all(locks.map((l) => l.release()));
  }
}

/**
 * The reap lock of the home for every engine, waited for as long as it takes (said once when held elsewhere); then its
 * keeper (its record and stamps). Null: stopped while waiting.
 */
async function lockAndKeep(run: WatchRun): Promise<HeldLock[] | null> {
  const { targets, reporter, ctx } = run;
  const taken = await takeReapLocks(
    targets.home.home,
    targets.endpoints.map((e) => e.host),
    { waitMs: Infinity, signal: run.stopping, pollMs: 1000, onWait: (held) => reporter.notice({ kind: 'waiting-for-lock', ...held }) },
  );
  if ('held' in taken) return null;
  run.keeper = new WatchKeeper({
    home: targets.home.home,
    selection: targets.selection,
    endpoints: targets.endpoints,
    heartbeatMs: run.heartbeatMs,
    now: () => ctx.now(),
    warn: (m) => ctx.stderr.write(`hermes-janitor: warning: ${escapeControls(m)}\n`),
  });
  return taken.locks;
}

/**
 * The heartbeat, also while idle: while every engine is connected (each answered its last ping), the metric and the
 * record; each engine's stamp while it is connected. Its timer, to clear.
 */
function startBeat(run: WatchRun, service: { healthy: boolean; watchers: ReadonlyArray<{ state: string; host: string }> }, metrics: WatchMetrics | null) {
  const beat = setInterval(() => {
    if (service.healthy) metrics?.heartbeat(run.ctx.now());
    run.keeper?.beat(
      service.watchers.filter((w) => w.state === 'connected').map((w) => w.host),
      service.healthy,
    );
  }, run.heartbeatMs);
  beat.unref();
  return beat;
}

/** Each engine as the passes take it: connected, or not answering. */
function answersOf(watchers: ReadonlyArray<{ engine: EngineAnswer['engine']; state: string }>): EngineAnswer[] {
  return watchers.map((w) => ({
    engine: w.engine,
    answered: w.state === 'connected',
    ...(w.state === 'connected' ? {} : { error: `not connected (${w.state})` }),
  }));
}

/** What `watch`'s passes run with: the engines and health come from the service once it runs (`serve` sets them). */
function passDeps(run: WatchRun, metrics: boolean): WatchPassesDeps {
  const deps: WatchPassesDeps = {
    ctx: run.ctx,
    reporter: run.reporter,
    dryRun: run.dryRun,
    stopping: run.stopping,
    answers: () => [],
    healthy: () => false,
    timeoutMs: run.sweepTimeoutMs,
    input: () => ({
      input: passInput(
        run.opts,
        run.ctx,
        run.files,
        { ...run.targets, profiles: run.policy.passProfiles, lifetimeSeconds: run.policy.lifetimeSeconds },
        {
          command: 'watch',
          metrics,
        },
      ),
      generation: run.generation,
    }),
    beforeRun: async () => run.follower?.check(), // hermes' files as they are now (the root may have moved)
  };
  const link = watchLink();
  if (link) deps.supervise = (label, deadlineMs) => link.run(label, deadlineMs);
  return deps;
}

/**
 * An address that answers but is not a Docker engine is a mistake to fix, not an outage to wait out: watch ends at
 * once with exit 3 (NotADockerEngineError) instead of retrying for ever. An engine that does not answer yet is
 * watched as usual (the service retries with backoff).
 */
async function refuseNonEngines(engines: EngineClient[], signal: AbortSignal): Promise<void> {
  await Promise.all(
    engines.map((e) =>
      e.ping(signal).catch((err: unknown) => {
        if (err instanceof NotADockerEngineError) throw err;
      }),
    ),
  );
}

/** The service itself: every engine watched until a signal, with its passes, and metrics when asked for. */
/** `--metrics-listen`: the endpoint, serving the watchers' figures; its close. */
async function listenForMetrics(
  run: WatchRun,
  service: InstanceType<typeof import('../../watch/service.js').WatchService>,
  metrics: WatchMetrics | null,
): Promise<{ url: string; close: () => Promise<void> }> {
  const listen = run.opts.metricsListen!;
  const tracked = () => {
    for (const w of service.watchers) metrics?.setTracked(w.host, w.tracked);
  };
  const refused = (err: unknown) => {
    const why = (err as NodeJS.ErrnoException).code ?? errorMessage(err);
    throw new UsageError(`cannot listen on --metrics-listen ${listen.host ?? ''}:${listen.port} (${why}): pick a free address`);
  };
  // Under its supervisor the endpoint is the supervisor's (it answers while a run is being ended): it asks for the
  // figures at each scrape, and keeps serving across a start of the work again (said once).
  const link = watchLink();
  if (link && metrics) {
    link.onScrape(async () => {
      tracked();
      return { body: await metrics.text(), contentType: metrics.contentType };
    });
    const { url, first } = await link.listen(listen.host, listen.port, run.opts.metricsMaxConnections).catch(refused);
    if (first) run.reporter.notice({ kind: 'metrics', url });
    return { url, close: async () => undefined };
  }
  const { serveMetrics } = await import('../../watch/metrics.js');
  const srv = await serveMetrics(listen, metrics, () => service.healthy, tracked, run.opts.metricsMaxConnections).catch(refused);
  run.reporter.notice({ kind: 'metrics', url: srv.url });
  return srv;
}

/** hermes' files changed: the watchers judge by the new threshold and idle rule from their next sweep or check. */
function takeSettings(run: WatchRun, watchPolicy: WatchPolicy, next: WatchRun['policy'], files: WatchRun['files']): void {
  run.policy = next;
  run.files = files;
  run.generation++;
  watchPolicy.thresholdSeconds = next.thresholdSeconds;
  watchPolicy.held = next.held;
  if (next.knownProfiles) watchPolicy.knownProfiles = next.knownProfiles;
  if (next.tiedRoots) watchPolicy.tiedRoots = next.tiedRoots;
  if (next.thresholdByProfile) watchPolicy.thresholdByProfile = next.thresholdByProfile;
  else delete watchPolicy.thresholdByProfile;
  watchPolicy.idle = next.idle;
}

/** The policy the watchers judge by, from the run's settings and options. */
function watchPolicyOf(run: WatchRun): WatchPolicy {
  const { opts, policy } = run;
  return {
    selection: run.targets.selection,
    ...judgingOf(policy),
    concurrency: opts.concurrency,
    dryRun: run.dryRun,
    sweepTimeoutMs: run.sweepTimeoutMs,
    idle: policy.idle,
    keepVolumes: Boolean(opts.keepVolumes),
  };
}

async function serve(run: WatchRun, passes: WatchPasses): Promise<number> {
  const { opts, targets, policy, reporter } = run;
  const { selection } = targets;
  const engines = await connectEngines(targets.endpoints);
  await refuseNonEngines(engines, run.stopping);
  const profileOf = (p: string | null) => p ?? selection.profile ?? '';
  const metrics = opts.metricsListen ? await (await import('../../watch/metrics.js')).createWatchMetrics(profileOf, PASSES, { home: targets.home.home }) : null;
  const byHost = new Map(engines.map((e) => [e.host, e]));
  const { WatchService } = await import('../../watch/service.js');
  const watchPolicy = watchPolicyOf(run);
  const link = watchLink();
  const service: InstanceType<typeof WatchService> = new WatchService(
    engines,
    watchPolicy,
    (ev: WatchEvent) => {
      metrics?.observe(ev);
      if (ev.type === 'sweep' && !ev.interrupted && !ev.dryRun) run.keeper?.swept(ev.host);
      if (ev.type === 'event') passes.onEvent(byHost.get(ev.host)!, ev.event);
      if (ev.type === 'engine') link?.health(service.healthy); // the supervisor answers /healthz
      reporter.watchEvent(ev);
    },
    {
      sweepPasses: PASSES.filter((p) => p.kind === 'sweep'),
      heartbeatMs: run.heartbeatMs,
      ...(link ? { supervise: (label, deadlineMs) => link.run(label, deadlineMs) } : {}),
    },
  );
  let closeServer: (() => Promise<void>) | undefined;
  const beat = startBeat(run, service, metrics);
  try {
    const listening = opts.metricsListen ? await listenForMetrics(run, service, metrics) : null;
    closeServer = listening?.close;
    await run.keeper?.started(listening?.url ?? null);
    reporter.notice({
      kind: 'started',
      hosts: engines.map((e) => e.host),
      thresholdSeconds: policy.thresholdSeconds,
      profile: selection.profile,
      dryRun: run.dryRun,
      stopIdle: policy.stopIdle,
      idleAfterSeconds: policy.idleAfterSeconds,
      pid: process.pid,
      ...(perProfileOf(policy) ? { perProfile: true } : {}),
    });
    // hermes' files changed: the watchers judge by the new threshold and idle rule from their next sweep or check.
    run.follower = followSettings(
      run,
      (next, files) => takeSettings(run, watchPolicy, next, files),
      (n) => {
        reporter.notice(n);
        noticeUntrusted(reporter); // a reloaded file's refusals, once each
      },
    );
    const done = service.run();
    passes.connect({
      answers: () => answersOf(service.watchers),
      healthy: () => service.healthy,
      ...(metrics ? { setGauges: (p, g) => metrics.setPass(p, g) } : {}),
    });
    passes.start();
    if (!run.stopping.aborted) await new Promise<void>((r) => run.stopping.addEventListener('abort', () => r(), { once: true }));
    run.follower.stop();
    await passes.stop();
    await service.stop();
    await done;
    await run.keeper?.stopped(run.stoppedBy ?? 'SIGTERM');
    reporter.notice({ kind: 'shutdown', tracked: service.tracked });
    return ExitCode.OK;
  } finally {
    clearInterval(beat);
    await closeServer?.();
  }
}
