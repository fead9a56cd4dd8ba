/**
 * The janitor's engine client: one dockerode `Docker` object per engine. Its typed calls do inspect, stop, remove,
 * stats, exec and volume inspect, version and ping, each with its abort signal. The container list and the event
 * stream go through the same object's modem (`modem.dial` with a streamed response), so a list of 100k rows is read
 * row by row with a cap per row, a malformed body is named as such, and a connection cut mid-body is an error at
 * once (dockerode's buffered path has none of the three). Only this file knows HTTP: statuses become typed errors
 * and outcomes here.
 */
import type { IncomingMessage } from 'node:http';
import { setMaxListeners } from 'node:events';
import { addAbortSignal } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type Dockerode from 'dockerode';
import { DEFAULT_REQUEST_TIMEOUT_MS, MAX_LIST_ROW_BYTES } from '../defaults.js';
import { EngineRequestError, EngineUnreachableError, MalformedJsonArrayError, NotADockerEngineError } from '../errors.js';
import type {
  ExecDetails,
  ContainerDetails,
  ContainerMounts,
  ContainerSummary,
  EngineClient,
  EngineEvent,
  EngineImageCalls,
  EngineImages,
  EngineSpaceCalls,
  EngineStatusCalls,
  EngineVersion,
  EventStream,
  ListQuery,
  RemoveOptions,
  RemoveOutcome,
  StatsCounters,
} from './engine.js';
import { parseEngineVersion } from './engine.js';
import {
  isJsonAnswer,
  parseEngineEvent,
  readDiskUsage,
  readImageUserRow,
  readInspect,
  readListRow,
  readMountsRow,
  readStats,
  readVolumeSizes,
} from './engine-answers.js';
import { fullImageId } from '../core/image-facts.js';
import type { EngineEndpoint } from './engine-host.js';
import { dockerFor } from './dockerode-loader.js';
import { forEachArrayElement } from './json-array-stream.js';

/** Run signals already allowed any number of listeners. */
const unlimited = new WeakSet<AbortSignal>();

/** Socket-level errors that mean the engine cannot be reached. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ENOENT',
  'EACCES',
  'EPERM',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOTSOCK',
  'ECONNABORTED',
  'ERR_SOCKET_CLOSED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'EPROTO',
]);

export interface DockerodeEngineOptions {
  /** Bound on each request (default 10 s); a stop gets its `t` on top. */
  requestTimeoutMs?: number;
}

