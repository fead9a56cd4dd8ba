/**
 * Prometheus metrics and `/healthz` for `watch --metrics-listen`. prom-client is loaded only when asked for.
 * The per-run families are `reap --metrics-file`'s own (`src/adapters/metrics.ts`: same names, HELP, TYPE and
 * labels), filled after every run (a full sweep or a deadline check); the families below are watch's own.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { EngineProfileCounts } from '../adapters/metrics.js';
import type { Pass } from '../passes/types.js';
import type { WatchEvent } from './engine-watcher.js';

/** Families only `watch` has. */
export const WATCH_METRICS = {
  events: 'hermes_janitor_events_total',
  reconnects: 'hermes_janitor_reconnects_total',
  tracked: 'hermes_janitor_tracked_containers',
  removedTotal: 'hermes_janitor_removed_total',
  stoppedTotal: 'hermes_janitor_stopped_total',
  failedTotal: 'hermes_janitor_failed_total',
  connected: 'hermes_janitor_engine_connected',
} as const;

export interface WatchMetrics {
  observe(ev: WatchEvent): void;
  /** Refreshes the gauges read at scrape time. */
  setTracked(host: string, n: number): void;
  /** A pass's gauges, as its last run measured them. */
  setPass(pass: Pass, gauges: unknown): void;
  text(): Promise<string>;
  contentType: string;
}

/**
 * What each engine's removals freed since its last run (each removed entry's `reclaimedBytes`): `end` closes that
 * engine's run and answers the bytes of every engine's last run together.
 */
function freedByRun(): { add(host: string, bytes: number): void; end(host: string): number } {
  const freeing = new Map<string, number>();
  const last = new Map<string, number>();
  return {
    add: (host, bytes) => void freeing.set(host, (freeing.get(host) ?? 0) + bytes),
    end(host) {
      last.set(host, freeing.get(host) ?? 0);
      freeing.delete(host);
      return [...last.values()].reduce((a, b) => a + b, 0);
    },
  };
}

/** watch's own families (beside the per-run ones every reap has), in `registry`. */
function watchFamilies(prom: typeof import('prom-client'), registry: import('prom-client').Registry) {
  const g = (name: string, help: string, labelNames: string[] = []) => new prom.Gauge({ name, help, labelNames, registers: [registry] });
  const c = (name: string, help: string, labelNames: string[]) => new prom.Counter({ name, help, labelNames, registers: [registry] });
  const hp = ['host', 'profile'];
  return {
    events: c(WATCH_METRICS.events, 'Engine events received', ['host', 'action']),
    reconnects: c(WATCH_METRICS.reconnects, 'Times an engine connection was lost', ['host']),
    tracked: g(WATCH_METRICS.tracked, 'Containers with a pending deadline or idle check', ['host']),
    removedTotal: c(WATCH_METRICS.removedTotal, 'Containers removed since start', hp),
    stoppedTotal: c(WATCH_METRICS.stoppedTotal, 'Idle sandboxes stopped since start', hp),
    failedTotal: c(WATCH_METRICS.failedTotal, 'Failed removals and stops since start', hp),
    connected: g(WATCH_METRICS.connected, '1 while connected to the engine', ['host']),
  };
}

/**
 * `passes`: the list (`passes/index.ts`); those with `metrics.initial` are there from the start, the others once they
 * ran; a sweep pass's gauges come with each run of the sweep, every engine's last run added up.
 */
export async function createWatchMetrics(profileOf: (profile: string | null) => string, passes: readonly Pass[]): Promise<WatchMetrics> {
  const prom = await import('prom-client');
  const { fillPassGauges, fillRegistry, newMetricsRegistry } = await import('../adapters/metrics.js');
  const registry = await newMetricsRegistry();
  const { events, reconnects, tracked, removedTotal, stoppedTotal, failedTotal, connected } = watchFamilies(prom, registry);

  // The shared per-run families: each engine's last run, all engines together (a run of one engine leaves the
  // others' series as they were). Filled once before the first run, so every family is there from the start.
  const lastCounts = new Map<string, EngineProfileCounts[]>();
  const initial = passes.flatMap((pass) => (pass.metrics?.initial !== undefined ? [{ pass, gauges: pass.metrics.initial }] : []));
  let filling = fillRegistry(registry, { finishedAt: new Date(), durationSeconds: 0, success: true, counts: [], passes: initial, reclaimedBytes: 0 });
  const freed = freedByRun();
  /** Each sweep pass's gauges of each engine's last run. */
  const lastSweeps = new Map<Pass, Map<string, unknown>>();
  const endRun = (
    host: string,
    durationMs: number,
    ok: boolean,
    counts: EngineProfileCounts[],
    sweepGauges: ReadonlyArray<{ pass: Pass; gauges: unknown }>,
  ) => {
    lastCounts.set(host, counts);
    const summed = sweepGauges.map(({ pass, gauges }) => {
      const byHost = lastSweeps.get(pass) ?? new Map<string, unknown>();
      lastSweeps.set(pass, byHost.set(host, gauges));
      const m = pass.metrics!;
      return { pass, gauges: [...byHost.values()].reduce((a, b) => (m.sum ? m.sum(a, b) : b), m.initial) };
    });
    const allCounts = [...lastCounts.values()].flat();
    const run = { finishedAt: new Date(), durationSeconds: durationMs / 1000, success: ok, counts: allCounts, passes: summed, reclaimedBytes: freed.end(host) };
    filling = filling.then(() => fillRegistry(registry, run));
  };

  return {
    contentType: registry.contentType,
    observe(ev) {
      switch (ev.type) {
        case 'event':
          events.inc({ host: ev.host, action: ev.event.action });
          return;
        case 'engine':
          connected.set({ host: ev.host }, ev.state === 'connected' ? 1 : 0);
          if (ev.state === 'disconnected') reconnects.inc({ host: ev.host });
          return;
        case 'removed':
          if (!ev.dryRun) removedTotal.inc({ host: ev.host, profile: profileOf(ev.entry.profile) });
          freed.add(ev.host, ev.entry.reclaimedBytes ?? 0);
          return;
        case 'stopped':
          if (!ev.dryRun) stoppedTotal.inc({ host: ev.host, profile: profileOf(ev.entry.profile) });
          return;
        case 'failed':
          failedTotal.inc({ host: ev.host, profile: profileOf(ev.entry.profile) });
          return;

        case 'sweep':
        case 'deadline-check':
          endRun(ev.host, ev.durationMs, ev.failed === 0 && !ev.interrupted, ev.counts, ev.sweepGauges);
          return;
        case 'exec-tree':
        case 'kept':
          return; // no family counts these
      }
    },
    setTracked(host, n) {
      tracked.set({ host }, n);
    },
    setPass(pass, gauges) {
      filling = filling.then(() => fillPassGauges(registry, pass, gauges));
    },
    text: async () => {
      await filling;
      return registry.metrics();
    },
  };
}
/**
 * Connections over the cap kept for `/healthz` alone: answered, then closed; anything else there is refused, and so
 * is one whose request has not come within HEALTH_SLOT_GRACE_MS and the event loop's next read after it (a probe
 * sends its request at once; an idle flood holds none of these slots for more than a moment).
 */
