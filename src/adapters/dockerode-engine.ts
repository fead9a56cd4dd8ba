import type Dockerode from 'dockerode';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../defaults.js';
import { EngineRequestError, EngineUnreachableError } from '../errors.js';
import type { ContainerDetails, ContainerSummary, EngineClient, ListQuery } from './engine.js';
import { type EngineEndpoint, readTlsFiles } from './engine-host.js';
import { isLive } from './engine.js';

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

/** The janitor's engine client over dockerode. dockerode itself is loaded only here, lazily. */
export async function createDockerodeEngine(
  endpoint: EngineEndpoint,
  opts: DockerodeEngineOptions = {},
): Promise<EngineClient> {
  const { default: Docker } = await import('dockerode');
  const requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const base: Dockerode.DockerOptions = { version: API_VERSION, timeout: requestTimeoutMs };
  let options: Dockerode.DockerOptions;
  if (endpoint.socketPath) {
    options = { ...base, socketPath: endpoint.socketPath };
  } else {
    options = {
      ...base,
      protocol: endpoint.protocol ?? 'http',
      host: endpoint.hostname ?? 'localhost',
      port: endpoint.port ?? 2375,
      ...(endpoint.username ? { username: endpoint.username } : {}),
      ...(endpoint.tlsDir ? readTlsFiles(endpoint.tlsDir) : {}),
    };
  }
  return new DockerodeEngine(new Docker(options), endpoint.host, requestTimeoutMs);
}

class DockerodeEngine implements EngineClient {
  constructor(
    private readonly docker: Dockerode,
    readonly host: string,
    private readonly requestTimeoutMs: number,
  ) {}

  /** Runs one request bounded by the request timeout and the caller's signal; maps failures to typed errors. */
  private async call<T>(what: string, signal: AbortSignal | undefined, fn: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    const abortSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      return await fn(abortSignal);
    } catch (err) {
      if (signal?.aborted) throw signal.reason ?? err;
      if (timeout.aborted) {
        throw new EngineUnreachableError(
          `the engine at ${this.host} did not answer ${what} within ${this.requestTimeoutMs / 1000} s`,
          this.host,
        );
      }
      throw this.mapError(err, what);
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
    return err instanceof Error ? err : new Error(String(err));
  }

  private malformed(what: string): EngineUnreachableError {
    return new EngineUnreachableError(`the engine at ${this.host} answered ${what} with malformed JSON`, this.host);
  }

  async ping(signal?: AbortSignal): Promise<void> {
    await this.call('ping', signal, (abortSignal) => (this.docker.ping as (o: object) => Promise<unknown>).call(this.docker, { abortSignal }));
  }

  async list(query: ListQuery, signal?: AbortSignal): Promise<ContainerSummary[]> {
    const filters: Record<string, string[]> = { label: query.labels };
    if (query.status) filters.status = query.status;
    const rows: unknown = await this.call('the container list', signal, (abortSignal) =>
      this.docker.listContainers({ all: true, filters: JSON.stringify(filters), abortSignal } as Dockerode.ContainerListOptions),
    );
    if (!Array.isArray(rows)) throw this.malformed('the container list');
    const out: ContainerSummary[] = [];
    for (const row of rows as Array<Record<string, unknown>>) {
      if (!row || typeof row.Id !== 'string') throw this.malformed('the container list');
      const names = Array.isArray(row.Names) ? (row.Names as unknown[]) : [];
      out.push({
        id: row.Id,
        name: typeof names[0] === 'string' ? names[0].replace(/^\//, '') : '',
        labels: stringRecord(row.Labels),
        state: typeof row.State === 'string' ? row.State : '',
      });
    }
    return out;
  }

  async inspect(id: string, signal?: AbortSignal): Promise<ContainerDetails | null> {
    let info: unknown;
    try {
      info = await this.call(`inspect ${id.slice(0, 12)}`, signal, (abortSignal) =>
        this.docker.getContainer(id).inspect({ abortSignal } as Dockerode.ContainerInspectOptions),
      );
    } catch (err) {
      if (err instanceof EngineRequestError && err.statusCode === 404) return null;
      throw err;
    }
    const c = info as { Id?: unknown; Name?: unknown; State?: Record<string, unknown>; Config?: { Labels?: unknown } };
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
    };
  }

  async remove(id: string, signal?: AbortSignal): Promise<void> {
    await this.call(`remove ${id.slice(0, 12)}`, signal, (abortSignal) =>
      this.docker.getContainer(id).remove({ force: false, abortSignal } as Dockerode.ContainerRemoveOptions),
    );
  }
}

function stringRecord(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, val] of Object.entries(v)) if (typeof val === 'string') out[k] = val;
  }
  return out;
}
