/**
 * Prometheus metrics of reap runs: the metric families (one definition, shared by `reap --metrics-file` and any
 * long-running service), filled from a run's results, and an atomic writer for node_exporter's textfile
 * collector. prom-client is loaded only when this module's functions run, never on a fast path.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Registry } from 'prom-client';

/** Counts of one engine and profile in one run. */
export interface EngineProfileCounts {
  host: string;
  profile: string;
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
  /** The home's sandbox directories, when they were measured (absent: those families are left out). */
  sandboxDirs?: SandboxDirGauges;
  /** The image pass, when it ran (absent: those families are left out). */
  images?: ImageGauges;
  /** Abandoned exec trees of the run, by what came of them (absent: the family is left out). */
  execTrees?: ExecTreeCounts;
  /** hermes' shell snapshots per temp directory, when the pass ran (absent: that family is left out). */
  shellSnapshots?: ShellSnapshotGauges[];
  /** What the run freed, in bytes (a dry run: would free); absent when the run swept nothing. */
  reclaimedBytes?: number;
}

/** The image pass's outcome (`--images-over`): counts by state, and the bytes the counted images take after it. */
export interface ImageGauges {
  used: number;
  removed: number;
  kept: number;
  failed: number;
  /** Null when not measured. */
  bytes: number | null;
}

/** How many exec trees past the bound a run ended, kept and failed to end. */
export interface ExecTreeCounts {
  ended: number;
  kept: number;
  failed: number;
}

/** One temp directory's shell snapshots: found by the run, abandoned (removed, or would be), holding secret-looking names. */
export interface ShellSnapshotGauges {
  dir: string;
  found: number;
  abandoned: number;
  withSecretNames: number;
}

/** Task directories under the sandbox root some container uses, and those none uses (null: not known). */
export interface SandboxDirGauges {
  used: { count: number; bytes: number } | null;
  unused: { count: number; bytes: number } | null;
}

