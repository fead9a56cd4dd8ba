/**
 * Owned and abandoned sandboxes (#30) against a real engine, with real processes: a stand-in gateway (its command
 * line names hermes; HERMES_HOME points at the first profile's home) in a pid namespace of its own, shared with the
 * janitor's runs and with a Docker engine of its own (a private dockerd started inside it), so other processes of a
 * shared machine do not count, and the janitor sees the engine's processes: its pid namespace is the engine's, proved
 * by the containers' `State.Pid` (a janitor in a pid namespace the engine is not in sees no owner:
 * pid-namespace.test.ts). With a short idle threshold and a long owned one, the second profile's sandbox is stopped,
 * the first kept (`owner-alive`); once the stand-in is SIGKILLed, the first is stopped too. A sandbox the janitor
 * stopped is kept (`stopped-retained`) past the threshold and removed after the retention; one it did not stop is
 * removed as before. A janitor running as another user, which cannot read the stand-in's environment: every profile
 * owned.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { tempDir } from '../helpers/cli.js';
import { EngineFixture, RUN_LABEL, docker } from '../helpers/docker.js';
import { EngineProxy } from '../helpers/engine-proxy.js';
import { SecondDockerd } from '../helpers/second-dockerd.js';
import { type StandIn, pidNamespace, runCliAs, standInScript, startStandIn, testUser } from '../helpers/owners.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';

interface Owner {
  pid: number | null;
  command: string;
  since: string | null;
  serves?: string;
  why?: string;
}
interface Entry {
  id: string;
  state: string;
  reason?: string;
  idleReason?: string;
  owner?: Owner;
  verdict?: string;
}
interface ReapJson {
  removed: Entry[];
  stopped: Entry[];
  kept: Entry[];
  failed: Entry[];
}

const user = testUser();
const unmetReason =
  typeof user === 'string'
    ? user
    : !existsSync('/usr/sbin/dockerd') && !existsSync('/usr/bin/dockerd')
      ? 'needs dockerd (an engine in the pid namespace)'
      : false;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('owned and abandoned sandboxes (a Docker engine in the pid namespace, real processes)', { skip: skipUnless(unmetReason) }, () => {
  const fx = new EngineFixture();
  const home = tempDir('hj-owned-');
  const cleanups: Array<() => unknown> = [];
  const standIns: StandIn[] = [];
  let ns: { prefix: string[]; close: () => Promise<void> };
  let engine: SecondDockerd | undefined;
  const shared = process.env.DOCKER_HOST;
  let script: string;
  const [p1, p2] = [`${fx.profile}a`, `${fx.profile}b`];
  const gatewayHome = '/srv/hj-gateway';
  const scope = ['--all-profiles', '--label', `${RUN_LABEL}=${fx.runId}`];
  const sel = [...scope, '--stop-idle', '--idle-after', '2s', '--idle-after-owned', '1h'];
  const env = () => ({ HOME: home.dir, DOCKER_HOST: engine!.host });
  const byId = (entries: Entry[], id: string) => entries.find((e) => e.id === id);

  before(async () => {
    failUnderCi(unmetReason);
    ns = await pidNamespace();
    const started = await SecondDockerd.start(ns.prefix);
    if ('unavailable' in started) throw new Error(started.unavailable);
    engine = started;
    // The fixture's docker CLI calls go to that engine.
    process.env.DOCKER_HOST = engine.host;
    const s = standInScript();
    script = s.script;
    cleanups.push(s.cleanup);
  });
  afterEach(async () => {
    await Promise.all(standIns.splice(0).map((s) => s.kill()));
    await fx.removeContainers();
  });
  after(async () => {
    await Promise.all(standIns.map((s) => s.kill()));
    await fx.cleanup();
    await engine?.cleanup();
    await ns?.close();
    if (shared === undefined) delete process.env.DOCKER_HOST;
    else process.env.DOCKER_HOST = shared;
    for (const c of cleanups) c();
    home.cleanup();
  });

  const janitor = async (args: string[], as: { uid: number; gid: number } | null = null, extra: Record<string, string> = {}) => {
    const r = await runCliAs(as, args, { ...env(), ...extra }, ns.prefix);
    assert.ok(r.code === 0, `exit ${r.code}: ${r.stderr}${r.stdout}`);
    return r;
  };
  const reap = async (args: string[] = []) => JSON.parse((await janitor(['reap', '--json', ...sel, ...args])).stdout) as ReapJson;
  /**
   * Reaps until `id` is stopped, a few rounds at most: on a loaded machine the re-check right before a stop can see
   * the sleeping sandbox's page faults (`proof-failed`, the cautious outcome), and its proof starts again. Nothing
   * else may be stopped meanwhile.
   */
  const reapUntilStopped = async (id: string): Promise<ReapJson> => {
    for (let round = 0; ; round++) {
      const out = await reap();
      assert.deepEqual(
        out.stopped.map((e) => e.id).filter((x) => x !== id),
        [],
        JSON.stringify(out),
      );
      if (out.stopped.length || round === 3 || byId(out.kept, id)?.idleReason !== 'proof-failed') return out;
      await sleep(2600);
    }
  };

  it("the gateway's profile is owned (kept, owner-alive); the other is stopped; the gateway killed, its sandbox is stopped on a later run", async () => {
    const [s1, s2] = await Promise.all([fx.create({ state: 'running', profile: p1 }), fx.create({ state: 'running', profile: p2 })]);
    const gw = await startStandIn(script, '-', { HOME: gatewayHome, HERMES_HOME: `${gatewayHome}/.hermes/profiles/${p1}`, TMPDIR: home.dir }, null, ns.prefix);
    standIns.push(gw);
    // The first sample starts each proof; the next run, past the short threshold, decides.
    const first = JSON.parse((await janitor(['list', '--json', ...sel])).stdout) as { containers: Entry[] };
    assert.equal(byId(first.containers, s1)!.owner?.pid, gw.innerPid, JSON.stringify(byId(first.containers, s1)));
    assert.match(byId(first.containers, s1)!.owner!.command, /\/hermes$/);
    assert.equal(byId(first.containers, s1)!.owner!.serves, 'profile');
    assert.equal(byId(first.containers, s2)!.owner, undefined);
    await sleep(2600);
    const out = await reapUntilStopped(s2);
    assert.deepEqual(
      out.stopped.map((e) => e.id),
      [s2],
      JSON.stringify(out),
    );
    const kept = byId(out.kept, s1)!;
    assert.deepEqual([kept.reason, kept.idleReason, kept.owner?.pid], ['running', 'owner-alive', gw.innerPid], JSON.stringify(kept));
    assert.equal(await fx.state(s1), 'running');
    assert.equal(await fx.state(s2), 'exited');
    const table = await janitor(['list', ...sel, '--wide']);
    assert.match(table.stdout, new RegExp(`  owner-alive: pid ${gw.innerPid} serves profile$`, 'm'), table.stdout);
    // status: the process found, and the counts.
    const st = JSON.parse((await janitor(['status', '--json', ...scope])).stdout) as {
      hermesProcesses: { processes: Array<{ pid: number; profile: string | null; since: string }> };
      sandboxOwners: { owned: number; abandoned: number; stoppedRetained: number; blind: string[] };
    };
    assert.deepEqual(
      st.hermesProcesses.processes.map((p) => [p.pid, p.profile]),
      [[gw.innerPid, p1]],
    );
    assert.equal(st.sandboxOwners.owned, 1);
    assert.deepEqual(st.sandboxOwners.blind, []);
    const text = await janitor(['status', ...scope]);
    // Who keeps the sandbox from being stopped: user, pid, what it serves, command, and why it counts as hermes.
    assert.match(
      text.stdout,
      new RegExp(`^  pid ${gw.innerPid}, user root \\(uid 0\\), profile ${p1}, running since \\S+, makes 1 running sandbox owned: sh .*/hermes$`, 'm'),
      text.stdout,
    );
    assert.match(text.stdout, new RegExp(`^ {4}serves: HERMES_HOME names profile ${p1}$`, 'm'), text.stdout);
    assert.match(text.stdout, /^ {4}counts as hermes: entry point hermes$/m, text.stdout);
    assert.match(text.stdout, /running sandboxes: 1 owned .*, 0 abandoned/);

    await gw.kill();
    const later = await reapUntilStopped(s1);
    assert.deepEqual(
      later.stopped.map((e) => e.id),
      [s1],
      JSON.stringify(later),
    );
    assert.equal(await fx.state(s1), 'exited');
  });

  it(
    'a sandbox the janitor stopped is kept (stopped-retained) past the threshold, ' + 'removed after the retention; one it did not stop is removed as today',
    async () => {
      const [ours, theirs] = await Promise.all([fx.create({ state: 'running', profile: p2 }), fx.create({ state: 'running', profile: p2 })]);
      await janitor(['list', '--json', ...sel]);
      await docker(['stop', '-t', '1', theirs]);
      await sleep(2600);
      const stop = await reap();
      const stoppedBy = Date.now();
      assert.deepEqual(
        stop.stopped.map((e) => e.id),
        [ours],
        JSON.stringify(stop.kept.map((e) => [e.id === ours, e.reason, e.idleReason])),
      );
      // An hour later as far as the exited rule goes (--as-of): past 2 x lifetime for both.
      const asOf = new Date(Date.now() + 3_600_000).toISOString();
      const retained = await reap(['--as-of', asOf, '--stopped-retention', '1h']);
      assert.deepEqual(
        retained.removed.map((e) => e.id),
        [theirs],
        JSON.stringify(retained),
      );
      assert.equal(byId(retained.kept, ours)?.reason, 'stopped-retained');
      const listed = JSON.parse((await janitor(['list', '--json', ...sel, '--as-of', asOf, '--stopped-retention', '1h'])).stdout) as { containers: Entry[] };
      assert.deepEqual([byId(listed.containers, ours)?.verdict, byId(listed.containers, ours)?.reason], ['keep', 'stopped-retained']);
      // Past the retention (a retention of 1 s, judged by the clock): the runs above may take less than that on a quick
      // machine, so the stop is first made older than a second.
      await sleep(Math.max(0, stoppedBy + 1100 - Date.now()));
      const removed = await reap(['--as-of', asOf, '--stopped-retention', '1s']);
      assert.deepEqual(
        removed.removed.map((e) => e.id),
        [ours],
        JSON.stringify(removed),
      );
    },
  );

  it("the janitor as another user cannot read the gateway's environment: every profile owned, nothing stopped, the reason given", async () => {
    const u = user as { uid: number; gid: number };
    const proxyDir = tempDir('hj-owned-proxy-');
    cleanups.push(proxyDir.cleanup);
    chmodSync(proxyDir.dir, 0o755);
    const proxy = await EngineProxy.start(proxyDir.dir, engine!.socket);
    cleanups.push(() => proxy.close());
    chmodSync(proxy.socket, 0o666);
    const userHome = tempDir('hj-owned-user-');
    cleanups.push(userHome.cleanup);
    chmodSync(userHome.dir, 0o777);
    const [s1, s2] = await Promise.all([fx.create({ state: 'running', profile: p1 }), fx.create({ state: 'running', profile: p2 })]);
    const gw = await startStandIn(script, '-', { HOME: gatewayHome, HERMES_HOME: `${gatewayHome}/.hermes/profiles/${p1}` }, null, ns.prefix);
    standIns.push(gw);
    const asUser = ['--host', `unix://${proxy.socket}`, ...sel];
    const uenv = { HOME: userHome.dir };
    await janitor(['list', '--json', ...asUser], u, uenv);
    await sleep(2600);
    const out = JSON.parse((await janitor(['reap', '--json', ...asUser], u, uenv)).stdout) as ReapJson;
    assert.deepEqual(out.stopped, [], JSON.stringify(out));
    for (const id of [s1, s2]) {
      const k = byId(out.kept, id)!;
      assert.equal(k.idleReason, 'owner-alive', JSON.stringify(k));
      assert.equal(k.owner?.pid, gw.innerPid);
    }
    const st = JSON.parse((await janitor(['status', '--json', '--host', `unix://${proxy.socket}`, ...scope], u, uenv)).stdout) as {
      hermesProcesses: { processes: Array<{ pid: number; profile: string | null; profileUnknown: string | null }> };
    };
    const p = st.hermesProcesses.processes.find((x) => x.pid === gw.innerPid)!;
    assert.equal(p.profile, null);
    assert.match(p.profileUnknown ?? '', /environment cannot be read \(EACCES\)/);
  });
});
