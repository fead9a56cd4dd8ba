/**
 * What every sweep does with the engine's rows: ask for the selected candidates, hand them over one at a time, and
 * turn a row and its inspect into a reported entry with the policy's verdict.
 */
import type { ContainerDetails, ContainerSummary, EngineClient } from '../adapters/engine.js';
import { type Rule, type Verdict, judge } from '../core/policy.js';
import { type Selection, engineLabelFilters, isExcluded, isSelected } from '../core/selection.js';
import type { RunGuard } from './run-guard.js';
import type { SweepEntry, SweepRequest } from './sweep-types.js';

/** Where an entry comes from: the engine, the selection, and the row; with its inspect and verdict when there is one. */
export interface EntrySource {
  host: string;
  selection: Selection;
  row: ContainerSummary;
}

/**
 * The entry reported for a row: from its inspect (`d`) and verdict (age and rule) when it was inspected, else from the
 * list's row alone.
 */
export function entryOf(
  { host, selection: sel, row: s }: EntrySource,
  d: ContainerDetails | null = null,
  verdict: Pick<Verdict, 'ageSeconds' | 'rule'> | null = null,
): SweepEntry {
  const ageSeconds = verdict?.ageSeconds ?? null;
  const rule: Rule | null = verdict?.rule ?? null;
  const labels = d?.labels ?? s.labels;
  return {
    id: d?.id ?? s.id,
    name: d?.name || s.name,
    profile: labels[sel.profileLabel] ?? null,
    state: d?.status || s.state,
    finishedAt: d?.finishedAt ?? '',
    ageSeconds,
    host,
    rule,
  };
}

export function verdictOf(sel: Selection, d: ContainerDetails, asOf: Date, threshold: number): Verdict {
  return judge(
    {
      running: d.running,
      finishedAt: d.finishedAt,
      excluded: isExcluded(sel, d.labels),
      status: d.status,
      startedAt: d.startedAt,
      created: d.created,
    },
    asOf,
    threshold,
  );
}

/**
 * After an inspect failed with something other than 404: is the container simply gone? Podman, for one, answers
 * 500 for a container removed a moment ago. Decided by the engine's own listing, never by the error's text.
 */
export async function vanished(engine: EngineClient, id: string, signal: AbortSignal | undefined): Promise<boolean> {
  try {
    const rows = await engine.list({ labels: [], ids: [id] }, signal);
    return !rows.some((r) => r.id === id);
  } catch {
    return false;
  }
}

/** Hands the rows over one at a time and lets go of each as it is taken, so a 100k-row list is not held to the end. */
export function* consume<T>(rows: Array<T | undefined>): Generator<T> {
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as T;
    rows[i] = undefined;
    yield row;
  }
}

/** The selected rows of the engine's list (labels checked again here: some engines ignore label filters). */
export async function candidates(req: SweepRequest, status: string[] | undefined, guard: RunGuard): Promise<ContainerSummary[]> {
  try {
    const rows = await req.engine.list(
      { labels: engineLabelFilters(req.selection), ...(status ? { status } : {}), ...(req.ids ? { ids: req.ids } : {}) },
      req.signal,
    );
    return rows.filter((r) => isSelected(req.selection, r.labels));
  } catch (err) {
    if (guard.absorb(err)) return [];
    throw err;
  }
}
