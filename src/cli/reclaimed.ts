/**
 * What a reap freed, as `docker container prune` ends with "Total reclaimed space": the writable layers of the
 * containers it removed and their anonymous volumes, as the engine measured them right before the sweep (`docker ps
 * -s`'s SizeRw, `docker system df`'s volume sizes), the images it removed (their unique size), the sandbox
 * directories (their blocks on disk) and the shell snapshots (their bytes). A dry run: what it would free.
 */
import { type EngineClient, anonymousVolumes, hasSpaceCalls } from '../adapters/engine.js';
import { engineLabelFilters, type Selection } from '../core/selection.js';
import { errorMessage } from '../errors.js';
import type { SandboxDirsResult } from '../reaper/sandbox-dirs.js';
import type { ShellSnapshotsResult } from '../reaper/shell-snapshots.js';
import type { SweepEntry } from '../reaper/sweep.js';
import type { ImagesReport } from './images-step.js';

/** Sizes measured before the sweep, by engine: each removable container's layer and anonymous volumes, each volume's size. */
export type SpaceBefore = Map<string, { containers: Map<string, { sizeRw: number | null; volumes: string[] }>; volumes: Map<string, number> }>;

/** The bytes a run freed, in all and by what they were. */
export interface Reclaimed {
  total: number;
  containers: number;
  volumes: number;
  images: number;
  sandboxDirs: number;
  shellSnapshots: number;
}

/**
 * Asks each engine, before the sweep, for the sizes of the containers it may remove (exited and never-started ones of
 * the selection) and, when one holds anonymous volumes, for the volumes' sizes. A failure is a warning: the run goes
 * on, and reports what it could measure.
 */
export async function measureBefore(engines: readonly EngineClient[], selection: Selection, signal: AbortSignal | undefined, warnings: string[]): Promise<SpaceBefore> {
  const out: SpaceBefore = new Map();
  await Promise.all(
    engines.map(async (e) => {
      if (!hasSpaceCalls(e)) return;
      try {
        const containers = await e.containerSizes({ labels: engineLabelFilters(selection), status: ['exited', 'created'] }, signal);
        const anyVolume = [...containers.values()].some((c) => anonymousVolumes(c.volumes).length > 0);
        out.set(e.host, { containers, volumes: anyVolume ? await e.volumeSizes(signal) : new Map() });
      } catch (err) {
        if (!signal?.aborted) warnings.push(`cannot measure the containers' sizes on ${e.host} (${errorMessage(err)}); the space reclaimed leaves them out`);
      }
    }),
  );
  return out;
}

/** What the run freed, from what it removed and what was measured before. */
export function reclaimed(
  done: { removed: readonly SweepEntry[]; images?: ImagesReport | undefined; sandboxDirs?: SandboxDirsResult | undefined; shellSnapshots?: ShellSnapshotsResult | undefined },
  before: SpaceBefore,
  keepVolumes: boolean,
): Reclaimed {
  let containers = 0;
  let volumes = 0;
  for (const e of done.removed) {
    const engine = before.get(e.host);
    containers += engine?.containers.get(e.id)?.sizeRw ?? 0;
    if (!keepVolumes) for (const v of e.volumes ?? []) volumes += engine?.volumes.get(v) ?? 0;
  }
  const images = (done.images?.removed ?? []).reduce((n, i) => n + i.bytes, 0);
  const sandboxDirs = (done.sandboxDirs?.removed ?? []).reduce((n, d) => n + d.bytes, 0);
  const shellSnapshots = (done.shellSnapshots?.removed ?? []).reduce((n, s) => n + (s.bytes ?? 0), 0);
  return { total: containers + volumes + images + sandboxDirs + shellSnapshots, containers, volumes, images, sandboxDirs, shellSnapshots };
}
