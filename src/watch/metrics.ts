/**
 * Prometheus metrics and `/healthz` for `watch --metrics-listen`. prom-client is loaded only when asked for.
 * The per-run families are `reap --metrics-file`'s own (`src/adapters/metrics.ts`: same names, HELP, TYPE and
 * labels), filled after every run (a full sweep or a deadline check); the families below are watch's own.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type EngineProfileCounts, METRIC_FAMILIES } from '../adapters/metrics.js';
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
  /** `watch` was working at `at` (idle, every engine connected): `hermes_janitor_heartbeat_timestamp_seconds`. */
  heartbeat(at: Date): void;
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

/**
 * watch's own families (beside the per-run ones every reap has), in `registry`; `runWide`: the run's labels
 * (`runLabels`: its `home` when it serves one), on the families per engine.
 */
function watchFamilies(prom: typeof import('prom-client'), registry: import('prom-client').Registry, runWide: readonly string[]) {
  const g = (name: string, help: string, labelNames: string[]) => new prom.Gauge({ name, help, labelNames, registers: [registry] });
  const c = (name: string, help: string, labelNames: string[]) => new prom.Counter({ name, help, labelNames, registers: [registry] });
  const hp = ['host', 'profile', 'home'];
  return {
    events: c(WATCH_METRICS.events, 'Engine events received', ['host', 'action', ...runWide]),
    reconnects: c(WATCH_METRICS.reconnects, 'Times an engine connection was lost', ['host', ...runWide]),
    tracked: g(WATCH_METRICS.tracked, 'Containers with a pending deadline or idle check', ['host', ...runWide]),
    removedTotal: c(WATCH_METRICS.removedTotal, 'Containers removed since start', hp),
    stoppedTotal: c(WATCH_METRICS.stoppedTotal, 'Idle sandboxes stopped since start', hp),
    failedTotal: c(WATCH_METRICS.failedTotal, 'Failed removals and stops since start', hp),
    connected: g(WATCH_METRICS.connected, '1 while connected to the engine', ['host', ...runWide]),
  };
}

/** Whose the series of a `watch` are: the one home it serves (`RunMetrics.home`), or the home that judged a profile. */
export interface WatchMetricsScope {
  home?: string;
  homeOf?: (profile: string) => string;
}

type MetricsModule = typeof import('../adapters/metrics.js');

/** What a watcher's run ended with (a full sweep or a deadline check). */
type RunEnd = Extract<WatchEvent, { type: 'sweep' | 'deadline-check' }>;

/**
 * The per-run families `reap` writes too, in `registry`: each engine's last run, all engines together (a run of one
 * engine leaves the others' series as they were), filled once before the first run so that every family is there from
 * the start; a sweep pass's gauges summed over every engine's last run; the heartbeat, never moved back.
 */
