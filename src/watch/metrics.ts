/**
 * Prometheus metrics and `/healthz` for `watch --metrics-listen`. prom-client is loaded only when asked for.
 * The `last_run` and per-run gauges share their names with `reap --metrics-file`; the rest are watch's own.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WatchEvent } from './engine-watcher.js';

/** Families shared with `reap --metrics-file` (same names, same labels). */
export const SHARED_METRICS = {
  lastRunTimestamp: 'hermes_janitor_last_run_timestamp_seconds',
  lastRunDuration: 'hermes_janitor_last_run_duration_seconds',
  lastRunSuccess: 'hermes_janitor_last_run_success',
  removed: 'hermes_janitor_containers_removed',
  stopped: 'hermes_janitor_containers_stopped',
  kept: 'hermes_janitor_containers_kept',
  failed: 'hermes_janitor_containers_failed',
  orphans: 'hermes_janitor_orphans',
} as const;

/** Families only `watch` has. */
export const WATCH_METRICS = {
  events: 'hermes_janitor_events_total',
  reconnects: 'hermes_janitor_reconnects_total',
  tracked: 'hermes_janitor_tracked_containers',
  removedTotal: 'hermes_janitor_removed_total',
  failedTotal: 'hermes_janitor_failed_total',
  connected: 'hermes_janitor_engine_connected',
} as const;

export interface WatchMetrics {
  observe(ev: WatchEvent): void;
  /** Refreshes the gauges read at scrape time. */
  setTracked(host: string, n: number): void;
  text(): Promise<string>;
  contentType: string;
}

export async function createWatchMetrics(profileOf: (profile: string | null) => string): Promise<WatchMetrics> {
  const prom = await import('prom-client');
  const registry = new prom.Registry();
  const g = (name: string, help: string, labelNames: string[] = []) => new prom.Gauge({ name, help, labelNames, registers: [registry] });
  const c = (name: string, help: string, labelNames: string[]) => new prom.Counter({ name, help, labelNames, registers: [registry] });
  const lastTs = g(SHARED_METRICS.lastRunTimestamp, 'End of the last sweep or deadline check (unix seconds)');
  const lastDur = g(SHARED_METRICS.lastRunDuration, 'Duration of the last sweep or deadline check (seconds)');
  const lastOk = g(SHARED_METRICS.lastRunSuccess, '1 when the last sweep or deadline check completed without failures');
  const hp = ['host', 'profile'];
  const runRemoved = g(SHARED_METRICS.removed, 'Containers removed by the last run', hp);
  const runStopped = g(SHARED_METRICS.stopped, 'Containers stopped by the last run', hp);
  const runKept = g(SHARED_METRICS.kept, 'Containers kept by the last run', hp);
  const runFailed = g(SHARED_METRICS.failed, 'Containers whose removal failed in the last run', hp);
  const orphans = g(SHARED_METRICS.orphans, 'Exited containers waiting for their deadline', hp);
  const events = c(WATCH_METRICS.events, 'Engine events received', ['host', 'action']);
  const reconnects = c(WATCH_METRICS.reconnects, 'Times an engine connection was lost', ['host']);
  const tracked = g(WATCH_METRICS.tracked, 'Containers with a pending deadline', ['host']);
  const removedTotal = c(WATCH_METRICS.removedTotal, 'Containers removed since start', hp);
  const failedTotal = c(WATCH_METRICS.failedTotal, 'Failed removals since start', hp);
  const connected = g(WATCH_METRICS.connected, '1 while connected to the engine', ['host']);
  runStopped.reset(); // no stop rule yet in this build: the family exists with no series

  // Per-run counts, per host and profile, reset at the start of each run's report.
  const run = new Map<string, { removed: number; kept: number; failed: number }>();
  const bump = (host: string, profile: string | null, k: 'removed' | 'kept' | 'failed') => {
    const key = JSON.stringify([host, profileOf(profile)]);
    const cur = run.get(key) ?? { removed: 0, kept: 0, failed: 0 };
    cur[k]++;
    run.set(key, cur);
  };
  const endRun = (durationMs: number, ok: boolean) => {
    lastTs.set(Date.now() / 1000);
    lastDur.set(durationMs / 1000);
    lastOk.set(ok ? 1 : 0);
    for (const gauge of [runRemoved, runKept, runFailed]) gauge.reset();
    for (const [key, v] of run) {
      const [host, profile] = JSON.parse(key) as [string, string];
      runRemoved.set({ host, profile }, v.removed);
      runKept.set({ host, profile }, v.kept);
      runFailed.set({ host, profile }, v.failed);
    }
    run.clear();
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
          bump(ev.host, ev.entry.profile, 'removed');
          return;
        case 'failed':
          failedTotal.inc({ host: ev.host, profile: profileOf(ev.entry.profile) });
          bump(ev.host, ev.entry.profile, 'failed');
          return;
        case 'kept':
          bump(ev.host, ev.entry.profile, 'kept');
          return;
        case 'sweep':
        case 'deadline-check':
          endRun(ev.durationMs, ev.failed === 0 && !ev.interrupted);
          return;
      }
    },
    setTracked(host, n) {
      tracked.set({ host }, n);
      orphans.set({ host, profile: profileOf(null) }, n);
    },
    text: () => registry.metrics(),
  };
}

/** Serves `GET /metrics` and `GET /healthz` (200 while `healthy()`, else 503). */
export async function serveMetrics(
  listen: { host: string | undefined; port: number },
  metrics: WatchMetrics | null,
  healthy: () => boolean,
  beforeScrape: () => void,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      const ok = healthy();
      res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain; charset=utf-8' }).end(ok ? 'ok\n' : 'engine not connected\n');
      return;
    }
    if (path === '/metrics' && metrics) {
      beforeScrape();
      metrics.text().then(
        (body) => res.writeHead(200, { 'Content-Type': metrics.contentType }).end(body),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found: try /metrics or /healthz\n');
  });
  server.keepAliveTimeout = 5000;
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
