/**
 * `watch --metrics-listen` under a connection flood anyone on the host can make (#35), against the real engine:
 * watch runs under `ulimit -n 1024` while 2,000 idle connections are held open to its metrics port (each one the
 * server closes is opened again). It holds at most 256 descriptors (the cap, --metrics-max-connections 64 by default,
 * and its health slots), an orphan is still removed at its deadline (the engine connection is never starved), and
 * /healthz answers 200 (on a slot of its own).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, EngineFixture, requireEngine } from '../helpers/docker.js';
import { WatchProcess, type WatchLine } from '../helpers/watch-process.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const connected = (lines: WatchLine[]) => lines.some((l) => l.event === 'engine' && l.state === 'connected');
const descriptors = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** 2,000 idle connections to `port`, each opened again (after 200 ms) when the server closes it. */
function flood(port: number, n: number): { made: () => number; stop: () => void } {
  const sockets = new Set<net.Socket>();
  let stopped = false;
  let made = 0;
  const connect = () => {
    if (stopped) return;
    made++;
    const s = net.connect({ host: '127.0.0.1', port });
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => {
      sockets.delete(s);
      setTimeout(connect, 200);
    });
  };
  for (let i = 0; i < n; i++) connect();
  return {
    made: () => made,
    stop: () => {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
  };
}

/** GET /healthz: its status, or the error (each attempt a fresh connection). */
function healthz(url: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get(`${url}/healthz`, { agent: false, timeout: 3000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve(err.message));
  });
}

describe(`watch --metrics-listen under a connection flood (${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const home = tempDir('hj-metrics-flood-');
  let w: WatchProcess | undefined;
  before(requireEngine);
  after(async () => {
    w?.kill();
    await fx.cleanup();
    home.cleanup();
  });

  it('2,000 idle connections held open: at most 256 descriptors, an orphan removed at its deadline, /healthz 200', async (t) => {
    w = WatchProcess.start(
      ['--home', home.dir, '--profile', fx.profile, '--older-than', '4s', '--force-threshold', '--metrics-listen', '127.0.0.1:0'],
      { HOME: home.dir },
      'ulimit -n 1024',
    );
    await w.waitFor('connected', connected);
    await w.waitFor('metrics url', (lines) => lines.some((l) => l.event === 'metrics'));
    const url = w.events('metrics')[0]!.url as string;
    const pid = w.child.pid!;
    const f = flood(Number(new URL(url).port), 2000);
    try {
      await sleep(2000);
      let most = descriptors(pid);
      // An orphan made now: its deadline (4 s after it exited) passes during the flood.
      const orphan = await fx.create({ state: 'exited', labels: { 'hj-flood': randomBytes(3).toString('hex') } });
      const until = Date.now() + 20_000;
      while (!w.events('removed').some((l) => l.id === orphan) && Date.now() < until) {
        most = Math.max(most, descriptors(pid));
        await sleep(250);
      }
      assert.ok(
        w.events('removed').some((l) => l.id === orphan),
        `the orphan was not removed at its deadline; stderr: ${w.stderr.slice(-2000)}`,
      );
      assert.ok(most <= 256, `watch held ${most} descriptors`);
      t.diagnostic(`watch held at most ${most} descriptors while the flood made ${f.made()} connections`);
      assert.ok(f.made() > 2000, `the flood made ${f.made()} connections (the server refuses them, it opens them again)`);
      let health: number | string = 'not asked';
      let tries = 0;
      for (; tries < 20 && health !== 200; tries++) {
        health = await healthz(url);
        if (health !== 200) await sleep(250);
      }
      assert.equal(health, 200);
      t.diagnostic(`/healthz answered 200 at try ${tries}`);
      assert.ok(descriptors(pid) <= 256);
    } finally {
      f.stop();
    }
    assert.equal(w.events('engine').filter((l) => l.state === 'disconnected').length, 0, 'the engine connection held');
    const stop = await w.stop();
    assert.equal(stop.code, 0, w.stderr);
  });
});
