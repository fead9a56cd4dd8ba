import type { IncomingMessage } from 'node:http';
import { setMaxListeners } from 'node:events';
import { addAbortSignal } from 'node:stream';
import type Modem from 'docker-modem';
import { createRequire } from 'node:module';
import { StringDecoder } from 'node:string_decoder';
import { DEFAULT_REQUEST_TIMEOUT_MS, MAX_LIST_ROW_BYTES } from '../defaults.js';
import { EngineRequestError, EngineUnreachableError, MalformedJsonArrayError } from '../errors.js';
import type {
  ContainerDetails, ContainerMounts, ContainerSummary, EngineClient, EngineEvent, EngineStatusCalls, EngineVersion, EventStream, ListQuery, RemoveOptions,
  StatsCounters,
} from './engine.js';
import { type EngineEndpoint, readTlsFiles } from './engine-host.js';
import { isLive, parseEngineVersion } from './engine.js';
import { forEachArrayElement } from './json-array-stream.js';

/** Run signals already allowed any number of listeners. */
const unlimited = new WeakSet<AbortSignal>();

/** API version the janitor speaks (Docker 20.10 and Podman's compat API both answer it). */
export const API_VERSION = 'v1.41';

/** Socket-level errors that mean the engine cannot be reached. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ENOENT', 'EACCES', 'EPERM', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH',
  'ENOTFOUND', 'EAI_AGAIN', 'ENOTSOCK', 'ECONNABORTED', 'ERR_SOCKET_CLOSED', 'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'EPROTO',
]);

export interface DockerodeEngineOptions {
  /** Bound on each request (default 10 s). */
  requestTimeoutMs?: number;
}

/**
 * docker-modem, with ssh2 loaded only when an `ssh://` engine is used. docker-modem requires ssh2 as it loads
 * (`require('ssh2').Client`, for its ssh transport), which takes ~33 ms of every full run's start-up here, while
 * the engine is nearly always a local socket. A stand-in takes ssh2's place in the require cache; its `Client`
 * loads the real ssh2 and returns the real client the first time one is made.
 */
async function importModem(): Promise<typeof Modem> {
  const req = createRequire(import.meta.url);
  const sshPath = createRequire(req.resolve('docker-modem')).resolve('ssh2');
  if (!req.cache[sshPath]) {
    const real = () => {
      delete req.cache[sshPath];
      return req(sshPath) as { Client: new (...args: unknown[]) => object };
    };
    let loaded: ReturnType<typeof real> | undefined;
    function Client(...args: unknown[]): object {
      loaded ??= real();
      return new loaded.Client(...args);
    }
    req.cache[sshPath] = { id: sshPath, filename: sshPath, loaded: true, exports: { Client }, children: [], paths: [] } as unknown as NodeJS.Module;
  }
  return (await import('docker-modem')).default;
}

/** The janitor's engine client over dockerode. dockerode itself is loaded only here, lazily. */
export async function createDockerodeEngine(
  endpoint: EngineEndpoint,
  opts: DockerodeEngineOptions = {},
): Promise<EngineClient> {
  // dockerode's own transport, docker-modem: the janitor only ever used its `dial`. Loading dockerode itself also
  // loads its BuildKit/gRPC and tar stacks (about 14 MB of resident memory and several ms of start-up).
  const ModemClass = await importModem();
  // docker-modem hands Node an `ssh:` URL that Node's url.parse calls invalid (DEP0170, two lines on stderr per run):
  // a dependency's internals the user can do nothing about, so deprecations are not printed for ssh:// engines.
  if (endpoint.protocol === 'ssh') process.noDeprecation = true;
  const Docker = function (o: Modem.ConstructorOptions): Client {
    return { modem: new ModemClass(o) };
  };
  const requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const base: Modem.ConstructorOptions = { version: API_VERSION, timeout: requestTimeoutMs };
  let options: Modem.ConstructorOptions;
  if (endpoint.socketPath) {
    options = { ...base, socketPath: endpoint.socketPath };
  } else {
    options = {
      ...base,
      protocol: endpoint.protocol ?? 'http',
      host: endpoint.hostname ?? 'localhost',
      port: endpoint.port ?? 2375,
      ...(endpoint.username ? { username: endpoint.username } : {}),
      ...(endpoint.protocol === 'ssh' && process.env.SSH_AUTH_SOCK ? { sshOptions: { agent: process.env.SSH_AUTH_SOCK } } : {}),
      ...(endpoint.tlsDir ? readTlsFiles(endpoint.tlsDir) : {}),
    };
  }
  const make = (timeout: number) => withoutDockerEnv(() => Docker({ ...options, timeout }));
  // The event stream may stay silent for hours: its client has no inactivity timeout (only its subscription is bounded).
  const { timeout: _inactivity, ...streamOptions } = options;
  return new DockerodeEngine(make(requestTimeoutMs), endpoint.host, requestTimeoutMs, make, withoutDockerEnv(() => Docker(streamOptions)));
}

