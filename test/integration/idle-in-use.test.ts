/**
 * The idle rule and processes of a sandbox's own (hermes' background jobs), against the real engine: Docker, and
 * Podman through its Docker-compatible API (scripts/test.sh runs this file against both).
 *
 * hermes starts a background job (`terminal` with `background=true`) as one short `docker exec` that leaves
 * `( nohup bash -lc CMD > …/hermes_bg_<id>.log 2>&1; rc=$?; printf … > …exit ) & echo $! > …pid` behind, reparented
 * to the sandbox's init (hermes-agent `tools/environments/docker.py`). The test image has busybox only, and Debian's
 * busybox-static has no `nohup` applet, so the job here is `sh -c 'trap "" HUP; exec sleep N'` (what nohup does:
 * ignore SIGHUP, then run the command) in the same shape: a quiet process (no CPU, no page faults) that only its
 * process count gives away.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, EngineFixture, docker, requireEngine } from '../helpers/docker.js';
import { EngineProxy } from '../helpers/engine-proxy.js';
import { WatchProcess } from '../helpers/watch-process.js';

interface Entry {
  id: string;
  state: string;
  rule: string | null;
  idleSeconds?: number | null;
  idleReason?: string;
  processes?: number | null;
  reason?: string;
  verdict?: string;
}
interface ReapJson {
  removed: Entry[];
  stopped: Entry[];
  kept: Entry[];
  failed: Entry[];
}
interface ListJson {
  containers: Entry[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const IDLE = '2s';
const WAIT_MS = 2600;

/** Starts a background job the way hermes does: one short exec whose job outlives it, its pid and exit code in files. */
async function startJob(id: string, seconds: number): Promise<void> {
  const job =
    `( sh -c 'trap "" HUP; exec sleep ${seconds}' > /tmp/hermes_bg_t.log 2>&1; rc=$?; printf '%s' "$rc" > /tmp/hermes_bg_t.exit )` +
    ' > /dev/null 2>&1 & echo $! > /tmp/hermes_bg_t.pid';
  await docker(['exec', id, 'sh', '-c', job]);
}

/**
 * Waits until `sleep N` runs in the sandbox (a process whose command line is that, read from the sandbox's /proc: the
 * engine's `top` fails on Podman's compat API here): a job's command, or the sandbox's own. From then on the sandbox
 * holds it, and its process count can be taken.
 */
async function jobStarted(id: string, seconds: number, timeoutMs = 15_000): Promise<void> {
  const cmdlines = 'for f in /proc/[0-9]*/cmdline; do busybox tr "\\0" " " < "$f"; echo; done';
  await until(
    id,
    `sleep ${seconds}`,
    async () => {
      const procs = await docker(['exec', id, 'sh', '-c', cmdlines]).catch((err: Error) => err.message);
      return { done: new RegExp(`^sleep ${seconds} ?$`, 'm').test(procs), seen: `processes:\n${procs}` };
    },
    timeoutMs,
  );
}

/** Polls `check` until it is done; throws with what it saw last after `timeoutMs`. */
async function until(id: string, what: string, check: () => Promise<{ done: boolean; seen: string }>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let seen = '';
  while (Date.now() < deadline) {
    const r = await check();
    if (r.done) return;
    seen = r.seen;
    await sleep(100);
  }
  throw new Error(`${what} in ${id.slice(0, 12)}: not within ${timeoutMs} ms; ${seen}`);
}

/** The job is still alive in its sandbox. */
async function jobAlive(id: string): Promise<boolean> {
  return docker(['exec', id, 'sh', '-c', 'kill -0 "$(cat /tmp/hermes_bg_t.pid)" && echo alive'])
    .then((o) => o === 'alive')
    .catch(() => false);
}

/** Waits until the job has written its exit code (it ended). */
async function jobEnded(id: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await docker(['exec', id, 'cat', '/tmp/hermes_bg_t.exit']).catch(() => '')) === '0') return;
    await sleep(200);
  }
  throw new Error(`the background job in ${id.slice(0, 12)} did not end within ${timeoutMs} ms`);
}

