/**
 * The engine restarted under a running `watch`: it reconnects, resyncs and removes what expired meanwhile.
 * Runs on a private dockerd (test/helpers/second-dockerd.ts) so the shared engine is never restarted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { tempDir } from '../helpers/cli.js';
import { TEST_IMAGE, docker } from '../helpers/docker.js';
import { SecondDockerd } from '../helpers/second-dockerd.js';
import { WatchProcess, type WatchLine } from '../helpers/watch-process.js';
import { unmet } from '../helpers/preconditions.js';

const home = tempDir('hj-watch-rc-');
let engine: SecondDockerd | undefined;
let unavailable = '';
let w: WatchProcess | undefined;

before(async () => {
  const d = await SecondDockerd.start();
  if ('unavailable' in d) unavailable = d.unavailable;
  else engine = d;
});
after(async () => {
  w?.kill();
  await engine?.cleanup();
  home.cleanup();
});

const engineStates = (lines: WatchLine[]) => lines.filter((l) => l.event === 'engine').map((l) => l.state as string);

describe('watch across an engine restart (a private dockerd)', () => {
  it('reconnects with backoff, logs each change of state once, resyncs and removes what expired while away', async (t) => {
    if (!engine) return void unmet(t, `the engine-restart test cannot run here: ${unavailable}`);
    const d = engine;
    const labels = ['--label', 'hermes-agent=1', '--label', 'hermes-profile=default'];
    const runSleeper = () => d.docker(['run', '-d', '--init', ...labels, '--network', 'none', TEST_IMAGE, 'sleep', '3600']);
    const a = await runSleeper();
    const b = await runSleeper();
    w = WatchProcess.start([
      '--host',
      d.host,
      '--home',
      home.dir,
      '--profile',
      'default',
      '--older-than',
      '3s',
      '--force-threshold',
      '--metrics-listen',
      '127.0.0.1:0',
    ]);
    await w.waitFor('connected', (ls) => engineStates(ls).includes('connected'));
    const url = w.events('metrics')[0]!.url as string;
    assert.equal((await fetch(`${url}/healthz`)).status, 200);

    // The engine goes down (stopping its containers: they exit while watch is away) and stays down past their deadline.
    await d.down();
    await w.waitFor('disconnected', (ls) => engineStates(ls).includes('disconnected'), 15_000);
    assert.equal((await fetch(`${url}/healthz`)).status, 503);
    await new Promise((r) => setTimeout(r, 6000)); // several reconnect attempts (1 s, 2 s, ...) fail meanwhile
    assert.deepEqual(engineStates(w.lines), ['connected', 'disconnected'], 'each change of state logged once');
    await d.up();
    await w.waitFor('reconnected', (ls) => engineStates(ls).filter((s) => s === 'connected').length === 2, 40_000);
    await w.waitFor('both removed', (ls) => [a, b].every((id) => ls.some((l) => l.event === 'removed' && l.id === id)), 20_000);
    const byId = new Map(w.events('removed').map((l) => [l.id as string, l]));
    // Found by the resync sweep (their deadlines passed while the engine was down), or at a deadline right after it.
    for (const id of [a, b]) assert.ok(['sweep', 'deadline'].includes(byId.get(id)!.trigger as string));
    assert.equal(await d.docker(['ps', '-aq']), '');
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    assert.match(metrics, /^hermes_janitor_reconnects_total\{host="[^"]+",home="[^"]+"\} 1$/m);
    const stop = await w.stop('SIGTERM');
    assert.equal(stop.code, 0, w.stderr);
    // The private engine, started twice, left the host's network alone: the shared engine still runs a container
    // on its default bridge (a private dockerd in the host's network namespace removed docker0).
    await docker(['run', '--rm', TEST_IMAGE, 'true']);
  });
});
