import { limitHeapGrowth } from '../heap.js';
import { closeSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Command } from 'commander';
import type { HeldLock } from '../../adapters/file-lock.js';
import { logFile, stampCompletedAt, stampFresh, writeStamp } from '../../adapters/janitor-files.js';
import { oncePerStamps } from '../once-per-stamps.js';
import { ago } from '../../core/ages.js';
import { formatDuration } from '../format-duration.js';
import type { Context } from '../../context.js';
import { thresholdSeconds } from '../../core/policy.js';
import { ExitCode, JanitorError, UsageError, errorMessage } from '../../errors.js';
import { type ReapPlan, buildPlan, parsePlan, planDisagreements, planSelection } from '../../reaper/plan.js';
import { type AcrossEngines, acrossEngines, sweepExitCode } from '../../reaper/run.js';
import { reaperDisabled } from '../../reaper/settings.js';
import { countsByEngineAndProfile } from '../../reaper/run-metrics.js';
import type { EngineProfileCounts } from '../../adapters/metrics.js';
import { ENV_METRICS_FILE } from '../../defaults.js';
import type { KeptEntry, ReapResult, SweepEntry } from '../../reaper/sweep-types.js';
import { reap } from '../../reaper/sweep.js';
import { resolveEngines } from '../../adapters/docker-context.js';
import {
  judgingOf,
  type ActionOptions,
  type EngineCommandOptions,
  type EngineTargets,
  type RunPolicy,
  addActionOptions,
  addEngineOptions,
  connectEngines,
  startDiscovery,
  sayNotes,
  checkStopTimeout,
  homeWorth,
  loadHomeConfig,
  noticeUntrusted,
  passInput,
  perProfileOf,
  untrustedSettings,
  resolvePolicy,
  resolveTargets,
} from '../engine-options.js';
import { type HardStopInfo, type RunDeadline, runDeadline } from '../deadline.js';
import { ReapProgress } from '../reap-progress.js';
import { takeReapLocks } from '../reap-locks.js';
import { noEngineAtAll } from '../no-engine.js';
import { PASSES } from '../../passes/index.js';
import { type PassWatcher, type SettledPass, beforeSweep, passFailures, passesCutShort, runPasses, settlePasses } from '../../passes/runner.js';
import type { Pass, PassRunContext } from '../../passes/types.js';
import { byHostAndName } from '../render-containers.js';
import { type ReapReport, type Reporter, chooseReporter, outputFormat } from '../report/reporter.js';
import type { NamedHost } from '../report/types.js';
import { firstProblem } from '../report/text-reporter.js';
import { REAP_OPTIONS } from '../engine-option-table.js';
import { type RunState, action, addOptions } from '../shared.js';
import { docsLine } from '../docs-page.js';
import { escapeControls } from '../../util/escape-controls.js';

interface ReapOptions extends EngineCommandOptions, ActionOptions {
  dryRun?: boolean;
  oncePer?: number;
  failOpen?: boolean;
  background?: boolean;
  wait?: boolean;
  plan?: string;
  planOut?: string;
  metricsFile?: string;
}

/** What a run leaves for its metrics: set once the run reaches the engine (skips, background, disabled write none). */
interface RunRecord {
  /** Metrics are written: the passes with gauges measure. */
  metrics: boolean;
  attempted?: boolean;
  success?: boolean;
  counts?: EngineProfileCounts[];
  /** Each pass that measured, with its gauges, in the list's order. */
  passes?: Array<{ pass: Pass; gauges: unknown }>;
  /** What the run freed, in bytes (a dry run: would free). */
  reclaimedBytes?: number;
  /** The hermes home the run served (`RunMetrics.home`: every series carries it). */
  home?: string;
}

