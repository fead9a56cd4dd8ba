import type { ContainerDetails, ContainerSummary, EngineClient } from '../adapters/engine.js';
import { isGoing } from '../adapters/engine.js';
import { type KeepReason, judge } from '../core/policy.js';
import { type Selection, engineLabelFilters, isExcluded, isSelected } from '../core/selection.js';
import { EngineRequestError, EngineUnreachableError, errorMessage } from '../errors.js';
import { forEachBounded } from '../util/pool.js';

/** One container as reported in every output. */
export interface SweepEntry {
  /** Full container id. */
  id: string;
  name: string;
  profile: string | null;
  state: string;
  /** `State.FinishedAt`, raw. */
  finishedAt: string;
  ageSeconds: number | null;
  /** The engine it lives on. */
  host: string;
}
export interface KeptEntry extends SweepEntry {
  reason: KeepReason;
}
export interface FailedEntry extends SweepEntry {
  error: string;
}
export interface ListedEntry extends SweepEntry {
  verdict: 'reap' | 'keep';
  /** Why it is kept, or `expired` for a container the reaper would remove. */
  reason: KeepReason | 'expired';
}

/** Why a sweep stopped before its end. */
export type Interruption = { kind: 'timeout' } | { kind: 'engine'; error: string };

export type SweepEvent =
  | { type: 'removed'; entry: SweepEntry; dryRun: boolean }
  | { type: 'kept'; entry: KeptEntry }
  | { type: 'failed'; entry: FailedEntry }
  | { type: 'listed'; entry: ListedEntry }
  | { type: 'candidates'; count: number };

export interface SweepRequest {
  engine: EngineClient;
  selection: Selection;
  thresholdSeconds: number;
  /** Ages are judged as of this instant. */
  asOf: Date;
  concurrency: number;
  /** Aborting stops the sweep (a run-wide timeout); what finished is still reported. */
  signal?: AbortSignal;
  onEvent?: (event: SweepEvent) => void;
  /** Ask the engine for these containers only (full ids): `watch` re-checks one container at its deadline. */
  ids?: string[];
}

export interface ReapRequest extends SweepRequest {
  dryRun: boolean;
  /** Only these ids are considered (a plan being applied); others are neither touched nor reported. */
  onlyIds?: ReadonlySet<string>;
}

export interface ReapResult {
  removed: SweepEntry[];
  kept: KeptEntry[];
  failed: FailedEntry[];
  interrupted: Interruption | null;
}

export interface ListResult {
  containers: ListedEntry[];
  /** Containers that could not be inspected. */
  failed: FailedEntry[];
  interrupted: Interruption | null;
}

/** Tracks the first engine failure or the run's abort; stops new work once either happens. */
class RunGuard {
  interrupted: Interruption | null = null;
  constructor(private readonly signal: AbortSignal | undefined) {}
  get stopped(): boolean {
    if (!this.interrupted && this.signal?.aborted) this.interrupted = { kind: 'timeout' };
    return this.interrupted !== null;
  }
  /** Returns true when the error ended the run (engine gone or run aborted), false when it is per-container. */
  absorb(err: unknown): boolean {
    if (this.signal?.aborted) {
      this.interrupted ??= { kind: 'timeout' };
      return true;
    }
    if (err instanceof EngineUnreachableError) {
      this.interrupted ??= { kind: 'engine', error: err.message };
      return true;
    }
    return false;
  }
}

function entryOf(host: string, sel: Selection, s: ContainerSummary, d: ContainerDetails | null, ageSeconds: number | null): SweepEntry {
  const labels = d?.labels ?? s.labels;
  return {
    id: d?.id ?? s.id,
    name: d?.name || s.name,
    profile: labels[sel.profileLabel] ?? null,
    state: d?.status || s.state,
    finishedAt: d?.finishedAt ?? '',
    ageSeconds,
    host,
  };
}

/**
 * After an inspect failed with something other than 404: is the container simply gone? Podman, for one, answers
 * 500 for a container removed a moment ago. Decided by the engine's own listing, never by the error's text.
 */
async function vanished(engine: EngineClient, id: string, signal: AbortSignal | undefined): Promise<boolean> {
  try {
    const rows = await engine.list({ labels: [], ids: [id] }, signal);
    return !rows.some((r) => r.id === id);
  } catch {
    return false;
  }
}

/** Hands the rows over one at a time and lets go of each as it is taken, so a 100k-row list is not held to the end. */
function* consume<T>(rows: Array<T | undefined>): Generator<T> {
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as T;
    rows[i] = undefined;
    yield row;
  }
}

