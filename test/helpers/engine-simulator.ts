/**
 * An in-memory Docker Engine API simulator for hermes-janitor's fault tests and scale benchmark.
 *
 * A test double, never a substitute for the real engine: it speaks the subset the janitor uses (`/_ping`,
 * `/version`, `GET /containers/json` with `all` and `filters`, `GET /containers/{id}/json`,
 * `DELETE /containers/{id}`), with or without an API version prefix (`/v1.41/...`), on a unix socket or a
 * loopback port. Status codes, messages and JSON shapes follow Docker 20.10 (API 1.41); the parity test runs
 * the same scenarios against this and the real engine.
 *
 * Faults, per container or global: latency, a 500 on remove, a 404 race (removed by someone else between list and
 * inspect), a 409 removal-in-progress (the container then shows `removing`/`dead`, or is gone), a restart between
 * list/inspect and remove (a DELETE without force then gets 409 and the container stays running), a connection
 * dropped mid-sweep (or mid-body), a response that never comes, malformed JSON, and any `FinishedAt` value.
 *
 * Container JSON is generated per response (never stored), and the list is streamed, so 100k containers cost the
 * simulator a few tens of MB.
 *
 * Stand-alone: `node --import tsx test/helpers/engine-simulator.ts --socket /tmp/sim.sock --count 1000 --latency 1-5`
 * (or `--port 2399`), then `hermes-janitor reap --host unix:///tmp/sim.sock --as-of 2100-01-01T00:00:00Z`.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import http from 'node:http';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export type SimState = 'created' | 'running' | 'paused' | 'restarting' | 'removing' | 'exited' | 'dead';
const STATES: ReadonlySet<string> = new Set(['created', 'running', 'paused', 'restarting', 'removing', 'exited', 'dead']);

/** Go's zero time, what the engine reports for a container that never finished. */
export const ZERO_TIME = '0001-01-01T00:00:00Z';
export const SIM_API_VERSION = '1.41';
const MIN_API_VERSION = '1.12';
export const SIM_IMAGE = 'hermes-janitor/busybox:test';

/** Faults for one container. */
export interface ContainerFaults {
  /** Extra delay on every request about this container (ms). */
  latencyMs?: number;
  /** DELETE answers with this status (e.g. 500) and the container stays. */
  removeStatus?: number;
  removeMessage?: string;
  /** The stats endpoint answers with this status. */
  statsStatus?: number;
  /** The stats endpoint answers 200 with this body. */
  statsBody?: string;
  /** Every stats answer first adds this much CPU (a busy process), in ns. */
  cpuPerStats?: number;
  /** Right before its nth stats answer (1-based), the container does something (CPU and page faults grow). */
  touchOnStats?: number;
  /** Right after its nth inspect (1-based), an exec starts in it. */
  execAfterInspect?: number;
  /** Right after its nth inspect (1-based), it is restarted (`restart`: a new StartedAt, its counters start again). */
  restartOnInspect?: number;
  /** Right after its nth stats answer (1-based), it is restarted (`restart`). */
  restartAfterStats?: number;
  /** The stop endpoint answers with this status (the container keeps running). */
  stopStatus?: number;
  /** Removed by someone else right after it was listed: inspect and DELETE then get 404. */
  goneAfterList?: boolean;
  /** Removed by someone else right after its first inspect: the DELETE gets 404. */
  goneAfterInspect?: boolean;
  /**
   * Someone else is already removing it: the DELETE gets 409 "removal ... already in progress" and the container
   * then shows `removing` or `dead`, or is gone (404) with `gone`.
   */
  removalInProgress?: 'removing' | 'dead' | 'gone';
  /** Starts running again right after it was listed (inspect sees it running). */
  restartAfterList?: boolean;
  /** Starts running again right after its first inspect (the DELETE without force then gets 409). */
  restartAfterInspect?: boolean;
  /** Inspect answers 200 with this body instead of the container's JSON. */
  inspectBody?: string;
  /** Inspect answers 200 with broken JSON. */
  malformedInspect?: boolean;
  /** That request is accepted and never answered. */
  hangOn?: 'inspect' | 'remove';
  /** That request's connection is destroyed without an answer (nothing is done). */
  dropOn?: 'inspect' | 'remove';
  /** The DELETE is carried out, then the connection is destroyed before the answer. */
  removeThenDrop?: boolean;
}

/** One container to seed. */
export interface SimContainerSpec {
  /** 64 hex digits (default random). */
  id?: string;
  /** Without the leading `/` (default `hermes-<8 hex>`). */
  name?: string;
  labels?: Record<string, string>;
  /** Default `exited`. */
  state?: SimState;
  /**
   * `State.FinishedAt`, raw: any JSON value (a number, null, a malformed string...). Default: now for exited and
   * dead containers (RFC 3339 with nanoseconds, like Docker), the zero time otherwise.
   */
  finishedAt?: unknown;
  /** Leave `FinishedAt` out of `State` altogether. */
  omitFinishedAt?: boolean;
  /** `State.StartedAt`, raw (default: now, or the zero time for `created`). */
  startedAt?: string;
  /** `Created`, as a Date (default: now). */
  created?: Date;
  /** Cumulative CPU nanoseconds the stats report (default 50 ms); `pgfault` null = none reported (Podman). */
  cpuNs?: number;
  pgfault?: number | null;
  /** `HostConfig.Init` (default true: hermes runs its sandboxes with `--init`). */
  init?: boolean;
  /**
   * Processes in the container's cgroup (`pids_stats.current`, and the local cgroup reading's `pids`). Default: the
   * init and the command alone (2 with init, 1 without); null = the engine reports no count.
   */
  pids?: number | null;
  /** Execs listed in `ExecIDs` (running unless also in `finishedExecs`, which Podman keeps listed). */
  execIds?: string[];
  finishedExecs?: string[];
  /** Volume mounts: anonymous ones go with the container on `DELETE ?v=1`, named ones stay. */
  volumes?: Array<{ name: string; anonymous: boolean }>;
  /** Bind mounts (`-v /host/path:/dest`): listed and inspected with `Type: "bind"` and `Source` as given. */
  binds?: Array<{ source: string; destination: string }>;
  /** The full id of the image it was created from (`ImageID`; default the simulator's test image). */
  image?: string;
  faults?: ContainerFaults;
}

/** One image (`GET /system/df`, `GET /images/json`, `DELETE /images/{id}`). */
export interface SimImageSpec {
  /** `sha256:<64 hex>` (default random). */
  id?: string;
  tags?: string[];
  /** `Size` and `SharedSize` in bytes (default 1 MB, 0). */
  size?: number;
  sharedSize?: number;
  /** `Created` (default now). */
  created?: Date;
}

