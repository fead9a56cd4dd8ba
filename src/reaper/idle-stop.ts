/**
 * The engine side of the idle rule: taking a sample, re-proving idleness right before a stop, and the stop itself.
 * The decisions are pure (`core/idle.ts`); a long-running watcher calls these with its own clock and records.
 */
import type { ContainerDetails, EngineClient } from '../adapters/engine.js';
import { type IdleRecord, type IdleSample, observe, reproved } from '../core/idle.js';
import { EngineRequestError } from '../errors.js';

/**
 * One sample of a running container from the one-shot stats, stamped with `now`. Null when the engine gives none
 * (the stats failed with an HTTP error or lack the CPU counter): such a container is never stopped. Connection
 * failures and aborts are thrown (the caller decides whether they end the run).
 */
export async function takeSample(
  engine: EngineClient,
  details: Pick<ContainerDetails, 'id' | 'startedAt'>,
  now: () => Date,
  signal?: AbortSignal,
): Promise<IdleSample | null> {
  try {
    const c = await engine.stats(details.id, signal);
    if (!c) return null;
    return { startedAt: details.startedAt, cpuNs: c.cpuNs, pgfault: c.pgfault, at: now().toISOString() };
  } catch (err) {
    if (err instanceof EngineRequestError) return null;
    throw err;
  }
}

/**
 * The execs of `execIds` still in flight. Docker lists only running execs; Podman keeps finished ones, so each is
 * asked. One that cannot be checked counts as in flight (never stop on doubt); connection failures are thrown.
 */
export async function execsInFlight(engine: EngineClient, execIds: readonly string[], signal?: AbortSignal): Promise<string[]> {
  const out: string[] = [];
  for (const id of execIds) {
    try {
      if (await engine.execRunning(id, signal)) out.push(id);
    } catch (err) {
      if (!(err instanceof EngineRequestError)) throw err;
      out.push(id);
    }
  }
  return out;
}

export type StopOutcome =
  /** Stopped; the record should be dropped. */
  | { kind: 'stopped' }
  /** The fresh re-check failed: not stopped. `record` is the record after the fresh sample (when one was taken). */
  | { kind: 'proof-failed'; record: IdleRecord | undefined }
  /** The container no longer exists. */
  | { kind: 'gone' };

/**
 * Re-checks the proof right before acting and stops only if it holds: a fresh inspect (still running, same
 * StartedAt, no exec in flight) and a fresh one-shot sample showing no activity since `record.last`. The stop is
 * the engine's stop with `stopTimeoutSeconds` before its SIGKILL. Engine errors on the stop itself are thrown.
 */
export async function reproveAndStop(
  engine: EngineClient,
  id: string,
  record: IdleRecord,
  opts: {
    stopTimeoutSeconds: number; now: () => Date; signal?: AbortSignal;
    /** Bounds for the re-check's reads and for the stop itself (a sweep shares them across containers). */
    read?: <R>(fn: () => Promise<R>) => Promise<R>;
    act?: <R>(fn: () => Promise<R>) => Promise<R>;
  },
): Promise<StopOutcome> {
  const read = opts.read ?? ((fn) => fn());
  const act = opts.act ?? ((fn) => fn());
  const fresh = await read(() => engine.inspect(id, opts.signal));
  if (!fresh) return { kind: 'gone' };
  const running = fresh.status.toLowerCase() === 'running' && fresh.running;
  const sample = running ? await read(() => takeSample(engine, fresh, opts.now, opts.signal)) : null;
  const execIds = running ? await read(() => execsInFlight(engine, fresh.execIds, opts.signal)) : fresh.execIds;
  const ok = reproved(record.last, { running, startedAt: fresh.startedAt, execIds, sample });
  if (!ok) return { kind: 'proof-failed', record: sample ? observe(record, sample) : undefined };
  const stopped = await act(() => engine.stop(id, opts.stopTimeoutSeconds, opts.signal));
  return stopped ? { kind: 'stopped' } : { kind: 'proof-failed', record: undefined };
}


/**
 * Which of the container's volumes went with it, verified after its removal: those the engine no longer knows
 * (`GET /volumes/{name}` answers 404). Named volumes stay, so they are never listed; a failed check leaves the
 * volume out (not verified).
 */
export async function volumesGone(engine: EngineClient, names: readonly string[], signal?: AbortSignal): Promise<string[]> {
  const out: string[] = [];
  for (const name of names) {
    try {
      if (!(await engine.volumeExists(name, signal))) out.push(name);
    } catch {
      /* not verified: left out */
    }
  }
  return out;
}