export const METRIC_FAMILIES = {
  lastRunTimestamp: {
    name: 'hermes_janitor_last_run_timestamp_seconds',
    help: 'When the last hermes-janitor reap run ended, as seconds since the Unix epoch.',
  },
  lastRunDuration: { name: 'hermes_janitor_last_run_duration_seconds', help: 'How long the last reap run took, in seconds.' },
  reclaimedBytes: {
    name: 'hermes_janitor_last_run_reclaimed_bytes',
    help: "What the last reap run freed, in bytes: removed containers' writable layers and anonymous volumes, images, sandbox directories, shell snapshots.",
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
  execTrees: {
    name: 'hermes_janitor_exec_trees',
    help: 'docker exec trees of running sandboxes the last reap run found past the bound, by state="ended"|"kept"|"failed".',
  },
  sandboxDirs: {
    name: 'hermes_janitor_sandbox_dirs',
    help: 'Task directories hermes left under the sandbox root, by whether some container uses them (state="used"|"unused"); absent while not every engine answered.',
  },
  sandboxDirBytes: {
    name: 'hermes_janitor_sandbox_dir_bytes',
    help: 'Size on disk (allocated bytes) of the task directories under the sandbox root, by state="used"|"unused"; absent while not every engine answered.',
  },
  images: {
    name: 'hermes_janitor_images',
    help: 'Images the image budget counts (hermes used, or all with --all-images), by state: "used" (still there after the pass), and what the last pass "removed", "kept" and "failed" on.',
  },
  imageBytes: {
    name: 'hermes_janitor_image_bytes',
    help: 'Bytes the counted images take after the last image pass (unique sizes, shared layers once, from GET /system/df); absent when not measured.',
  },
  shellSnapshots: {
    name: 'hermes_janitor_shell_snapshots',
    help: 'hermes shell snapshots in a temp directory at the last reap run, by state="found"|"abandoned"|"with_secret_names" (abandoned ones are removed unless --keep-shell-snapshots or a dry run).',
  },
} as const;

const LABELS = ['host', 'profile'] as const;

/** A registry of its own, with no default (process) metrics. */
export async function newMetricsRegistry(): Promise<Registry> {
  const { Registry } = await import('prom-client');
  return new Registry();
}

/**
 * Sets the families in `registry` from a run (creating them on first use; every label set of the previous run is
 * dropped, so an engine or profile that went away leaves no stale series).
 */
export async function fillRegistry(registry: Registry, run: RunMetrics): Promise<void> {
  const { Gauge } = await import('prom-client');
  const gauge = (def: { name: string; help: string }, labelled: boolean) => {
    const existing = registry.getSingleMetric(def.name) as InstanceType<typeof Gauge> | undefined;
    const g = existing ?? new Gauge({ name: def.name, help: def.help, labelNames: labelled ? [...LABELS] : [], registers: [registry] });
    g.reset();
    return g;
  };
  const f = METRIC_FAMILIES;
  gauge(f.lastRunTimestamp, false).set(run.finishedAt.getTime() / 1000);
  gauge(f.lastRunDuration, false).set(run.durationSeconds);
  gauge(f.lastRunSuccess, false).set(run.success ? 1 : 0);
  const per = [
    [gauge(f.removed, true), 'removed'],
    [gauge(f.stopped, true), 'stopped'],
    [gauge(f.kept, true), 'kept'],
    [gauge(f.failed, true), 'failed'],
    [gauge(f.orphans, true), 'orphans'],
  ] as const;
  for (const c of run.counts) {
    for (const [g, key] of per) g.set({ host: c.host, profile: c.profile }, c[key]);
  }
  if (run.sandboxDirs) await fillSandboxDirGauges(registry, run.sandboxDirs);
  if (run.images) await fillImageGauges(registry, run.images);
  if (run.execTrees) {
    const def = METRIC_FAMILIES.execTrees;
    const existing = registry.getSingleMetric(def.name) as InstanceType<typeof Gauge> | undefined;
    const g = existing ?? new Gauge({ name: def.name, help: def.help, labelNames: ['state'], registers: [registry] });
    g.reset();
    for (const state of ['ended', 'kept', 'failed'] as const) g.set({ state }, run.execTrees[state]);
  }
  if (run.shellSnapshots) await fillShellSnapshotGauges(registry, run.shellSnapshots);
  if (run.reclaimedBytes !== undefined) gauge(f.reclaimedBytes, false).set(run.reclaimedBytes);
}

/** Sets the image families (`hermes_janitor_images{state}`, `hermes_janitor_image_bytes`). */
export async function fillImageGauges(registry: Registry, images: ImageGauges): Promise<void> {
  const { Gauge } = await import('prom-client');
  const gauge = (def: { name: string; help: string }, labelNames: string[]) => {
    const existing = registry.getSingleMetric(def.name) as InstanceType<typeof Gauge> | undefined;
    const g = existing ?? new Gauge({ name: def.name, help: def.help, labelNames, registers: [registry] });
    g.reset();
    return g;
  };
  const count = gauge(METRIC_FAMILIES.images, ['state']);
  for (const state of ['used', 'removed', 'kept', 'failed'] as const) count.set({ state }, images[state]);
  if (images.bytes !== null) gauge(METRIC_FAMILIES.imageBytes, []).set(images.bytes);
  else registry.removeSingleMetric(METRIC_FAMILIES.imageBytes.name); // not measured: no series, not a stale one
}

/** Sets the shell-snapshot family (`temp_dir`, `state="found"|"abandoned"|"with_secret_names"`), created on first use. */
export async function fillShellSnapshotGauges(registry: Registry, dirs: readonly ShellSnapshotGauges[]): Promise<void> {
  const { Gauge } = await import('prom-client');
  const def = METRIC_FAMILIES.shellSnapshots;
  const existing = registry.getSingleMetric(def.name) as InstanceType<typeof Gauge> | undefined;
  const g = existing ?? new Gauge({ name: def.name, help: def.help, labelNames: ['temp_dir', 'state'], registers: [registry] });
  g.reset();
  for (const d of dirs) {
    g.set({ temp_dir: d.dir, state: 'found' }, d.found);
    g.set({ temp_dir: d.dir, state: 'abandoned' }, d.abandoned);
    g.set({ temp_dir: d.dir, state: 'with_secret_names' }, d.withSecretNames);
  }
}

/** Sets the sandbox-directory families (`state="used"|"unused"`); a state that is not known has no series. */
export async function fillSandboxDirGauges(registry: Registry, dirs: SandboxDirGauges): Promise<void> {
  const { Gauge } = await import('prom-client');
  const gauge = (def: { name: string; help: string }) => {
    const existing = registry.getSingleMetric(def.name) as InstanceType<typeof Gauge> | undefined;
    const g = existing ?? new Gauge({ name: def.name, help: def.help, labelNames: ['state'], registers: [registry] });
    g.reset();
    return g;
  };
  const count = gauge(METRIC_FAMILIES.sandboxDirs);
  const bytes = gauge(METRIC_FAMILIES.sandboxDirBytes);
  for (const state of ['used', 'unused'] as const) {
    const v = dirs[state];
    if (!v) continue;
    count.set({ state }, v.count);
    bytes.set({ state }, v.bytes);
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
 * A reader sees the old file or the new one, never a part.
 */
export async function writeMetricsFile(file: string, text: string): Promise<void> {
  const dir = path.dirname(path.resolve(file));
  const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
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
