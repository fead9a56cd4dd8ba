import type { EngineClient } from '../adapters/engine.js';
import { type Interruption } from './sweep.js';

/** How one engine fared in a run (`hosts` in JSON output). */
export interface HostOutcome {
  host: string;
  reachable: boolean;
  error: string | null;
}

/** Outcome of running one sweep per engine, concurrently. */
export interface AcrossEngines<R> {
  results: R[];
  hosts: HostOutcome[];
  timedOut: boolean;
}

/**
 * Runs `sweep` on every engine at once. One unreachable engine never stops the others; an engine whose sweep
 * was cut off by a lost connection is reported unreachable, a run-wide timeout as `timedOut`.
 */
export async function acrossEngines<R extends { interrupted: Interruption | null }>(
  engines: EngineClient[],
  sweep: (engine: EngineClient) => Promise<R>,
): Promise<AcrossEngines<R>> {
  const results = await Promise.all(engines.map((e) => sweep(e)));
  const hosts = results.map((r, i) => {
    const host = engines[i]!.host;
    if (r.interrupted?.kind === 'engine') return { host, reachable: false, error: r.interrupted.error };
    return { host, reachable: true, error: null };
  });
  return { results, hosts, timedOut: results.some((r) => r.interrupted?.kind === 'timeout') };
}
