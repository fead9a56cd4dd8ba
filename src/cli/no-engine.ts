/**
 * How a run tells that there is no engine at all on this host (hermes' local backend): then only the passes that need
 * no engine run (`place: 'host'`). Loaded only when discovery found nothing.
 */
import type { EngineEndpoint } from '../adapters/engine-host.js';

/**
 * The line to say when this host has no engine at all: discovery was left to find one (nothing configured: no
 * `--host`, `--context`, `DOCKER_HOST`) and no socket exists anywhere it looks (hermes' local backend). Null for any
 * other failure: a socket that is there but does not answer, or an engine that was named, stays exit 3.
 */
export async function noEngineAtAll(err: unknown, endpoints: readonly EngineEndpoint[]): Promise<string | null> {
  const { NoEngineFoundError } = await import('../adapters/engine-discovery.js');
  if (!(err instanceof NoEngineFoundError) || !endpoints.every((e) => e.discover)) return null;
  if (!err.attempts.every((a) => a.outcome === 'absent')) return null;
  return `no container engine found (no socket at ${err.attempts.map((a) => a.path).join(', ')}): only the host's own files were checked`;
}