function runFamilies(m: MetricsModule, registry: import('prom-client').Registry, passes: readonly Pass[], scope: WatchMetricsScope) {
  const own = m.runLabels(scope);
  const home = scope.home !== undefined ? { home: scope.home } : {};
  /** The last moment watch was known to be working: a run's end, or a heartbeat. */
  let lastBeat = new Date();
  const beatAt = (ms: number) => (lastBeat = new Date(Math.max(ms, lastBeat.getTime())));
  const lastCounts = new Map<string, EngineProfileCounts[]>();
  const initial = passes.flatMap((pass) => (pass.metrics?.initial !== undefined ? [{ pass, gauges: pass.metrics.initial }] : []));
  let filling = m.fillRegistry(registry, { finishedAt: lastBeat, durationSeconds: 0, success: true, counts: [], passes: initial, reclaimedBytes: 0, ...home });
  const freed = freedByRun();
  /** Each sweep pass's gauges of each engine's last run. */
  const lastSweeps = new Map<Pass, Map<string, unknown>>();
  return {
    freed,
    endRun(ev: RunEnd) {
      lastCounts.set(ev.host, ev.counts);
      const summed = ev.sweepGauges.map(({ pass, gauges }) => {
        const byHost = lastSweeps.get(pass) ?? new Map<string, unknown>();
        lastSweeps.set(pass, byHost.set(ev.host, gauges));
        const pm = pass.metrics!;
        return { pass, gauges: [...byHost.values()].reduce((a, b) => (pm.sum ? pm.sum(a, b) : b), pm.initial) };
      });
      const counts = [...lastCounts.values()].flat().map((c) => (scope.homeOf ? { ...c, home: scope.homeOf(c.profile) } : c));
      const finishedAt = new Date();
      const run = {
        finishedAt,
        heartbeatAt: beatAt(finishedAt.getTime()),
        durationSeconds: ev.durationMs / 1000,
        success: ev.failed === 0 && !ev.interrupted,
        counts,
        passes: summed,
        reclaimedBytes: freed.end(ev.host),
        ...home,
      };
      filling = filling.then(() => m.fillRegistry(registry, run));
    },
    setPass(pass: Pass, gauges: unknown) {
      filling = filling.then(() => m.fillPassGauges(registry, pass, gauges, own));
    },
    heartbeat(when: Date) {
      const beat = beatAt(when.getTime());
      filling = filling.then(() => {
        const g = registry.getSingleMetric(METRIC_FAMILIES.heartbeat.name) as import('prom-client').Gauge | undefined;
        g?.set(own, beat.getTime() / 1000);
      });
    },
    text: async () => {
      await filling;
      return registry.metrics();
    },
  };
}

/**
 * `passes`: the list (`passes/index.ts`); those with `metrics.initial` are there from the start, the others once they
 * ran; a sweep pass's gauges come with each run of the sweep, every engine's last run added up. `scope`: the home it
 * serves (every series then carries it as `home`), or which home judged each profile.
 */
export async function createWatchMetrics(
  profileOf: (profile: string | null) => string,
  passes: readonly Pass[],
  scope: WatchMetricsScope = {},
): Promise<WatchMetrics> {
  const m = await import('../adapters/metrics.js');
  const prom = m.promClient();
  const registry = await m.newMetricsRegistry();
  const own = m.runLabels(scope);
  const { events, reconnects, tracked, removedTotal, stoppedTotal, failedTotal, connected } = watchFamilies(prom, registry, Object.keys(own));
  const perContainer = (host: string, profile: string | null) => {
    const p = profileOf(profile);
    const home = scope.homeOf?.(p) ?? scope.home;
    return { host, profile: p, ...(home !== undefined ? { home } : {}) };
  };
  const runs = runFamilies(m, registry, passes, scope);
  return {
    contentType: registry.contentType,
    observe(ev) {
      switch (ev.type) {
        case 'event':
          events.inc({ host: ev.host, action: ev.event.action, ...own });
          return;
        case 'engine':
          connected.set({ host: ev.host, ...own }, ev.state === 'connected' ? 1 : 0);
          if (ev.state === 'disconnected') reconnects.inc({ host: ev.host, ...own });
          return;
        case 'removed':
          if (!ev.dryRun) removedTotal.inc(perContainer(ev.host, ev.entry.profile));
          runs.freed.add(ev.host, ev.entry.reclaimedBytes ?? 0);
          return;
        case 'stopped':
          if (!ev.dryRun) stoppedTotal.inc(perContainer(ev.host, ev.entry.profile));
          return;
        case 'failed':
          failedTotal.inc(perContainer(ev.host, ev.entry.profile));
          return;

        case 'sweep':
        case 'deadline-check':
          runs.endRun(ev);
          return;
        case 'exec-tree':
        case 'kept':
          return; // no family counts these
      }
    },
    setTracked(host, n) {
      tracked.set({ host, ...own }, n);
    },
    setPass: runs.setPass,
    heartbeat: runs.heartbeat,
    text: runs.text,
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
