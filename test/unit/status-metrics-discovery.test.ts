import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, it } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { resolveEngines, stampKey } from '../../src/adapters/docker-context.js';
import { discoveryCandidates, hermesContainerCli, pingSocket } from '../../src/adapters/engine-discovery.js';
import { anonymousVolumes, parseEngineVersion } from '../../src/adapters/engine.js';
import { fillRegistry, metricsText, newMetricsRegistry } from '../../src/adapters/metrics.js';
import { type AttentionInput, type StatusEntry, attention, countContainers, statusExitCode } from '../../src/core/status.js';
import { countsByEngineAndProfile } from '../../src/reaper/run-metrics.js';
import { tempDir } from '../helpers/cli.js';

const entry = (
  id: string,
  verdict: StatusEntry['verdict'],
  reason: StatusEntry['reason'],
  extra: Partial<StatusEntry> & { processes?: number } = {},
): StatusEntry => ({
  id,
  name: `hermes-${id}`,
  host: 'unix:///e.sock',
  verdict,
  reason,
  ageSeconds: 100,
  ...extra,
});

describe('status counts', () => {
  it('groups by verdict, by rule (exited when the sweep names none) and by keep reason; the oldest orphan and volumes', () => {
    const c = countContainers([
      entry('a', 'reap', 'expired', { ageSeconds: 700, volumes: ['v1', 'v2'] }),
      entry('b', 'reap', 'expired', { rule: 'never-started', ageSeconds: 5000 }),
      entry('c', 'stop', 'idle', { rule: 'idle', ageSeconds: null, idleSeconds: 9000 }),
      entry('d', 'keep', 'running', { volumes: ['v3'], idleReason: 'in-use', processes: 4 }),
      entry('e', 'keep', 'too-recent'),
      entry('f', 'keep', 'running', { volumes: [] }),
    ]);
    assert.deepEqual(c.byVerdict, { reap: 2, stop: 1, keep: 3 });
    assert.deepEqual(c.wouldRemove, { total: 2, byRule: { exited: 1, 'never-started': 1 } });
    assert.deepEqual(c.wouldStop, { total: 1, byRule: { idle: 1 } });
    assert.deepEqual(c.kept, { total: 3, byReason: { running: 2, 'too-recent': 1 } });
    assert.equal(c.inUse, 1, 'running sandboxes kept in use (a process of their own)');
    assert.equal(c.orphans, 3);
    assert.equal(c.oldestOrphan?.id, 'c');
    assert.equal(c.oldestOrphan?.ageSeconds, 9000);
    assert.deepEqual(c.anonymousVolumes, { total: 3, containers: 2, heldByOrphans: 2 });
  });

  const calm: AttentionInput = {
    unreachableEngines: [],
    orphans: 0,
    oldestOrphanAgeSeconds: null,
    asOf: new Date('2026-11-22T10:00:00Z'),
    inspectFailures: 0,
    timedOut: false,
    staleLocks: [],
    restartGuard: { tripped: false, count: 1, max: 3, windowSeconds: 60 },
    suspendedSessions: 0,
    stopHook: { stalled: false, blocks: 0, maxBlocks: 5, problem: null },
    toolLoopLooping: [],
  };
  it('exit 0 when calm, 1 for each problem, 3 for an unreachable engine whatever else', () => {
    assert.equal(statusExitCode(calm, attention(calm)), 0);
    const problems: Array<Partial<AttentionInput>> = [
      { orphans: 2, oldestOrphanAgeSeconds: 800 },
      { staleLocks: [{ path: '/x.lock', pid: 4 }] },
      { restartGuard: { tripped: true, count: 3, max: 3, windowSeconds: 60 } },
      { suspendedSessions: 1 },
      { stopHook: { stalled: true, blocks: 5, maxBlocks: 5, problem: null } },
      { stopHook: { stalled: false, blocks: 0, maxBlocks: 5, problem: 'not JSON' } },
      { toolLoopLooping: ['s1'] },
      { inspectFailures: 1 },
    ];
    for (const p of problems) {
      const a = { ...calm, ...p };
      const lines = attention(a);
      assert.equal(lines.length, 1, JSON.stringify(p));
      assert.equal(statusExitCode(a, lines), 1, JSON.stringify(p));
    }
    const down = { ...calm, orphans: 3, unreachableEngines: ['unix:///x'] };
    assert.equal(statusExitCode(down, attention(down)), 3);
  });
});

