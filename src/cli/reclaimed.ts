/**
 * What a reap freed, as `docker container prune` ends with "Total reclaimed space": the containers it removed (each
 * entry's `reclaimedBytes`: its writable layer and anonymous volumes as the engine measured them right before, see
 * reaper/reap-sweep.ts), the images it removed (their unique size), the sandbox directories (their blocks on disk)
 * and the shell snapshots (their bytes). A dry run: what it would free.
 */
import type { SandboxDirsResult } from '../reaper/sandbox-dirs.js';
import type { ShellSnapshotsResult } from '../reaper/shell-snapshots.js';
import type { SweepEntry } from '../reaper/sweep.js';
import type { ImagesReport } from './images-step.js';

/** The bytes a run freed, in all and by what they were. */
export interface Reclaimed {
  total: number;
  /** The removed containers' writable layers and anonymous volumes. */
  containers: number;
  images: number;
  sandboxDirs: number;
  shellSnapshots: number;
}

/** What the run freed, from what it removed. */
export function reclaimed(done: {
  removed: readonly SweepEntry[];
  images?: ImagesReport | undefined;
  sandboxDirs?: SandboxDirsResult | undefined;
  shellSnapshots?: ShellSnapshotsResult | undefined;
}): Reclaimed {
  const containers = done.removed.reduce((n, e) => n + (e.reclaimedBytes ?? 0), 0);
  const images = (done.images?.removed ?? []).reduce((n, i) => n + i.bytes, 0);
  const sandboxDirs = (done.sandboxDirs?.removed ?? []).reduce((n, d) => n + d.bytes, 0);
  const shellSnapshots = (done.shellSnapshots?.removed ?? []).reduce((n, s) => n + (s.bytes ?? 0), 0);
  return { total: containers + images + sandboxDirs + shellSnapshots, containers, images, sandboxDirs, shellSnapshots };
}