const HELP = `
Exit codes: 0 done (also when disabled, skipped for a fresh --once-per stamp,
              or locked by another reap)
            1 at least one removal or stop failed (the rest were processed)
            2 bad usage or input
            3 engine unreachable, not a Docker engine, or the run timed out
            (--fail-open turns 1 and 3 into 0)`;

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = program
    .command('reap')
    .description(
      'Remove exited and never-started hermes-agent containers older than the threshold (never forced, with their anonymous volumes), and stop ' +
        'running sandboxes proven idle.',
    )
    .addHelpText('after', HELP + docsLine('docs/reaping.md'));
  addEngineOptions(addActionOptions(addOptions(cmd, REAP_OPTIONS))).action(
    action(state, async (opts: ReapOptions, command: Command) => {
      const metricsFile = await checkMetricsFile(
        opts.metricsFile ?? (ctx.env[ENV_METRICS_FILE] || undefined),
        opts.metricsFile ? '--metrics-file' : ENV_METRICS_FILE,
      );
      const started = performance.now();
      const record: RunRecord = { metrics: metricsFile !== undefined };
      let code: number | undefined;
      try {
        code = await runReap(opts, command, ctx, record);
        return code;
      } catch (err) {
        if (!opts.failOpen || err instanceof UsageError) throw err;
        if (!opts.quiet) ctx.stderr.write(`hermes-janitor: reap did not complete (${escapeControls(errorMessage(err))}); continuing (--fail-open)\n`);
        return ExitCode.OK;
      } finally {
        if (metricsFile && record.attempted) await recordMetrics(ctx, metricsFile, record, started, opts.quiet === true);
      }
    }),
  );
}

/** The metrics file's directory must exist (the file is written by rename within it): else a usage error, before any work. */
async function checkMetricsFile(file: string | undefined, what: string): Promise<string | undefined> {
  if (file === undefined) return undefined;
  if (file.trim() === '') throw new UsageError(`${what} is empty: give a file path such as /var/lib/node_exporter/textfile/hermes_janitor.prom`);
  const dir = path.dirname(path.resolve(file));
  const st = await fs.stat(dir).catch(() => null);
  if (!st?.isDirectory())
    throw new UsageError(`${what} ${file}: directory ${dir} does not exist: create it or point at node_exporter's --collector.textfile.directory`);
  if ((await fs.stat(file).catch(() => null))?.isDirectory()) throw new UsageError(`${what} ${file} is a directory: give a file path ending in .prom`);
  // As root, the log's trust rule, before any work (and again at the write): nobody but root may change the directory.
  const { metricsDirAsRoot } = await import('../../adapters/metrics.js');
  const { rootRules } = await import('../../adapters/trust.js');
  if (rootRules()) closeSync(metricsDirAsRoot(file, what));
  return file;
}

/** Writes the run's metrics (prom-client loaded only here); a failure to write is a warning, never the run's exit code. */
async function recordMetrics(ctx: Context, file: string, record: RunRecord, started: number, quiet: boolean): Promise<void> {
  try {
    const { metricsText, writeMetricsFile } = await import('../../adapters/metrics.js');
    const text = await metricsText({
      finishedAt: ctx.now(),
      durationSeconds: (performance.now() - started) / 1000,
      success: record.success === true,
      counts: record.counts ?? [],
      ...(record.passes ? { passes: record.passes } : {}),
      ...(record.reclaimedBytes !== undefined ? { reclaimedBytes: record.reclaimedBytes } : {}),
      ...(record.home !== undefined ? { home: record.home } : {}),
    });
    await writeMetricsFile(file, text);
  } catch (err) {
    if (!quiet)
      ctx.stderr.write(
        `hermes-janitor: warning: ${escapeControls(`cannot write the metrics file ${file} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})`)}\n`,
      );
  }
}

function checkCombinations(opts: ReapOptions): void {
  if (opts.plan && opts.planOut) throw new UsageError('--plan and --plan-out cannot be combined: make the plan first, then apply it');
  if (opts.olderThan !== undefined && (opts.plan || opts.planOut)) {
    throw new UsageError('--older-than cannot be combined with --plan or --plan-out: a plan records the threshold computed from the lifetime');
  }
  if (opts.planOut && !opts.dryRun) throw new UsageError('--plan-out needs --dry-run: a plan is made by a dry run');
}