/**
 * Runs `fn` with DOCKER_HOST and friends hidden. dockerode's modem reads them itself, and its reading wins over
 * the options it is given: with DOCKER_HOST=tcp://..., `--host unix:///path` went to DOCKER_HOST's address, and a
 * DOCKER_CERT_PATH without cert.pem threw ENOENT for any host. The janitor resolves them itself (engine-host.ts).
 */
function withoutDockerEnv<T>(fn: () => T): T {
  const keys = ['DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH', 'DOCKER_CLIENT_TIMEOUT', 'DOCKER_PATH_PREFIX'];
  const saved = keys.map((k) => [k, process.env[k]] as const);
  for (const k of keys) delete process.env[k];
  try {
    return fn();
  } finally {
    for (const [k, v] of saved) if (v !== undefined) process.env[k] = v;
  }
}

/** One engine connection: a docker-modem with its options (request timeout, TLS, socket). */
interface Client {
  modem: Modem;
}

class DockerodeEngine implements EngineClient, EngineStatusCalls {
  constructor(
    private readonly docker: Client,
    readonly host: string,
    private readonly requestTimeoutMs: number,
    /** A client with another inactivity timeout (a stop may be silent for its whole `t`). */
    private readonly withTimeout: (timeoutMs: number) => Client,
    /** The event stream's client: no inactivity timeout. */
    private readonly streamDocker: Client = docker,
  ) {}

