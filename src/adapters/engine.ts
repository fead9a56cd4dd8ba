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

/** One container event from `GET /events`. */
export interface EngineEvent {
  /** Full container id (`Actor.ID`). */
  id: string;
  /** `Action` up to its first ':' (`die`, `start`, `create`, `destroy`, `exec_start`, ...). */
  action: string;
  /** When the engine saw it, ms since the epoch (from `timeNano`, else `time`); NaN when it gave none. */
  timeMs: number;
  /** `Actor.Attributes`: the container's labels plus `name`, `image`, `exitCode`, ... */
  attributes: Record<string, string>;
}

/** A subscription to the engine's event stream: open once `events()` resolves; ends by throwing when the engine goes. */
export type EventStream = AsyncIterable<EngineEvent>;

export interface EngineClient {
  /** The engine's address as given or resolved (`unix:///var/run/docker.sock`, `tcp://...`). */
  readonly host: string;
  ping(signal?: AbortSignal): Promise<void>;
  list(query: ListQuery, signal?: AbortSignal): Promise<ContainerSummary[]>;
  /** Null when the container does not exist (404). */
  inspect(id: string, signal?: AbortSignal): Promise<ContainerDetails | null>;
  /** Removes without force; throws `EngineRequestError` with the HTTP status on refusal. */
  remove(id: string, signal?: AbortSignal): Promise<void>;
  /**
   * Subscribes to container events carrying all these `label` filters. Resolves once the engine has accepted the
   * subscription (so a sweep started afterwards misses nothing); the stream then yields events until `signal`
   * aborts (it ends quietly) or the connection is lost (it throws `EngineUnreachableError`).
   */
  events(filters: { labels: string[] }, signal?: AbortSignal): Promise<EventStream>;
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