/** Many alike containers (labels and FinishedAt shared, ids and names generated). */
export interface SimBulkSpec extends Omit<SimContainerSpec, 'id' | 'name'> {
  count: number;
  /** Per-container labels (e.g. a distinct `hermes-task-id`), instead of the shared `labels`. */
  labelsFor?: (i: number) => Record<string, string>;
  /** Per-container `FinishedAt`, instead of the shared `finishedAt`. */
  finishedAtFor?: (i: number) => unknown;
}

/** Faults for every request. */
export interface GlobalFaults {
  /** Delay before every answer: a fixed number of ms, or uniformly in [min, max]. */
  latencyMs?: number | [number, number];
  /** The list answers 200 with broken JSON. */
  malformedList?: boolean;
  /** The list answers 200 with this body. */
  listBody?: string;
  /** Requests of this kind (or every request with true) are accepted and never answered. */
  hang?: boolean | RequestKind;
  /**
   * The list of every container (no `filters`: what the sandbox-directory pass asks for the mounts) is accepted and
   * never answered; a filtered list (a sweep's) is answered.
   */
  hangUnfilteredList?: boolean;
  /** The list sends its headers and half its body, then the connection is destroyed. */
  dropListMidBody?: boolean;
  /** The list sends its headers and half its body, then nothing more. */
  hangListMidBody?: boolean;
  /** After this many requests, every further request has its connection destroyed without an answer. */
  dropAfter?: number;
  /** After this many requests, the engine dies: every connection is destroyed and it stops listening. */
  dieAfter?: number;
}

export type RequestKind = 'ping' | 'version' | 'list' | 'inspect' | 'remove' | 'stats' | 'stop' | 'volume' | 'exec' | 'events' | 'image' | 'other';
/** An event to put on the `GET /events` streams (see `emit`). */
export interface SimEvent {
  id: string;
  action: string;
  /** Default: now. */
  time?: Date;
  /** Default: the container's labels (if it still exists) plus its name. */
  attributes?: Record<string, string>;
}

interface Subscriber {
  res: http.ServerResponse;
  req: http.IncomingMessage;
  labels: string[];
}

export interface RequestRecord {
  method: string;
  url: string;
  kind: RequestKind;
  headers: http.IncomingHttpHeaders;
}

export interface SimulatorOptions {
  containers?: SimContainerSpec[];
  bulk?: SimBulkSpec[];
  faults?: GlobalFaults;
  /** A unix socket path, or a loopback TCP port (0 = any). Default: a fresh socket in the temp directory. */
  socketPath?: string;
  port?: number;
  /** Keep every request (method, url, headers) in `requests`. */
  record?: boolean;
  /** Keep the id and time of every removal through the API, in order, in `removals`. */
  recordRemovals?: boolean;
  /** The clock used for default FinishedAt values (default: the real one). */
  now?: () => Date;
  /** Images besides the test image. */
  images?: SimImageSpec[];
  /** `DockerRootDir` of `GET /info` (default /var/lib/docker). */
  rootDir?: string;
}

export interface SimContainerView {
  id: string;
  name: string;
  labels: Record<string, string>;
  state: SimState;
  finishedAt: unknown;
}

export interface SimStats {
  requests: number;
  byKind: Record<RequestKind, number>;
  /** DELETEs with force=true (the janitor must never send one). */
  forcedRemovals: number;
  /** Most requests in flight at once. */
  maxInFlight: number;
  /** Containers removed through the API. */
  removed: number;
  /** Containers stopped through the API. */
  stopped: number;
}

interface Rec {
  id: string;
  name: string;
  labels: Record<string, string>;
  state: SimState;
  finishedAt: unknown;
  omitFinishedAt: boolean;
  startedAt: string;
  created: number;
  faults: ContainerFaults | undefined;
  inspected: number;
  cpuNs: number;
  pgfault: number | null;
  init: boolean;
  pids: number | null;
  /** `State.Pid` while it runs: 4242, one more at each start (a real start gives a new init process). */
  pid: number;
  execIds: string[];
  finishedExecs: Set<string>;
  /** What `GET /exec/{id}/json` adds for an exec (`setExecDetails`): its host `Pid` and `ProcessConfig`. */
  execDetails: Map<string, { pid: number; entrypoint: string; arguments: string[] }>;
  statsCalls: number;
  volumes: Array<{ name: string; anonymous: boolean }>;
  binds: Array<{ source: string; destination: string }>;
  image: string | undefined;
}

interface ImageRec {
  id: string;
  tags: string[];
  size: number;
  sharedSize: number;
  created: number;
}

