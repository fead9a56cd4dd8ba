/**
 * `reap --metrics-file` / HERMES_JANITOR_METRICS_FILE against the real engine: the file parses with a Prometheus
 * text-format parser (prom-client writes it but has no parser: parse-prometheus-text-format reads it), carries
 * the run's counts per engine and profile, is mode 0644, and a reader polling the path while runs rewrite it
 * never sees a partial file.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';
import { runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_HOST, ENGINE_KIND, EngineFixture, requireEngine } from '../helpers/docker.js';

/** The families the README promises (its metrics table), listed here: never read from the code under test. */
const FAMILY_NAMES = [
  'hermes_janitor_containers_failed',
  'hermes_janitor_containers_kept',
  'hermes_janitor_containers_removed',
  'hermes_janitor_containers_stopped',
  'hermes_janitor_exec_trees',
  'hermes_janitor_heartbeat_timestamp_seconds',
  'hermes_janitor_last_run_duration_seconds',
  'hermes_janitor_last_run_reclaimed_bytes',
  'hermes_janitor_last_run_success',
  'hermes_janitor_last_run_timestamp_seconds',
  'hermes_janitor_orphans',
  'hermes_janitor_sandbox_dir_bytes',
  'hermes_janitor_sandbox_dirs',
  'hermes_janitor_session_files',
  'hermes_janitor_shell_snapshots',
];

function read(file: string): Map<string, ParsedFamily> {
  return new Map(parsePrometheusTextFormat(readFileSync(file, 'utf8')).map((f) => [f.name, f]));
}
/** The sample whose labels include `labels`, as a PromQL selector matches (more labels may be there: `home`). */
const value = (fams: Map<string, ParsedFamily>, name: string, labels?: Record<string, string>) => {
  const fam = fams.get(name);
  assert.ok(fam, `family ${name} missing`);
  const m = fam.metrics.find((s) => !labels || Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  assert.ok(m, `${name}${JSON.stringify(labels)} missing in ${JSON.stringify(fam.metrics)}`);
  return Number(m.value);
};

describe(`reap --metrics-file (built CLI, ${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const t = tempDir('hj-metrics-');
  before(requireEngine);
  after(async () => {
    await fx.cleanup();
    t.cleanup();
  });
  const env = { HERMES_HOME: path.join(t.dir, 'hermes'), HOME: t.dir, DOCKER_HOST: ENGINE_HOST };
  const sel = () => ['--label', `hermes-janitor-test-run=${fx.runId}`, '--all-profiles'];

  it('a run that removes one container and keeps another: every family, with HELP and TYPE, mode 0644', async () => {
    const expired = await fx.create({ state: 'exited' });
    await fx.create({ state: 'running' });
    const file = path.join(t.dir, 'janitor.prom');
    const asOf = new Date(Date.now() + 3600_000).toISOString();
    const beforeRun = Date.now() / 1000;
    const r = await runCli(['reap', ...sel(), '--as-of', asOf, '--metrics-file', file], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await fx.remaining().then((ids) => ids.includes(expired)), false);
    const fams = read(file);
    assert.deepEqual([...fams.keys()].sort(), FAMILY_NAMES);
    for (const f of fams.values()) {
      assert.equal(f.type, 'GAUGE', f.name);
      assert.ok(f.help.length > 10, `${f.name} has HELP text`);
    }
    const labels = { host: ENGINE_HOST, profile: fx.profile };
    assert.equal(value(fams, 'hermes_janitor_last_run_success'), 1);
    const ts = value(fams, 'hermes_janitor_last_run_timestamp_seconds');
    assert.ok(ts >= beforeRun - 1 && ts <= Date.now() / 1000 + 1, String(ts));
    assert.ok(value(fams, 'hermes_janitor_last_run_duration_seconds') > 0);
    assert.equal(value(fams, 'hermes_janitor_containers_removed', labels), 1);
    assert.equal(value(fams, 'hermes_janitor_containers_stopped', labels), 0);
    assert.equal(value(fams, 'hermes_janitor_containers_failed', labels), 0);
    assert.equal(value(fams, 'hermes_janitor_orphans', labels), 0);
    // Every series carries the home the run served, so that several homes' files never hold the same series.
    for (const f of fams.values()) for (const m of f.metrics) assert.equal(m.labels?.home, env.HERMES_HOME, `${f.name} carries the home`);
    assert.equal(value(fams, 'hermes_janitor_heartbeat_timestamp_seconds'), ts, "a reap's heartbeat is its end");
    assert.equal(statSync(file).mode & 0o777, 0o644);
    assert.deepEqual(
      readdirSync(t.dir).filter((n) => n.endsWith('.tmp')),
      [],
      'no temporary file left behind',
    );
  });

  it('HERMES_JANITOR_METRICS_FILE; a dry run reports what it would remove as orphans, nothing removed', async () => {
    await fx.create({ state: 'exited' });
    const file = path.join(t.dir, 'env.prom');
    const asOf = new Date(Date.now() + 3600_000).toISOString();
    const r = await runCli(['reap', '--dry-run', ...sel(), '--as-of', asOf], { env: { ...env, HERMES_JANITOR_METRICS_FILE: file } });
    assert.equal(r.code, 0, r.stderr);
    const fams = read(file);
    const labels = { host: ENGINE_HOST, profile: fx.profile };
    assert.equal(value(fams, 'hermes_janitor_containers_removed', labels), 0);
    assert.equal(value(fams, 'hermes_janitor_orphans', labels), 1);
  });

  it('the engine unreachable: success 0 and no per-engine series; a missing directory is a usage error before any work', async () => {
    const file = path.join(t.dir, 'down.prom');
    const r = await runCli(['reap', '--host', `unix://${t.dir}/nothing.sock`, '--metrics-file', file], { env });
    assert.equal(r.code, 3);
    const fams = read(file);
    assert.equal(value(fams, 'hermes_janitor_last_run_success'), 0);
    assert.deepEqual(fams.get('hermes_janitor_orphans')?.metrics ?? [], []);
    const bad = await runCli(['reap', '--metrics-file', path.join(t.dir, 'no', 'such', 'dir', 'x.prom')], { env });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^hermes-janitor: --metrics-file .*: directory .* does not exist/);
  });

  it('never seen half-written: a reader polling the path while runs rewrite it always parses a whole file', async () => {
    const file = path.join(t.dir, 'polled.prom');
    assert.equal((await runCli(['reap', ...sel(), '--metrics-file', file], { env })).code, 0);
    let reads = 0;
    let running = true;
    const problems: string[] = [];
    const poll = async () => {
      while (running) {
        try {
          const fams = read(file);
          const names = [...fams.keys()].sort();
          if (JSON.stringify(names) !== JSON.stringify(FAMILY_NAMES)) problems.push(`families: ${names.join(',')}`);
          reads++;
        } catch (err) {
          problems.push(String(err));
        }
        await new Promise((r) => setImmediate(r));
      }
    };
    const poller = poll();
    try {
      for (let round = 0; round < 3; round++) {
        const runs = await Promise.all(Array.from({ length: 3 }, () => runCli(['reap', ...sel(), '--metrics-file', file], { env })));
        for (const r of runs) assert.equal(r.code, 0, r.stderr);
      }
    } finally {
      running = false;
      await poller;
    }
    assert.deepEqual(problems, []);
    assert.ok(reads > 50, `the reader polled ${reads} times`);
  });
});