describe('engine adapter parsing', () => {
  it('anonymous volumes: the volume mounts with an engine-made 64-hex name; named volumes are not', () => {
    const anon = 'a883910111bacca90280500108e650bae966de5d12d2df448cdec2dbf1b77a2b';
    assert.deepEqual(anonymousVolumes(['hjvol', anon, anon.slice(1), anon.toUpperCase(), `${anon}0`]), [anon]);
    assert.deepEqual(anonymousVolumes([]), []);
  });
  it('Docker or Podman from /version', () => {
    assert.deepEqual(parseEngineVersion({ Version: '20.10.24', ApiVersion: '1.41', Components: [{ Name: 'Engine' }] }), {
      kind: 'Docker',
      version: '20.10.24',
      apiVersion: '1.41',
    });
    assert.equal(parseEngineVersion({ Version: '4.3.1', Components: [{ Name: 'Podman Engine' }] }).kind, 'Podman');
  });
});

describe('discovery order and sources', () => {
  const env = (extra: Record<string, string>) => ({ PATH: '/nonexistent', XDG_RUNTIME_DIR: '/run/user/1000', ...extra });
  it('Docker sockets first, then Podman; HERMES_DOCKER_BINARY=podman (any path) puts Podman first', () => {
    const docker = discoveryCandidates({ env: env({}), homedir: '/home/u' }).candidates.map((c) => c.path);
    assert.deepEqual(docker, [
      '/var/run/docker.sock',
      '/run/user/1000/docker.sock',
      '/home/u/.docker/run/docker.sock',
      '/home/u/.docker/desktop/docker.sock',
      '/home/u/.colima/default/docker.sock',
      '/home/u/.orbstack/run/docker.sock',
      '/home/u/.rd/docker.sock',
      '/run/user/1000/podman/podman.sock',
      '/run/podman/podman.sock',
    ]);
    const podman = discoveryCandidates({ env: env({ HERMES_DOCKER_BINARY: '/opt/bin/podman' }), homedir: '/home/u' }).candidates.map((c) => c.path);
    assert.deepEqual(podman.slice(0, 3), ['/run/user/1000/podman/podman.sock', '/run/podman/podman.sock', '/var/run/docker.sock']);
    assert.equal(hermesContainerCli(env({ HERMES_DOCKER_BINARY: 'docker' })).cli, 'docker');
  });
  it('only podman on PATH: Podman first; XDG_RUNTIME_DIR unset: /run/user/<uid>', () => {
    const t = tempDir();
    try {
      const bin = path.join(t.dir, 'bin');
      mkdirSync(bin);
      writeFileSync(path.join(bin, 'podman'), '#!/bin/sh\n', { mode: 0o755 });
      const d = discoveryCandidates({ env: { PATH: bin }, homedir: '/h', uid: 1234 });
      assert.equal(d.podmanFirst, true);
      assert.equal(d.candidates[0]!.path, '/run/user/1234/podman/podman.sock');
    } finally {
      t.cleanup();
    }
  });
  it('resolveEngines names its source; nothing named (or context default in config.json) is left to discovery', () => {
    assert.equal(resolveEngines(['unix:///a.sock'], undefined, {}, '/h')[0]!.source, '--host');
    assert.equal(resolveEngines(undefined, undefined, { DOCKER_HOST: 'tcp://h:2375' }, '/h')[0]!.source, 'DOCKER_HOST');
    const none = resolveEngines(undefined, undefined, { DOCKER_CONFIG: '/nonexistent' }, '/h')[0]!;
    assert.equal(none.discover, true);
    assert.equal(stampKey(none), 'discover:');
    const t = tempDir();
    try {
      writeFileSync(path.join(t.dir, 'config.json'), JSON.stringify({ currentContext: 'default' }));
      assert.equal(resolveEngines(undefined, undefined, { DOCKER_CONFIG: t.dir }, '/h')[0]!.discover, true);
    } finally {
      t.cleanup();
    }
  });
});

