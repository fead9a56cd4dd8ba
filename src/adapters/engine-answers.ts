/**
 * What the engine's JSON answers mean to the janitor: each reader takes one parsed answer (or one line of the event
 * stream) and returns the plain type the rest of the code uses, or null / a problem for a malformed one. Pure: no
 * HTTP here (dockerode-engine.ts does the requests).
 */
import { type ImageFacts, fullImageId } from '../core/image-facts.js';
import type { ContainerDetails, ContainerMounts, ContainerSummary, EngineEvent, EngineImages, StatsCounters } from './engine.js';
import { isLive } from './engine.js';

/** One row of `GET /containers/json`; null for a row without an Id (a malformed list). */
export function readListRow(value: unknown): ContainerSummary | null {
  const row = value as Record<string, unknown> | null;
  if (!row || typeof row !== 'object' || typeof row.Id !== 'string') return null;
  return { id: row.Id, name: firstName(row.Names), labels: stringRecord(row.Labels), state: typeof row.State === 'string' ? row.State : '' };
}

/** A list row with its `ImageID` (the image calls' reader: the sweeps' rows leave it out). */
export function readImageUserRow(value: unknown): ContainerSummary | null {
  const row = readListRow(value);
  const imageId = (value as { ImageID?: unknown }).ImageID;
  return row && typeof imageId === 'string' && imageId !== '' ? { ...row, imageId: fullImageId(imageId) } : row;
}

/** `GET /system/df`'s volumes: each one's size as the engine measured it (unknown, -1, left out). */
export function readVolumeSizes(df: unknown): Map<string, number> {
  const out = new Map<string, number>();
  const vols = (df as { Volumes?: unknown } | null)?.Volumes;
  if (!Array.isArray(vols)) return out;
  for (const v of vols as Array<{ Name?: unknown; UsageData?: { Size?: unknown } | null } | null>) {
    const size = v?.UsageData?.Size;
    if (typeof v?.Name === 'string' && typeof size === 'number' && Number.isFinite(size) && size >= 0) out.set(v.Name, size);
  }
  return out;
}

/** `GET /system/df`'s images with the tags of `GET /images/json` (Podman 4's df gives a bare tag there). */
export function readDiskUsage(df: unknown, list: unknown): EngineImages | null {
  const d = df as { LayersSize?: unknown; Images?: unknown } | null;
  if (!isJsonAnswer(d) || !Array.isArray(d.Images) || !Array.isArray(list)) return null;
  const tags = new Map<string, string[]>();
  for (const row of list as Array<{ Id?: unknown; RepoTags?: unknown } | null>) {
    if (typeof row?.Id !== 'string') continue;
    const t = Array.isArray(row.RepoTags) ? row.RepoTags.filter((x): x is string => typeof x === 'string' && x !== '<none>:<none>') : [];
    tags.set(fullImageId(row.Id), t);
  }
  const images: ImageFacts[] = [];
  for (const i of d.Images as Array<Record<string, unknown> | null>) {
    if (typeof i?.Id !== 'string') return null;
    const id = fullImageId(i.Id);
    const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
    images.push({ id, tags: tags.get(id) ?? [], createdMs: num(i.Created) * 1000, size: num(i.Size), sharedSize: Math.max(0, num(i.SharedSize)) });
  }
  return { layersSize: num0(d.LayersSize), images };
}

const num0 = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** One row of `GET /containers/json?all=1` with its mount sources; null for a row without an Id. */
export function readMountsRow(value: unknown): ContainerMounts | null {
  const row = value as { Id?: unknown; Names?: unknown; State?: unknown; Mounts?: unknown } | null;
  if (!row || typeof row !== 'object' || typeof row.Id !== 'string') return null;
  const mounts = Array.isArray(row.Mounts) ? (row.Mounts as Array<{ Source?: unknown } | null>) : [];
  return {
    id: row.Id,
    name: firstName(row.Names),
    state: typeof row.State === 'string' ? row.State : '',
    sources: mounts.map((m) => m?.Source).filter((s): s is string => typeof s === 'string' && s !== ''),
  };
}

