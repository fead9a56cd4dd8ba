import type { Command } from 'commander';
import type { HeldLock } from '../../adapters/file-lock.js';
import { ensureJanitorDir, reapLockPath } from '../../adapters/janitor-files.js';
import type { Context } from '../../context.js';
import { ExitCode, UsageError, errorMessage } from '../../errors.js';
import { reaperDisabled } from '../../reaper/settings.js';
import type { WatchEvent } from '../../watch/engine-watcher.js';
import {
  type ActionOptions, type EngineCommandOptions, addActionOptions, addEngineOptions, connectEngines, discoverTargets, loadHomeConfig,
  resolvePolicy, resolveTargets,
} from '../engine-options.js';
import { ndjsonEvent, reapLine, whenOf } from '../render-containers.js';
import { type RunState, action, optionParser } from '../shared.js';

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
    .option('-n, --dry-run', 'remove nothing; log what would be removed')
    .option('--metrics-listen <host:port>', 'serve Prometheus metrics on /metrics and health on /healthz (200 while every engine is connected)', optionParser(parseListenOption))
    .addHelpText('after', HELP);
  addEngineOptions(addActionOptions(cmd)).action(action(state, (opts: WatchOptions, command: Command) => runWatch(opts, command, ctx)));
}

function parseListenOption(v: string): { host: string | undefined; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(v.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new UsageError(`--metrics-listen must be HOST:PORT (127.0.0.1:9464, :9464, [::1]:9464), got '${v}'`);
  }
  const host = m[1] ?? m[2];
  return { host: host || undefined, port };
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((r) => {
    const t = setTimeout(r, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), r()), { once: true });
  });

