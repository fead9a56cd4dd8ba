/**
 * The sweep: what `reap`, `list`, `status` and `watch` run against one engine, and what they report. The work is
 * done by one object per run (`reap-sweep.ts`, `list-sweep.ts`) over the idle observations of `idle-book.ts`.
 */
import { ListSweep } from './list-sweep.js';
import { ReapSweep } from './reap-sweep.js';
import type { ListResult, ReapRequest, ReapResult, SweepRequest } from './sweep-types.js';

export type * from './sweep-types.js';

/**
 * Lists the selection's candidates, inspects each, and removes (never forced) those the policy reaps; stops running
 * sandboxes proven idle (re-proved right before each stop). Carries on past any single failure.
 */
export function reap(req: ReapRequest): Promise<ReapResult> {
  return new ReapSweep(req).run();
}

/** Every selected container in any state, with the verdict the reaper would reach. */
export function list(req: SweepRequest): Promise<ListResult> {
  return new ListSweep(req).run();
}
