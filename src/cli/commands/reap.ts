import { promises as fs } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Command } from 'commander';
import { type HeldLock, acquireLock } from '../../adapters/file-lock.js';
import { ensureJanitorDir, logFile, reapLockPath, stampFresh, stampPath, writeStamp } from '../../adapters/janitor-files.js';
import type { Context } from '../../context.js';
import { parseDuration, parseWholeNumber } from '../../core/parse-args.js';
import { thresholdSeconds } from '../../core/policy.js';
import { ExitCode, JanitorError, UsageError, errorMessage } from '../../errors.js';
import { type ReapPlan, buildPlan, parsePlan, planDisagreements, planSelection } from '../../reaper/plan.js';
import { acrossEngines, sweepExitCode } from '../../reaper/run.js';
import { reaperDisabled } from '../../reaper/settings.js';
import { countsByEngineAndProfile } from '../../reaper/run-metrics.js';
import type { EngineProfileCounts } from '../../adapters/metrics.js';
import { ENV_METRICS_FILE } from '../../defaults.js';
import { type KeptEntry, reap } from '../../reaper/sweep.js';
import { resolveEngines, stampKey } from '../../adapters/docker-context.js';
import {
  type ActionOptions, type EngineCommandOptions, type EngineTargets, addActionOptions, addEngineOptions, connectEngines, discoverTargets, loadHomeConfig, resolvePolicy, resolveTargets,
  timeoutSignal,
} from '../engine-options.js';
import { byHostAndName, eventSink, hostProblems, ndjsonEvent, reapLine, startProgress, sweepEventToNdjson, whenOf } from '../render-containers.js';
import { type RunState, action, optionParser, writeJson } from '../shared.js';

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
  attempted?: boolean;
  success?: boolean;
  counts?: EngineProfileCounts[];
}