async function runWatch(opts: WatchOptions, command: Command, ctx: Context): Promise<number> {
  if (opts.json) throw new UsageError('watch streams its output: use --log-format json for NDJSON instead of --json');
  if (opts.asOf) throw new UsageError('--as-of does not apply to watch: it judges ages as of each moment it acts');
  (await import('../../watch/heap.js')).limitHeapGrowth();
  const targets = resolveTargets(command, opts, ctx);
  const { home, selection } = targets;
  const config = await loadHomeConfig(home);
  const policy = await resolvePolicy(opts, ctx, config, targets);
  const json = opts.logFormat === 'json';
  const line = (text: string): void => {
    ctx.stdout.write(`${ctx.now().toISOString()} ${text}\n`);
  };
  // --quiet: failures and changes of engine state only (a quiet service still says when it loses its engine).
  const out = (text: string) => {
    if (!opts.quiet) line(text);
  };
  const disabled = reaperDisabled(ctx.env, config);
  if (disabled) {
    const reason = `reaper disabled by ${disabled}`;
    if (json) ndjsonEvent(ctx, 'disabled', { disabled: true, reason });
    else if (!opts.quiet) ctx.stderr.write(`hermes-janitor: ${reason}; not watching\n`);
    return ExitCode.OK;
  }
  // --timeout bounds each full sweep in watch, and only when given.
  const sweepTimeoutMs = command.getOptionValueSource('timeout') === 'cli' ? opts.timeout : 0;
  const dryRun = Boolean(opts.dryRun);
  await discoverTargets(targets, opts, ctx);
  const { endpoints } = targets;

  // Stop on SIGTERM/SIGINT: no new work at once, in-flight requests get a grace period.
  const stopping = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopping.signal.aborted) return;
    if (json) ndjsonEvent(ctx, 'stopping', { signal: sig });
    else out(`stopping (${sig})`);
    stopping.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const locks: HeldLock[] = [];
  let closeServer: (() => Promise<void>) | undefined;
  try {
    // The reap lock of this home, per engine, for as long as watch runs (unless a dry run).
    if (!dryRun) {
      await ensureJanitorDir(home.home);
      const { acquireLock, lockHolder } = await import('../../adapters/file-lock.js');
      for (const e of endpoints) {
        const lockPath = reapLockPath(home.home, e.host);
        let told = false;
        for (;;) {
          const lock = await acquireLock(lockPath, { waitMs: 0 });
          if (lock) {
            locks.push(lock);
            break;
          }
          if (!told) {
            const holder = await lockHolder(lockPath);
            const who = holder ? `pid ${holder.pid} on ${holder.host} since ${holder.acquiredAt}` : 'another process';
            if (json) ndjsonEvent(ctx, 'waiting-for-lock', { host: e.host, holder });
            else out(`waiting for the reap lock of ${e.host}, held by ${who}`);
            told = true;
          }
          await sleep(1000, stopping.signal);
          if (stopping.signal.aborted) return ExitCode.OK;
        }
      }
    }

    const engines = await connectEngines(endpoints);
    const showHost = engines.length > 1;
    const profileOf = (p: string | null) => p ?? selection.profile ?? '';
    const metrics = opts.metricsListen ? await (await import('../../watch/metrics.js')).createWatchMetrics(profileOf) : null;
    const { WatchService } = await import('../../watch/service.js');

    const report = (ev: WatchEvent) => {
      metrics?.observe(ev);
      logEvent(ev);
    };
    const service = new WatchService(
      engines,
      { selection, thresholdSeconds: policy.thresholdSeconds, concurrency: opts.concurrency, dryRun, sweepTimeoutMs, idle: policy.idle, keepVolumes: Boolean(opts.keepVolumes) },
      report,
    );
    const warned = new Set<string>();
    /** Sandboxes last reported in use, with their process count: said once, again when the count changes. */
    const inUseSaid = new Map<string, number | null | undefined>();
    const inUseNews = (e: { id: string; idleReason?: string; processes?: number | null }): boolean => {
      if (e.idleReason !== 'in-use') {
        inUseSaid.delete(e.id);
        return false;
      }
      if (inUseSaid.has(e.id) && inUseSaid.get(e.id) === e.processes) return false;
      inUseSaid.set(e.id, e.processes);
      return true;
    };

    function logEvent(ev: WatchEvent): void {
      if (opts.quiet && ev.type !== 'failed' && ev.type !== 'engine') return;
      if ((ev.type === 'sweep' || ev.type === 'deadline-check') && !opts.quiet) {
        // A warning (idle.json unreadable or unwritable) once per text, not at every deadline.
        for (const w of ev.warnings) {
          if (warned.has(w)) continue;
          warned.add(w);
          if (json) ndjsonEvent(ctx, 'warning', { message: w });
          else ctx.stderr.write(`${ctx.now().toISOString()} warning: ${w}\n`);
        }
      }
      // A running sandbox kept at an idle check is not news (a busy one is checked after every exec), except the
      // first time it is kept in use (a process of its own) with that many processes.
      if (ev.type === 'kept' && ev.entry.reason === 'running' && !inUseNews(ev.entry)) return;
      if (json) {
        switch (ev.type) {
          case 'event':
            return;
          case 'removed':
            return ndjsonEvent(ctx, ev.dryRun ? 'would-remove' : 'removed', { ...ev.entry, trigger: ev.trigger });
          case 'stopped':
            return ndjsonEvent(ctx, ev.dryRun ? 'would-stop' : 'stopped', { ...ev.entry, trigger: ev.trigger });
          case 'failed':
          case 'kept':
            return ndjsonEvent(ctx, ev.type, { ...ev.entry, trigger: ev.trigger });
          case 'engine':
            return ndjsonEvent(ctx, 'engine', { host: ev.host, state: ev.state, error: ev.error ?? null, ...(ev.retryInMs !== undefined ? { retryInSeconds: ev.retryInMs / 1000 } : {}) });
          case 'sweep':
            return ndjsonEvent(ctx, 'sweep', {
              host: ev.host, removed: ev.removed, stopped: ev.stopped, kept: ev.kept, failed: ev.failed, tracked: ev.tracked,
              durationSeconds: ev.durationMs / 1000, interrupted: ev.interrupted, ...(ev.warnings.length ? { warnings: ev.warnings } : {}),
            });
          case 'deadline-check':
            return;
        }
      }
      switch (ev.type) {
        case 'removed':
          return out(reapLine(ev.dryRun ? 'Would remove' : 'removed', ev.entry, whenOf(ev.entry), showHost));
        case 'stopped':
          return out(reapLine(ev.dryRun ? 'Would stop' : 'stopped', ev.entry, whenOf(ev.entry), showHost));
        case 'failed':
          ctx.stderr.write(`${ctx.now().toISOString()} ${reapLine('failed', ev.entry, whenOf(ev.entry), showHost)}\n`);
          return;
        case 'kept':
          if (ev.entry.idleReason === 'in-use') return out(reapLine('kept', ev.entry, `in use: ${ev.entry.processes} processes`, showHost));
          return;
        case 'engine':
          if (ev.state === 'connected') return line(`engine ${ev.host}: connected`);
          if (ev.state === 'disconnected') {
            return line(`engine ${ev.host}: disconnected (${ev.error ?? 'unknown error'}); retrying in ${(ev.retryInMs ?? 0) / 1000}s and then with backoff up to 30s`);
          }
          return;
        case 'sweep':
          return out(
            `swept ${ev.host}: removed ${ev.removed}, stopped ${ev.stopped}, kept ${ev.kept}, failed ${ev.failed}; ${ev.tracked} awaiting their deadline or idle check (${(ev.durationMs / 1000).toFixed(2)} s)`,
          );
        default:
          return;
      }
    }

    if (opts.metricsListen) {
      const { serveMetrics } = await import('../../watch/metrics.js');
      try {
        const srv = await serveMetrics(opts.metricsListen, metrics, () => service.healthy, () => {
          for (const w of service.watchers) metrics?.setTracked(w.host, w.tracked);
        });
        closeServer = srv.close;
        if (json) ndjsonEvent(ctx, 'metrics', { url: srv.url });
        else out(`metrics on ${srv.url}/metrics, health on ${srv.url}/healthz`);
      } catch (err) {
        throw new UsageError(`cannot listen on --metrics-listen ${opts.metricsListen.host ?? ''}:${opts.metricsListen.port} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}): pick a free address`);
      }
    }
    const scope = selection.profile === null ? 'all profiles' : `profile ${selection.profile}`;
    if (json) {
      ndjsonEvent(ctx, 'started', {
        hosts: engines.map((e) => e.host), thresholdSeconds: policy.thresholdSeconds, profile: selection.profile, dryRun,
        stopIdle: policy.stopIdle, idleAfterSeconds: policy.idleAfterSeconds, pid: process.pid,
      });
    } else {
      const idleText = policy.stopIdle ? `stops sandboxes idle ${policy.idleAfterSeconds} s` : 'idle sandboxes not stopped';
      out(`watching ${engines.map((e) => e.host).join(', ')} (threshold ${policy.thresholdSeconds} s, ${idleText}, ${scope}${dryRun ? ', dry run' : ''})`);
    }
    const done = service.run();
    if (!stopping.signal.aborted) await new Promise<void>((r) => stopping.signal.addEventListener('abort', () => r(), { once: true }));
    await service.stop();
    await done;
    if (json) ndjsonEvent(ctx, 'shutdown', { tracked: service.tracked });
    else out(`stopped (${service.tracked} container(s) were awaiting their deadline)`);
    return ExitCode.OK;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await closeServer?.();
    await Promise.all(locks.map((l) => l.release()));
  }
}