/** `GET /containers/{id}/json`; null when the answer is not a container (no Id or no State object). */
export function readInspect(info: unknown): ContainerDetails | null {
  const c = info as {
    Id?: unknown;
    Name?: unknown;
    Created?: unknown;
    State?: Record<string, unknown>;
    Config?: { Labels?: unknown } | null;
    ExecIDs?: unknown;
    Mounts?: unknown;
    HostConfig?: { Init?: unknown } | null;
  } | null;
  if (!isJsonAnswer(c) || typeof c.Id !== 'string' || !c.State || typeof c.State !== 'object') return null;
  const status = typeof c.State.Status === 'string' ? c.State.Status : '';
  return {
    id: c.Id,
    name: typeof c.Name === 'string' ? c.Name.replace(/^\//, '') : '',
    labels: stringRecord(c.Config?.Labels),
    status,
    running: isLive(c.State.Running, status),
    finishedAt: typeof c.State.FinishedAt === 'string' ? c.State.FinishedAt : '',
    startedAt: typeof c.State.StartedAt === 'string' ? c.State.StartedAt : '',
    created: typeof c.Created === 'string' ? c.Created : '',
    execIds: Array.isArray(c.ExecIDs) ? c.ExecIDs.filter((x): x is string => typeof x === 'string') : [],
    ...(typeof c.State.ExitCode === 'number' ? { exitCode: c.State.ExitCode } : {}),
    pid: typeof c.State.Pid === 'number' && Number.isSafeInteger(c.State.Pid) && c.State.Pid > 0 ? c.State.Pid : 0,
    init: c.HostConfig?.Init === true,
    volumes: Array.isArray(c.Mounts)
      ? (c.Mounts as Array<{ Type?: unknown; Name?: unknown } | null>)
          .filter((m) => m && m.Type === 'volume' && typeof m.Name === 'string' && m.Name !== '')
          .map((m) => m!.Name as string)
      : [],
    ...(typeof (c as { SizeRw?: unknown }).SizeRw === 'number' ? { sizeRw: Math.max(0, (c as { SizeRw: number }).SizeRw) } : {}),
    ...bindsOf(c.Mounts),
  };
}

/** The host paths of a container's bind mounts, when it has any. */
function bindsOf(mounts: unknown): { binds?: string[] } {
  if (!Array.isArray(mounts)) return {};
  const binds = (mounts as Array<{ Type?: unknown; Source?: unknown } | null>)
    .filter((m) => m && m.Type === 'bind' && typeof m.Source === 'string' && m.Source.startsWith('/'))
    .map((m) => m!.Source as string);
  return binds.length ? { binds } : {};
}

/** A one-shot stats answer: null when it lacks the CPU counter (a container that is not running, for one). */
export function readStats(answer: unknown): StatsCounters | null {
  const s = answer as {
    cpu_stats?: { cpu_usage?: { total_usage?: unknown } };
    memory_stats?: { stats?: { pgfault?: unknown } };
    pids_stats?: { current?: unknown };
  } | null;
  const cpu = s?.cpu_stats?.cpu_usage?.total_usage;
  if (typeof cpu !== 'number' || !Number.isFinite(cpu) || cpu <= 0) return null;
  const pf = s?.memory_stats?.stats?.pgfault;
  const pids = s?.pids_stats?.current;
  return {
    cpuNs: cpu,
    pgfault: typeof pf === 'number' && Number.isFinite(pf) ? pf : null,
    // Docker and Podman say 0 where the pids controller gives nothing: a running container holds at least one.
    pids: typeof pids === 'number' && Number.isSafeInteger(pids) && pids > 0 ? pids : null,
  };
}

/** One line of `GET /events` (NDJSON); null for anything that is not a well-formed container event. */
export function parseEngineEvent(line: string): EngineEvent | null {
  const text = line.trim();
  if (!text) return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  const e = v as {
    Type?: unknown;
    Action?: unknown;
    status?: unknown;
    id?: unknown;
    Actor?: { ID?: unknown; Attributes?: unknown };
    time?: unknown;
    timeNano?: unknown;
  };
  if (!e || typeof e !== 'object') return null;
  if (e.Type !== undefined && e.Type !== 'container') return null;
  const id = typeof e.Actor?.ID === 'string' ? e.Actor.ID : typeof e.id === 'string' ? e.id : '';
  const rawAction = typeof e.Action === 'string' ? e.Action : typeof e.status === 'string' ? e.status : '';
  if (!id || !rawAction) return null;
  const timeMs = typeof e.timeNano === 'number' && e.timeNano > 0 ? e.timeNano / 1e6 : typeof e.time === 'number' && e.time > 0 ? e.time * 1000 : NaN;
  return { id, action: rawAction.split(':')[0]!.trim(), timeMs, attributes: stringRecord(e.Actor?.Attributes) };
}

/** Whether a buffered answer is JSON at all: dockerode hands over the raw bytes of a body that does not parse. */
export function isJsonAnswer(answer: unknown): answer is object {
  return answer !== null && answer !== undefined && !Buffer.isBuffer(answer) && typeof answer === 'object';
}

function firstName(names: unknown): string {
  const list = Array.isArray(names) ? (names as unknown[]) : [];
  return typeof list[0] === 'string' ? list[0].replace(/^\//, '') : '';
}

function stringRecord(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, val] of Object.entries(v)) if (typeof val === 'string') out[k] = val;
  }
  return out;
}
