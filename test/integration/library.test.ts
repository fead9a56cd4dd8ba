import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EngineFixture, after as plus, requireEngine } from '../helpers/docker.js';

// The package as a user imports it (self-reference through package.json "exports": the built dist/).
const lib = await import('hermes-janitor');

describe('library API (import from "hermes-janitor")', () => {
  const fx = new EngineFixture();
  before(requireEngine);
  after(() => fx.cleanup());

  it('exports every breaker and the reaper', () => {
    for (const name of ['createStopHook', 'createToolLoop', 'createRestartGuard', 'createStuckSessions', 'createLifecycleScan', 'createReaper', 'MemoryStateStore', 'FileStateStore', 'judge', 'parseFinishedAt']) {
      assert.equal(typeof (lib as Record<string, unknown>)[name], 'function', name);
    }
  });

  it('createReaper sweeps the real engine in process', async () => {
    const id = await fx.create({ state: 'exited' });
    const asOf = new Date(plus(await fx.finishedAt(id), 120));
    const reaper = lib.createReaper({ profile: fx.profile, lifetimeSeconds: 0, env: { DOCKER_HOST: process.env.DOCKER_HOST } });
    assert.equal(await reaper.threshold(), 120);
    const listed = await reaper.list({ asOf });
    assert.deepEqual(listed.containers.map((c) => [c.id, c.verdict]), [[id, 'reap']]);
    const dry = await reaper.reap({ asOf, dryRun: true });
    assert.deepEqual(dry.removed.map((e) => e.id), [id]);
    assert.ok((await fx.remaining()).includes(id));
    const real = await reaper.reap({ asOf });
    assert.deepEqual(real.removed.map((e) => e.id), [id]);
    assert.ok(!(await fx.remaining()).includes(id));
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