/** The engine client for one endpoint. dockerode is loaded on the first call, with its unused parts deferred. */
export async function createDockerodeEngine(
  endpoint: EngineEndpoint,
  opts: DockerodeEngineOptions = {},
): Promise<EngineClient & EngineStatusCalls & EngineImageCalls & EngineSpaceCalls> {
  return new DockerodeEngine(await dockerFor(endpoint), endpoint.host, opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
}

/** A streamed request through the modem: its statuses, mapped to `true` (answered) or dockerode's error reasons. */
interface StreamRequest {
  path: string;
  options?: Record<string, unknown>;
  statusCodes: Record<number, true | string>;
}

/** An engine failure (dockerode's error, a socket error) as the janitor's typed error. */
export function engineError(err: unknown, what: string, host: string): Error {
  const e = err as { statusCode?: unknown; code?: unknown; message?: unknown; json?: unknown };
  if (typeof e?.statusCode === 'number') {
    const json = e.json as { message?: unknown } | undefined;
    const detail =
      typeof json?.message === 'string'
        ? json.message
        : String(e.message ?? '')
            .replace(/^\(HTTP code \d+\) [\w ]+ - /, '')
            .trim();
    return new EngineRequestError(`${what}: HTTP ${e.statusCode}: ${detail}`.trim(), e.statusCode);
  }
  const code = typeof e?.code === 'string' ? e.code : '';
  if (CONNECTION_CODES.has(code) || /socket hang up|ECONNRESET|EPIPE/i.test(String(e?.message ?? ''))) {
    const hint =
      code === 'EACCES' || code === 'EPERM'
        ? 'permission denied on the socket: run as a user in the docker group, or pass --host'
        : 'start the engine, or pass --host / set DOCKER_HOST';
    return new EngineUnreachableError(`cannot reach the engine at ${host} (${code || String(e?.message)}): ${hint}`, host);
  }
  if (/^ERR_(OSSL|SSL|TLS)_/.test(code) || /CERT|_KEY_/.test(code)) {
    // Unusable TLS material (ca.pem, cert.pem, key.pem) or a failed handshake: its code only, never the files.
    return new EngineUnreachableError(
      `cannot reach the engine at ${host} over TLS (${code}): check ca.pem, cert.pem and key.pem in DOCKER_CERT_PATH (default ~/.docker) and DOCKER_TLS_VERIFY`,
      host,
    );
  }
  return err instanceof Error ? err : new Error(String(err));
}

/** dockerode's `ping` and `version` take `{abortSignal}` (lib/docker.js), which @types/dockerode does not declare. */
type WithSignal = (opts: { abortSignal: AbortSignal }) => Promise<unknown>;

const statusOf = (err: unknown): number | undefined => (err instanceof EngineRequestError ? err.statusCode : undefined);

/** Every HTTP status as an answer (docker-modem hands the response over only for the statuses mapped to true). */
const ANY_STATUS: Record<number, true> = new Proxy({}, { get: (_t, key) => (typeof key === 'string' && /^\d{3}$/.test(key) ? true : undefined) });

/** Answers that were not the engine API's JSON (200 with another body): whether the address is an engine is asked. */
const malformedAnswers = new WeakSet<object>();

class DockerodeEngine implements EngineClient, EngineStatusCalls, EngineImageCalls, EngineSpaceCalls {
  constructor(
    private readonly docker: Dockerode,
    readonly host: string,
    private readonly requestTimeoutMs: number,
  ) {}

  /**
   * Runs one request bounded by the request timeout (plus `extraMs`) and the caller's signal; maps failures to typed
   * errors. One controller per request, its timer cleared and its run-signal listener removed as soon as the request
   * settles (AbortSignal.timeout keeps a timer and signal per request alive for the whole timeout, and
   * AbortSignal.any ties every request to the run's signal: at thousands of requests a second, a 100k sweep then
   * peaks ~100 MB higher).
   */
  private async call<T>(what: string, signal: AbortSignal | undefined, fn: (abortSignal: AbortSignal) => Promise<T>, extraMs = 0): Promise<T> {
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
      if (timedOut) throw new EngineUnreachableError(`the engine at ${this.host} did not answer ${what} within ${limitMs / 1000} s`, this.host);
      throw engineError(err, what, this.host);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onRunAbort);
    }
  }

  /** A typed call whose 404 means "not there": null then. */
  private async orNull<T>(what: string, signal: AbortSignal | undefined, fn: (abortSignal: AbortSignal) => Promise<T>): Promise<T | null> {
    try {
      return await this.call(what, signal, fn);
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw err;
    }
  }

  private malformed(what: string, problem?: string): EngineUnreachableError {
    const why = problem ? ` (${problem})` : '';
    const err = new EngineUnreachableError(`the engine at ${this.host} answered ${what} with malformed JSON${why}`, this.host);
    malformedAnswers.add(err);
    return err;
  }

  /**
   * A call that may be the run's first contact with the address (the container list, ping, version, the event
   * stream): when it fails with an answer that is not the engine's (an HTTP error status, a body that is not the
   * API's JSON), `GET /_ping` is asked whether the address is an engine at all. Docker and Podman send Api-Version
   * on every answer, errors included; an answer without it is not an engine's (a web server, a proxy's own page, a
   * wrong port): NotADockerEngineError (exit 3), not an "unexpected error".
   */
  private async firstContact<T>(what: string, signal: AbortSignal | undefined, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      const status = statusOf(err) ?? (err instanceof Object && malformedAnswers.has(err) ? 200 : undefined);
      if (status === undefined || signal?.aborted) throw err;
      const engine = await this.answersAsEngine(signal);
      throw engine === false ? new NotADockerEngineError(this.host, what, status) : err;
    }
  }

  /** Whether `GET /_ping` is answered with the engine API's Api-Version header; null when it is not answered at all. */
  private async answersAsEngine(signal: AbortSignal | undefined): Promise<boolean | null> {
    try {
      const res = await this.call('ping', signal, (abortSignal) => this.stream({ path: '/_ping', statusCodes: ANY_STATUS }, abortSignal));
      res.resume();
      return typeof res.headers['api-version'] === 'string';
    } catch {
      return null;
    }
  }

  /** A GET through the modem with the response as a stream (never buffered whole); refusals reject as dockerode's do. */
  private stream(req: StreamRequest, abortSignal: AbortSignal): Promise<IncomingMessage> {
    const modem = this.docker.modem as unknown as { dial(o: object, cb: (err: unknown, res: unknown) => void): void };
    return new Promise((resolve, reject) => {
      modem.dial({ ...req, method: 'GET', options: { ...req.options }, isStream: true, abortSignal }, (err, res) => {
        if (err) return reject(err);
        const stream = res as IncomingMessage;
        addAbortSignal(abortSignal, stream);
        resolve(stream);
      });
    });
  }

  /** The rows of a streamed JSON array answer, one at a time; a malformed or cut-off body is an engine failure. */
  private async rows<T>(what: string, res: IncomingMessage, read: (v: unknown) => T | null): Promise<T[]> {
    const out: T[] = [];
    try {
      await forEachArrayElement(
        res,
        (value) => {
          const row = read(value);
          if (row === null) throw this.malformed(what, 'a row without an Id');
          out.push(row);
        },
        MAX_LIST_ROW_BYTES,
      );
    } catch (err) {
      if (err instanceof EngineUnreachableError) throw err;
      if (err instanceof MalformedJsonArrayError) throw this.malformed(what, err.message);
      if ((err as { name?: unknown })?.name === 'AbortError') throw err;
      throw new EngineUnreachableError(`the engine at ${this.host} closed the connection during ${what}`, this.host);
    }
    return out;
  }

  async ping(signal?: AbortSignal): Promise<void> {
    await this.firstContact('ping', signal, () =>
      this.call('ping', signal, (abortSignal) => (this.docker.ping as unknown as WithSignal).call(this.docker, { abortSignal })),
    );
  }

  list(query: ListQuery, signal?: AbortSignal): Promise<ContainerSummary[]> {
    return this.listRows(query, signal, readListRow);
  }

  /** `GET /containers/json?all=1` with the query's filters, each row read by `read`. */
  private async listRows(query: ListQuery, signal: AbortSignal | undefined, read: typeof readListRow): Promise<ContainerSummary[]> {
    const filters: Record<string, string[]> = { label: query.labels };
    if (query.status) filters.status = query.status;
    if (query.ids) filters.id = query.ids;
    const what = 'the container list';
    // Streamed row by row: a list of 100k containers is ~100 MB of JSON, never held whole.
    return this.firstContact(what, signal, () =>
      this.call(what, signal, async (abortSignal) =>
        this.rows(what, await this.stream(listRequest({ all: true, filters: JSON.stringify(filters) }), abortSignal), read),
      ),
    );
  }

  async listMounts(signal?: AbortSignal): Promise<ContainerMounts[]> {
    const what = 'the list of all containers';
    return this.firstContact(what, signal, () =>
      this.call(what, signal, async (abortSignal) => this.rows(what, await this.stream(listRequest({ all: true }), abortSignal), readMountsRow)),
    );
  }

  async inspect(id: string, signal?: AbortSignal, options: { size?: boolean } = {}): Promise<ContainerDetails | null> {
    const what = `inspect ${id.slice(0, 12)}`;
    const info = await this.orNull(
      what,
      signal,
      (abortSignal) => this.docker.getContainer(id).inspect({ abortSignal, ...(options.size ? { size: true } : {}) }) as Promise<unknown>,
    );
    if (info === null) return null;
    const details = readInspect(info);
    if (!details) throw new EngineRequestError(`${what}: the engine answered with malformed JSON`, 502);
    return details;
  }

  async stats(id: string, signal?: AbortSignal): Promise<StatsCounters | null> {
    const what = `stats ${id.slice(0, 12)}`;
    const answer = await this.orNull(
      what,
      signal,
      (abortSignal) => this.docker.getContainer(id).stats({ stream: false, 'one-shot': true, abortSignal } as { stream: false }) as Promise<unknown>,
    );
    if (answer === null) return null;
    if (!isJsonAnswer(answer)) throw new EngineRequestError(`${what}: the engine answered with malformed JSON`, 502);
    return readStats(answer);
  }

  async stop(id: string, timeoutSeconds: number, signal?: AbortSignal): Promise<boolean> {
    // The engine waits up to `t` seconds before its SIGKILL: the request may take that much longer.
    try {
      await this.call(
        `stop ${id.slice(0, 12)}`,
        signal,
        (abortSignal) => this.docker.getContainer(id).stop({ t: timeoutSeconds, abortSignal }) as Promise<unknown>,
        timeoutSeconds * 1000,
      );
      return true;
    } catch (err) {
      // 304: it was not running; 404: it no longer exists.
      if (statusOf(err) === 304 || statusOf(err) === 404) return false;
      throw err;
    }
  }

  async remove(id: string, signal?: AbortSignal, opts: RemoveOptions = {}): Promise<RemoveOutcome> {
    try {
      await this.call(
        `remove ${id.slice(0, 12)}`,
        signal,
        (abortSignal) => this.docker.getContainer(id).remove({ force: false, ...(opts.volumes ? { v: true } : {}), abortSignal }) as Promise<unknown>,
      );
      return { kind: 'removed' };
    } catch (err) {
      if (statusOf(err) === 404) return { kind: 'gone' };
      // Someone else is removing it, or it runs (again): the caller decides from its state, never from this text.
      if (statusOf(err) === 409) return { kind: 'conflict', detail: (err as Error).message };
      throw err;
    }
  }

  async execRunning(execId: string, signal?: AbortSignal): Promise<boolean> {
    const e = (await this.orNull(
      `inspect exec ${execId.slice(0, 12)}`,
      signal,
      (abortSignal) => this.docker.getExec(execId).inspect({ abortSignal }) as Promise<unknown>,
    )) as { Running?: unknown } | null;
    return e !== null && e.Running !== false;
  }

  async execInspect(execId: string, signal?: AbortSignal): Promise<ExecDetails | null> {
    const e = (await this.orNull(
      `inspect exec ${execId.slice(0, 12)}`,
      signal,
      (abortSignal) => this.docker.getExec(execId).inspect({ abortSignal }) as Promise<unknown>,
    )) as { Running?: unknown; Pid?: unknown; ProcessConfig?: { entrypoint?: unknown; arguments?: unknown } } | null;
    if (e === null) return null;
    const pc = e.ProcessConfig ?? {};
    return {
      id: execId,
      running: e.Running === true,
      pid: typeof e.Pid === 'number' && Number.isSafeInteger(e.Pid) && e.Pid > 0 ? e.Pid : 0,
      entrypoint: typeof pc.entrypoint === 'string' ? pc.entrypoint : '',
      arguments: Array.isArray(pc.arguments) ? pc.arguments.filter((a): a is string => typeof a === 'string') : [],
    };
  }

  async volumeExists(name: string, signal?: AbortSignal): Promise<boolean> {
    const v = await this.orNull(
      `inspect volume ${name.slice(0, 12)}`,
      signal,
      (abortSignal) => this.docker.getVolume(name).inspect({ abortSignal }) as Promise<unknown>,
    );
    return v !== null;
  }

  // ---- status (read-only) ----

  async version(signal?: AbortSignal): Promise<EngineVersion> {
    const answer = await this.firstContact('the version', signal, () =>
      this.call('the version', signal, (abortSignal) => (this.docker.version as unknown as WithSignal).call(this.docker, { abortSignal })),
    );
    return parseEngineVersion(answer);
  }

  // ---- images (the image budget) ----

  /** A buffered request through the modem (the image calls' answers are small), its JSON parsed by the modem. */
  private dial(
    req: { method: string; path: string; options?: Record<string, unknown>; statusCodes: Record<number, true | string> },
    abortSignal: AbortSignal,
  ): Promise<unknown> {
    const modem = this.docker.modem as unknown as { dial(o: object, cb: (err: unknown, res: unknown) => void): void };
    return new Promise((resolve, reject) => {
      modem.dial({ ...req, options: { ...req.options }, abortSignal }, (err, res) => (err ? reject(err) : resolve(res)));
    });
  }

  async diskUsage(signal?: AbortSignal): Promise<EngineImages> {
    const ok = { 200: true as const, 500: 'server error' };
    const [df, list] = await Promise.all([
      this.call('the disk usage', signal, (abortSignal) => this.dial({ method: 'GET', path: '/system/df', statusCodes: ok }, abortSignal)),
      this.call('the image list', signal, (abortSignal) =>
        this.dial({ method: 'GET', path: '/images/json?', options: { all: false }, statusCodes: ok }, abortSignal),
      ),
    ]);
    const out = readDiskUsage(df, list);
    if (!out) throw this.malformed('the disk usage');
    return out;
  }

  // ---- space (what a reap freed) ----

  async volumeSizes(signal?: AbortSignal): Promise<Map<string, number>> {
    const df = await this.call('the disk usage', signal, (abortSignal) =>
      this.dial({ method: 'GET', path: '/system/df', statusCodes: { 200: true, 500: 'server error' } }, abortSignal),
    );
    return readVolumeSizes(df);
  }

  listWithImages(query: ListQuery, signal?: AbortSignal): Promise<ContainerSummary[]> {
    return this.listRows(query, signal, readImageUserRow);
  }

  async imageUsers(imageId: string, signal?: AbortSignal): Promise<ContainerSummary[]> {
    const what = `the containers of image ${imageId.slice(7, 19)}`;
    // Both spellings, ORed by the engine: Podman 4.3 matches only the bare hex digits, Docker either.
    const id = fullImageId(imageId);
    const filters = JSON.stringify({ ancestor: [id, id.replace(/^sha256:/, '')] });
    return this.call(what, signal, async (abortSignal) =>
      this.rows(what, await this.stream(listRequest({ all: true, filters }), abortSignal), readImageUserRow),
    );
  }

  async removeImage(imageId: string, signal?: AbortSignal): Promise<RemoveOutcome> {
    // Always the full `sha256:` id: Podman 4 reads 64 bare hex digits as a name (and may untag another image).
    const id = fullImageId(imageId);
    try {
      await this.call(`remove image ${id.slice(7, 19)}`, signal, (abortSignal) =>
        this.dial(
          {
            method: 'DELETE',
            path: `/images/${encodeURIComponent(id)}?`,
            options: { force: false, noprune: false },
            statusCodes: { 200: true, 404: 'no such image', 409: 'conflict', 500: 'server error' },
          },
          abortSignal,
        ),
      );
      return { kind: 'removed' };
    } catch (err) {
      if (statusOf(err) === 404) return { kind: 'gone' };
      if (statusOf(err) === 409) return { kind: 'conflict', detail: (err as Error).message };
      throw err;
    }
  }

  async imageIdOf(ref: string, signal?: AbortSignal): Promise<string | null> {
    const info = (await this.orNull(`inspect image ${ref.slice(0, 40)}`, signal, (abortSignal) =>
      this.dial(
        { method: 'GET', path: `/images/${encodeURIComponent(ref)}/json`, statusCodes: { 200: true, 404: 'no such image', 500: 'server error' } },
        abortSignal,
      ),
    )) as { Id?: unknown } | null;
    return info && typeof info.Id === 'string' ? fullImageId(info.Id) : null;
  }

  async imageRoot(signal?: AbortSignal): Promise<string | null> {
    const info = (await this.call('the engine info', signal, (abortSignal) =>
      this.dial({ method: 'GET', path: '/info', statusCodes: { 200: true, 500: 'server error' } }, abortSignal),
    )) as { DockerRootDir?: unknown } | null;
    return typeof info?.DockerRootDir === 'string' && info.DockerRootDir !== '' ? info.DockerRootDir : null;
  }

  async events(filters: { labels: string[] }, signal?: AbortSignal): Promise<EventStream> {
    const what = 'the event stream';
    // The stream lives as long as the caller's signal; only the subscription itself is bounded by the request timeout.
    const ctl = new AbortController();
    const onAbort = () => ctl.abort(signal?.reason);
    if (signal?.aborted) ctl.abort(signal.reason);
    else signal?.addEventListener('abort', onAbort, { once: true });
    let res: IncomingMessage;
    try {
      res = await this.firstContact(what, signal, () =>
        this.call(what, undefined, (subscribed) => {
          subscribed.addEventListener('abort', () => ctl.abort(subscribed.reason), { once: true });
          const query = { filters: JSON.stringify({ type: ['container'], label: filters.labels }) };
          return this.stream({ path: '/events?', options: query, statusCodes: { 200: true, 400: 'bad parameter', 500: 'server error' } }, ctl.signal);
        }),
      );
    } catch (err) {
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) throw signal.reason ?? err;
      throw err;
    }
    return eventLines(res, { host: this.host, what, signal, done: () => signal?.removeEventListener('abort', onAbort) });
  }
}

/** `GET /containers/json` with these query options. */
function listRequest(options: Record<string, unknown>): StreamRequest {
  return { path: '/containers/json?', options, statusCodes: { 200: true, 400: 'bad parameter', 500: 'server error' } };
}

/** The event stream's lines as events, until the caller's signal (a quiet end) or the connection's end (a throw). */
async function* eventLines(
  res: IncomingMessage,
  run: { host: string; what: string; signal: AbortSignal | undefined; done: () => void },
): AsyncGenerator<EngineEvent> {
  const decoder = new StringDecoder('utf8');
  let buf = '';
  try {
    for await (const chunk of res) {
      buf += typeof chunk === 'string' ? chunk : decoder.write(chunk as Buffer);
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const ev = parseEngineEvent(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (ev) yield ev;
      }
    }
  } catch {
    if (run.signal?.aborted) return;
    throw new EngineUnreachableError(`the engine at ${run.host} closed ${run.what}`, run.host);
  } finally {
    run.done();
    res.destroy();
  }
  if (run.signal?.aborted) return;
  // An event cut off mid-way (no newline yet) is dropped: the resync after reconnecting covers it.
  throw new EngineUnreachableError(`the engine at ${run.host} closed ${run.what}`, run.host);
}