async function candidates(req: SweepRequest, status: string[] | undefined, guard: RunGuard): Promise<ContainerSummary[]> {
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

/**
 * Lists exited containers of the selection, inspects each, and removes (never forced) those the policy reaps.
 * Carries on past any single failure; a 404 or a 409 on a container being removed counts as `gone`.
 */
export async function reap(req: ReapRequest): Promise<ReapResult> {
  const guard = new RunGuard(req.signal);
  const out: ReapResult = { removed: [], kept: [], failed: [], interrupted: null };
  const { engine, selection, onEvent } = req;
  let rows = await candidates(req, ['exited'], guard);
  if (req.onlyIds) rows = rows.filter((r) => req.onlyIds!.has(r.id));
  onEvent?.({ type: 'candidates', count: rows.length });

  const keep = (e: SweepEntry, reason: KeepReason) => {
    const k = { ...e, reason };
    out.kept.push(k);
    onEvent?.({ type: 'kept', entry: k });
  };
  const fail = (e: SweepEntry, err: unknown) => {
    const f = { ...e, error: errorMessage(err) };
    out.failed.push(f);
    onEvent?.({ type: 'failed', entry: f });
  };

  await forEachBounded(
    consume(rows),
    req.concurrency,
    async (row) => {
      let entry = entryOf(engine.host, selection, row, null, null);
      let details: ContainerDetails | null;
      try {
        details = await engine.inspect(row.id, req.signal);
      } catch (err) {
        if (guard.absorb(err)) return;
        if (err instanceof EngineRequestError && (await vanished(engine, row.id, req.signal))) return keep(entry, 'gone');
        return fail(entry, err);
      }
      if (!details) return keep(entry, 'gone');
      if (!isSelected(selection, details.labels)) return; // relabelled since the list: not ours
      const v = judge(
        { running: details.running, finishedAt: details.finishedAt, excluded: isExcluded(selection, details.labels) },
        req.asOf,
        req.thresholdSeconds,
      );
      entry = entryOf(engine.host, selection, row, details, v.ageSeconds);
      if (v.verdict === 'keep') return keep(entry, v.reason);
      if (req.dryRun) {
        out.removed.push(entry);
        onEvent?.({ type: 'removed', entry, dryRun: true });
        return;
      }
      if (guard.stopped) return;
      try {
        await engine.remove(row.id, req.signal);
        out.removed.push(entry);
        onEvent?.({ type: 'removed', entry, dryRun: false });
      } catch (err) {
        if (err instanceof EngineRequestError && err.statusCode === 404) return keep(entry, 'gone');
        if (err instanceof EngineRequestError && err.statusCode === 409) {
          // Removal already in progress, or it runs again: decide from its state, never from the message.
          let again: ContainerDetails | null;
          try {
            again = await engine.inspect(row.id, req.signal);
          } catch (err2) {
            guard.absorb(err2);
            return fail(entry, err);
          }
          if (!again || isGoing(again.status)) return keep(entry, 'gone');
          if (again.running) return keep({ ...entry, state: again.status }, 'running');
          return fail(entry, err);
        }
        // The DELETE may or may not have reached the engine: never report it removed.
        guard.absorb(err);
        return fail(entry, err);
      }
    },
    () => guard.stopped,
  );
  out.interrupted = guard.stopped ? guard.interrupted : null;
  return out;
}

/** Every selected container in any state, with the verdict the reaper would reach. */
export async function list(req: SweepRequest): Promise<ListResult> {
  const guard = new RunGuard(req.signal);
  const out: ListResult = { containers: [], failed: [], interrupted: null };
  const rows = await candidates(req, undefined, guard);
  req.onEvent?.({ type: 'candidates', count: rows.length });
  await forEachBounded(
    consume(rows),
    req.concurrency,
    async (row) => {
      let details: ContainerDetails | null;
      try {
        details = await req.engine.inspect(row.id, req.signal);
      } catch (err) {
        if (guard.absorb(err)) return;
        const f = { ...entryOf(req.engine.host, req.selection, row, null, null), error: errorMessage(err) };
        out.failed.push(f);
        req.onEvent?.({ type: 'failed', entry: f });
        return;
      }
      if (details && !isSelected(req.selection, details.labels)) return;
      const v = details
        ? judge(
            { running: details.running, finishedAt: details.finishedAt, excluded: isExcluded(req.selection, details.labels) },
            req.asOf,
            req.thresholdSeconds,
          )
        : ({ verdict: 'keep', reason: 'gone', ageSeconds: null } as const);
      const entry: ListedEntry = {
        ...entryOf(req.engine.host, req.selection, row, details, v.ageSeconds),
        verdict: v.verdict,
        reason: v.verdict === 'keep' ? v.reason : 'expired',
      };
      out.containers.push(entry);
      req.onEvent?.({ type: 'listed', entry });
    },
    () => guard.stopped,
  );
  out.interrupted = guard.stopped ? guard.interrupted : null;
  return out;
}
