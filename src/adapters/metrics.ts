/**
 * Prometheus metrics of reap runs: the metric families (one definition, shared by `reap --metrics-file` and any
 * long-running service), filled from a run's results, and an atomic writer for node_exporter's textfile
 * collector. prom-client is loaded only when this module's functions run, never on a fast path.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fchmodSync, promises as fs, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { requirePackage } from '../util/require-package.js';
import path from 'node:path';
import { describeController, shown } from '../core/trust.js';
import { UsageError } from '../errors.js';
import { fdPath } from './dir-fd.js';
import { NAMES, type Walked, rootRules, walkDir } from './trust.js';
import type { Registry } from 'prom-client';
import type { Pass } from '../passes/types.js';

/** Counts of one engine and profile (and home) in one run. */
export interface EngineProfileCounts {
  host: string;
  profile: string;
  /**
   * The hermes home whose settings judged these containers (label `home`); absent: the run's own home (`RunMetrics.home`),
   * the only one of a run over one home.
   */
  home?: string;
  removed: number;
  stopped: number;
  kept: number;
  failed: number;
  /** Containers past their threshold still present after the run. */
  orphans: number;
}

/** What one run reports. */
export interface RunMetrics {
  /** When the run ended. */
  finishedAt: Date;
  durationSeconds: number;
  /** The run completed with no failure, every engine reachable, no timeout. */
  success: boolean;
  /** Per engine and profile; empty when the run ended before reaching an engine. */
  counts: EngineProfileCounts[];
  /** Each pass that gave gauges, in the list's order (a pass that did not: its families are left out). */
  passes?: ReadonlyArray<{ pass: Pass; gauges: unknown }>;
  /** What the run freed, in bytes (a dry run: would free); absent when the run swept nothing. */
  reclaimedBytes?: number;
  /**
   * The one hermes home the run was given (`--home`, `HERMES_HOME`, a profile's, the default): every series then carries
   * it as the label `home`, so that the files of runs over different homes never hold the same series (node_exporter's
   * textfile collector refuses that). Absent for a run over several homes: its run-wide series are that one run's, and
   * only the series that are per home (the container counts) carry a `home`, each its own.
   */
  home?: string;
  /** When the janitor was last known to be working (`hermes_janitor_heartbeat_timestamp_seconds`); default `finishedAt`. */
  heartbeatAt?: Date;
}

/** The labels every series of a run carries: its `home` when it was given one (`RunMetrics.home`). */
export function runLabels(run: Pick<RunMetrics, 'home'>): Record<string, string> {
  return run.home !== undefined ? { home: run.home } : {};
}

export const METRIC_FAMILIES = {
  lastRunTimestamp: {
    name: 'hermes_janitor_last_run_timestamp_seconds',
    help: 'When the last hermes-janitor reap run ended, as seconds since the Unix epoch.',
  },
  heartbeat: {
    name: 'hermes_janitor_heartbeat_timestamp_seconds',
    help:
      'When hermes-janitor was last known to be working, as seconds since the Unix epoch: the end of each reap run; in watch also every ' +
      'heartbeat (30 s by default) while it is idle and every engine is connected.',
  },
  lastRunDuration: { name: 'hermes_janitor_last_run_duration_seconds', help: 'How long the last reap run took, in seconds.' },
  reclaimedBytes: {
    name: 'hermes_janitor_last_run_reclaimed_bytes',
    help: "What the last reap run freed, in bytes: removed containers' writable layers and anonymous volumes, and what each cleanup pass removed.",
  },
  lastRunSuccess: {
    name: 'hermes_janitor_last_run_success',
    help: '1 when the last reap run completed with no failed removal, every engine reachable and no timeout; else 0.',
  },
  removed: { name: 'hermes_janitor_containers_removed', help: 'Containers removed by the last reap run, per engine and profile.' },
  stopped: { name: 'hermes_janitor_containers_stopped', help: 'Containers stopped by the last reap run, per engine and profile.' },
  kept: { name: 'hermes_janitor_containers_kept', help: 'Containers the last reap run looked at and kept, per engine and profile.' },
  failed: { name: 'hermes_janitor_containers_failed', help: 'Containers whose removal or stop failed in the last reap run, per engine and profile.' },
  orphans: {
    name: 'hermes_janitor_orphans',
    help: 'Containers past their threshold still present after the last reap run, per engine and profile.',
  },
} as const;

/** The labels of the per-engine, per-profile families (their `home`: the home that judged them, or the run's). */
const LABELS = ['host', 'profile', 'home'] as const;

/**
 * prom-client, loaded at its first use. With require, not import(): the CLI runs as a CommonJS bundle compiled by
 * bin/ (scripts/build-cli-bundle.cjs), where an import() would need Node.js's ES module loader.
 */
export const promClient = (): typeof import('prom-client') => requirePackage('prom-client') as typeof import('prom-client');

/** A registry of its own, with no default (process) metrics. */
export async function newMetricsRegistry(): Promise<Registry> {
  const { Registry } = promClient();
  return new Registry();
}

/**
 * Sets the families in `registry` from a run (creating them on first use; every label set of the previous run is
 * dropped, so an engine or profile that went away leaves no stale series).
 */