/** Reads `--plan FILE` and makes the run's targets its own; flags given again must agree with it. */
async function applyPlanTargets(opts: ReapOptions, command: Command, ctx: Context, targets: EngineTargets): Promise<ReapPlan> {
  const file = opts.plan!;
  // As root: only a plan root wrote and nobody else can change (adapters/plan-file.ts).
  const text = (await import('../../adapters/plan-file.js')).readPlanFile(file);
  let plan: ReapPlan;
  try {
    plan = parsePlan(JSON.parse(text) as unknown, file);
  } catch (err) {
    throw new UsageError(err instanceof SyntaxError ? `${file} is not valid JSON: give the file written by --plan-out` : errorMessage(err));
  }
  const given = (name: string) => command.getOptionValueSource(name) === 'cli';
  const globalProfile = command.optsWithGlobals<{ profile?: string }>().profile !== undefined;
  const hostsGiven = given('host') || given('context');
  // Only what is given again is compared: a flag left out is taken from the plan.
  const disagreements = planDisagreements(plan, {
    ...(hostsGiven ? { hosts: targets.endpoints.map((e) => e.host) } : {}),
    selection: targets.selection,
    selectionGiven: {
      labels: given('label'),
      exclude: given('excludeLabel'),
      profileLabel: given('profileLabel'),
      profile: globalProfile || given('allProfiles'),
    },
    ...(opts.lifetime !== undefined ? { thresholdSeconds: thresholdSeconds(opts.lifetime) } : {}),
    ...(opts.idleAfter !== undefined ? { idleAfterSeconds: opts.idleAfter / 1000 } : {}),
    ...(opts.stopIdle !== undefined ? { stopIdle: opts.stopIdle } : {}),
    ...(opts.idleMaxProcesses !== undefined ? { idleMaxProcesses: opts.idleMaxProcesses } : {}),
  });
  if (disagreements.length) {
    throw new UsageError(`flags disagree with plan ${file}: ${disagreements.join('; ')}; drop them or make a new plan`);
  }
  targets.selection = planSelection(plan);
  const homeGiven = command.optsWithGlobals<{ home?: string }>().home !== undefined || globalProfile;
  if (plan.home && !homeGiven) {
    targets.home = { ...targets.home, home: plan.home };
    (await import('../../adapters/trust.js')).homeAccess(plan.home); // whose it is, as for --home (exit 2 when nobody's)
  }
  targets.endpoints = resolveEngines(plan.hosts, undefined, ctx.env, ctx.homedir);
  return plan;
}

/** What a reap run works on, once its flags are parsed and its settings resolved. */
interface ReapRun {
  opts: ReapOptions;
  ctx: Context;
  targets: EngineTargets;
  plan: ReapPlan | undefined;
  policy: RunPolicy;
  keepVolumes: boolean;
  dryRun: boolean;
  signal: AbortSignal | undefined;
  /** When `signal` fires (`Date.now()` ms): stops are cut to fit (`SweepRequest.deadlineMs`). */
  deadlineMs: number | undefined;
  /** The run's deadline (cli/deadline.ts): what it is doing, for its report if it is ended there. */
  deadline: RunDeadline;
  /** What it has done so far, for that report. */
  progress: ReapProgress;
  reporter: Reporter;
  /** The passes that run after the sweep (their settings say so), in the list's order. */
  passes: SettledPass[];
  /** A metrics file is written (it has what the run freed). */
  metrics: boolean;
}

/**
 * `--once-per`: whether every engine's stamp is fresh, so the run skips. A `--dry-run` never skips (it changes nothing
 * and is run to see what a sweep would do now). With `--verbose`, says on stderr why it skips or sweeps.
 */
