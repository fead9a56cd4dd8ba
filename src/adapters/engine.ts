/** The small slice of the Docker Engine API the janitor uses. One implementation wraps dockerode. */
import type { ImageFacts } from '../core/image-facts.js';

/** One row of `GET /containers/json`. */
export interface ContainerSummary {
  id: string;
  name: string;
  labels: Record<string, string>;
  /** The list's `State` (`exited`, `running`, `created`, ...). */
  state: string;
  /** The list's `ImageID` (full id of the image it was created from), when the engine gives one. */
  imageId?: string;
}

/** What `GET /containers/{id}/json` says of a container. */
export interface ContainerDetails {
  /** The writable layer's size, when the inspect asked for it (`size`) and the engine gave it. */
  sizeRw?: number;
  id: string;
  name: string;
  labels: Record<string, string>;
  /** `State.Status` (Docker or Podman names). */
  status: string;
  /** Running, paused, restarting or stopping: never removable. */
  running: boolean;
  /** `State.FinishedAt`, raw. */
  finishedAt: string;
  /** `State.StartedAt`, raw (Go's zero time for a container that never started). */
  startedAt: string;
  /** The container's `Created` time, raw (RFC 3339). */
  created: string;
  /** `ExecIDs` (empty when none): Docker lists running execs only, Podman finished ones too (see `execRunning`). */
  execIds: string[];
  /** `State.ExitCode` (absent when the engine did not say): 137 after the engine's SIGKILL. */
  exitCode?: number;
  /** `State.Pid`: the init process on the engine's host (0 when not running). */
  pid: number;
  /**
   * `HostConfig.Init`: the engine put an init process (tini, catatonit) in front of the container's command, so an
   * idle container holds two processes, not one.
   */
  init: boolean;
  /** Names of the container's mounts of type `volume` (named and anonymous alike). */
  volumes: string[];
  /** `Mounts[].Source` of its bind mounts (host paths as given), when the engine listed any: they may tie it to a home. */
  binds?: string[];
}

/** One answer of the one-shot stats endpoint, reduced to the counters the idle proof uses. */
export interface StatsCounters {
  /** `cpu_stats.cpu_usage.total_usage`: cumulative CPU nanoseconds. */
  cpuNs: number;
  /** `memory_stats.stats.pgfault`, or null where the engine reports none (Podman). */
  pgfault: number | null;
  /**
   * `pids_stats.current`: how many processes (zombies included) the container's cgroup holds, or null where the
   * engine reports none.
   */
  pids: number | null;
}

/**
 * What a removal came to: `removed`; `gone` (the engine no longer knows it); `conflict` (the engine refused it for
 * its state: someone else is removing it, or it runs again; `detail` is the engine's words, for a failure line).
 */
export type RemoveOutcome = { kind: 'removed' } | { kind: 'gone' } | { kind: 'conflict'; detail: string };

export interface RemoveOptions {
  /** Also remove the container's anonymous volumes (`v=1`); named volumes and binds are never removed. */
  volumes?: boolean;
}

