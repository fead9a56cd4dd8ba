/**
 * Metrics of several homes read as Prometheus reads them (parse-prometheus-text-format): a run over two homes says each
 * series once, the per-home files of runs over one home each merge without a series said twice (node_exporter's textfile
 * collector refuses that), as the files of before did not, and `watch`'s heartbeat moves while it is idle.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type RunMetrics, metricsText } from '../../src/adapters/metrics.js';
import { countsByEngineAndProfile } from '../../src/reaper/run-metrics.js';
import { createWatchMetrics } from '../../src/watch/metrics.js';
import { PASSES } from '../../src/passes/index.js';
import { duplicateSeries, sampleValue, seriesOf } from '../helpers/prometheus.js';

const ALICE = '/home/alice/.hermes';
const BOB = '/home/bob/.hermes';
const HOST = 'unix:///var/run/docker.sock';
const NOW = new Date('2026-12-01T12:00:00Z');
const entries = (profile: string, n: number) => Array.from({ length: n }, () => ({ profile }));
const sandboxDirs = PASSES.find((p) => p.name === 'sandboxDirs')!;

/** A run over one home, as a per-home cron line makes it (the same counts whatever the home, as two users' quiet hosts). */
function oneHomeRun(home: string | undefined): RunMetrics {
  return {
    finishedAt: NOW,
    durationSeconds: 1,
    success: true,
    counts: countsByEngineAndProfile([{ host: HOST, result: { removed: entries('default', 1), kept: entries('default', 2), failed: [] } }], 'default', false),
    passes: [{ pass: sandboxDirs, gauges: { used: { count: 1, bytes: 10 }, unused: { count: 0, bytes: 0 } } }],
    ...(home !== undefined ? { home } : {}),
  };
}

describe('metrics for many homes', () => {
  it('a run over two homes: each series once; the per-home ones carry their home, the run-wide ones none', async () => {
    const owner: Record<string, string> = { default: ALICE, work: BOB };
    const counts = countsByEngineAndProfile(
      [{ host: HOST, result: { removed: [...entries('default', 2), ...entries('work', 1)], kept: entries('work', 1), failed: [] } }],
      null,
      false,
      (profile) => owner[profile]!,
    );
    const text = await metricsText({ finishedAt: NOW, durationSeconds: 2, success: true, counts });
    assert.deepEqual(duplicateSeries([text]), []);
    const series = seriesOf(text);
    assert.equal(series.get(`hermes_janitor_containers_removed{home="${ALICE}",host="${HOST}",profile="default"}`), 2);
    assert.equal(series.get(`hermes_janitor_containers_removed{home="${BOB}",host="${HOST}",profile="work"}`), 1);
    assert.equal(series.get(`hermes_janitor_containers_kept{home="${BOB}",host="${HOST}",profile="work"}`), 1);
    assert.equal(series.get('hermes_janitor_last_run_timestamp_seconds{}'), NOW.getTime() / 1000, 'one run, one series');
    assert.equal(series.get('hermes_janitor_heartbeat_timestamp_seconds{}'), NOW.getTime() / 1000);
  });

  it('per-home files (a run over one home each) merge without a series said twice; the files of before (no home) did not', async () => {
    const [alice, bob] = [await metricsText(oneHomeRun(ALICE)), await metricsText(oneHomeRun(BOB))];
    assert.deepEqual(duplicateSeries([alice, bob]), []);
    for (const [text, home] of [
      [alice, ALICE],
      [bob, BOB],
    ] as const) {
      for (const key of seriesOf(text).keys()) assert.match(key, new RegExp(`home="${home}"`), `${key}: every series of a one-home run carries its home`);
    }
    // The queries of before still select them (a selector matches a subset of the labels).
    assert.equal(sampleValue(alice, 'hermes_janitor_containers_removed', { host: HOST, profile: 'default' }), 1);
    assert.equal(sampleValue(bob, 'hermes_janitor_last_run_success'), 1);
    // The control: the same two runs without a home collide on every series, as node_exporter reported.
    const [a0, b0] = [await metricsText(oneHomeRun(undefined)), await metricsText(oneHomeRun(undefined))];
    const dups = duplicateSeries([a0, b0]);
    assert.ok(
      dups.includes('hermes_janitor_last_run_timestamp_seconds{}') && dups.includes(`hermes_janitor_containers_removed{host="${HOST}",profile="default"}`),
    );
  });

  it("watch: the heartbeat moves while idle (no run), never back; the last run's time stays", async () => {
    const m = await createWatchMetrics((p) => p ?? 'default', PASSES, { home: ALICE });
    const at = (text: string, name: string) => sampleValue(text, name, { home: ALICE });
    const first = await m.text();
    const lastRun = at(first, 'hermes_janitor_last_run_timestamp_seconds');
    const later = new Date(Date.now() + 60_000);
    m.heartbeat(later);
    const second = await m.text();
    assert.equal(at(second, 'hermes_janitor_heartbeat_timestamp_seconds'), later.getTime() / 1000);
    assert.equal(at(second, 'hermes_janitor_last_run_timestamp_seconds'), lastRun, 'no run: its time stays');
    m.heartbeat(new Date(later.getTime() - 30_000));
    assert.equal(at(await m.text(), 'hermes_janitor_heartbeat_timestamp_seconds'), later.getTime() / 1000, 'never back');
    assert.deepEqual(duplicateSeries([await m.text()]), []);
  });
});