function oncePerSkips(opts: ReapOptions, targets: EngineTargets, ctx: Context): boolean {
  if (opts.oncePer === undefined) return false;
  const say = (line: string) => opts.verbose && ctx.stderr.write(`hermes-janitor: --once-per ${formatDuration(opts.oncePer!)}: ${line}\n`);
  if (opts.dryRun) {
    say('a dry run always sweeps (the stamps are neither read nor written)');
    return false;
  }
  const now = ctx.now();
  const stamps = oncePerStamps(targets.home.home, targets.selection, targets.endpoints);
  const fresh = stamps.every((file) => stampFresh(file, now, opts.oncePer!));
  stamps.forEach((file, i) => {
    const at = stampCompletedAt(file);
    const when = at === null ? 'no completed sweep recorded' : `last sweep completed ${ago(at, now)}`;
    say(`${targets.endpoints[i]!.host}: ${when} (${file})`);
  });
  say(fresh ? 'skipped: every engine was swept within it' : 'sweeping');
  return fresh;
}

async function runReap(opts: ReapOptions, command: Command, ctx: Context, record: RunRecord): Promise<number> {
  checkCombinations(opts);
  checkStopTimeout(opts, command);
  const reporter = await chooseReporter(ctx, opts);
  const targets = resolveTargets(command, opts, ctx);
  const plan = opts.plan ? await applyPlanTargets(opts, command, ctx, targets) : undefined;
  const { home, selection } = targets;
  const hostList = () => targets.endpoints.map((e) => ({ host: e.host, reachable: null, error: null }));

  // Fast path for shell start-up: fresh stamps for every engine mean nothing to do, without touching the engine.
  if (oncePerSkips(opts, targets, ctx)) {
    reporter.notice({ kind: 'skipped-fresh', oncePerSeconds: opts.oncePer! / 1000, hosts: hostList() });
    return ExitCode.OK;
  }
  if (opts.background) return runInBackground(ctx, home.home, reporter);
  // The run's --timeout, from the process's start: hermes' settings are read inside it, and whatever the run is doing
  // past it, it is ended there with what it did reported (cli/deadline.ts).
  const deadline = runDeadline(opts.timeout, 'reap', ctx);
  const { signal, deadlineMs } = deadline;
  const progress = new ReapProgress();
  deadline.onHardStop((info) => endedAtDeadline(opts, reporter, progress, { info, hosts: hostList() }));
  deadline.phase('reading settings');
  const discovered = startDiscovery(targets, opts, ctx);
  const files = await loadHomeConfig(home, ctx, signal, await homeWorth(targets, ctx));
  // Over several homes each label's own profiles say it (`reaper-off`), not the run home's switch.
  const disabled = targets.multiHome ? null : reaperDisabled(files.hermes, ctx.env);
  if (disabled) {
    reporter.notice({ kind: 'disabled', reason: `reaper disabled by ${disabled}`, what: 'nothing done' });
    return ExitCode.OK;
  }
  const policy = await resolvePolicy(plan ? withPlan(opts, plan) : opts, ctx, files, targets, signal);
  const keepVolumes = Boolean(opts.keepVolumes || (plan?.keepVolumes && command.getOptionValueSource('keepVolumes') !== 'cli'));
  // Every pass's settings, each checked before anything is touched (a plan lists containers only: they refuse theirs).
  const input = passInput(
    opts,
    ctx,
    files,
    { ...targets, profiles: policy.passProfiles, lifetimeSeconds: policy.lifetimeSeconds },
    {
      command: 'reap',
      plan: plan !== undefined,
      metrics: record.metrics,
    },
  );
  const passes = await settlePasses(PASSES, input);
  progress.frame = frameOf(opts, policy, targets.selection.profile);
  const run: ReapRun = {
    opts,
    ctx,
    targets,
    plan,
    policy,
    keepVolumes,
    dryRun: Boolean(opts.dryRun),
    signal,
    deadlineMs,
    deadline,
    progress,
    reporter,
    passes,
    metrics: record.metrics,
  };
  record.attempted = true;
  record.home = home.home;
  limitHeapGrowth(); // a sweep of many containers: keep promoted garbage near the live size (cli/heap.ts)
  try {
    sayNotes(targets, opts, ctx);
    noticeUntrusted(reporter);
    deadline.phase('finding the engine');
    await discovered;
  } catch (err) {
    const none = await noEngineAtAll(err, targets.endpoints);
    if (none !== null) return engineFreeRun(run, record, { noEngine: none });
    const { NoEngineFoundError } = await import('../../adapters/engine-discovery.js');
    if (!(err instanceof NoEngineFoundError) || opts.failOpen) throw err;
    return engineFreeRun(run, record, { error: errorMessage(err) });
  }

  return sweepUnderLocks(run, record, hostList);
}