export const HEALTH_SLOTS = 64;
/** A connection's request headers must arrive within this; one idle this long is closed. */
export const HEADERS_TIMEOUT_MS = 5000;
export const IDLE_TIMEOUT_MS = 10_000;
/** A whole request (headers and body) within this. */
export const REQUEST_TIMEOUT_MS = 10_000;
/** How long a connection on a health slot has to send its request (then one more turn of the event loop's reads). */
const HEALTH_SLOT_GRACE_MS = 10;

/**
 * Serves `GET /metrics` and `GET /healthz` (200 while `healthy()`, else 503), bounded against whoever can connect:
 * at most `maxConnections` at once (more are refused: closed as soon as they are accepted, so the descriptors a flood
 * takes stay near the cap), each with its headers within HEADERS_TIMEOUT_MS and closed once idle IDLE_TIMEOUT_MS; past
 * the cap, HEALTH_SLOTS more connections may ask `/healthz` only (a liveness probe gets through a flood), each closed
 * after its answer, or at once when its request did not come with it.
 */
export async function serveMetrics(
  listen: { host: string | undefined; port: number },
  metrics: Pick<WatchMetrics, 'text' | 'contentType'> | null,
  healthy: () => boolean,
  beforeScrape: () => void,
  maxConnections: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const healthSlots = new WeakSet<object>();
  /** Health-slot connections whose request came. */
  const asked = new WeakSet<object>();
  const server = http.createServer(
    { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, keepAliveTimeout: 5000, connectionsCheckingInterval: 1000 },
    (req, res) => {
      const healthOnly = healthSlots.has(req.socket);
      if (healthOnly) asked.add(req.socket);
      answer(req, res, { metrics, healthy, beforeScrape, healthOnly });
    },
  );
  server.timeout = IDLE_TIMEOUT_MS;
  let open = 0;
  let onHealthSlots = 0;
  server.on('connection', (socket: Socket) => {
    if (open < maxConnections) {
      open++;
      socket.once('close', () => open--);
    } else if (onHealthSlots < HEALTH_SLOTS) {
      onHealthSlots++;
      healthSlots.add(socket);
      // Its request came with it, or it goes: after the grace, the check waits for the loop's next reads
      // (setImmediate runs after them), so a slow turn of the loop never closes a probe whose request is there.
      const grace = setTimeout(() => setImmediate(() => asked.has(socket) || socket.destroy()), HEALTH_SLOT_GRACE_MS);
      socket.once('close', () => {
        onHealthSlots--;
        clearTimeout(grace);
      });
    } else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return {
    url: `http://${host}:${a.port}`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** One request: `/healthz`, `/metrics`, or 404; on a health slot, `/healthz` only (503 otherwise), then closed. */
function answer(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  at: { metrics: Pick<WatchMetrics, 'text' | 'contentType'> | null; healthy: () => boolean; beforeScrape: () => void; healthOnly: boolean },
): void {
  const path = (req.url ?? '/').split('?')[0];
  if (at.healthOnly) res.shouldKeepAlive = false;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD' }).end();
    return;
  }
  if (path === '/healthz') {
    const ok = at.healthy();
    res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain; charset=utf-8' }).end(ok ? 'ok\n' : 'engine not connected\n');
    return;
  }
  if (at.healthOnly) {
    res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8', 'Retry-After': '1' }).end('too many connections: only /healthz is served now\n');
    return;
  }
  const metrics = at.metrics;
  if (path === '/metrics' && metrics) {
    at.beforeScrape();
    metrics.text().then(
      (body) => res.writeHead(200, { 'Content-Type': metrics.contentType }).end(body),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
    return;
  }
  res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found: try /metrics or /healthz\n');
}