const HELP = `
Exit codes: 0 done (also when disabled, skipped for a fresh --once-per stamp, or locked by another reap);
            1 at least one removal or stop failed (the rest were processed); 2 bad usage or input;
            3 engine unreachable, or the run timed out (--fail-open turns 1 and 3 into 0)`;

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = program
    .command('reap')
    .description(
      'Remove exited and never-started hermes-agent containers older than the threshold (never forced, with their anonymous volumes), and stop running sandboxes proven idle.',
    )
    .option('-n, --dry-run', 'remove nothing; report what would be removed')
    .option('--once-per <duration>', 'skip at once (no engine contact) if a sweep completed within this duration: 90s, 30m, 1h, 1d', optionParser((v) => parseDuration(v, '--once-per')))
    .option('--fail-open', 'exit 0 on an unreachable engine, a timeout, failed removals or any unexpected error (one line on stderr)')
    .option('--background', 'detach at once; the run writes to <home>/logs/janitor.log')
    .option('--wait', 'wait (within --timeout) for another reap of this home and engine instead of skipping')
    .option('--plan-out <file>', 'with --dry-run: write the exact ids it would remove, with engine, selection and policy')
    .option('--plan <file>', 'remove only the ids in this plan (engine, selection and policy come from it), each re-checked now')
    .option('--metrics-file <path>', `at the end of every run, write a Prometheus text file there (atomically, mode 0644) for node_exporter's textfile collector (default: $${ENV_METRICS_FILE})`)
    .addHelpText('after', HELP);
  addEngineOptions(addActionOptions(cmd)).action(
    action(state, async (opts: ReapOptions, command: Command) => {
      const metricsFile = await checkMetricsFile(opts.metricsFile ?? (ctx.env[ENV_METRICS_FILE] || undefined), opts.metricsFile ? '--metrics-file' : ENV_METRICS_FILE);
      const started = performance.now();
      const record: RunRecord = {};
      let code: number | undefined;
      try {
        code = await runReap(opts, command, ctx, record);
        return code;
      } catch (err) {
        if (!opts.failOpen || err instanceof UsageError) throw err;
        if (!opts.quiet) ctx.stderr.write(`hermes-janitor: reap did not complete (${errorMessage(err)}); continuing (--fail-open)\n`);
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
  if (!st?.isDirectory()) throw new UsageError(`${what} ${file}: directory ${dir} does not exist: create it or point at node_exporter's --collector.textfile.directory`);
  if ((await fs.stat(file).catch(() => null))?.isDirectory()) throw new UsageError(`${what} ${file} is a directory: give a file path ending in .prom`);
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
    });
    await writeMetricsFile(file, text);
  } catch (err) {
    if (!quiet) ctx.stderr.write(`hermes-janitor: warning: cannot write the metrics file ${file} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})\n`);
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
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read plan ${file} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}): give the file written by --plan-out`);
  }
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
  if (plan.home && !homeGiven) targets.home = { ...targets.home, home: plan.home };
  targets.endpoints = resolveEngines(plan.hosts, undefined, ctx.env, ctx.homedir);
  return plan;
}

async function runReap(opts: ReapOptions, command: Command, ctx: Context, record: RunRecord): Promise<number> {
  checkCombinations(opts);
  const targets = resolveTargets(command, opts, ctx);
  const plan = opts.plan ? await applyPlanTargets(opts, command, ctx, targets) : undefined;
  const { home, selection } = targets;
  let { endpoints } = targets;
  const hostList = () => endpoints.map((e) => ({ host: e.host, reachable: null, error: null }));

  // Fast path for shell start-up: fresh stamps for every engine mean nothing to do, without touching the engine.
  if (opts.oncePer !== undefined) {
    const now = ctx.now();
    if (endpoints.every((e) => stampFresh(stampPath(home.home, stampKey(e), selection), now, opts.oncePer!))) {
      if (opts.json) writeJson(ctx, { skipped: 'fresh', oncePerSeconds: opts.oncePer / 1000, hosts: hostList() });
      else if (opts.logFormat === 'json') ndjsonEvent(ctx, 'skipped', { skipped: 'fresh', hosts: hostList() });
      return ExitCode.OK;
    }
  }

  if (opts.background) {
    const { detachToLog } = await import('../../adapters/background.js');
    const args = ctx.argv.filter((a) => a !== '--background');
    const pid = await detachToLog(args, logFile(home.home), ctx.env, ctx.now());
    if (!opts.quiet && !opts.json) ctx.stderr.write(`hermes-janitor: reaping in the background (pid ${pid}); log: ${logFile(home.home)}\n`);
    if (opts.json) writeJson(ctx, { background: true, pid: pid ?? null, log: logFile(home.home) });
    return ExitCode.OK;
  }

  const config = await loadHomeConfig(home);
  const disabled = reaperDisabled(ctx.env, config);
  if (disabled) {
    const reason = `reaper disabled by ${disabled}`;
    if (opts.json) writeJson(ctx, { disabled: true, reason });
    else if (opts.logFormat === 'json') ndjsonEvent(ctx, 'disabled', { disabled: true, reason });
    else if (!opts.quiet) ctx.stderr.write(`hermes-janitor: ${reason}; nothing done\n`);
    return ExitCode.OK;
  }
  const policy = await resolvePolicy(
    plan
      ? {
          ...opts,
          lifetime: plan.lifetimeSeconds,
          ...(plan.idleAfterSeconds !== undefined ? { idleAfter: plan.idleAfterSeconds * 1000 } : {}),
          ...(plan.stopIdle !== undefined && opts.stopIdle === undefined ? { stopIdle: plan.stopIdle } : {}),
          ...(plan.idleMaxProcesses !== undefined ? { idleMaxProcesses: plan.idleMaxProcesses } : {}),
        }
      : opts,
    ctx,
    config,
    targets,
  );
  const keepVolumes = Boolean(opts.keepVolumes || (plan?.keepVolumes && command.getOptionValueSource('keepVolumes') !== 'cli'));
  const dryRun = Boolean(opts.dryRun);
  const signal = timeoutSignal(opts);
  record.attempted = true;
  await discoverTargets(targets, opts, ctx);
  endpoints = targets.endpoints;

  // One reap per home and engine at a time (dry runs take no lock).
  const locks: HeldLock[] = [];
  if (!dryRun) {
    await ensureJanitorDir(home.home);
    for (const e of endpoints) {
      const lockPath = reapLockPath(home.home, e.host);
      const lock = await acquireLock(lockPath, { waitMs: opts.wait ? (opts.timeout > 0 ? opts.timeout : Infinity) : 0, ...(signal ? { signal } : {}) });
      if (!lock) {
        record.attempted = false; // another reap of this home and engine runs and writes the metrics
        await Promise.all(locks.map((l) => l.release()));
        const { lockHolder } = await import('../../adapters/file-lock.js');
        const holder = await lockHolder(lockPath);
        const who = holder ? `pid ${holder.pid} on ${holder.host} since ${holder.acquiredAt}` : 'another process';
        if (opts.wait && signal?.aborted) {
          if (opts.json) writeJson(ctx, { skipped: 'locked', timedOut: true, holder, hosts: hostList() });
          else if (!(opts.quiet && opts.failOpen)) ctx.stderr.write(`hermes-janitor: timed out waiting for another reap of ${e.host} (${who})\n`);
          return opts.failOpen ? ExitCode.OK : ExitCode.ENGINE;
        }
        if (opts.json) writeJson(ctx, { skipped: 'locked', holder, hosts: hostList() });
        else if (opts.logFormat === 'json') ndjsonEvent(ctx, 'skipped', { skipped: 'locked', holder });
        else if (!opts.quiet) ctx.stderr.write(`hermes-janitor: another reap is running for this home on ${e.host} (${who}); skipped\n`);
        return ExitCode.OK;
      }
      locks.push(lock);
    }
  }

  try {
    const engines = await connectEngines(endpoints);
    const human = !opts.json && opts.logFormat === 'text';
    const progress = await startProgress(ctx, human && !opts.quiet, dryRun ? 'Checking' : 'Reaping');
    const across = await acrossEngines(engines, (engine) =>
      reap({
        engine,
        selection,
        thresholdSeconds: policy.thresholdSeconds,
        asOf: policy.asOf,
        concurrency: opts.concurrency,
        dryRun,
        keepVolumes,
        idle: policy.idle,
        ...(plan ? { onlyIds: new Set([...plan.containers, ...(plan.stops ?? [])].filter((c) => c.host === engine.host).map((c) => c.id)) } : {}),
        ...(signal ? { signal } : {}),
        onEvent: eventSink(ctx, progress, opts.logFormat),
      }),
    );
    progress.stop();

    const removed = across.results.flatMap((r) => r.removed).sort(byHostAndName);
    const stopped = across.results.flatMap((r) => r.stopped).sort(byHostAndName);
    const warnings = [...new Set(across.results.flatMap((r) => r.warnings))];
    const kept = across.results.flatMap((r) => r.kept);
    const failed = across.results.flatMap((r) => r.failed).sort(byHostAndName);
    if (plan) {
      // Planned containers the engine no longer lists have gone (or stopped being removable candidates).
      const seen = new Set([...removed, ...stopped, ...kept, ...failed].map((e) => e.id));
      across.results.forEach((r, i) => {
        if (r.interrupted) return;
        for (const c of [...plan.containers, ...(plan.stops ?? [])].filter((x) => x.host === engines[i]!.host && !seen.has(x.id))) {
          const k: KeptEntry = {
            id: c.id, name: c.name, profile: selection.profile, state: 'gone', finishedAt: '', ageSeconds: null, host: c.host, rule: null, reason: 'gone',
          };
          kept.push(k);
          if (opts.logFormat === 'json') sweepEventToNdjson(ctx, { type: 'kept', entry: k });
        }
      });
    }
    kept.sort(byHostAndName);

    // Stamp every engine whose sweep ran to its end (failures included), unless dry run or plan.
    if (!dryRun && !plan) {
      const now = ctx.now();
      await Promise.all(
        across.results.map(async (r, i) => {
          if (r.interrupted) return;
          await writeStamp(stampPath(home.home, stampKey(endpoints[i]!), selection), now, engines[i]!.host, selection).catch((err) => {
            if (!opts.quiet) ctx.stderr.write(`hermes-janitor: warning: cannot record the sweep stamp (${errorMessage(err)})\n`);
          });
        }),
      );
    }
    if (opts.planOut) {
      const doc = buildPlan({
        now: ctx.now(), asOf: policy.asOf, thresholdSeconds: policy.thresholdSeconds, lifetimeSeconds: policy.lifetimeSeconds,
        hosts: engines.map((e) => e.host), selection, containers: removed, stops: stopped,
        home: home.home, stopIdle: policy.stopIdle, idleAfterSeconds: policy.idleAfterSeconds, keepVolumes,
        ...(policy.idleMaxProcesses !== undefined ? { idleMaxProcesses: policy.idleMaxProcesses } : {}),
      });
      await fs.writeFile(opts.planOut, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600 }).catch((err: NodeJS.ErrnoException) => {
        throw new JanitorError(`cannot write plan ${opts.planOut} (${err.code ?? err.message})`, ExitCode.FAILED);
      });
    }

    const code = sweepExitCode(across, failed.length);
    record.success = code === ExitCode.OK;
    record.counts = countsByEngineAndProfile(
      // An engine that could not be reached has no counts (absent series, not zeros).
      across.results.flatMap((result, i) => (across.hosts[i]!.reachable ? [{ host: engines[i]!.host, result }] : [])),
      selection.profile,
      dryRun,
    );
    const summary = {
      dryRun, asOf: policy.asOf.toISOString(), thresholdSeconds: policy.thresholdSeconds, profile: selection.profile,
      stopIdle: policy.stopIdle, idleAfterSeconds: policy.idleAfterSeconds,
    };
    if (opts.json) {
      writeJson(ctx, {
        ...summary, removed, stopped, kept, failed, hosts: across.hosts, timedOut: across.timedOut,
        ...(opts.planOut ? { planOut: opts.planOut } : {}), ...(warnings.length ? { warnings } : {}),
      });
      return failOpen(opts, ctx, code, null);
    }
    if (opts.logFormat === 'json') {
      for (const w of warnings) ndjsonEvent(ctx, 'warning', { message: w });
      ndjsonEvent(ctx, 'summary', {
        ...summary, removed: removed.length, stopped: stopped.length, kept: kept.length, failed: failed.length, hosts: across.hosts,
        timedOut: across.timedOut,
      });
      return failOpen(opts, ctx, code, null);
    }
    if (!opts.quiet) for (const w of warnings) ctx.stderr.write(`hermes-janitor: warning: ${w}\n`);
    const showHost = engines.length > 1;
    // With --quiet only failures are printed: no relative times (luxon) for 100k removed containers.
    const problems = [
      ...hostProblems(across.hosts),
      ...(across.timedOut ? [`timed out after --timeout ${opts.timeout / 1000}s; stopped early`] : []),
    ];
    if (!opts.failOpen) {
      for (const line of problems) ctx.stderr.write(`hermes-janitor: ${line}\n`);
      for (const f of failed) ctx.stderr.write(`${reapLine('failed', f, whenOf(f), showHost)}\n`);
    }
    // What was removed before an engine went away mid-sweep is still reported.
    const anything = removed.length + stopped.length + kept.length + failed.length > 0;
    if (!opts.quiet && (anything || !across.hosts.every((h) => !h.reachable))) {
      for (const r of removed) ctx.stdout.write(`${reapLine(dryRun ? 'Would remove' : 'removed', r, whenOf(r), showHost)}\n`);
      for (const r of stopped) ctx.stdout.write(`${reapLine(dryRun ? 'Would stop' : 'stopped', r, whenOf(r), showHost)}\n`);
      const scope = selection.profile === null ? 'all profiles' : `profile ${selection.profile}`;
      ctx.stdout.write(
        `${dryRun ? 'Would remove' : 'Removed'} ${removed.length}, ${dryRun ? 'would stop' : 'stopped'} ${stopped.length}, kept ${kept.length}, failed ${failed.length} (threshold ${policy.thresholdSeconds} s, ${scope}${dryRun ? ', dry run' : ''}).\n`,
      );
    }
    const firstProblem = problems[0] ?? (failed[0] ? `${failed.length} removal(s) or stop(s) failed, first: ${failed[0].id.slice(0, 12)}: ${failed[0].error}` : null);
    return failOpen(opts, ctx, code, firstProblem);
  } finally {
    await Promise.all(locks.map((l) => l.release()));
  }
}

/** With --fail-open, failures and engine problems exit 0 with at most one line on stderr (none with --quiet). */
function failOpen(opts: ReapOptions, ctx: Context, code: number, problem: string | null): number {
  if (!opts.failOpen || code === ExitCode.OK) return code;
  if (!opts.quiet && problem && !opts.json && opts.logFormat === 'text') ctx.stderr.write(`hermes-janitor: ${problem} (--fail-open: exit 0)\n`);
  return ExitCode.OK;
}