/** What a reap's report says of its policy, whatever it did. */
function frameOf(opts: ReapOptions, policy: RunPolicy, profile: string | null): NonNullable<ReapProgress['frame']> {
  return {
    dryRun: Boolean(opts.dryRun),
    asOf: policy.asOf,
    thresholdSeconds: policy.thresholdSeconds,
    profile,
    stopIdle: policy.stopIdle,
    idleAfterSeconds: policy.idleAfterSeconds,
    failOpen: Boolean(opts.failOpen),
    timeoutSeconds: opts.timeout / 1000,
  };
}

/**
 * The report of a run ended at its deadline by its watchdog (cli/deadline.ts), written synchronously: what was done
 * before it, timed out; before the settings, one line (nothing was done). Exit 3, or 0 with `--fail-open`.
 */
function endedAtDeadline(opts: ReapOptions, reporter: Reporter, progress: ReapProgress, at: { info: HardStopInfo; hosts: NamedHost[] }): number {
  const failOpen = Boolean(opts.failOpen);
  const report = progress.report(PASSES, at.info.phase);
  if (!report) reporter.notice({ kind: 'timed-out', timeoutSeconds: at.info.timeoutSeconds, phase: at.info.phase, hosts: at.hosts, failOpen });
  else void reporter.reapResult(report); // synchronous in every reporter: nothing in it awaits
  if (!failOpen) return ExitCode.ENGINE;
  if (report) reporter.failOpen(firstProblem(report));
  return ExitCode.OK;
}

/** `--background`: the same command detached, its output appended to the home's log; this one returns at once. */
async function runInBackground(ctx: Context, homeDir: string, reporter: Reporter): Promise<number> {
  const { detachToLog } = await import('../../adapters/background.js');
  const { homeAccess } = await import('../../adapters/trust.js');
  // As root over another user's home, the log there is written with that user's rights.
  const argv = ctx.argv.filter((a) => a !== '--background');
  const pid = await detachToLog(argv, logFile(homeDir), ctx.env, ctx.now(), homeAccess(homeDir).owner);
  reporter.notice({ kind: 'background', pid: pid ?? null, log: logFile(homeDir) });
  return ExitCode.OK;
}

/** The sweep, one reap per home and engine at a time (dry runs take no lock). */
async function sweepUnderLocks(run: ReapRun, record: RunRecord, hostList: () => NamedHost[]): Promise<number> {
  const { opts } = run;
  let locks: HeldLock[] = [];
  if (!run.dryRun) {
    const waitMs = opts.wait ? (opts.timeout > 0 ? opts.timeout : Infinity) : 0;
    const hosts = run.targets.endpoints.map((e) => e.host);
    run.deadline.phase('taking the reap lock');
    const taken = await takeReapLocks(run.targets.home.home, hosts, { waitMs, signal: run.signal });
    if ('held' in taken) {
      record.attempted = false; // another reap of this home and engine runs and writes the metrics
      const { host, holder, timedOut } = taken.held;
      run.reporter.notice({ kind: 'locked', host, holder, timedOut, hosts: hostList(), failOpen: Boolean(opts.failOpen) });
      return timedOut && !opts.failOpen ? ExitCode.ENGINE : ExitCode.OK;
    }
    locks = taken.locks;
  }
  try {
    return await sweepAndReport(run, record);
  } finally {
    await Promise.all(locks.map((l) => l.release()));
  }
}

/** What the passes of this run are given (the engines and their answers, once the sweep has them). */
const passContext = (run: ReapRun, engines: PassRunContext['engines']): PassRunContext => ({
  dryRun: run.dryRun,
  now: () => run.ctx.now(),
  signal: run.signal,
  engines,
});

/** Each pass as it starts and ends, for the report of a run ended at its deadline. */
const passWatcher = (run: ReapRun): PassWatcher => ({
  starting: (pass) => run.deadline.phase(`checking ${pass.nouns.texts}`),
  done: (pass, result) => run.progress.passDone(pass, result),
});