export async function fillRegistry(registry: Registry, run: RunMetrics): Promise<void> {
  const { Gauge } = promClient();
  const scope = runLabels(run);
  const gauge = (def: { name: string; help: string }, labelNames: readonly string[]) => {
    const existing = registry.getSingleMetric(def.name) as InstanceType<typeof Gauge> | undefined;
    const g = existing ?? new Gauge({ name: def.name, help: def.help, labelNames: [...labelNames], registers: [registry] });
    g.reset();
    return g;
  };
  const f = METRIC_FAMILIES;
  const runWide = Object.keys(scope);
  gauge(f.lastRunTimestamp, runWide).set(scope, run.finishedAt.getTime() / 1000);
  gauge(f.heartbeat, runWide).set(scope, (run.heartbeatAt ?? run.finishedAt).getTime() / 1000);
  gauge(f.lastRunDuration, runWide).set(scope, run.durationSeconds);
  gauge(f.lastRunSuccess, runWide).set(scope, run.success ? 1 : 0);
  const per = [
    [gauge(f.removed, LABELS), 'removed'],
    [gauge(f.stopped, LABELS), 'stopped'],
    [gauge(f.kept, LABELS), 'kept'],
    [gauge(f.failed, LABELS), 'failed'],
    [gauge(f.orphans, LABELS), 'orphans'],
  ] as const;
  for (const c of run.counts) {
    const home = c.home ?? run.home;
    const labels = { host: c.host, profile: c.profile, ...(home !== undefined ? { home } : {}) };
    for (const [g, key] of per) g.set(labels, c[key]);
  }
  for (const p of run.passes ?? []) await fillPassGauges(registry, p.pass, p.gauges, scope);
  if (run.reclaimedBytes !== undefined) gauge(f.reclaimedBytes, runWide).set(scope, run.reclaimedBytes);
}

/**
 * Sets a pass's families from its gauges (each created on first use, every series of the previous run dropped); a
 * family whose series are null (not measured) is taken out, so it shows no stale series. `scope`: the run's labels
 * (`runLabels`), on every series.
 */
export async function fillPassGauges(registry: Registry, pass: Pass, gauges: unknown, scope: Record<string, string> = {}): Promise<void> {
  if (!pass.metrics) return;
  const { Gauge } = promClient();
  const samples = pass.metrics.samples(gauges);
  for (const def of pass.metrics.families) {
    const series = samples[def.name];
    if (series === null || series === undefined) {
      registry.removeSingleMetric(def.name);
      continue;
    }
    const existing = registry.getSingleMetric(def.name) as InstanceType<typeof Gauge> | undefined;
    const g = existing ?? new Gauge({ name: def.name, help: def.help, labelNames: [...def.labelNames, ...Object.keys(scope)], registers: [registry] });
    g.reset();
    for (const s of series) g.set({ ...s.labels, ...scope }, s.value);
  }
}

/** The text exposition of one run. */
export async function metricsText(run: RunMetrics): Promise<string> {
  const registry = await newMetricsRegistry();
  await fillRegistry(registry, run);
  return registry.metrics();
}

/**
 * Writes `text` to `file` atomically: a temporary file in the same directory (named `.<name>.<random>.tmp`, which
 * node_exporter's textfile collector ignores), fsync, mode 0644 (node_exporter often runs as another user), rename.
 * A reader sees the old file or the new one, never a part. As root, by the log's trust rule (`metricsDirAsRoot`):
 * only in a directory nobody but root can change, reached without a symlink another user could have planted, the
 * temporary file made `O_EXCL|O_NOFOLLOW` and renamed relative to that directory's descriptor.
 */
export async function writeMetricsFile(file: string, text: string): Promise<void> {
  if (rootRules()) return writeAsRoot(file, text);
  const dir = path.dirname(path.resolve(file));
  const tmp = path.join(dir, tmpName(file));
  const handle = await fs.open(tmp, 'wx', 0o644);
  try {
    try {
      await handle.writeFile(text, 'utf8');
      await handle.chmod(0o644); // whatever the umask
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.unlink(tmp).catch(() => undefined);
    throw err;
  }
}

const tmpName = (file: string) => `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`;

/**
 * As root, the metrics file's directory, open (close it), by the rule the janitor's log follows (adapters/background.ts):
 * reached by a walk from `/` that follows a symlink only where nobody but root can change the directory holding it,
 * and itself, with every directory above it, changeable by nobody but root. Else a `UsageError`, one line naming the
 * file, who can change what, and the fix: the user who owns a directory on the way could otherwise swap the textfile
 * directory for a symlink to `/etc` and have root write there.
 */
export function metricsDirAsRoot(file: string, what = '--metrics-file'): number {
  const dir = path.dirname(path.resolve(file));
  const refuse = (why: string) => new UsageError(`${what} ${shown(path.resolve(file))} refused: ${why}`);
  let w: Walked;
  try {
    w = walkDir(dir);
  } catch (err) {
    throw refuse((err as Error).message);
  }
  const c = [...w.controllers.values()][0];
  if (w.missing || c) {
    closeSync(w.fd);
    throw refuse(
      w.missing
        ? `directory ${shown(dir)} does not exist: create it or point at node_exporter's --collector.textfile.directory`
        : `${describeController(c!.who, NAMES)} can change ${shown(c!.where)}: as root, hermes-janitor writes metrics only where nobody but ` +
            "root can replace them; make that directory root's and not writable by others (chown root, chmod go-w), or point elsewhere",
    );
  }
  return w.fd;
}

/** As root: the temporary file and the rename, relative to the checked directory's descriptor (synchronous). */
function writeAsRoot(file: string, text: string): void {
  const dirFd = metricsDirAsRoot(file);
  const tmp = tmpName(file);
  try {
    const fd = openSync(fdPath(dirFd, tmp), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
    try {
      writeSync(fd, text);
      fchmodSync(fd, 0o644);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(fdPath(dirFd, tmp), fdPath(dirFd, path.basename(file)));
  } catch (err) {
    try {
      unlinkSync(fdPath(dirFd, tmp));
    } catch {
      /* not made, or gone */
    }
    throw err;
  } finally {
    closeSync(dirFd);
  }
}
