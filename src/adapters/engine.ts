/** The small slice of the Docker Engine API the janitor uses. One implementation wraps dockerode. */

/** One row of `GET /containers/json`. */
export interface ContainerSummary {
  id: string;
  name: string;
  labels: Record<string, string>;
  /** The list's `State` (`exited`, `running`, `created`, ...). */
  state: string;
}

/** What `GET /containers/{id}/json` says of a container. */
export interface ContainerDetails {
  id: string;
  name: string;
  labels: Record<string, string>;
  /** `State.Status` (Docker or Podman names). */
  status: string;
  /** Running, paused, restarting or stopping: never removable. */
  running: boolean;
  /** `State.FinishedAt`, raw. */
  finishedAt: string;
}

export interface ListQuery {
  /** `label` filters (`key` or `key=value`), ANDed by the engine. */
  labels: string[];
  /** `status` filter values; omitted = every state. */
  status?: string[];
  /** `id` filter values (full ids or prefixes). */
  ids?: string[];
}

export interface EngineClient {
  /** The engine's address as given or resolved (`unix:///var/run/docker.sock`, `tcp://...`). */
  readonly host: string;
  ping(signal?: AbortSignal): Promise<void>;
  list(query: ListQuery, signal?: AbortSignal): Promise<ContainerSummary[]>;
  /** Null when the container does not exist (404). */
  inspect(id: string, signal?: AbortSignal): Promise<ContainerDetails | null>;
  /** Removes without force; throws `EngineRequestError` with the HTTP status on refusal. */
  remove(id: string, signal?: AbortSignal): Promise<void>;
}

/** States in which a container's processes may run: never removed. */
const LIVE_STATES = new Set(['running', 'paused', 'restarting', 'stopping', 'removing-running']);

/** Running decided from `State.Running` and `State.Status`, tolerating Podman's state names. */
export function isLive(running: unknown, status: string): boolean {
  return running === true || LIVE_STATES.has(status.toLowerCase());
}

/** States of a container that is on its way out (a 409 on removal then means someone else is removing it). */
export function isGoing(status: string): boolean {
  const s = status.toLowerCase();
  return s === 'removing' || s === 'dead';
}