/**
 * A run without an engine: the passes that need none (`place: 'host'`) alone. A host with no engine at all (hermes'
 * local backend, `noEngine`): said once, exit 0 unless one of them failed on something (1). Discovery found sockets
 * but none answered (`error`): exit 3 for the engine.
 */
async function engineFreeRun(run: ReapRun, record: RunRecord, why: { noEngine: string } | { error: string }): Promise<number> {
  const { opts, policy, dryRun } = run;
  run.progress.engines([]);
  const done = await runPasses(
    PASSES,
    run.passes.filter((p) => p.pass.place === 'host'),
    passContext(run, []),
    null,
    passWatcher(run),
  );
  record.passes = done.gauges;
  // Cut short by --timeout: the run timed out (exit 3), as a sweep that did.
  const timedOut = passesCutShort(done.results);
  const code = 'error' in why || timedOut ? ExitCode.ENGINE : passFailures(done.results) > 0 ? ExitCode.FAILED : ExitCode.OK;
  record.success = code === ExitCode.OK;
  record.counts = [];
  const hosts = 'error' in why ? [{ host: '(discovery)', reachable: false, error: why.error }] : [];
  run.deadline.writing();
  await run.reporter.reapResult({
    dryRun,
    asOf: policy.asOf,
    thresholdSeconds: policy.thresholdSeconds,
    profile: run.targets.selection.profile,
    stopIdle: policy.stopIdle,
    idleAfterSeconds: policy.idleAfterSeconds,
    removed: [],
    stopped: [],
    kept: [],
    failed: [],
    hosts,
    timedOut,
    timeoutSeconds: opts.timeout / 1000,
    warnings: [],
    failOpen: Boolean(opts.failOpen),
    ...('noEngine' in why ? { noEngine: why.noEngine } : {}),
    passes: done.results,
    ...untrustedOf(run.reporter),
  });
  return opts.failOpen ? ExitCode.OK : code;
}

/** The policy's inputs from a plan: what its dry run used, unless the flag is given again (then it must agree). */
function withPlan(opts: ReapOptions, plan: ReapPlan): ReapOptions {
  return {
    ...opts,
    lifetime: plan.lifetimeSeconds,
    ...(plan.idleAfterSeconds !== undefined ? { idleAfter: plan.idleAfterSeconds * 1000 } : {}),
    ...(plan.stopIdle !== undefined && opts.stopIdle === undefined ? { stopIdle: plan.stopIdle } : {}),
    ...(plan.idleMaxProcesses !== undefined ? { idleMaxProcesses: plan.idleMaxProcesses } : {}),
  };
}

/** What the sweep of one engine is given. */
function sweepOf(run: ReapRun, engine: Parameters<typeof reap>[0]['engine']): Parameters<typeof reap>[0] {
  const { opts, targets, plan, policy } = run;
  const { thresholdByProfile, ...judging } = judgingOf(policy);
  const onlyIds = plan
    ? new Set(
        planned(plan)
          .filter((c) => c.host === engine.host)
          .map((c) => c.id),
      )
    : undefined;
  return {
    engine,
    selection: targets.selection,
    ...judging,
    asOf: policy.asOf,
    concurrency: opts.concurrency,
    // A plan's run judges by the plan's lifetime (`withPlan`), never by a label's own threshold.
    ...(thresholdByProfile && !plan ? { thresholdByProfile } : {}),
    dryRun: run.dryRun,
    keepVolumes: run.keepVolumes,
    idle: policy.idle,
    ...(onlyIds ? { onlyIds } : {}),
    ...(run.signal ? { signal: run.signal } : {}),
    ...(run.deadlineMs !== undefined ? { deadlineMs: run.deadlineMs } : {}),
    // Sizes are measured only for an output that shows them (quiet text shows none; a metrics file has the total).
    measure: outputFormat(opts) !== 'quiet' || run.metrics,
    onEvent: (ev) => {
      run.progress.sweepEvent(engine.host, ev);
      run.reporter.sweepEvent(ev);
    },
  };
}

