/**
 * The idle rule, the never-started rule and anonymous volumes against the real engine (Docker, and Podman through
 * its Docker-compatible API: see scripts/test.sh). Sandboxes are made the hermes way (`--init`, a long sleep).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, ENGINE_SOCKET, EngineFixture, after as plus, docker, requireEngine } from '../helpers/docker.js';
import { EngineProxy } from '../helpers/engine-proxy.js';
import { readCgroupCounters } from '../../src/adapters/cgroup-counters.js';

interface Entry {
  id: string;
  name: string;
  state: string;
  rule: string | null;
  idleSeconds?: number | null;
  idleReason?: string;
  reason?: string;
  verdict?: string;
  volumes?: string[];
  ageSeconds: number | null;
}
interface ReapJson {
  dryRun: boolean;
  removed: Entry[];
  stopped: Entry[];
  kept: Entry[];
  failed: Array<Entry & { error: string }>;
}
interface ListJson {
  containers: Entry[];
  stopIdle: boolean;
  idleAfterSeconds: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const byId = (entries: Entry[], id: string) => entries.find((e) => e.id === id);
const IDLE = '2s';
const WAIT_MS = 2600;

describe(`idle sandboxes, never-started containers and anonymous volumes (${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const home = tempDir('hj-home-');
  const hermesHome = path.join(home.dir, 'hermes');
  const env = { HOME: home.dir, HERMES_HOME: hermesHome };
  const sel = ['--profile', fx.profile];
  /** `--profile NAME` makes `<root>/profiles/NAME` the home (hermes' rule): its janitor files live there. */
  const profileHome = path.join(hermesHome, 'profiles', fx.profile);

  before(requireEngine);
  afterEach(() => fx.removeContainers());
  after(async () => {
    await fx.cleanup();
    home.cleanup();
  });

  it('stops an idle sandbox after two observations, keeps busy, exec-in-flight and restarted ones; the exited rule removes it later', async () => {
    // Through the test proxy, whose record of requests shows the path each sandbox took in the reap.
    const proxy = await EngineProxy.start(home.dir);
    const via = ['--host', proxy.host, ...sel];
    try {
      await idleBusyExecRestarted(proxy, via);
    } finally {
      await proxy.close();
    }
  });

  async function idleBusyExecRestarted(proxy: EngineProxy, via: string[]): Promise<void> {
    const [idle, busy, withExec, restarted] = await Promise.all([
      fx.create({ state: 'running' }),
      // A process that keeps using CPU (a few ms every half second) and faulting pages.
      fx.create({ state: 'running', cmd: ['sh', '-c', 'while true; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; sleep 0.5; done'] }),
      fx.create({ state: 'running' }),
      fx.create({ state: 'running' }),
    ]);
    // An exec in flight since before the first observation (idle itself: a sleeping process).
    await docker(['exec', '-d', withExec, 'sleep', '60']);
    await sleep(300);

    const first = await runCli(['list', '--json', ...via, '--idle-after', IDLE], { env });
    assert.equal(first.code, 0, first.stderr);
    for (const e of (JSON.parse(first.stdout) as ListJson).containers) {
      assert.equal(e.rule, 'idle');
      assert.equal(e.idleSeconds, null, 'one sample is no proof');
      assert.equal(e.verdict, 'keep');
    }
    const state = path.join(profileHome, 'janitor', 'idle.json');
    assert.equal(statSync(state).mode & 0o777, 0o600);

    await sleep(WAIT_MS);

    const dryStarted = Date.now();
    const dry = await runCli(['reap', '--dry-run', ...via, '--idle-after', IDLE], { env });
    assert.equal(dry.code, 0, dry.stderr);
    for (const id of [idle, restarted]) {
      assert.match(dry.stdout, new RegExp(`^Would stop ${id.slice(0, 12)} \\S+ \\(profile ${fx.profile}, idle \\d+ seconds, writable layer [^)]+\\)$`, 'm'));
    }
    assert.match(dry.stdout, /Would remove 0, would stop 2, kept 2, failed 0/);
    assert.equal(await fx.state(idle), 'running', 'a dry run stops nothing');

    // Restarted after the samples that proved it idle: the next run's sample shows a new StartedAt, which resets
    // the proof however long the runs take.
    await docker(['restart', '-t', '0', restarted]);

    // Judged as of 1 s after the dry run began, whatever the time now: `busy`'s proof (at most one quiet sample, the
    // dry run's) is then too young to try a stop, on a loaded machine too. Left to the clock, a reap started more
    // than the idle threshold after the dry run's sample tries it, and the re-check right before the stop finds
    // the activity: `proof-failed` instead of `observing` (seen once in CI, and reproduced with the gap widened).
    // Idleness is never projected past now, so an earlier --as-of only shortens it: `idle` still has 3.6 s and more.
    const asOf = new Date(dryStarted + 1000).toISOString();
    const mark = proxy.seen.length;
    const res = await runCli(['reap', '--json', ...via, '--idle-after', IDLE, '--as-of', asOf], { env });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as ReapJson;
    const firstEnd = proxy.seen.length;
    // On a loaded machine the re-check right before the stop can see page faults of the sleeping sandbox (the kernel
    // reclaiming and refaulting its pages): proof-failed, the cautious outcome, and its proof starts again. The next
    // run after the idle threshold stops it; the other sandboxes are judged by the first run.
    let stopRun = out;
    let stopMark = mark;
    for (let round = 0; round < 3 && byId(stopRun.kept, idle)?.idleReason === 'proof-failed'; round++) {
      await sleep(WAIT_MS);
      stopMark = proxy.seen.length;
      const again = await runCli(['reap', '--json', ...via, '--idle-after', IDLE], { env });
      assert.equal(again.code, 0, again.stderr);
      stopRun = JSON.parse(again.stdout) as ReapJson;
    }
    assert.deepEqual(
      stopRun.stopped.map((e) => e.id),
      [idle],
      JSON.stringify(stopRun),
    );
    const s = stopRun.stopped[0]!;
    assert.equal(s.rule, 'idle');
    assert.ok(typeof s.idleSeconds === 'number' && s.idleSeconds >= 2, `idleSeconds ${s.idleSeconds}`);
    assert.equal(await fx.state(idle), 'exited');
    // busy: its shell loop holds a `sleep 0.5` child nearly all the time (3 processes: in use); between two sleeps it
    // counts, which is activity.
    for (const [id, why] of [
      [busy, /^(observing|in-use)$/],
      [withExec, /^exec-in-flight$/],
      [restarted, /^observing$/],
    ] as const) {
      const k = byId(out.kept, id);
      assert.ok(k, `${id.slice(0, 12)} reported kept`);
      assert.equal(k.reason, 'running');
      assert.match(k.idleReason ?? '', why, `${id.slice(0, 12)}: ${JSON.stringify(k)}`);
      assert.ok('idleSeconds' in k, 'running kept entries carry idleSeconds');
      assert.equal(await fx.state(id), 'running');
    }
    // The path each took: `idle` proven by the runs before, its cgroup readable here (its init process is the one on
    // record), so its stop slot's inspect is the only one; `restarted` (a new init process: the record's is gone) and
    // `busy` (a proof too young to try) are inspected and sampled once, and no stop is tried on them.
    const calls = (id: string, from = mark, to = firstEnd) =>
      proxy
        .since(from)
        .slice(0, Math.max(0, to - from))
        .filter((p) => p.includes(id))
        .map((p) => p.slice(p.indexOf(id) + id.length).replace(/\?(?!size=).*$/, ''));
    // Once `idle` is stopped, the stop's cost (#38): an inspect with the writable layer's size.
    const stopCalls = calls(idle, stopMark, proxy.seen.length);
    // A run after a proof-failed one: its proof starts from the re-check's sample, so only the stop's end is fixed.
    const expected = stopMark === mark ? ['/json', '/stop', '/json?size=true'] : ['/stop', '/json?size=true'];
    assert.deepEqual(stopMark === mark ? stopCalls : stopCalls.slice(-2), expected, proxy.since(stopMark).join('\n'));
    assert.deepEqual(calls(restarted), ['/json', '/stats'], proxy.since(mark).join('\n'));
    assert.deepEqual(calls(busy), ['/json', '/stats'], proxy.since(mark).join('\n'));

    // hermes would `docker start` it again; if not, the janitor keeps it for the stopped retention (default 7 days,
    // stopped-retained), and after that the exited rule removes it 2 x lifetime after the stop.
    const stoppedBy = Date.now();
    const finished = await fx.finishedAt(idle);
    const kept = await runCli(['reap', '--json', ...via, '--lifetime', '0', '--as-of', plus(finished, 121), '--no-stop-idle'], { env });
    assert.equal(byId((JSON.parse(kept.stdout) as ReapJson).kept, idle)?.reason, 'stopped-retained', kept.stdout);
    await sleep(Math.max(0, stoppedBy + 1100 - Date.now())); // the stop older than a retention of 1 s
    const later = await runCli(['reap', '--json', ...via, '--lifetime', '0', '--as-of', plus(finished, 121), '--no-stop-idle', '--stopped-retention', '1s'], {
      env,
    });
    assert.equal(later.code, 0, later.stderr);
    const lj = JSON.parse(later.stdout) as ReapJson;
    assert.deepEqual(
      lj.removed.map((e) => [e.id, e.rule]),
      [[idle, 'exited']],
    );
    assert.deepEqual(lj.stopped, []);
    const recorded = JSON.parse(readFileSync(state, 'utf8')) as { engines: Record<string, Record<string, unknown>> };
    const ids = Object.values(recorded.engines).flatMap((r) => Object.keys(r));
    assert.ok(!ids.includes(idle), 'records of containers that are gone are dropped');
    assert.ok(ids.includes(busy));
    await docker(['rm', '-f', busy, withExec, restarted]);
  }

  it('every switch keeps an idle sandbox running; --label needs --stop-idle', async () => {
    const id = await fx.create({ state: 'running', labels: { 'hj-idle-switch': fx.runId } });
    const list = async (args: string[], extraEnv: Record<string, string> = {}) => {
      const r = await runCli(['list', '--json', '--idle-after', IDLE, ...args], { env: { ...env, ...extraEnv } });
      assert.equal(r.code, 0, r.stderr);
      return byId((JSON.parse(r.stdout) as ListJson).containers, id)!;
    };
    const stops = async (args: string[]) => {
      const e = await list(args);
      assert.equal(e.verdict, 'stop', `${args.join(' ')}: ${JSON.stringify(e)}`);
    };
    await list(sel);
    await sleep(WAIT_MS);
    await stops(sel);
    const off = async (args: string[], extraEnv: Record<string, string> = {}) => {
      const e = await list(args, extraEnv);
      assert.deepEqual([e.verdict, e.idleReason], ['keep', 'stop-idle-off'], args.join(' ') + JSON.stringify(extraEnv));
    };
    await off([...sel, '--no-stop-idle']);
    await off(sel, { HERMES_JANITOR_STOP_IDLE: 'false' });
    await off(sel, { HERMES_JANITOR_STOP_IDLE: '0' });
    await off([...sel, '--label', `hj-idle-switch=${fx.runId}`]);
    await stops([...sel, '--label', `hj-idle-switch=${fx.runId}`, '--stop-idle']);
    mkdirSync(profileHome, { recursive: true });
    writeFileSync(path.join(profileHome, 'config.yaml'), 'janitor:\n  stop_idle: false\n');
    try {
      await off(sel);
      const r = await runCli(['reap', '--json', ...sel, '--idle-after', IDLE], { env });
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual((JSON.parse(r.stdout) as ReapJson).stopped, []);
    } finally {
      writeFileSync(path.join(profileHome, 'config.yaml'), '');
    }
    const bad = await runCli(['list', ...sel], { env: { ...env, HERMES_JANITOR_STOP_IDLE: 'maybe' } });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /HERMES_JANITOR_STOP_IDLE/);
    const disabled = await runCli(['reap', '--json', ...sel, '--idle-after', IDLE], { env: { ...env, TERMINAL_DOCKER_ORPHAN_REAPER: 'false' } });
    assert.equal(disabled.code, 0);
    assert.equal(await fx.state(id), 'running', 'the disable switch turns off everything');
    // And on: stopped.
    const on = await runCli(['reap', '--json', ...sel, '--idle-after', IDLE], { env });
    assert.deepEqual(
      (JSON.parse(on.stdout) as ReapJson).stopped.map((e) => e.id),
      [id],
      on.stdout,
    );
    await docker(['rm', '-f', id]);
  });

  it('removes an old never-started container by its Created time and keeps a young one', async () => {
    const old = await fx.create({ state: 'created' });
    const created = await docker(['inspect', '--format', '{{.Created}}', old]);
    await sleep(1200);
    const young = await fx.create({ state: 'created' });
    const asOf = plus(created, 120);
    const res = await runCli(['reap', '--json', ...sel, '--lifetime', '0', '--as-of', asOf, '--no-stop-idle'], { env });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as ReapJson;
    assert.deepEqual(
      out.removed.map((e) => [e.id, e.rule]),
      [[old, 'never-started']],
    );
    const y = byId(out.kept, young)!;
    assert.deepEqual([y.reason, y.rule], ['too-recent', 'never-started']);
    assert.deepEqual(await fx.remaining().then((ids) => ids.filter((i) => i === old || i === young)), [young]);
  });

  it('an anonymous volume goes with its container, a named one stays; --keep-volumes keeps both', async () => {
    const image = await fx.volumeImage();
    const named = await fx.volume();
    const anon = async (id: string) =>
      (JSON.parse(await docker(['inspect', '--format', '{{json .Mounts}}', id])) as Array<{ Name: string; Destination: string }>)
        .filter((m) => m.Destination === '/data')
        .map((m) => m.Name);
    const b = await fx.create({ state: 'exited', image });
    const [anonB] = await anon(b);
    assert.ok(anonB);
    const kept = await runCli(['reap', '--json', ...sel, '--lifetime', '0', '--as-of', plus(await fx.finishedAt(b), 121), '--keep-volumes', '--no-stop-idle'], {
      env,
    });
    assert.equal(kept.code, 0, kept.stderr);
    const kj = JSON.parse(kept.stdout) as ReapJson;
    assert.deepEqual(byId(kj.removed, b)?.volumes, []);
    assert.ok(await docker(['volume', 'inspect', '--format', '{{.Name}}', anonB]), '--keep-volumes leaves the anonymous volume');
    await docker(['volume', 'rm', anonB]);

    const a = await fx.create({ state: 'exited', image, args: ['-v', `${named}:/named`] });
    const [anonA] = await anon(a);
    assert.ok(anonA);
    const res = await runCli(['reap', '--json', ...sel, '--lifetime', '0', '--as-of', plus(await fx.finishedAt(a), 121), '--no-stop-idle'], { env });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as ReapJson;
    assert.deepEqual(byId(out.removed, a)?.volumes, [anonA], 'the removed entry lists the anonymous volume that went');
    await assert.rejects(docker(['volume', 'inspect', anonA]), 'the anonymous volume is gone');
    assert.equal(await docker(['volume', 'inspect', '--format', '{{.Name}}', named]), named, 'the named volume survives');
  });

  describe('the re-check right before a stop', () => {
    it("reads the same counters from the container's cgroup on this host as the engine's one-shot stats", async () => {
      const id = await fx.create({ state: 'running' });
      await sleep(300);
      const pid = Number(await docker(['inspect', '--format', '{{.State.Pid}}', id]));
      const viaEngine = await new Promise<{ cpu_stats: { cpu_usage: { total_usage: number } }; memory_stats: { stats?: { pgfault?: number } } }>(
        (resolve, reject) => {
          http
            .get({ socketPath: ENGINE_SOCKET, path: `/containers/${id}/stats?stream=false&one-shot=true` }, (res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c.toString()));
              res.on('end', () => resolve(JSON.parse(body)));
            })
            .on('error', reject);
        },
      );
      const here = readCgroupCounters(id, pid);
      assert.ok(here, `the cgroup of ${id.slice(0, 12)} (pid ${pid}) is readable here`);
      const engineCpu = viaEngine.cpu_stats.cpu_usage.total_usage;
      // Read just after the engine's: the same counter, at most the init process's wake-ups (~0.06 ms a second) later.
      assert.ok(here.cpuNs >= engineCpu && here.cpuNs - engineCpu < 1_000_000, `cgroup ${here.cpuNs} ns, engine ${engineCpu} ns`);
      const enginePgfault = viaEngine.memory_stats.stats?.pgfault;
      if (typeof enginePgfault === 'number') assert.equal(here.pgfault, enginePgfault);
      else assert.equal(ENGINE_KIND, 'podman', 'only Podman reports no page-fault count');
      assert.equal(readCgroupCounters(id, process.pid), null, 'a pid whose cgroup is not the container is refused');
      await docker(['rm', '-f', id]);
    });

    it('catches activity since the last sample, from the cgroup and (HERMES_JANITOR_CGROUP_SAMPLES=false) from the engine', async () => {
      const id = await fx.create({ state: 'running' });
      const reap = async (extraEnv: Record<string, string> = {}) => {
        const r = await runCli(['reap', '--json', ...sel, '--idle-after', IDLE], { env: { ...env, ...extraEnv } });
        assert.equal(r.code, 0, r.stderr);
        return JSON.parse(r.stdout) as ReapJson;
      };
      await reap(); // the first sample
      for (const extraEnv of [{}, { HERMES_JANITOR_CGROUP_SAMPLES: 'false' }] as Array<Record<string, string>>) {
        await sleep(WAIT_MS); // idle long enough by the samples on record...
        await docker(['exec', id, 'true']); // ...but a command ran since the last one
        const out = await reap(extraEnv);
        assert.deepEqual(out.stopped, [], JSON.stringify(extraEnv));
        assert.equal(byId(out.kept, id)?.idleReason, 'proof-failed', JSON.stringify(out.kept));
        assert.equal(await fx.state(id), 'running');
      }
      await sleep(WAIT_MS);
      assert.deepEqual(
        (await reap({ HERMES_JANITOR_CGROUP_SAMPLES: 'false' })).stopped.map((e) => e.id),
        [id],
        'idle again: stopped',
      );
      assert.equal(await fx.state(id), 'exited');
      const bad = await runCli(['reap', ...sel], { env: { ...env, HERMES_JANITOR_CGROUP_SAMPLES: 'maybe' } });
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /^hermes-janitor: HERMES_JANITOR_CGROUP_SAMPLES must be .*got 'maybe'.*\n$/);
      await docker(['rm', '-f', id]);
    });

    it('needs no engine stats where the cgroup is readable; without it, stats refused at that moment stop nothing', async () => {
      const proxy = await EngineProxy.start(home.dir);
      try {
        const id = await fx.create({ state: 'running' });
        const reap = async (extraEnv: Record<string, string> = {}) => {
          const r = await runCli(['reap', '--json', '--host', proxy.host, ...sel, '--idle-after', IDLE], { env: { ...env, ...extraEnv } });
          assert.equal(r.code, 0, r.stderr);
          return JSON.parse(r.stdout) as ReapJson;
        };
        await reap(); // the first sample, from the engine through the proxy
        await sleep(WAIT_MS);
        proxy.refuse = /\/stats$/;
        let mark = proxy.seen.length;
        const off = await reap({ HERMES_JANITOR_CGROUP_SAMPLES: 'false' });
        assert.ok(
          proxy.since(mark).some((p) => /\/stats\?/.test(p)),
          'the re-check asked the engine',
        );
        assert.deepEqual(off.stopped, []);
        assert.equal(byId(off.kept, id)?.idleReason, 'proof-failed');
        assert.equal(await fx.state(id), 'running', 'no sample, no stop');

        proxy.refuse = null;
        await reap(); // a proof on record again (the failed re-check dropped it)
        const pid = Number(await docker(['inspect', '--format', '{{.State.Pid}}', id]));
        const recorded = JSON.parse(readFileSync(path.join(profileHome, 'janitor', 'idle.json'), 'utf8')) as {
          engines: Record<string, Record<string, { last: { pid?: number } }>>;
        };
        assert.equal(recorded.engines[proxy.host]?.[id]?.last.pid, pid, 'the sample records the init process it was taken with');
        await sleep(WAIT_MS);
        proxy.refuse = /\/stats$/;
        mark = proxy.seen.length;
        const on = await reap();
        assert.deepEqual(
          on.stopped.map((e) => e.id),
          [id],
          JSON.stringify(on),
        );
        assert.deepEqual(
          proxy.since(mark).filter((p) => /\/stats\?/.test(p)),
          [],
          'the fresh sample came from the cgroup',
        );
        // Proven idle by the runs before: its stop slot's inspect is the pass's only one, right before the stop; then,
        // once stopped, the stop's cost (#38): an inspect with the writable layer's size.
        const calls = proxy
          .since(mark)
          .filter((p) => p.includes(id))
          .map((p) => p.slice(p.indexOf(id) + id.length).replace(/\?(?!size=).*$/, ''));
        assert.deepEqual(calls, ['/json', '/stop', '/json?size=true'], proxy.since(mark).join('\n'));
        assert.equal(await fx.state(id), 'exited');
        await docker(['rm', '-f', id]);
      } finally {
        await proxy.close();
      }
    });
  });
});