describe(`a sandbox holding a process of its own is in use, never stopped (${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const home = tempDir('hj-inuse-');
  const hermesHome = path.join(home.dir, 'hermes');
  const env = { HOME: home.dir, HERMES_HOME: hermesHome };
  const sel = ['--profile', fx.profile];
  const profileHome = path.join(hermesHome, 'profiles', fx.profile);
  const byId = (entries: Entry[], id: string) => entries.find((e) => e.id === id);
  const reap = async (args: string[] = []) => {
    const r = await runCli(['reap', '--json', ...sel, '--idle-after', IDLE, ...args], { env });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as ReapJson;
  };
  const list = async (args: string[] = []) => {
    const r = await runCli(['list', '--json', ...sel, '--idle-after', IDLE, ...args], { env });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as ListJson;
  };

  before(requireEngine);
  afterEach(() => fx.removeContainers());
  after(async () => {
    await fx.cleanup();
    home.cleanup();
  });

  it('keeps a sandbox with a quiet background job over several idle thresholds, and stops the bare one beside it', async () => {
    const [bare, withJob] = await Promise.all([fx.create({ state: 'running' }), fx.create({ state: 'running' })]);
    await startJob(withJob, 600);
    await jobStarted(withJob, 600);

    const first = await list();
    const j = byId(first.containers, withJob)!;
    assert.deepEqual([j.verdict, j.idleReason, j.idleSeconds], ['keep', 'in-use', null], JSON.stringify(j));
    // tini and `sleep 3600`, plus the job's subshell and its command: measured 4 on Docker 20.10 and Podman 4.3.
    assert.ok(typeof j.processes === 'number' && j.processes > 2, `processes ${j.processes}`);
    assert.equal(byId(first.containers, bare)!.processes, 2, 'a bare --init sandbox holds its init and its command');
    const table = await runCli(['list', ...sel, '--idle-after', IDLE, '--wide'], { env });
    assert.match(table.stdout, new RegExp(`  in-use: ${j.processes} processes$`, 'm'), table.stdout);

    // Three idle thresholds: the bare sandbox goes at the first; the one holding the job never does.
    for (let round = 1; round <= 3; round++) {
      await sleep(WAIT_MS);
      const out = await reap();
      assert.deepEqual(
        out.stopped.map((e) => e.id),
        round === 1 ? [bare] : [],
        `round ${round}: ${JSON.stringify(out)}`,
      );
      const k = byId(out.kept, withJob);
      assert.ok(k, `round ${round}: the sandbox with the job is reported kept`);
      assert.deepEqual([k.reason, k.idleReason, k.idleSeconds], ['running', 'in-use', null], `round ${round}: ${JSON.stringify(k)}`);
      assert.equal(k.processes, j.processes);
    }
    assert.equal(await fx.state(withJob), 'running');
    assert.ok(await jobAlive(withJob), 'the background job survived');
    assert.equal(await fx.state(bare), 'exited');

    const status = await runCli(['status', '--json', ...sel], { env });
    assert.equal(JSON.parse(status.stdout).containers.inUse, 1, status.stdout);
    const statusText = await runCli(['status', ...sel], { env });
    assert.match(statusText.stdout, /^ {2}in use: 1 running sandbox holding a process of their own \(never stopped\)$/m, statusText.stdout);
  });

  it('a sandbox whose job ended needs the whole idle threshold after it ended, then it is stopped', async () => {
    const id = await fx.create({ state: 'running' });
    // Six seconds: long enough to be seen running (docker top) and sampled in use on a busy machine.
    await startJob(id, 6);
    const t0 = Date.now();
    await jobStarted(id, 6);
    assert.equal(byId((await list()).containers, id)!.idleReason, 'in-use');
    await jobEnded(id);
    // Idle for long on every counter, but only now without the job: the proof starts at this sample.
    const firstQuiet = await reap();
    assert.deepEqual(firstQuiet.stopped, []);
    assert.deepEqual([byId(firstQuiet.kept, id)!.idleReason, byId(firstQuiet.kept, id)!.processes], ['observing', 2]);
    const quietSince = Date.now();
    await sleep(WAIT_MS);
    const out = await reap();
    assert.deepEqual(
      out.stopped.map((e) => e.id),
      [id],
      JSON.stringify(out),
    );
    const idle = out.stopped[0]!.idleSeconds!;
    assert.ok(idle >= 2 && idle <= (Date.now() - quietSince) / 1000 + 0.5, `idle ${idle} s is measured from the first quiet sample`);
    assert.ok(idle < (Date.now() - t0) / 1000 - 1, `idle ${idle} s does not count the time the job ran`);
    assert.equal(await fx.state(id), 'exited');
  });

  it('--idle-max-processes (and janitor.idle_max_processes) lets a selection hold more and still be idle; bad values exit 2', async () => {
    const id = await fx.create({ state: 'running' });
    await startJob(id, 600);
    await jobStarted(id, 600);
    assert.equal(byId((await list(['--idle-max-processes', '10'])).containers, id)!.idleReason, 'observing');
    await sleep(WAIT_MS);
    // Through config.yaml: the count is under the limit, so the proof holds.
    mkdirSync(profileHome, { recursive: true });
    writeFileSync(path.join(profileHome, 'config.yaml'), 'janitor:\n  idle_max_processes: 10\n');
    try {
      const out = await reap();
      assert.deepEqual(
        out.stopped.map((e) => e.id),
        [id],
        JSON.stringify(out),
      );
      writeFileSync(path.join(profileHome, 'config.yaml'), 'janitor:\n  idle_max_processes: lots\n');
      const badConfig = await runCli(['reap', ...sel], { env });
      assert.equal(badConfig.code, 2);
      assert.match(
        badConfig.stderr,
        /^hermes-janitor: janitor\.idle_max_processes in \S+config\.yaml must be a whole number >= 1, got 'lots': fix the file or pass --idle-max-processes\n$/,
      );
    } finally {
      writeFileSync(path.join(profileHome, 'config.yaml'), '');
    }
    for (const bad of ['0', 'abc', '-1', '2.5']) {
      const r = await runCli(['reap', ...sel, '--idle-max-processes', bad], { env });
      assert.equal(r.code, 2, bad);
      assert.match(r.stderr, /^hermes-janitor: [^\n]*--idle-max-processes must be a whole number >= 1, got '[^\n]*\n$/, r.stderr);
    }
  });

  it('without --init the command alone is idle; a zombie it never reaps is a process (in use)', async () => {
    // `sleep` as PID 1 reaps nobody: the shell's short child stays a zombie once the shell has exec'd into sleep.
    const [alone, withZombie] = await Promise.all([
      fx.create({ state: 'running', init: false }),
      fx.create({ state: 'running', init: false, cmd: ['sh', '-c', 'sleep 0.2 & exec sleep 3600'] }),
    ]);
    // The zombie appears when the shell's short child ends (0.2 s): waited for in the sandbox's /proc.
    await until(withZombie, 'a zombie', async () => {
      const found = await docker(['exec', withZombie, 'sh', '-c', 'busybox grep -l "^State:.*Z" /proc/[0-9]*/status || true']);
      return { done: /status/.test(found), seen: found };
    });
    await jobStarted(alone, 3600);
    const first = await list();
    assert.equal(byId(first.containers, alone)!.processes, 1);
    // The exec above left nothing behind, but the zombie is counted (the pids controller counts it until reaped).
    assert.deepEqual([byId(first.containers, withZombie)!.idleReason, byId(first.containers, withZombie)!.processes], ['in-use', 2]);
    await sleep(WAIT_MS);
    // `sleep` as PID 1 ignores SIGTERM: the engine's SIGKILL comes after --stop-timeout.
    const out = await reap(['--stop-timeout', '1']);
    assert.deepEqual(
      out.stopped.map((e) => e.id),
      [alone],
      JSON.stringify(out),
    );
    assert.equal(byId(out.kept, withZombie)?.idleReason, 'in-use');
  });

  it('the re-check right before the stop counts processes: a process that joined since the last sample prevents it', async () => {
    // A process that joins the sandbox's cgroup between the proving samples and the stop pass, using no CPU there
    // (a job that started quietly): from the cgroup, and (HERMES_JANITOR_CGROUP_SAMPLES=false) from the engine.
    // Through the test proxy, whose record of requests pins the path: the cgroup path's only request about the
    // sandbox is its stop slot's inspect (the engine's stats are refused, so a count can only come from the cgroup);
    // the engine path's are the sweep's inspect and the re-check's stats.
    const proxy = await EngineProxy.start(home.dir);
    const via = ['--host', proxy.host, ...sel, '--idle-after', IDLE];
    try {
      for (const [extraEnv, expected] of [
        [{}, ['/json']],
        [{ HERMES_JANITOR_CGROUP_SAMPLES: 'false' }, ['/json', '/stats']],
      ] as const) {
        const id = await fx.create({ state: 'running' });
        await jobStarted(id, 3600); // its command runs: the first sample counts its processes
        assert.equal((await runCli(['reap', '--json', ...via], { env })).code, 0);
        // Proven idle by the samples on record. On a loaded machine a sample can see the sleeping job's page faults
        // (activity: the proof starts again), so a few rounds at most.
        let verdict = '';
        for (let round = 0; round < 4 && verdict !== 'stop'; round++) {
          await sleep(WAIT_MS);
          const proved = await runCli(['list', '--json', ...via], { env });
          verdict = byId((JSON.parse(proved.stdout) as ListJson).containers, id)!.verdict ?? '';
        }
        assert.equal(verdict, 'stop', 'proven idle by the samples on record');
        const joined = await joinCgroups(id);
        try {
          proxy.refuse = expected.length === 1 ? /\/stats$/ : null;
          const mark = proxy.seen.length;
          const r = await runCli(['reap', '--json', ...via], { env: { ...env, ...extraEnv } });
          proxy.refuse = null;
          assert.equal(r.code, 0, r.stderr);
          const out = JSON.parse(r.stdout) as ReapJson;
          assert.deepEqual(out.stopped, [], JSON.stringify(extraEnv));
          const k = byId(out.kept, id)!;
          assert.deepEqual([k.idleReason, k.processes], ['in-use', 3], `${JSON.stringify(extraEnv)}: ${JSON.stringify(k)}`);
          const calls = proxy
            .since(mark)
            .filter((p) => p.includes(id))
            .map((p) => p.split('?')[0]!.slice(p.indexOf(id) + id.length));
          assert.deepEqual(calls, expected, `${JSON.stringify(extraEnv)}: the path taken`);
          assert.equal(await fx.state(id), 'running');
        } finally {
          await joined.leave();
        }
        await docker(['rm', '-f', id]);
      }
    } finally {
      await proxy.close();
    }
  });

  it('watch keeps a sandbox holding a job, stops the bare one beside it, and one whose job ended once idle after it', async () => {
    const watchHome = tempDir('hj-inuse-watch-');
    const w = WatchProcess.start(['--home', watchHome.dir, '--profile', fx.profile, '--idle-after', '3s', '--stop-timeout', '1']);
    try {
      await w.waitFor('connected', (lines) => lines.some((l) => l.event === 'engine' && l.state === 'connected'));
      const [bare, withJob, jobEnds] = await Promise.all([fx.create({ state: 'running' }), fx.create({ state: 'running' }), fx.create({ state: 'running' })]);
      await startJob(withJob, 600);
      // A job of 5 s: it cannot end before `jobStart` + 5 s, so no idleness before then may count.
      const jobStart = Date.now();
      await startJob(jobEnds, 5);
      const stoppedIds = () => new Set(w.events('stopped').map((l) => l.id as string));
      await w.waitFor('the bare sandbox stopped', () => stoppedIds().has(bare), 30_000);
      await w.waitFor('the sandbox whose job ended stopped', () => stoppedIds().has(jobEnds), 40_000);
      const ended = w.events('stopped').find((l) => l.id === jobEnds)!;
      assert.ok(
        w.events('kept').some((l) => l.id === jobEnds && l.idleReason === 'in-use'),
        'kept in use while its job ran',
      );
      const idle = ended.idleSeconds as number;
      // Idle at least the threshold, and counted from after the job ended (at most the stop's time minus the job's end).
      assert.ok(idle >= 3 && idle * 1000 <= Date.parse(ended.time) - (jobStart + 5000), `idle ${idle} s, stopped at ${ended.time}`);
      assert.equal(await fx.state(jobEnds), 'exited');
      // Several idle thresholds more: the one with the job runs on, and says why.
      await sleep(9000);
      assert.ok(!stoppedIds().has(withJob), `stopped: ${JSON.stringify(w.events('stopped'))}`);
      const kept = w.events('kept').filter((l) => l.id === withJob);
      assert.ok(
        kept.some((l) => l.idleReason === 'in-use' && typeof l.processes === 'number' && l.processes > 2),
        JSON.stringify(kept),
      );
      assert.equal(await fx.state(withJob), 'running');
      assert.ok(await jobAlive(withJob));
      const stop = await w.stop('SIGTERM');
      assert.equal(stop.code, 0, w.stderr);
    } finally {
      w.kill();
      watchHome.cleanup();
    }
  });
});

/**
 * Moves a new host process (`sleep`) into every cgroup of the container's init process: one more process in its
 * cgroup, charged no CPU there. `leave()` moves it back to the root cgroups and ends it.
 */
async function joinCgroups(id: string): Promise<{ leave: () => Promise<void> }> {
  const { spawn } = await import('node:child_process');
  const pid = Number(await docker(['inspect', '--format', '{{.State.Pid}}', id]));
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .flatMap((line) => {
      const dash = line.indexOf(' - ');
      if (dash < 0) return [];
      const left = line.slice(0, dash).split(' ');
      const [fstype, , opts = ''] = line.slice(dash + 3).split(' ');
      if (fstype !== 'cgroup' && fstype !== 'cgroup2') return [];
      return [{ root: left[3]!, at: left[4]!, v2: fstype === 'cgroup2', opts: new Set(opts.split(',')) }];
    });
  const dirs: Array<{ mountAt: string; dir: string }> = [];
  for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n')) {
    const [, controllers = '', cg = ''] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    const m = mounts.find((x) => (controllers === '' ? x.v2 : !x.v2 && controllers.split(',').every((c) => x.opts.has(c))));
    if (!m) continue;
    dirs.push({ mountAt: m.at, dir: path.join(m.at, m.root === '/' ? cg : cg.slice(m.root.length)) });
  }
  assert.ok(
    dirs.some((d) => /pids/.test(d.mountAt)) || dirs.some((d) => d.mountAt === '/sys/fs/cgroup'),
    `a pids cgroup for ${id.slice(0, 12)}: ${JSON.stringify(dirs)}`,
  );
  for (const d of dirs) writeFileSync(path.join(d.dir, 'cgroup.procs'), String(child.pid));
  return {
    async leave() {
      for (const d of dirs) {
        try {
          writeFileSync(path.join(d.mountAt, 'cgroup.procs'), String(child.pid));
        } catch {
          /* a controller whose root refuses it: the process ends anyway */
        }
      }
      child.kill('SIGKILL');
    },
  };
}