/** The sweep of every engine, what follows it (stamps, the plan file, metrics), and the report. */
async function sweepAndReport(run: ReapRun, record: RunRecord): Promise<number> {
  const { opts, targets, plan, policy, dryRun, reporter } = run;
  const engines = await connectEngines(targets.endpoints);
  run.progress.engines(engines.map((e) => e.host));
  // Before the sweep: a container it removes still counts as a use of its image.
  run.deadline.phase('recording image uses');
  await beforeSweep(run.passes, engines, passContext(run, []));
  await reporter.sweepStarting(dryRun ? 'Checking' : 'Reaping');
  run.deadline.phase('sweeping');
  const across = await acrossEngines(engines, (engine) => reap(sweepOf(run, engine)));
  const removed = across.results.flatMap((r) => r.removed).sort(byHostAndName);
  const stopped = across.results.flatMap((r) => r.stopped).sort(byHostAndName);
  const failed = across.results.flatMap((r) => r.failed).sort(byHostAndName);
  const kept = across.results.flatMap((r) => r.kept);
  if (plan) kept.push(...plannedButGone(run, across, [removed, stopped, kept, failed].flat()));
  kept.sort(byHostAndName);
  await recordSweep(run, across);
  if (opts.planOut) {
    refuseIncompletePlan(run, across);
    await writePlan(
      run,
      engines.map((e) => e.host),
      { removed, stopped },
    );
  }
  // Every engine, with whether it answered the sweep: one that did not might hold a container that uses what a pass removes.
  const answers = engines.map((engine, i) => ({
    engine,
    answered: across.hosts[i]!.reachable,
    ...(across.hosts[i]!.error ? { error: across.hosts[i]!.error! } : {}),
  }));
  const passes = await runPasses(PASSES, run.passes, passContext(run, answers), across.results, passWatcher(run));
  run.deadline.phase('reporting');
  record.passes = passes.gauges;

  // --timeout also bounds the passes: one it cut short is a run that timed out (exit 3), as a sweep's.
  const timedOut = across.timedOut || passesCutShort(passes.results);
  const code = sweepExitCode({ ...across, timedOut }, failed.length + passFailures(passes.results));
  record.success = code === ExitCode.OK;
  // An engine that could not be reached has no counts (absent series, not zeros).
  const reached = across.results.flatMap((result, i) => (across.hosts[i]!.reachable ? [{ host: engines[i]!.host, result }] : []));
  record.counts = countsByEngineAndProfile(reached, targets.selection.profile, dryRun);
  const report: ReapReport = {
    dryRun,
    asOf: policy.asOf,
    thresholdSeconds: policy.thresholdSeconds,
    profile: targets.selection.profile,
    stopIdle: policy.stopIdle,
    idleAfterSeconds: policy.idleAfterSeconds,
    removed,
    stopped,
    kept,
    failed,
    hosts: across.hosts,
    timedOut,
    timeoutSeconds: opts.timeout / 1000,
    warnings: [...new Set(across.results.flatMap((r) => r.warnings))],
    ...(opts.planOut ? { planOut: opts.planOut } : {}),
    failOpen: Boolean(opts.failOpen),
    passes: passes.results,
    ...(!plan && perProfileOf(policy) ? { perProfile: perProfileOf(policy)! } : {}),
  };
  report.reclaimed = (await import('../reclaimed.js')).reclaimed(report);
  withUntrusted(report, reporter);
  record.reclaimedBytes = report.reclaimed.total;
  run.deadline.writing();
  await reporter.reapResult(report);
  if (!opts.failOpen || code === ExitCode.OK) return code;
  reporter.failOpen(firstProblem(report));
  return ExitCode.OK;
}

/** The settings refused for the run: those not yet said as notices, and all of them in the report. */
function untrustedOf(reporter: Reporter): Pick<ReapReport, 'untrustedSettings'> {
  noticeUntrusted(reporter);
  const all = untrustedSettings();
  return all.length ? { untrustedSettings: all } : {};
}
function withUntrusted(report: ReapReport, reporter: Reporter): void {
  Object.assign(report, untrustedOf(reporter));
}

