import type { EngineClient } from '../adapters/engine.js';
import { ExitCode } from '../errors.js';
import type { Interruption } from './sweep-types.js';

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

/** Exit code of a sweep across engines: 3 if timed out or any engine unreachable, else 1 if anything failed, else 0. */
export function sweepExitCode(across: AcrossEngines<unknown>, failures: number): number {
  if (across.timedOut || across.hosts.some((h) => !h.reachable)) return ExitCode.ENGINE;
  return failures > 0 ? ExitCode.FAILED : ExitCode.OK;
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
