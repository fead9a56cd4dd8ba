/**
 * What a reap freed, as `docker container prune` ends with "Total reclaimed space": the containers it removed (each
 * entry's `reclaimedBytes`: its writable layer and anonymous volumes as the engine measured them right before, see
 * reaper/reap-sweep.ts), and what each pass of the list removed (`Pass.freedBytes`: what its removals freed, as it
 * measures them). A dry run: what it would free.
 */
import type { PassResult } from '../passes/types.js';
import type { SweepEntry } from '../reaper/sweep-types.js';

/** The bytes a run freed, in all and by what they were. */
export interface Reclaimed {
  total: number;
  /** The removed containers' writable layers and anonymous volumes. */
  containers: number;
  /** Each pass that can free something, by its name (its key in `reap --json`). */
  [pass: string]: number;
}

/** What the run freed, from what it removed. */
export function reclaimed(done: { removed: readonly SweepEntry[]; passes: readonly PassResult[] }): Reclaimed {
  const containers = done.removed.reduce((n, e) => n + (e.reclaimedBytes ?? 0), 0);
  const out: Reclaimed = { total: containers, containers };
  for (const p of done.passes) {
    if (!p.pass.freedBytes) continue;
    const bytes = p.pass.freedBytes(p.result);
    out[p.pass.name] = bytes;
    out.total += bytes;
  }
  return out;
}