/** `2026-11-22T13:42:57.388521162Z`: Go's RFC3339Nano (trailing zeros of the fraction trimmed). */
export function rfc3339Nano(d: Date, subMsNanos = Math.floor(Math.random() * 1_000_000)): string {
  const iso = d.toISOString(); // 2026-11-22T13:42:57.388Z
  const fraction = `${iso.slice(20, 23)}${String(subMsNanos).padStart(6, '0')}`.replace(/0+$/, '');
  return `${iso.slice(0, 19)}${fraction ? `.${fraction}` : ''}Z`;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class EngineSimulator {
  /** `unix:///path` or `tcp://127.0.0.1:PORT`, for `--host` / `DOCKER_HOST`. */
  host = '';
  socketPath: string | undefined;
  port: number | undefined;
  faults: GlobalFaults;
  readonly requests: RequestRecord[] = [];
  /** Removals through the API in the order they happened (with `recordRemovals`). */
  readonly removals: Array<{ id: string; atMs: number }> = [];
  stats: SimStats = EngineSimulator.emptyStats();

  private readonly byId = new Map<string, Rec>();
  private readonly byName = new Map<string, string>();
  /** Volumes that exist. */
  readonly volumeNames = new Set<string>();
  private readonly server: http.Server;
  private readonly sockets = new Set<Socket>();
  private inFlight = 0;
  private readonly subscribers = new Set<Subscriber>();
  private dead = false;
  private ownSocketFile = false;
  private readonly now: () => Date;
  private readonly record: boolean;
  private readonly imageId = `sha256:${hex(32)}`;
  private readonly networkId = hex(32);

  private constructor(private readonly opts: SimulatorOptions) {
    this.faults = { ...(opts.faults ?? {}) };
    this.now = opts.now ?? (() => new Date());
    this.record = Boolean(opts.record);
    for (const spec of opts.images ?? []) this.addImage(spec);
    for (const spec of opts.containers ?? []) this.add(spec);
    for (const b of opts.bulk ?? []) this.addBulk(b);
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.requestTimeout = 0;
    this.server.headersTimeout = 0;
    this.server.keepAliveTimeout = 60_000;
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  static emptyStats(): SimStats {
    return {
      requests: 0,
      byKind: { ping: 0, version: 0, list: 0, inspect: 0, remove: 0, stats: 0, stop: 0, volume: 0, exec: 0, events: 0, image: 0, other: 0 },
      forcedRemovals: 0,
      maxInFlight: 0,
      removed: 0,
      stopped: 0,
    };
  }

  static async start(opts: SimulatorOptions = {}): Promise<EngineSimulator> {
    const sim = new EngineSimulator(opts);
    await sim.listen();
    return sim;
  }

  private async listen(): Promise<void> {
    const { opts } = this;
    if (opts.port !== undefined) {
      await new Promise<void>((resolve, reject) => {
        this.server.once('error', reject);
        this.server.listen(opts.port, '127.0.0.1', () => resolve());
      });
      const addr = this.server.address();
      this.port = typeof addr === 'object' && addr ? addr.port : opts.port;
      this.host = `tcp://127.0.0.1:${this.port}`;
      return;
    }
    const socketPath = opts.socketPath ?? path.join(os.tmpdir(), `hj-sim-${process.pid}-${hex(4)}.sock`);
    rmSync(socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(socketPath, () => resolve());
    });
    this.ownSocketFile = true;
    this.socketPath = socketPath;
    this.host = `unix://${socketPath}`;
  }

  /** The engine goes away (stops listening, every connection cut) but keeps its containers; see `comeBack`. */
  async goDown(): Promise<void> {
    this.subscribers.clear();
    for (const s of this.sockets) s.destroy();
    if (this.server.listening) await new Promise<void>((r) => this.server.close(() => r()));
    if (this.ownSocketFile && this.socketPath) rmSync(this.socketPath, { force: true });
  }

  /** Listens again at the same address after `goDown`. */
  async comeBack(): Promise<void> {
    const { socketPath, port } = this;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      if (socketPath) this.server.listen(socketPath, () => resolve());
      else this.server.listen(port, '127.0.0.1', () => resolve());
    });
  }

  /** Stops listening and destroys every connection (hung requests included). */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    if (this.server.listening) await new Promise<void>((r) => this.server.close(() => r()));
    if (this.ownSocketFile && this.socketPath) rmSync(this.socketPath, { force: true });
  }

  // ---- the containers -------------------------------------------------------------------------------------

  add(spec: SimContainerSpec = {}): string {
    const id = spec.id ?? hex(32);
    const state = spec.state ?? 'exited';
    const now = this.now();
    const name = spec.name ?? `hermes-${hex(4)}`;
    const rec: Rec = {
      id,
      name,
      labels: spec.labels ?? {},
      state,
      finishedAt: 'finishedAt' in spec ? spec.finishedAt : state === 'exited' || state === 'dead' ? rfc3339Nano(now) : ZERO_TIME,
      omitFinishedAt: Boolean(spec.omitFinishedAt),
      startedAt: spec.startedAt ?? (state === 'created' ? ZERO_TIME : rfc3339Nano(now)),
      created: Math.floor((spec.created ?? now).getTime() / 1000),
      faults: spec.faults,
      inspected: 0,
      cpuNs: spec.cpuNs ?? 50_000_000,
      pgfault: spec.pgfault === undefined ? 1000 : spec.pgfault,
      init: spec.init ?? true,
      pids: spec.pids === undefined ? ((spec.init ?? true) ? 2 : 1) : spec.pids,
      pid: 4242,
      execIds: spec.execIds ?? [],
      finishedExecs: new Set(spec.finishedExecs ?? []),
      execDetails: new Map(),
      statsCalls: 0,
      volumes: spec.volumes ?? [],
      binds: spec.binds ?? [],
      image: spec.image,
    };
    for (const v of rec.volumes) this.volumeNames.add(v.name);
    this.byId.set(id, rec);
    this.byName.set(name, id);
    if (this.subscribers.size) this.emit({ id, action: 'create' });
    return id;
  }

  // ---- the images ----------------------------------------------------------------------------------------

  /** Images by id (the test image every container defaults to is not among them). */
  readonly images = new Map<string, ImageRec>();
  /** Image removals through the API, in order. */
  readonly imageRemovals: string[] = [];

  addImage(spec: SimImageSpec = {}): string {
    const id = spec.id ?? `sha256:${hex(32)}`;
    this.images.set(id, {
      id,
      tags: spec.tags ?? [],
      size: spec.size ?? 1_000_000,
      sharedSize: spec.sharedSize ?? 0,
      created: Math.floor((spec.created ?? this.now()).getTime() / 1000),
    });
    return id;
  }

  private imageOf(rec: Rec): string {
    return rec.image ?? this.imageId;
  }

  private imageRoute(method: string, p: string, res: http.ServerResponse): boolean {
    if (method === 'GET' && p === '/info') {
      this.send(res, 200, { DockerRootDir: this.opts.rootDir ?? '/var/lib/docker', Driver: 'overlay2', Containers: this.byId.size, Images: this.images.size });
      return true;
    }
    if (method === 'GET' && p === '/system/df') {
      const counts = new Map<string, number>();
      for (const rec of this.byId.values()) counts.set(this.imageOf(rec), (counts.get(this.imageOf(rec)) ?? 0) + 1);
      const rows = [...this.images.values()].map((i) => ({
        Id: i.id,
        ParentId: '',
        RepoTags: i.tags,
        RepoDigests: [],
        Created: i.created,
        Size: i.size,
        SharedSize: i.sharedSize,
        VirtualSize: i.size,
        Labels: null,
        Containers: counts.get(i.id) ?? 0,
      }));
      const layers = rows.reduce((n, r) => n + r.Size - r.SharedSize, 0) + Math.max(0, ...rows.map((r) => r.SharedSize));
      this.send(res, 200, { LayersSize: layers, Images: rows, Containers: [], Volumes: [], BuildCache: [] });
      return true;
    }
    if (method === 'GET' && p === '/images/json') {
      this.send(
        res,
        200,
        [...this.images.values()].map((i) => ({ Id: i.id, ParentId: '', RepoTags: i.tags, Created: i.created, Size: i.size, SharedSize: -1, Containers: -1 })),
      );
      return true;
    }
    const m = /^\/images\/(.+?)(\/json)?$/.exec(p);
    if (!m) return false;
    const ref = decodeURIComponent(m[1]!);
    const img = this.images.get(ref) ?? [...this.images.values()].find((i) => i.tags.includes(ref));
    if (method === 'GET' && m[2]) {
      if (!img) throw new HttpError(404, `No such image: ${ref}`);
      this.send(res, 200, { Id: img.id, RepoTags: img.tags, Created: new Date(img.created * 1000).toISOString(), Size: img.size });
      return true;
    }
    if (method !== 'DELETE' || m[2]) return false;
    if (!img) throw new HttpError(404, `No such image: ${ref}`);
    for (const rec of this.byId.values()) {
      if (this.imageOf(rec) === img.id)
        throw new HttpError(
          409,
          `conflict: unable to delete ${img.id.slice(7, 19)} (must be forced) - image is being used by stopped container ${rec.id.slice(0, 12)}`,
        );
    }
    this.images.delete(img.id);
    this.imageRemovals.push(img.id);
    this.send(res, 200, [...img.tags.map((t) => ({ Untagged: t })), { Deleted: img.id }]);
    return true;
  }

  /** Many alike containers; returns how many were added. */
  addBulk(spec: SimBulkSpec): number {
    const finishedAt = 'finishedAt' in spec ? spec.finishedAt : (spec.state ?? 'exited') === 'exited' ? rfc3339Nano(this.now()) : ZERO_TIME;
    const labels = spec.labels ?? {};
    const { count, labelsFor, finishedAtFor, ...rest } = spec;
    for (let i = 0; i < count; i++) {
      this.add({
        ...rest,
        labels: labelsFor ? labelsFor(i) : labels,
        finishedAt: finishedAtFor ? finishedAtFor(i) : finishedAt,
      });
    }
    return spec.count;
  }

  get(idOrName: string): SimContainerView | undefined {
    const rec = this.find(idOrName);
    return rec && { id: rec.id, name: rec.name, labels: { ...rec.labels }, state: rec.state, finishedAt: rec.finishedAt };
  }

  /** Ids of every container still there. */
  ids(): string[] {
    return [...this.byId.keys()];
  }

  get size(): number {
    return this.byId.size;
  }

  /** Sets a container's state (e.g. someone started it again). */
  setState(id: string, state: SimState, finishedAt?: Date): void {
    const rec = this.find(id);
    if (!rec) throw new Error(`no container ${id}`);
    const was = rec.state;
    if (state === 'running' && rec.state !== 'running') {
      rec.startedAt = rfc3339Nano(this.now());
      rec.pid++;
    }
    if (state === 'exited' && was !== 'exited') rec.finishedAt = rfc3339Nano(finishedAt ?? this.now());
    rec.state = state;
    if (state === 'running' && was !== 'running') this.emit({ id: rec.id, action: 'start' });
    if (state === 'exited' && was !== 'exited') this.emit({ id: rec.id, action: 'die', ...(finishedAt ? { time: finishedAt } : {}) });
  }

  /** Subscribers on `GET /events` right now. */
  get eventSubscribers(): number {
    return this.subscribers.size;
  }

  /** Puts one event on every matching `GET /events` stream (duplicates, out-of-order or stale events included). */
  emit(ev: SimEvent): void {
    if (this.subscribers.size === 0) return;
    const rec = this.byId.get(ev.id);
    const attributes = ev.attributes ?? { ...(rec?.labels ?? {}), ...(rec ? { name: rec.name, image: SIM_IMAGE } : {}) };
    const t = ev.time ?? this.now();
    const line = `${JSON.stringify({
      status: ev.action,
      id: ev.id,
      from: SIM_IMAGE,
      Type: 'container',
      Action: ev.action,
      Actor: { ID: ev.id, Attributes: attributes },
      scope: 'local',
      time: Math.floor(t.getTime() / 1000),
      timeNano: t.getTime() * 1e6,
    })}\n`;
    for (const sub of this.subscribers) {
      if (!sub.labels.every((l) => labelMatches(l, attributes))) continue;
      sub.res.write(line);
    }
  }

  /** Cuts every event stream; with `midEvent`, after writing the first half of one more event. */
  cutEventStreams(midEvent = false): void {
    for (const sub of this.subscribers) {
      if (midEvent) sub.res.write('{"status":"die","id":"0123456789abcdef","Type":"container","Act');
      sub.req.socket.destroy();
    }
    this.subscribers.clear();
  }

  /**
   * Restarted as the engine does it (`docker restart`): running, with a new StartedAt, a new init process
   * (`State.Pid`) and a new cgroup whose counters start again.
   */
  restart(id: string): void {
    const rec = this.find(id);
    if (!rec) throw new Error(`no container ${id}`);
    rec.state = 'running';
    rec.pid++;
    rec.startedAt = rfc3339Nano(new Date(Math.max(this.now().getTime(), Date.parse(rec.startedAt) || 0) + 1));
    rec.cpuNs = 20_000_000;
    if (rec.pgfault !== null) rec.pgfault = 300;
  }

  /** The container did something: its CPU and page-fault counters grow. */
  touch(id: string, cpuNs = 19_000_000, pgfault = 470): void {
    const rec = this.find(id);
    if (!rec) throw new Error(`no container ${id}`);
    rec.cpuNs += cpuNs;
    if (rec.pgfault !== null) rec.pgfault += pgfault;
  }

  /**
   * How many processes the container holds from now on (a background job left behind: more than its init and its
   * command); null = the engine reports no count.
   */
  setPids(id: string, pids: number | null): void {
    const rec = this.find(id);
    if (!rec) throw new Error(`no container ${id}`);
    rec.pids = pids;
  }

  /**
   * What the container's cgroup would read on the engine's host (CPU ns, page faults, processes), as the janitor's
   * local counter reader sees it through process `pid`: null unless it runs and `pid` is its init process
   * (`State.Pid`: 4242, one more at each start).
   */
  counters(id: string, pid: number): { cpuNs: number; pgfault: number | null; pids: number | null } | null {
    const rec = this.find(id);
    return rec && rec.state === 'running' && rec.pid === pid ? { cpuNs: rec.cpuNs, pgfault: rec.pgfault, pids: rec.pids } : null;
  }

  private readonly nextListHooks: Array<() => void> = [];

  /** Runs `fn` right after the next container list is answered (e.g. someone removes a container then). */
  afterNextList(fn: () => void): void {
    this.nextListHooks.push(fn);
  }

  /** Sets the execs in flight. */
  setExecs(id: string, execIds: string[]): void {
    const rec = this.find(id);
    if (!rec) throw new Error(`no container ${id}`);
    rec.execIds = execIds;
  }

  /** Gives an exec of the container a host pid and a command (its `GET /exec/{id}/json` answer). */
  setExecDetails(id: string, execId: string, details: { pid: number; entrypoint: string; arguments: string[] }): void {
    const rec = this.find(id);
    if (!rec) throw new Error(`no container ${id}`);
    if (!rec.execIds.includes(execId)) rec.execIds = [...rec.execIds, execId];
    rec.execDetails.set(execId, details);
  }

  /** Removes a container behind the janitor's back. */
  delete(id: string): boolean {
    const rec = this.find(id);
    if (!rec) return false;
    if (this.subscribers.size) this.emit({ id: rec.id, action: 'destroy', attributes: { ...rec.labels, name: rec.name, image: SIM_IMAGE } });
    this.byId.delete(rec.id);
    if (this.byName.get(rec.name) === rec.id) this.byName.delete(rec.name);
    return true;
  }

  resetStats(): void {
    this.stats = EngineSimulator.emptyStats();
    this.requests.length = 0;
  }

  /** Full id, unique id prefix or name, like the engine. */
  private find(ref: string): Rec | undefined {
    const exact = this.byId.get(ref) ?? this.byId.get(this.byName.get(ref) ?? '');
    if (exact) return exact;
    if (!/^[0-9a-f]{1,63}$/.test(ref)) return undefined;
    let found: Rec | undefined;
    for (const rec of this.byId.values()) {
      if (rec.id.startsWith(ref)) {
        if (found) throw new HttpError(404, `No such container: ${ref}`); // ambiguous: Docker says 404 too
        found = rec;
      }
    }
    return found;
  }

  // ---- HTTP -----------------------------------------------------------------------------------------------

  private headers(json = true): Record<string, string> {
    return {
      'Api-Version': SIM_API_VERSION,
      ...(json ? { 'Content-Type': 'application/json' } : {}),
      'Docker-Experimental': 'false',
      Ostype: 'linux',
      Server: 'Docker/20.10.24-sim (linux)',
    };
  }

  private send(res: http.ServerResponse, status: number, body: unknown): void {
    if (res.destroyed) return;
    if (status === 204) {
      res.writeHead(204, this.headers(false));
      res.end();
      return;
    }
    const text = typeof body === 'string' ? body : `${JSON.stringify(body)}\n`;
    res.writeHead(status, { ...this.headers(), 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  private drop(req: http.IncomingMessage): void {
    req.socket.destroy();
  }

  /** The engine dies: every connection is cut and nothing more is accepted. */
  private die(): void {
    this.dead = true;
    this.server.close();
    for (const s of this.sockets) s.destroy();
  }

  private latency(rec?: Rec): number {
    const l = this.faults.latencyMs;
    let ms = typeof l === 'number' ? l : Array.isArray(l) ? l[0] + Math.random() * (l[1] - l[0]) : 0;
    ms += rec?.faults?.latencyMs ?? 0;
    return ms;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.inFlight++;
    this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.inFlight);
    let done = false;
    const finish = () => {
      if (!done) {
        done = true;
        this.inFlight--;
      }
    };
    res.on('close', finish);
    res.on('finish', finish);
    req.resume();
    try {
      await this.route(req, res);
    } catch (err) {
      if (err instanceof HttpError) this.send(res, err.status, { message: err.message });
      else this.send(res, 500, { message: `simulator error: ${(err as Error).message}` });
    }
  }

  private async route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://engine');
    let p = url.pathname;
    const version = /^\/v(\d+)\.(\d+)(\/.*)$/.exec(p);
    if (version) {
      const v = `${version[1]}.${version[2]}`;
      p = version[3]!;
      if (Number(version[1]) > 1 || Number(version[2]) > 41) {
        throw new HttpError(400, `client version ${v} is too new. Maximum supported API version is ${SIM_API_VERSION}`);
      }
      if (Number(version[1]) < 1 || Number(version[2]) < 12) {
        throw new HttpError(
          400,
          `client version ${v} is too old. Minimum supported API version is ${MIN_API_VERSION}, please upgrade your client to a newer version`,
        );
      }
    }
    const method = req.method ?? 'GET';
    const m = /^\/containers\/([^/]+)(\/json|\/stats|\/stop)?$/.exec(p);
    const vol = /^\/volumes\/([^/]+)$/.exec(p);
    const exec = /^\/exec\/([^/]+)\/json$/.exec(p);
    const kind: RequestKind =
      p === '/_ping'
        ? 'ping'
        : p === '/version'
          ? 'version'
          : p === '/containers/json' && method === 'GET'
            ? 'list'
            : p === '/events' && method === 'GET'
              ? 'events'
              : m && m[2] === '/json' && method === 'GET'
                ? 'inspect'
                : m && m[2] === '/stats' && method === 'GET'
                  ? 'stats'
                  : m && m[2] === '/stop' && method === 'POST'
                    ? 'stop'
                    : m && !m[2] && method === 'DELETE'
                      ? 'remove'
                      : vol && method === 'GET'
                        ? 'volume'
                        : exec && method === 'GET'
                          ? 'exec'
                          : p === '/info' || p === '/system/df' || p.startsWith('/images/')
                            ? 'image'
                            : 'other';
    this.stats.requests++;
    this.stats.byKind[kind]++;
    if (this.record) this.requests.push({ method, url: req.url ?? '', kind, headers: req.headers });

    const f = this.faults;
    if (this.dead) return this.drop(req);
    if (f.dieAfter !== undefined && this.stats.requests > f.dieAfter) {
      this.die();
      return;
    }
    if (f.dropAfter !== undefined && this.stats.requests > f.dropAfter) return this.drop(req);
    if (f.hang === true || f.hang === kind) return; // accepted, never answered
    if (f.hangUnfilteredList && kind === 'list' && !url.searchParams.has('filters')) return;

    const ref = m ? decodeURIComponent(m[1]!) : '';
    const rec = kind === 'inspect' || kind === 'remove' || kind === 'stats' || kind === 'stop' ? this.findOr404(ref, kind) : undefined;
    const delay = this.latency(rec ?? undefined);
    if (delay > 0) await sleep(delay);
    if (res.destroyed) return;

    switch (kind) {
      case 'ping':
        if (method !== 'GET' && method !== 'HEAD') break;
        res.writeHead(200, {
          ...this.headers(false),
          'Cache-Control': 'no-cache, no-store, must-revalidate',
          Pragma: 'no-cache',
          'Content-Type': 'text/plain; charset=utf-8',
          'Content-Length': 2,
        });
        res.end(method === 'HEAD' ? undefined : 'OK');
        return;
      case 'version':
        return this.send(res, 200, this.versionBody());
      case 'list':
        return this.list(url, req, res);
      case 'inspect':
        return this.inspect(ref, rec ?? null, req, res);
      case 'remove':
        return this.remove(ref, rec ?? null, url, req, res);
      case 'events':
        return this.events(url, req, res);
      case 'stats':
        return this.statsOf(ref, rec ?? null, res);
      case 'stop':
        return this.stop(ref, rec ?? null, res);
      case 'volume': {
        const name = decodeURIComponent(vol![1]!);
        if (!this.volumeNames.has(name)) throw new HttpError(404, `get ${name}: no such volume`);
        return this.send(res, 200, {
          Name: name,
          Driver: 'local',
          Mountpoint: `/var/lib/docker/volumes/${name}/_data`,
          Labels: null,
          Options: null,
          Scope: 'local',
        });
      }
      case 'image':
        if (this.imageRoute(method, p, res)) return;
        break;
      case 'exec': {
        // Execs in a container's ExecIDs run; `finishedExecs` are listed too (as Podman does) but have ended.
        const eid = decodeURIComponent(exec![1]!);
        for (const r of this.byId.values()) {
          if (r.execIds.includes(eid)) {
            const more = r.execDetails.get(eid);
            return this.send(res, 200, {
              ID: eid,
              Running: !r.finishedExecs.has(eid),
              ExitCode: null,
              ContainerID: r.id,
              ...(more
                ? { Pid: more.pid, ProcessConfig: { entrypoint: more.entrypoint, arguments: more.arguments, tty: false, privileged: false } }
                : { Pid: 0 }),
            });
          }
        }
        throw new HttpError(404, `No such exec instance: ${eid}`);
      }
      case 'other':
      default:
        break;
    }
    throw new HttpError(404, 'page not found');
  }

  private findOr404(ref: string, _kind: RequestKind): Rec | null {
    return this.find(ref) ?? null;
  }

  private versionBody(): unknown {
    const details = { ApiVersion: SIM_API_VERSION, Arch: 'amd64', MinAPIVersion: MIN_API_VERSION, Os: 'linux' };
    return {
      Platform: { Name: 'hermes-janitor engine simulator' },
      Components: [{ Name: 'Engine', Version: '20.10.24-sim', Details: details }],
      Version: '20.10.24-sim',
      ...details,
      GoVersion: 'n/a',
      KernelVersion: os.release(),
    };
  }

  // ---- GET /containers/json ---------------------------------------------------------------------------------

  private parseFilters(raw: string | null): Map<string, string[]> {
    const out = new Map<string, string[]>();
    if (!raw) return out;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      throw new HttpError(400, (err as Error).message);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new HttpError(400, 'invalid filter format');
    for (const [key, v] of Object.entries(parsed as Record<string, unknown>)) {
      // Both forms the engine accepts: {"label": ["a=1"]} and the legacy {"label": {"a=1": true}}.
      const values = Array.isArray(v) ? v.map(String) : v && typeof v === 'object' ? Object.keys(v) : null;
      if (!values) throw new HttpError(400, 'invalid filter format');
      if (!['label', 'status', 'id', 'name', 'ancestor'].includes(key)) throw new HttpError(400, `Invalid filter '${key}'`);
      for (const s of key === 'status' ? values : []) if (!STATES.has(s)) throw new HttpError(400, `Invalid filter 'status=${s}'`);
      out.set(key, values);
    }
    return out;
  }

  private matches(rec: Rec, all: boolean, filters: Map<string, string[]>): boolean {
    const status = filters.get('status');
    if (status) {
      if (!status.includes(rec.state)) return false;
    } else if (!all && rec.state !== 'running') {
      return false;
    }
    for (const l of filters.get('label') ?? []) {
      const eq = l.indexOf('=');
      const key = eq < 0 ? l : l.slice(0, eq);
      if (!Object.hasOwn(rec.labels, key)) return false;
      if (eq >= 0 && rec.labels[key] !== l.slice(eq + 1)) return false;
    }
    const ids = filters.get('id');
    if (ids && !ids.some((i) => rec.id.startsWith(i))) return false;
    const names = filters.get('name');
    if (names && !names.some((n) => rec.name.includes(n.replace(/^\//, '')))) return false;
    const ancestors = filters.get('ancestor');
    if (ancestors && !ancestors.some((a) => this.imageOf(rec) === a || this.imageOf(rec) === `sha256:${a}`)) return false;
    return true;
  }

  private statusText(rec: Rec): string {
    switch (rec.state) {
      case 'running':
        return 'Up 5 minutes';
      case 'paused':
        return 'Up 5 minutes (Paused)';
      case 'restarting':
        return 'Restarting (1) 2 seconds ago';
      case 'removing':
        return 'Removal In Progress';
      case 'dead':
        return 'Dead';
      case 'created':
        return 'Created';
      case 'exited':
      default:
        return 'Exited (137) 5 minutes ago';
    }
  }

  private listRow(rec: Rec): string {
    return JSON.stringify({
      Id: rec.id,
      Names: [`/${rec.name}`],
      Image: SIM_IMAGE,
      ImageID: this.imageOf(rec),
      Command: 'sleep 3600',
      Created: rec.created,
      Ports: [],
      Labels: rec.labels,
      State: rec.state,
      Status: this.statusText(rec),
      HostConfig: { NetworkMode: 'none' },
      NetworkSettings: {
        Networks: {
          none: {
            IPAMConfig: null,
            Links: null,
            Aliases: null,
            NetworkID: this.networkId,
            EndpointID: '',
            Gateway: '',
            IPAddress: '',
            IPPrefixLen: 0,
            IPv6Gateway: '',
            GlobalIPv6Address: '',
            GlobalIPv6PrefixLen: 0,
            MacAddress: '',
            DriverOpts: null,
          },
        },
      },
      // Docker 20.10's list: an anonymous volume has no Source; binds as given.
      Mounts: [
        ...rec.volumes.map((v) => ({
          Type: 'volume',
          Name: v.name,
          Source: v.anonymous ? '' : `/var/lib/docker/volumes/${v.name}/_data`,
          Destination: `/${v.name.slice(0, 8)}`,
          Driver: 'local',
          Mode: v.anonymous ? '' : 'z',
          RW: true,
          Propagation: '',
        })),
        ...this.bindMounts(rec),
      ],
    });
  }

  private bindMounts(rec: Rec): unknown[] {
    return rec.binds.map((b) => ({ Type: 'bind', Source: b.source, Destination: b.destination, Mode: '', RW: true, Propagation: 'rprivate' }));
  }

  private async list(url: URL, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const all = ['1', 'true', 'True'].includes(url.searchParams.get('all') ?? '');
    const filters = this.parseFilters(url.searchParams.get('filters'));
    const f = this.faults;
    if (f.listBody !== undefined || f.malformedList) {
      return this.send(res, 200, f.listBody ?? '[{"Id":"0123456789ab", "Names": ["/hermes-0000"], "Labels": {"hermes-agent": "1"},, oops');
    }
    const midBody = f.dropListMidBody || f.hangListMidBody;
    // Snapshot the matching records first (the engine answers from one view), then stream the JSON lazily.
    const rows: Rec[] = [];
    const ids = filters.get('id');
    if (ids && ids.every((i) => i.length === 64)) {
      // Full ids: looked up directly, in the order given (100k containers are not scanned per request).
      for (const i of ids) {
        const rec = this.byId.get(i);
        if (rec && this.matches(rec, all, filters)) rows.push(rec);
      }
    } else {
      for (const rec of this.byId.values()) if (this.matches(rec, all, filters)) rows.push(rec);
    }
    res.writeHead(200, this.headers());
    const after: Array<() => void> = [];
    let buf = '[';
    const cut = midBody ? Math.max(1, Math.floor(rows.length / 2)) : -1;
    for (let i = 0; i < rows.length; i++) {
      const rec = rows[i]!;
      if (i === cut) {
        res.write(buf);
        if (f.dropListMidBody) setTimeout(() => this.drop(req), 20);
        return; // hangListMidBody: nothing more, ever
      }
      buf += (i ? ',' : '') + this.listRow(rec);
      if (rec.faults?.goneAfterList) after.push(() => this.delete(rec.id));
      if (rec.faults?.restartAfterList) after.push(() => this.setState(rec.id, 'running'));
      if (buf.length >= 64 * 1024) {
        if (!res.write(buf)) {
          await new Promise<void>((r) => {
            const go = () => {
              res.off('drain', go).off('close', go);
              r();
            };
            res.on('drain', go).on('close', go);
          });
        }
        buf = '';
        if (res.destroyed) return;
      }
    }
    if (cut >= 0) {
      res.write(buf);
      if (f.dropListMidBody) setTimeout(() => this.drop(req), 20);
      return;
    }
    res.end(`${buf}]\n`);
    for (const fn of after) fn();
    for (const fn of this.nextListHooks.splice(0)) fn();
  }

  // ---- GET /events ------------------------------------------------------------------------------------------

  private events(url: URL, req: http.IncomingMessage, res: http.ServerResponse): void {
    let labels: string[] = [];
    const raw = url.searchParams.get('filters');
    if (raw) {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(raw) as Record<string, unknown>;
      } catch (err) {
        throw new HttpError(400, (err as Error).message);
      }
      const l = parsed.label;
      labels = Array.isArray(l) ? l.map(String) : l && typeof l === 'object' ? Object.keys(l) : [];
      const t = parsed.type;
      const types = Array.isArray(t) ? t.map(String) : t && typeof t === 'object' ? Object.keys(t) : ['container'];
      if (!types.includes('container')) labels = ['\u0000never'];
    }
    res.writeHead(200, this.headers());
    res.flushHeaders();
    const sub: Subscriber = { res, req, labels };
    this.subscribers.add(sub);
    res.on('close', () => this.subscribers.delete(sub));
  }

  // ---- GET /containers/{id}/json ----------------------------------------------------------------------------

  private inspectBody(rec: Rec): string {
    const dir = `/var/lib/docker/containers/${rec.id}`;
    const overlay = `/var/lib/docker/overlay2/${rec.id}`;
    const state: Record<string, unknown> = {
      Status: rec.state,
      Running: rec.state === 'running' || rec.state === 'paused' || rec.state === 'restarting',
      Paused: rec.state === 'paused',
      Restarting: rec.state === 'restarting',
      OOMKilled: false,
      Dead: rec.state === 'dead',
      Pid: rec.state === 'running' ? rec.pid : 0,
      ExitCode: rec.state === 'exited' ? 137 : 0,
      Error: '',
      StartedAt: rec.startedAt,
    };
    if (!rec.omitFinishedAt) state.FinishedAt = rec.finishedAt;
    return JSON.stringify({
      Id: rec.id,
      Created: new Date(rec.created * 1000).toISOString().replace('.000Z', '.123456789Z'),
      Path: 'sleep',
      Args: ['3600'],
      State: state,
      Image: this.imageId,
      ResolvConfPath: `${dir}/resolv.conf`,
      HostnamePath: `${dir}/hostname`,
      HostsPath: `${dir}/hosts`,
      LogPath: `${dir}/${rec.id}-json.log`,
      Name: `/${rec.name}`,
      RestartCount: 0,
      Driver: 'overlay2',
      Platform: 'linux',
      MountLabel: '',
      ProcessLabel: '',
      AppArmorProfile: '',
      ExecIDs: rec.execIds.length ? rec.execIds : null,
      HostConfig: {
        Binds: rec.binds.length ? rec.binds.map((b) => `${b.source}:${b.destination}`) : null,
        ContainerIDFile: '',
        LogConfig: { Type: 'json-file', Config: {} },
        NetworkMode: 'none',
        PortBindings: {},
        RestartPolicy: { Name: 'no', MaximumRetryCount: 0 },
        AutoRemove: false,
        VolumeDriver: '',
        VolumesFrom: null,
        CapAdd: null,
        CapDrop: null,
        CgroupnsMode: 'host',
        Dns: [],
        DnsOptions: [],
        DnsSearch: [],
        ExtraHosts: null,
        GroupAdd: null,
        IpcMode: 'private',
        Cgroup: '',
        Links: null,
        OomScoreAdj: 0,
        PidMode: '',
        Privileged: false,
        PublishAllPorts: false,
        ReadonlyRootfs: false,
        SecurityOpt: null,
        UTSMode: '',
        UsernsMode: '',
        ShmSize: 67108864,
        Runtime: 'runc',
        ConsoleSize: [0, 0],
        Isolation: '',
        CpuShares: 0,
        Memory: 0,
        NanoCpus: 0,
        CgroupParent: '',
        BlkioWeight: 0,
        Devices: [],
        MemorySwappiness: null,
        OomKillDisable: false,
        PidsLimit: null,
        Ulimits: [],
        MaskedPaths: [
          '/proc/asound',
          '/proc/acpi',
          '/proc/kcore',
          '/proc/keys',
          '/proc/latency_stats',
          '/proc/timer_list',
          '/proc/timer_stats',
          '/proc/sched_debug',
          '/proc/scsi',
          '/sys/firmware',
        ],
        ReadonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
        Init: rec.init ? true : null,
      },
      GraphDriver: {
        Data: {
          LowerDir: `${overlay}-init/diff`,
          MergedDir: `${overlay}/merged`,
          UpperDir: `${overlay}/diff`,
          WorkDir: `${overlay}/work`,
        },
        Name: 'overlay2',
      },
      Mounts: [
        ...rec.volumes.map((v) => ({
          Type: 'volume',
          Name: v.name,
          Source: `/var/lib/docker/volumes/${v.name}/_data`,
          Destination: `/${v.name.slice(0, 8)}`,
          Driver: 'local',
          Mode: v.anonymous ? '' : 'z',
          RW: true,
          Propagation: '',
        })),
        ...this.bindMounts(rec),
      ],
      Config: {
        Hostname: rec.id.slice(0, 12),
        Domainname: '',
        User: '',
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
        Tty: false,
        OpenStdin: false,
        StdinOnce: false,
        Env: null,
        Cmd: ['sleep', '3600'],
        Image: SIM_IMAGE,
        Volumes: null,
        WorkingDir: '',
        Entrypoint: null,
        OnBuild: null,
        Labels: rec.labels,
      },
      NetworkSettings: {
        Bridge: '',
        SandboxID: '',
        HairpinMode: false,
        Ports: {},
        SandboxKey: '',
        EndpointID: '',
        Gateway: '',
        IPAddress: '',
        IPPrefixLen: 0,
        MacAddress: '',
        Networks: { none: { NetworkID: this.networkId, EndpointID: '', Gateway: '', IPAddress: '', MacAddress: '' } },
      },
    });
  }

  private inspect(ref: string, rec: Rec | null, req: http.IncomingMessage, res: http.ServerResponse): void {
    if (!rec) throw new HttpError(404, `No such container: ${ref}`);
    const f = rec.faults;
    if (f?.hangOn === 'inspect') return;
    if (f?.dropOn === 'inspect') return this.drop(req);
    rec.inspected++;
    if (f?.inspectBody !== undefined || f?.malformedInspect) {
      this.send(res, 200, f.inspectBody ?? '{"Id": "' + rec.id + '", "State": {"Status": "exited", oops');
    } else {
      this.send(res, 200, this.inspectBody(rec));
    }
    if (rec.inspected === 1 && f?.goneAfterInspect) this.delete(rec.id);
    if (rec.inspected === 1 && f?.restartAfterInspect) this.setState(rec.id, 'running');
    if (f?.execAfterInspect === rec.inspected) rec.execIds = [...rec.execIds, hex(32)];
    if (f?.restartOnInspect === rec.inspected) this.restart(rec.id);
  }

  // ---- DELETE /containers/{id} ------------------------------------------------------------------------------

  private remove(ref: string, rec: Rec | null, url: URL, req: http.IncomingMessage, res: http.ServerResponse): void {
    if (!rec) throw new HttpError(404, `No such container: ${ref}`);
    const force = ['1', 'true', 'True'].includes(url.searchParams.get('force') ?? '');
    const f = rec.faults;
    if (f?.hangOn === 'remove') return;
    if (f?.dropOn === 'remove') return this.drop(req);
    if (f?.removalInProgress) {
      const next = f.removalInProgress;
      if (next === 'gone') this.delete(rec.id);
      else rec.state = next;
      throw new HttpError(409, `removal of container ${rec.id} is already in progress`);
    }
    if (rec.state === 'removing') throw new HttpError(409, `removal of container ${rec.id} is already in progress`);
    if (!force && (rec.state === 'running' || rec.state === 'paused' || rec.state === 'restarting')) {
      const how =
        rec.state === 'paused'
          ? 'Unpause and then stop the container before attempting removal or force remove'
          : 'Stop the container before attempting removal or force remove';
      throw new HttpError(409, `You cannot remove a ${rec.state} container ${rec.id}. ${how}`);
    }
    if (f?.removeStatus) {
      throw new HttpError(
        f.removeStatus,
        f.removeMessage ??
          `container ${rec.id}: driver "overlay2" failed to remove root filesystem: unlinkat ${'/var/lib/docker/overlay2/' + rec.id}: operation not permitted`,
      );
    }
    if (force) this.stats.forcedRemovals++;
    if (['1', 'true', 'True'].includes(url.searchParams.get('v') ?? '')) {
      for (const v of rec.volumes) if (v.anonymous) this.volumeNames.delete(v.name);
    }
    this.delete(rec.id);
    this.stats.removed++;
    if (this.opts.recordRemovals) this.removals.push({ id: rec.id, atMs: Date.now() });
    if (f?.removeThenDrop) return this.drop(req);
    this.send(res, 204, null);
  }

  // ---- GET /containers/{id}/stats, POST /containers/{id}/stop ------------------------------------------------

  private statsOf(ref: string, rec: Rec | null, res: http.ServerResponse): void {
    if (!rec) throw new HttpError(404, `No such container: ${ref}`);
    const f = rec.faults;
    if (f?.statsStatus) throw new HttpError(f.statsStatus, `stats of ${rec.id}: failed`);
    if (f?.statsBody !== undefined) return this.send(res, 200, f.statsBody);
    if (f?.cpuPerStats) rec.cpuNs += f.cpuPerStats;
    rec.statsCalls++;
    if (f?.touchOnStats === rec.statsCalls) this.touch(rec.id);
    const running = rec.state === 'running';
    this.send(res, 200, {
      read: running ? new Date().toISOString() : '0001-01-01T00:00:00Z',
      cpu_stats: { cpu_usage: { total_usage: running ? rec.cpuNs : 0 } },
      memory_stats: running ? { usage: 1 << 20, ...(rec.pgfault !== null ? { stats: { pgfault: rec.pgfault } } : {}) } : {},
      pids_stats: running && rec.pids !== null ? { current: rec.pids } : {},
    });
    if (f?.restartAfterStats === rec.statsCalls) this.restart(rec.id);
  }

  private stop(ref: string, rec: Rec | null, res: http.ServerResponse): void {
    if (!rec) throw new HttpError(404, `No such container: ${ref}`);
    if (rec.faults?.stopStatus) throw new HttpError(rec.faults.stopStatus, `cannot stop container: ${rec.id}: permission denied`);
    if (rec.state !== 'running') return this.send(res, 304, '');
    rec.state = 'exited';
    rec.finishedAt = rfc3339Nano(this.now());
    rec.execIds = [];
    this.stats.stopped++;
    this.emit({ id: rec.id, action: 'die' });
    this.emit({ id: rec.id, action: 'stop' });
    this.send(res, 204, null);
  }
}

function labelMatches(filter: string, labels: Record<string, string>): boolean {
  const eq = filter.indexOf('=');
  const key = eq < 0 ? filter : filter.slice(0, eq);
  if (!Object.hasOwn(labels, key)) return false;
  return eq < 0 || labels[key] === filter.slice(eq + 1);
}

// ---- stand-alone ------------------------------------------------------------------------------------------

async function standalone(): Promise<void> {
  const { values } = parseArgs({
    options: {
      socket: { type: 'string' },
      port: { type: 'string' },
      count: { type: 'string', default: '100' },
      profile: { type: 'string', default: 'default' },
      latency: { type: 'string', default: '0' },
      'finished-at': { type: 'string', default: '2020-01-01T00:00:00.123456789Z' },
    },
  });
  const [lo, hi] = values.latency!.split('-').map(Number) as [number, number | undefined];
  const sim = await EngineSimulator.start({
    ...(values.socket ? { socketPath: values.socket } : {}),
    ...(values.port ? { port: Number(values.port) } : values.socket ? {} : { port: 0 }),
    faults: { latencyMs: hi === undefined ? lo : [lo, hi] },
    bulk: [{ count: Number(values.count), labels: { 'hermes-agent': '1', 'hermes-profile': values.profile! }, finishedAt: values['finished-at'] }],
  });
  process.stdout.write(`engine simulator: ${sim.size} containers at ${sim.host} (Ctrl-C to stop)\n`);
  const stop = () => {
    process.stdout.write(`engine simulator: ${sim.stats.requests} requests, ${sim.size} containers left\n`);
    void sim.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void standalone();