/** One container's mounts as `GET /containers/json?all=1` lists them (Docker 20.10 and Podman 4.3 alike). */
export interface ContainerMounts {
  id: string;
  name: string;
  /** The list's `State` (`created`, `running`, `exited`, ...). */
  state: string;
  /**
   * `Mounts[].Source` of every mount that has one: a bind mount's host path as given to `-v`/`--mount` (cleaned,
   * symlinks not resolved), a volume's data directory. tmpfs mounts are not listed; Docker lists an anonymous
   * volume with an empty `Source` (left out).
   */
  sources: string[];
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

/** What `GET /exec/{id}/json` says of an exec. */
export interface ExecDetails {
  id: string;
  running: boolean;
  /** The exec's process on the engine's host (0 when unknown). */
  pid: number;
  /** `ProcessConfig.entrypoint` and `.arguments`. */
  entrypoint: string;
  arguments: string[];
}

export interface EngineClient {
  /** The engine's address as given or resolved (`unix:///var/run/docker.sock`, `tcp://...`). */
  readonly host: string;
  ping(signal?: AbortSignal): Promise<void>;
  list(query: ListQuery, signal?: AbortSignal): Promise<ContainerSummary[]>;
  /** Null when the container does not exist (404). */
  /**
   * `size`: the engine also measures the writable layer (`?size=1`: `SizeRw`, as `docker ps -s`), for a container a
   * reap may remove (what it freed).
   */
  inspect(id: string, signal?: AbortSignal, options?: { size?: boolean }): Promise<ContainerDetails | null>;
  /** Removes without force; any other refusal throws `EngineRequestError` (its HTTP status) or `EngineUnreachableError`. */
  remove(id: string, signal?: AbortSignal, options?: RemoveOptions): Promise<RemoveOutcome>;
  /**
   * One stats sample without waiting for a second one (`stream=false&one-shot=true`). Null when the container does
   * not exist (404) or the answer lacks the CPU counter; throws on other failures.
   */
  stats(id: string, signal?: AbortSignal): Promise<StatsCounters | null>;
  /**
   * Stops the container: SIGTERM, then SIGKILL after `timeoutSeconds` (`POST /containers/{id}/stop?t=`).
   * Returns false when it was not running (304) or no longer exists (404).
   */
  stop(id: string, timeoutSeconds: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Whether an exec is still running (`GET /exec/{id}/json`: `Running`; false on 404). Podman keeps finished execs
   * in a container's `ExecIDs`; Docker lists only live ones.
   */
  execRunning(execId: string, signal?: AbortSignal): Promise<boolean>;
  /**
   * One exec as the engine sees it (`GET /exec/{id}/json`): `Running`, the host `Pid` of its process, its
   * `ProcessConfig`. Null on 404. Docker 20.10 and Podman 4.3 both give the host pid (checked).
   */
  execInspect(execId: string, signal?: AbortSignal): Promise<ExecDetails | null>;
  /**
   * Every container the engine knows, in any state and with any labels (`GET /containers/json?all=1`, no filter),
   * with its mount sources: whether a host directory is in use.
   */
  listMounts(signal?: AbortSignal): Promise<ContainerMounts[]>;
  /** Whether a volume of this name exists (`GET /volumes/{name}`: false on 404). */
  volumeExists(name: string, signal?: AbortSignal): Promise<boolean>;
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

/** What `GET /version` says of an engine (for `status`). */
export interface EngineVersion {
  /** `Docker` or `Podman` (Podman's compatible API lists a `Podman Engine` component). */
  kind: 'Docker' | 'Podman';
  version: string;
  apiVersion: string;
}

/** Reads `GET /version`'s answer; Podman is told apart by its `Podman Engine` component. */
export function parseEngineVersion(v: unknown): EngineVersion {
  const o = (v && typeof v === 'object' ? v : {}) as { Version?: unknown; ApiVersion?: unknown; Components?: unknown };
  const components = Array.isArray(o.Components) ? (o.Components as Array<{ Name?: unknown }>) : [];
  const podman = components.some((c) => typeof c?.Name === 'string' && /podman/i.test(c.Name));
  return {
    kind: podman ? 'Podman' : 'Docker',
    version: typeof o.Version === 'string' ? o.Version : '',
    apiVersion: typeof o.ApiVersion === 'string' ? o.ApiVersion : '',
  };
}

/**
 * Name of a volume the engine made itself (64 hex digits): Docker 20.10 and Podman 4 name anonymous volumes so. Used to
 * predict and to report (dry runs, list, status); what a removal freed is verified against the engine.
 */
export const ANONYMOUS_VOLUME_NAME = /^[0-9a-f]{64}$/;

/**
 * The anonymous volumes among a container's volume mounts (`ContainerDetails.volumes`: inspect's `Mounts` of
 * `Type: "volume"`, so never a bind). Neither Docker 20.10 nor Podman's compatible API flags them otherwise: the
 * engine-made name tells them from named volumes.
 */
export function anonymousVolumes(volumeMounts: readonly string[]): string[] {
  return volumeMounts.filter((n) => ANONYMOUS_VOLUME_NAME.test(n));
}

/** Read-only calls `status` uses; engines without them report no version. */
export interface EngineStatusCalls {
  version(signal?: AbortSignal): Promise<EngineVersion>;
}

/** What the volumes a reap removes take on disk, as the engine measures it (for the space a run freed). */
export interface EngineSpaceCalls {
  /** Each volume's size as the engine measures it (`GET /system/df` `Volumes[].UsageData.Size`; unknown ones absent). */
  volumeSizes(signal?: AbortSignal): Promise<Map<string, number>>;
}

export const hasSpaceCalls = (e: EngineClient): e is EngineClient & EngineSpaceCalls => typeof (e as Partial<EngineSpaceCalls>).volumeSizes === 'function';

/** The engine's images and what they take (`GET /system/df`, tags from `GET /images/json`). */
export interface EngineImages {
  /** `LayersSize`: every image layer once (Docker; Podman 4 reports 0). */
  layersSize: number;
  images: ImageFacts[];
}

/** Calls the image budget uses (`reap`/`watch --images-over`, `status`); engines without them have no image pass. */
export interface EngineImageCalls {
  /** `list` with each row's `ImageID` (`imageId`): which images the listed containers use. */
  listWithImages(query: ListQuery, signal?: AbortSignal): Promise<ContainerSummary[]>;
  /** Every image with its size and shared size, and the engine's total. */
  diskUsage(signal?: AbortSignal): Promise<EngineImages>;
  /**
   * Every container, in any state and with any labels, whose image is this one or built on it
   * (`GET /containers/json?all=1&filters={"ancestor":[id]}`): asked right before each image removal.
   */
  imageUsers(imageId: string, signal?: AbortSignal): Promise<ContainerSummary[]>;
  /** `DELETE /images/{id}` without force (untagged parents go with it); 409 is `conflict`, 404 `gone`. */
  removeImage(imageId: string, signal?: AbortSignal): Promise<RemoveOutcome>;
  /** The full id of an image name or id (`GET /images/{ref}/json`), null when there is none. */
  imageIdOf(ref: string, signal?: AbortSignal): Promise<string | null>;
  /** Where the engine keeps its data (`GET /info` `DockerRootDir`), null when it does not say. */
  imageRoot(signal?: AbortSignal): Promise<string | null>;
}

/** Whether this client makes the image calls. */
export const hasImageCalls = (e: EngineClient): e is EngineClient & EngineImageCalls => typeof (e as Partial<EngineImageCalls>).diskUsage === 'function';