  /** Runs one request bounded by the request timeout and the caller's signal; maps failures to typed errors. */
  private async call<T>(what: string, signal: AbortSignal | undefined, fn: (abortSignal: AbortSignal) => Promise<T>, extraMs = 0): Promise<T> {
    // One controller per request, its timer cleared and its run-signal listener removed as soon as the request
    // settles. (AbortSignal.timeout keeps a timer and signal per request alive for the whole timeout, and
    // AbortSignal.any ties every request to the run's signal: at thousands of requests a second, a 100k sweep
    // then peaks ~100 MB higher.)
    const ctl = new AbortController();
    let timedOut = false;
    const limitMs = this.requestTimeoutMs + extraMs;
    const timer = setTimeout(() => {
      timedOut = true;
      ctl.abort(new DOMException('request timed out', 'TimeoutError'));
    }, limitMs);
    const onRunAbort = () => ctl.abort(signal?.reason);
    if (signal?.aborted) ctl.abort(signal.reason);
    else if (signal) {
      // Up to STATS_CONCURRENCY requests wait on one run signal at once: not a leak, so no warning on stderr.
      if (!unlimited.has(signal)) {
        setMaxListeners(0, signal);
        unlimited.add(signal);
      }
      signal.addEventListener('abort', onRunAbort, { once: true });
    }
    try {
      return await fn(ctl.signal);
    } catch (err) {
      if (signal?.aborted) throw signal.reason ?? err;
      if (timedOut) {
        throw new EngineUnreachableError(
          `the engine at ${this.host} did not answer ${what} within ${limitMs / 1000} s`,
          this.host,
        );
      }
      throw this.mapError(err, what);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onRunAbort);
    }
  }

  private mapError(err: unknown, what: string): Error {
    const e = err as { statusCode?: unknown; code?: unknown; message?: unknown; json?: unknown };
    if (typeof e?.statusCode === 'number') {
      const json = e.json as { message?: unknown } | undefined;
      const detail = typeof json?.message === 'string' ? json.message : String(e.message ?? '').replace(/^\(HTTP code \d+\) \w+ - /, '').trim();
      return new EngineRequestError(`${what}: HTTP ${e.statusCode}: ${detail}`.trim(), e.statusCode);
    }
    const code = typeof e?.code === 'string' ? e.code : '';
    if (CONNECTION_CODES.has(code) || /socket hang up|ECONNRESET|EPIPE/i.test(String(e?.message ?? ''))) {
      const hint =
        code === 'EACCES' || code === 'EPERM'
          ? 'permission denied on the socket: run as a user in the docker group, or pass --host'
          : 'start the engine, or pass --host / set DOCKER_HOST';
      return new EngineUnreachableError(`cannot reach the engine at ${this.host} (${code || String(e?.message)}): ${hint}`, this.host);
    }
    if (/^ERR_(OSSL|SSL|TLS)_/.test(code) || /CERT|_KEY_/.test(code)) {
      // Unusable TLS material (ca.pem, cert.pem, key.pem) or a failed handshake: its code only, never the files.
      return new EngineUnreachableError(
        `cannot reach the engine at ${this.host} over TLS (${code}): check ca.pem, cert.pem and key.pem in DOCKER_CERT_PATH (default ~/.docker) and DOCKER_TLS_VERIFY`,
        this.host,
      );
    }
    return err instanceof Error ? err : new Error(String(err));
  }

  private malformed(what: string, problem?: string): EngineUnreachableError {
    const why = problem ? ` (${problem})` : '';
    return new EngineUnreachableError(`the engine at ${this.host} answered ${what} with malformed JSON${why}`, this.host);
  }

  /**
   * One request through the modem with the response as a stream (so a large answer is never buffered
   * whole, and a connection cut mid-body is an error rather than a promise that never settles). Statuses other
   * than those mapped to `true` reject with dockerode's usual error (`statusCode`, `json`).
   */
  private dial(
    req: { path: string; method: 'GET' | 'DELETE' | 'POST'; options?: Record<string, unknown>; statusCodes: Record<number, true | string> },
    abortSignal: AbortSignal,
    docker: Client = this.docker,
  ): Promise<IncomingMessage> {
    const modem = docker.modem as { dial(o: object, cb: (err: unknown, res: unknown) => void): void };
    return new Promise((resolve, reject) => {
      modem.dial({ ...req, options: { ...req.options }, isStream: true, abortSignal }, (err, res) => {
        if (err) return reject(err);
        const stream = res as IncomingMessage;
        addAbortSignal(abortSignal, stream);
        resolve(stream);
      });
    });
  }

  /** The whole body of a (small) answer; a connection closed before its end is an engine failure. */
  private async body(res: IncomingMessage, what: string): Promise<string> {
    const parts: Buffer[] = [];
    try {
      for await (const chunk of res) parts.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    } catch (err) {
      throw this.cutOff(err, what);
    }
    return Buffer.concat(parts).toString('utf8');
  }

  private cutOff(err: unknown, what: string): Error {
    if ((err as { name?: unknown })?.name === 'AbortError') return err as Error;
    return new EngineUnreachableError(`the engine at ${this.host} closed the connection during ${what}`, this.host);
  }

  async ping(signal?: AbortSignal): Promise<void> {
    await this.call('ping', signal, async (abortSignal) => {
      const res = await this.dial({ path: '/_ping', method: 'GET', statusCodes: { 200: true, 500: 'server error' } }, abortSignal);
      await this.body(res, 'ping');
    });
  }

  async list(query: ListQuery, signal?: AbortSignal): Promise<ContainerSummary[]> {
    const filters: Record<string, string[]> = { label: query.labels };
    if (query.status) filters.status = query.status;
    if (query.ids) filters.id = query.ids;
    const what = 'the container list';
    return this.call(what, signal, async (abortSignal) => {
      const res = await this.dial(
        {
          path: '/containers/json?',
          method: 'GET',
          options: { all: true, filters: JSON.stringify(filters) },
          statusCodes: { 200: true, 400: 'bad parameter', 500: 'server error' },
        },
        abortSignal,
      );
      // Streamed row by row: a list of 100k containers is ~100 MB of JSON, never held whole.
      const out: ContainerSummary[] = [];
      const onRow = (value: unknown) => {
        const row = value as Record<string, unknown> | null;
        if (!row || typeof row !== 'object' || typeof row.Id !== 'string') throw this.malformed(what, 'a row without an Id');
        const names = Array.isArray(row.Names) ? (row.Names as unknown[]) : [];
        out.push({
          id: row.Id,
          name: typeof names[0] === 'string' ? names[0].replace(/^\//, '') : '',
          labels: stringRecord(row.Labels),
          state: typeof row.State === 'string' ? row.State : '',
        });
      };
      try {
        await forEachArrayElement(res, onRow, MAX_LIST_ROW_BYTES);
      } catch (err) {
        if (err instanceof EngineUnreachableError) throw err;
        if (err instanceof MalformedJsonArrayError) throw this.malformed(what, err.message);
        throw this.cutOff(err, what);
      }
      return out;
    });
  }

  async listMounts(signal?: AbortSignal): Promise<ContainerMounts[]> {
    const what = 'the list of all containers';
    return this.call(what, signal, async (abortSignal) => {
      const res = await this.dial(
        { path: '/containers/json?', method: 'GET', options: { all: true }, statusCodes: { 200: true, 400: 'bad parameter', 500: 'server error' } },
        abortSignal,
      );
      const out: ContainerMounts[] = [];
      const onRow = (value: unknown) => {
        const row = value as { Id?: unknown; Names?: unknown; State?: unknown; Mounts?: unknown } | null;
        if (!row || typeof row !== 'object' || typeof row.Id !== 'string') throw this.malformed(what, 'a row without an Id');
        const names = Array.isArray(row.Names) ? (row.Names as unknown[]) : [];
        const mounts = Array.isArray(row.Mounts) ? (row.Mounts as Array<{ Source?: unknown } | null>) : [];
        out.push({
          id: row.Id,
          name: typeof names[0] === 'string' ? names[0].replace(/^\//, '') : '',
          state: typeof row.State === 'string' ? row.State : '',
          sources: mounts.map((m) => m?.Source).filter((s): s is string => typeof s === 'string' && s !== ''),
        });
      };
      try {
        await forEachArrayElement(res, onRow, MAX_LIST_ROW_BYTES);
      } catch (err) {
        if (err instanceof EngineUnreachableError) throw err;
        if (err instanceof MalformedJsonArrayError) throw this.malformed(what, err.message);
        throw this.cutOff(err, what);
      }
      return out;
    });
  }

  async inspect(id: string, signal?: AbortSignal): Promise<ContainerDetails | null> {
    let info: unknown;
    try {
      const what = `inspect ${id.slice(0, 12)}`;
      info = await this.call(what, signal, async (abortSignal) => {
        const res = await this.dial(
          {
            path: `/containers/${encodeURIComponent(id)}/json`,
            method: 'GET',
            statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
          },
          abortSignal,
        );
        const text = await this.body(res, what);
        try {
          return JSON.parse(text) as unknown;
        } catch {
          return null; // rejected as malformed below
        }
      });
    } catch (err) {
      if (err instanceof EngineRequestError && err.statusCode === 404) return null;
      throw err;
    }
    const c = info as {
      Id?: unknown; Name?: unknown; Created?: unknown; State?: Record<string, unknown>; Config?: { Labels?: unknown };
      ExecIDs?: unknown; Mounts?: unknown; HostConfig?: { Init?: unknown } | null;
    };
    if (!c || typeof c !== 'object' || typeof c.Id !== 'string' || !c.State || typeof c.State !== 'object') {
      throw new EngineRequestError(`inspect ${id.slice(0, 12)}: the engine answered with malformed JSON`, 502);
    }
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
      pid: typeof c.State.Pid === 'number' && Number.isSafeInteger(c.State.Pid) && c.State.Pid > 0 ? c.State.Pid : 0,
      init: c.HostConfig?.Init === true,
      volumes: Array.isArray(c.Mounts)
        ? (c.Mounts as Array<{ Type?: unknown; Name?: unknown }>)
            .filter((m) => m && m.Type === 'volume' && typeof m.Name === 'string' && m.Name !== '')
            .map((m) => m.Name as string)
        : [],
    };
  }

  /** A small JSON answer, parsed; null for the listed "not there" statuses. */
  private async getJson(path: string, what: string, signal: AbortSignal | undefined, options?: Record<string, unknown>): Promise<unknown> {
    try {
      return await this.call(what, signal, async (abortSignal) => {
        const res = await this.dial(
          { path, method: 'GET', ...(options ? { options } : {}), statusCodes: { 200: true, 404: 'not found', 500: 'server error' } },
          abortSignal,
        );
        const text = await this.body(res, what);
        try {
          return JSON.parse(text) as unknown;
        } catch {
          throw new EngineRequestError(`${what}: the engine answered with malformed JSON`, 502);
        }
      });
    } catch (err) {
      if (err instanceof EngineRequestError && err.statusCode === 404) return null;
      throw err;
    }
  }

  async stats(id: string, signal?: AbortSignal): Promise<StatsCounters | null> {
    const s = (await this.getJson(`/containers/${encodeURIComponent(id)}/stats?`, `stats ${id.slice(0, 12)}`, signal, {
      stream: false,
      'one-shot': true,
    })) as {
      cpu_stats?: { cpu_usage?: { total_usage?: unknown } }; memory_stats?: { stats?: { pgfault?: unknown } };
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

  async stop(id: string, timeoutSeconds: number, signal?: AbortSignal): Promise<boolean> {
    const what = `stop ${id.slice(0, 12)}`;
    // The engine waits up to `t` seconds before its SIGKILL: the request may take that long.
    try {
      return await this.call(
        what,
        signal,
        async (abortSignal) => {
          const res = await this.dial(
            {
              path: `/containers/${encodeURIComponent(id)}/stop?`,
              method: 'POST',
              options: { t: timeoutSeconds },
              statusCodes: { 204: true, 304: true, 404: 'no such container', 409: 'conflict', 500: 'server error' },
            },
            abortSignal,
            this.withTimeout(this.requestTimeoutMs + timeoutSeconds * 1000),
          );
          await this.body(res, what);
          return res.statusCode !== 304;
        },
        timeoutSeconds * 1000,
      );
    } catch (err) {
      if (err instanceof EngineRequestError && err.statusCode === 404) return false;
      throw err;
    }
  }

  async execRunning(execId: string, signal?: AbortSignal): Promise<boolean> {
    const e = (await this.getJson(`/exec/${encodeURIComponent(execId)}/json`, `inspect exec ${execId.slice(0, 12)}`, signal)) as { Running?: unknown } | null;
    return e !== null && e.Running !== false;
  }

  async volumeExists(name: string, signal?: AbortSignal): Promise<boolean> {
    return (await this.getJson(`/volumes/${encodeURIComponent(name)}`, `inspect volume ${name.slice(0, 12)}`, signal)) !== null;
  }

  async remove(id: string, signal?: AbortSignal, opts: RemoveOptions = {}): Promise<void> {
    const what = `remove ${id.slice(0, 12)}`;
    await this.call(what, signal, async (abortSignal) => {
      const res = await this.dial(
        {
          path: `/containers/${encodeURIComponent(id)}?`,
          method: 'DELETE',
          options: { force: false, ...(opts.volumes ? { v: true } : {}) },
          statusCodes: { 204: true, 400: 'bad parameter', 404: 'no such container', 409: 'conflict', 500: 'server error' },
        },
        abortSignal,
      );
      await this.body(res, what);
    });
  }

  // ---- status (read-only) ----

  async version(signal?: AbortSignal): Promise<EngineVersion> {
    return parseEngineVersion(await this.getJson('/version', 'the version', signal));
  }

  async events(filters: { labels: string[] }, signal?: AbortSignal): Promise<EventStream> {
    const what = 'the event stream';
    // The stream lives as long as the caller's signal; only the subscription itself is bounded by the request timeout.
    const ctl = new AbortController();
    const onAbort = () => ctl.abort(signal?.reason);
    if (signal?.aborted) ctl.abort(signal.reason);
    else signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctl.abort(new DOMException('request timed out', 'TimeoutError'));
    }, this.requestTimeoutMs);
    let res: IncomingMessage;
    try {
      res = await this.dial(
        {
          path: '/events?',
          method: 'GET',
          options: { filters: JSON.stringify({ type: ['container'], label: filters.labels }) },
          statusCodes: { 200: true, 400: 'bad parameter', 500: 'server error' },
        },
        ctl.signal,
        this.streamDocker,
      );
    } catch (err) {
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) throw signal.reason ?? err;
      if (timedOut) throw new EngineUnreachableError(`the engine at ${this.host} did not answer ${what} within ${this.requestTimeoutMs / 1000} s`, this.host);
      throw this.mapError(err, what);
    } finally {
      clearTimeout(timer);
    }
    const host = this.host;
    return (async function* stream(): AsyncGenerator<EngineEvent> {
      const decoder = new StringDecoder('utf8');
      let buf = '';
      try {
        for await (const chunk of res) {
          buf += typeof chunk === 'string' ? chunk : decoder.write(chunk as Buffer);
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            const ev = parseEngineEvent(line);
            if (ev) yield ev;
          }
        }
      } catch (err) {
        if (signal?.aborted) return;
        throw new EngineUnreachableError(`the engine at ${host} closed ${what}`, host);
      } finally {
        signal?.removeEventListener('abort', onAbort);
        res.destroy();
      }
      if (signal?.aborted) return;
      // An event cut off mid-way (no newline yet) is dropped: the resync after reconnecting covers it.
      throw new EngineUnreachableError(`the engine at ${host} closed ${what}`, host);
    })();
  }
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
  const e = v as { Type?: unknown; Action?: unknown; status?: unknown; id?: unknown; Actor?: { ID?: unknown; Attributes?: unknown }; time?: unknown; timeNano?: unknown };
  if (!e || typeof e !== 'object') return null;
  if (e.Type !== undefined && e.Type !== 'container') return null;
  const id = typeof e.Actor?.ID === 'string' ? e.Actor.ID : typeof e.id === 'string' ? e.id : '';
  const rawAction = typeof e.Action === 'string' ? e.Action : typeof e.status === 'string' ? e.status : '';
  if (!id || !rawAction) return null;
  const timeMs = typeof e.timeNano === 'number' && e.timeNano > 0 ? e.timeNano / 1e6 : typeof e.time === 'number' && e.time > 0 ? e.time * 1000 : NaN;
  return { id, action: rawAction.split(':')[0]!.trim(), timeMs, attributes: stringRecord(e.Actor?.Attributes) };
}

function stringRecord(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, val] of Object.entries(v)) if (typeof val === 'string') out[k] = val;
  }
  return out;
}
