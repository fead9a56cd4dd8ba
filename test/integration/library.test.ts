import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emptyManagedDir, quietProcRoot, tempDir } from '../helpers/cli.js';
import { EngineFixture, after as plus, requireEngine } from '../helpers/docker.js';
import { EngineProxy } from '../helpers/engine-proxy.js';

// The package as a user imports it (self-reference through package.json "exports": the built dist/).
const lib = await import('hermes-janitor');

describe('library API (import from "hermes-janitor")', () => {
  const fx = new EngineFixture();
  before(requireEngine);
  after(() => fx.cleanup());

  it('exports every breaker and the reaper', () => {
    for (const name of [
      'createStopHook',
      'createToolLoop',
      'createRestartGuard',
      'createStuckSessions',
      'createLifecycleScan',
      'createReaper',
      'MemoryStateStore',
      'FileStateStore',
      'judge',
      'parseFinishedAt',
    ]) {
      assert.equal(typeof (lib as Record<string, unknown>)[name], 'function', name);
    }
  });

  it('createReaper sweeps the real engine in process', async () => {
    const id = await fx.create({ state: 'exited' });
    const asOf = new Date(plus(await fx.finishedAt(id), 120));
    const reaper = lib.createReaper({
      profile: fx.profile,
      lifetimeSeconds: 0,
      env: { DOCKER_HOST: process.env.DOCKER_HOST, HERMES_MANAGED_DIR: emptyManagedDir(), HERMES_JANITOR_PROC_ROOT: quietProcRoot() },
    });
    assert.equal(await reaper.threshold(), 120);
    const listed = await reaper.list({ asOf });
    assert.deepEqual(
      listed.containers.map((c) => [c.id, c.verdict]),
      [[id, 'reap']],
    );
    const dry = await reaper.reap({ asOf, dryRun: true });
    assert.deepEqual(
      dry.removed.map((e) => e.id),
      [id],
    );
    assert.ok((await fx.remaining()).includes(id));
    const real = await reaper.reap({ asOf });
    assert.deepEqual(
      real.removed.map((e) => e.id),
      [id],
    );
    assert.ok(!(await fx.remaining()).includes(id));
  });

  it("createReaper's stop re-check reads the cgroup here, or only the engine's stats with cgroupSamples: false", async () => {
    const dir = tempDir('hj-lib-');
    const proxy = await EngineProxy.start(dir.dir);
    try {
      const id = await fx.create({ state: 'running' });
      let now = Date.now() + 120_000; // as if started two minutes ago
      const store = new lib.MemoryStateStore();
      const make = (cgroupSamples?: boolean) =>
        lib.createReaper({
          profile: fx.profile,
          idleAfterSeconds: 60,
          idleStore: store,
          now: () => new Date(now),
          env: { DOCKER_HOST: proxy.host, HERMES_MANAGED_DIR: emptyManagedDir(), HERMES_JANITOR_PROC_ROOT: quietProcRoot() },
          ...(cgroupSamples === undefined ? {} : { cgroupSamples }),
        });
      for (const [reaper, stopped] of [
        [make(false), []],
        [make(), [id]],
      ] as const) {
        proxy.refuse = null;
        await reaper.reap(); // a first sample, from the engine
        now += 120_000;
        proxy.refuse = /\/stats$/; // the engine gives no sample at the stop pass
        const res = await reaper.reap();
        assert.deepEqual(
          res.stopped.map((e) => e.id),
          stopped,
          JSON.stringify(res.kept),
        );
      }
      assert.equal(await fx.state(id), 'exited');
    } finally {
      await proxy.close();
      dir.cleanup();
    }
  });

  it('breakers run on an in-memory store with an injected clock', async () => {
    let t = 1000;
    const guard = lib.createRestartGuard({ store: new lib.MemoryStateStore(), now: () => new Date(t * 1000), max: 3, windowSeconds: 60 });
    assert.equal((await guard.checkAndRecord()).tripped, false);
    t = 1005;
    assert.equal((await guard.checkAndRecord()).tripped, false);
    t = 1010;
    assert.equal((await guard.checkAndRecord()).tripped, true);
    const scan = lib.createLifecycleScan({ home: '/nonexistent' });
    assert.equal((await scan.scanText('hermes gateway restart')).matched, true);
    assert.equal((await scan.scanText('hermes gateway start')).matched, false);
  });
});
