/**
 * The stamps `reap --once-per` reads and writes: one per engine of the run, filed under its home and selection
 * (`adapters/janitor-files.ts` `stampPath`, keyed by `stampKey`). The one function every reader and writer asks:
 * `reap` (its check and the stamps it writes), the shell start-up fast path, and `shell-init`, whose snippet tests the
 * stamp's age in the shell itself. Cheap to import: the fast path loads it at every shell start-up.
 */
import { stampKey } from '../adapters/docker-context.js';
import type { EngineEndpoint } from '../adapters/engine-host.js';
import { stampPath } from '../adapters/janitor-files.js';
import type { Selection } from '../core/selection.js';

/** The stamp of each endpoint, in order, for a run over `home` with `selection`. */
export function oncePerStamps(home: string, selection: Selection, endpoints: readonly EngineEndpoint[]): string[] {
  return endpoints.map((e) => stampPath(home, stampKey(e), selection));
}