/** An HTTP server on a unix socket in `dir`: `/_ping` answered 200 at once, or never (`silent`). */
async function pingServer(dir: string, silent = false): Promise<{ socket: string; close: () => Promise<void> }> {
  const socket = path.join(dir, 'engine.sock');
  const server = http.createServer((_req, res) => {
    if (!silent) res.end('OK');
  });
  await new Promise<void>((r) => server.listen(socket, r));
  // A silent server holds its connections open: closed with it.
  return { socket, close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))) };
}

/** Holds this thread, as reading a large settings file does while the discovery's ping waits. */
function busyFor(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe('discovery ping', () => {
  it('an engine that answers while this process is busy past the limit is found, not given up on', async () => {
    const t = tempDir();
    const engine = await pingServer(t.dir);
    try {
      const ping = pingSocket(engine.socket, 500);
      busyFor(1200); // the ping's limit passes while nothing here can read its answer
      assert.deepEqual(await ping, { outcome: 'answered' });
    } finally {
      await engine.close();
      t.cleanup();
    }
  });

  it('an engine that never answers still times out, busy or not', async () => {
    const t = tempDir();
    const engine = await pingServer(t.dir, true);
    try {
      assert.equal((await pingSocket(engine.socket, 100)).outcome, 'timeout');
      const ping = pingSocket(engine.socket, 100);
      busyFor(400);
      assert.deepEqual(await ping, { outcome: 'timeout', detail: 'no answer within 100 ms' });
    } finally {
      await engine.close();
      t.cleanup();
    }
  });
});

describe('metrics', () => {
  it('per engine and profile counts; dry run: would-remove are orphans; stopped optional', () => {
    const p = (profile: string | null) => ({ profile });
    const rows = countsByEngineAndProfile(
      [
        { host: 'h1', result: { removed: [p('a'), p('a')], kept: [p('a')], failed: [p('a')] } },
        { host: 'h2', result: { removed: [], kept: [], failed: [], stopped: [p('a')] } },
      ],
      'a',
      false,
    );
    assert.deepEqual(rows, [
      { host: 'h1', profile: 'a', removed: 2, stopped: 0, kept: 1, failed: 1, orphans: 1 },
      { host: 'h2', profile: 'a', removed: 0, stopped: 1, kept: 0, failed: 0, orphans: 0 },
    ]);
    const dry = countsByEngineAndProfile([{ host: 'h', result: { removed: [p('x'), p('y')], kept: [], failed: [] } }], null, true);
    assert.deepEqual(
      dry.map((r) => [r.profile, r.removed, r.orphans]),
      [
        ['x', 0, 1],
        ['y', 0, 1],
      ],
    );
  });
  it('a registry filled twice keeps one family each and drops label sets of the previous run', async () => {
    const reg = await newMetricsRegistry();
    const run = (host: string) => ({
      finishedAt: new Date(0),
      durationSeconds: 1,
      success: true,
      counts: [{ host, profile: 'p', removed: 1, stopped: 0, kept: 0, failed: 0, orphans: 0 }],
    });
    await fillRegistry(reg, run('h1'));
    await fillRegistry(reg, run('h2'));
    const fams = parsePrometheusTextFormat(await reg.metrics());
    assert.equal(fams.length, 9, 'the run-wide families with the heartbeat, and the five per engine and profile');
    assert.deepEqual(
      fams.find((f) => f.name === 'hermes_janitor_containers_removed')!.metrics.map((m) => m.labels?.host),
      ['h2'],
    );
    assert.match(await metricsText(run('x')), /^# HELP hermes_janitor_last_run_timestamp_seconds /);
  });
});