const planned = (plan: ReapPlan) => [...plan.containers, ...(plan.stops ?? [])];

/** Planned containers the engine no longer lists have gone (or stopped being removable candidates). */
function plannedButGone(run: ReapRun, across: AcrossEngines<ReapResult>, reported: SweepEntry[]): KeptEntry[] {
  const seen = new Set(reported.map((e) => e.id));
  const out: KeptEntry[] = [];
  across.results.forEach((r, i) => {
    if (r.interrupted) return;
    const host = across.hosts[i]!.host;
    for (const c of planned(run.plan!).filter((x) => x.host === host && !seen.has(x.id))) {
      const k: KeptEntry = {
        id: c.id,
        name: c.name,
        profile: run.targets.selection.profile,
        state: 'gone',
        finishedAt: '',
        ageSeconds: null,
        host: c.host,
        rule: null,
        reason: 'gone',
      };
      out.push(k);
      run.reporter.sweepEvent({ type: 'kept', entry: k });
    }
  });
  return out;
}

/** Stamps every engine whose sweep ran to its end (failures included), unless a dry run or a plan. */
async function recordSweep(run: ReapRun, across: AcrossEngines<ReapResult>): Promise<void> {
  if (run.dryRun || run.plan) return;
  const { home, selection, endpoints } = run.targets;
  const now = run.ctx.now();
  await Promise.all(
    across.results.map(async (r, i) => {
      if (r.interrupted) return;
      // What status judges the stamp's age against: --once-per is how often this run means to sweep.
      const more = { by: 'reap' as const, ...(run.opts.oncePer !== undefined ? { scheduleSeconds: run.opts.oncePer / 1000 } : {}) };
      await writeStamp(oncePerStamps(home.home, selection, [endpoints[i]!])[0]!, now, across.hosts[i]!.host, selection, more).catch((err) => {
        if (!run.opts.quiet) run.ctx.stderr.write(`hermes-janitor: warning: cannot record the sweep stamp (${escapeControls(errorMessage(err))})\n`);
      });
    }),
  );
}

/**
 * A plan is made only from a dry run that heard every engine to its end: one that an engine did not answer (or cut
 * off), or that timed out, would list too little and look valid. Exit 3 with one line, and no file written.
 */
function refuseIncompletePlan(run: ReapRun, across: AcrossEngines<ReapResult>): void {
  const silent = across.hosts.find((h) => !h.reachable);
  const why = silent
    ? `engine ${silent.host} did not answer (${silent.error ?? 'unknown error'})`
    : across.timedOut
      ? `the dry run timed out after --timeout ${run.opts.timeout / 1000}s`
      : null;
  if (why) throw new JanitorError(`no plan written to ${run.opts.planOut}: ${why}; make the plan again when every engine answers`, ExitCode.ENGINE);
}

/** `--plan-out FILE`: the exact ids the dry run would remove and stop, with engine, selection and policy. */
async function writePlan(run: ReapRun, hosts: string[], found: { removed: SweepEntry[]; stopped: SweepEntry[] }): Promise<void> {
  const { policy, targets } = run;
  const doc = buildPlan({
    now: run.ctx.now(),
    asOf: policy.asOf,
    thresholdSeconds: policy.thresholdSeconds,
    lifetimeSeconds: policy.lifetimeSeconds,
    hosts,
    selection: targets.selection,
    containers: found.removed,
    stops: found.stopped,
    home: targets.home.home,
    stopIdle: policy.stopIdle,
    idleAfterSeconds: policy.idleAfterSeconds,
    keepVolumes: run.keepVolumes,
    ...(policy.idleMaxProcesses !== undefined ? { idleMaxProcesses: policy.idleMaxProcesses } : {}),
  });
  // A new file renamed over the name: nothing planted there is written through (adapters/plan-file.ts).
  (await import('../../adapters/plan-file.js')).writePlanFile(run.opts.planOut!, `${JSON.stringify(doc, null, 2)}\n`);
}
