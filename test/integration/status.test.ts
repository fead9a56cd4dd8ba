/**
 * `hermes-janitor status` against the real engine (Docker, and Podman via scripts/test.sh): exit 0 on a clean
 * home, 1 for expired orphans and for each tripped breaker or a stale lock, 3 with the engine down, 2 on usage
 * errors; and never a write (every file of the home byte-identical before and after).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { reapLockPath } from '../../src/adapters/janitor-files.js';
import { runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_HOST, ENGINE_KIND, EngineFixture, docker, requireEngine } from '../helpers/docker.js';
import { WatchProcess } from '../helpers/watch-process.js';

/** Every path under `dir` with its mode and a digest of its bytes (directories too). */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) {
        out.set(p, `dir ${st.mode}`);
        walk(p);
      } else out.set(p, `${st.mode} ${createHash('sha256').update(readFileSync(p)).digest('hex')}`);
    }
  };
  walk(dir);
  return out;
}

interface Status {
  engines: Array<{ host: string | null; chosenBy: string; reachable: boolean; kind: string | null; version: string | null }>;
  containers: {
    total: number;
    wouldRemove: { total: number; byRule: Record<string, number> };
    kept: { total: number; byReason: Record<string, number> };
    orphans: number;
    oldestOrphan: { id: string; ageSeconds: number } | null;
    anonymousVolumes: { total: number; containers: number; heldByOrphans: number };
  } | null;
  janitor: {
    sweeps: Array<{ host: string; file: string; scheduleSeconds: number | null; by: string }>;
    locks: Array<{ pid: number | null; stale: boolean }>;
    log: { path: string };
    freshness: Array<{ host: string; ageSeconds: number | null; scheduleSeconds: number; scheduleFrom: string; stale: boolean }>;
    watch: {
      pid: number;
      process: string;
      heartbeatAt: string | null;
      healthz: { status: number | null } | null;
      stoppedBy: string | null;
      problem: string | null;
    } | null;
  };
  breakers: {
    restartGuard: { tripped: boolean; bootsInWindow: number };
    stuckSessions: { suspended: string[] };
    stopHook: { armed: boolean; blocks: number; stalled: boolean; owner: string | null };
    toolLoop: { looping: string[]; warnings: number; stops: number; sessions: Array<{ session: string; streak: number; warnings: number; stops: number }> };
  };
  attention: string[];
  exitCode: number;
  verdict: { ok: boolean; count: number; line: string; worst: string | null };
}

describe(`status (built CLI, ${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const dirs: Array<() => void> = [];
  before(requireEngine);
  after(() => fx.cleanup());
  afterEach(() => {
    for (const c of dirs.splice(0)) c();
  });

  function home(): { dir: string; env: Record<string, string> } {
    const t = tempDir('hj-status-');
    dirs.push(t.cleanup);
    const dir = path.join(t.dir, 'hermes');
    mkdirSync(dir);
    // Root's state of a run over several homes (`--homes`) in the test's own directory, not the host's /var/lib.
    return { dir, env: { HERMES_HOME: dir, HOME: t.dir, DOCKER_HOST: ENGINE_HOST, HERMES_JANITOR_STATE_DIR: path.join(t.dir, 'root-state') } };
  }

  /** Runs status (with --json unless told) and checks the home is byte-identical afterwards. */
  async function status(h: { dir: string; env: Record<string, string> }, extra: string[] = [], json = true) {
    const homeBefore = snapshot(h.dir);
    const r = await runCli(['status', '--profile-label', 'hermes-profile', ...(json ? ['--json'] : []), ...extra], { env: h.env });
    assert.deepEqual(snapshot(h.dir), homeBefore, 'status wrote to the home');
    return { ...r, report: json && r.stdout ? (JSON.parse(r.stdout) as Status) : undefined };
  }

  it('a clean home with only young and running containers: exit 0, engine kind and version, counts, nothing to attend', async () => {
    const h = home();
    // A home with breaker state that is not tripped: one boot, one counted session.
    mkdirSync(path.join(h.dir, 'gateway'));
    writeFileSync(path.join(h.dir, 'gateway', 'restart_loop.json'), JSON.stringify({ boots: [Date.now() / 1000] }));
    writeFileSync(path.join(h.dir, '.restart_failure_counts'), JSON.stringify({ 'agent:x': 1 }));
    await fx.create({ state: 'running', profile: 'default' });
    await fx.create({ state: 'exited', profile: 'default' });
    const r = await status(h, ['--label', `hermes-janitor-test-run=${fx.runId}`]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const s = r.report!;
    assert.equal(s.engines.length, 1);
    assert.equal(s.engines[0]!.reachable, true);
    assert.equal(s.engines[0]!.kind, ENGINE_KIND === 'podman' ? 'Podman' : 'Docker');
    assert.ok(s.engines[0]!.version, 'an engine version');
    assert.match(s.engines[0]!.chosenBy, /DOCKER_HOST/);
    assert.equal(s.containers!.total, 2);
    assert.deepEqual(s.containers!.kept.byReason, { running: 1, 'too-recent': 1 });
    assert.equal(s.containers!.orphans, 0);
    assert.equal(s.breakers.restartGuard.bootsInWindow, 1);
    assert.equal(s.breakers.restartGuard.tripped, false);
    assert.deepEqual(s.attention, []);
    const text = await status(h, ['--label', `hermes-janitor-test-run=${fx.runId}`], false);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^OK: nothing needs attention\nEngines\n/, 'the verdict first, then the details');
    assert.deepEqual(s.verdict, { ok: true, count: 0, line: 'OK: nothing needs attention', worst: null });
    assert.match(text.stdout, /Nothing needs attention\./);
  });

  it('expired orphans: exit 1, counted by rule with the oldest orphan and the anonymous volumes it holds', async () => {
    const h = home();
    const profile = fx.profile;
    const id = await fx.create({ state: 'exited', profile });
    // One more, holding an anonymous volume (docker run -v /data) and a named one (never counted).
    const named = await fx.volume();
    const withVolume = await docker([
      'run',
      '-d',
      '--label',
      `hermes-janitor-test-run=${fx.runId}`,
      '--label',
      'hermes-agent=1',
      '--label',
      `hermes-profile=${profile}`,
      ...(ENGINE_KIND === 'podman' ? ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'] : []),
      '-v',
      '/data',
      '-v',
      `${named}:/named`,
      '--network',
      'none',
      'hermes-janitor/busybox:test',
      'true',
    ]);
    await docker(['wait', withVolume]);
    const anon = (JSON.parse(await docker(['inspect', '--format', '{{json .Mounts}}', withVolume])) as Array<{ Name: string; Destination: string }>)
      .filter((m) => m.Destination === '/data')
      .map((m) => m.Name);
    assert.equal(anon.length, 1);
    const asOf = new Date(Date.now() + 3600_000).toISOString();
    const r = await status(h, ['--profile', profile, '--as-of', asOf]);
    // --profile selects <root>/profiles/<name> as home; the root stays untouched (checked by status()).
    assert.equal(r.code, 1, r.stderr + r.stdout);
    const c = r.report!.containers!;
    assert.equal(c.total, 2);
    assert.deepEqual(c.wouldRemove.byRule, { exited: 2 });
    assert.equal(c.orphans, 2);
    assert.ok([id, withVolume].includes(c.oldestOrphan!.id));
    assert.ok(c.oldestOrphan!.ageSeconds >= 3000);
    assert.deepEqual(c.anonymousVolumes, { total: 1, containers: 1, heldByOrphans: 1 });
    // The counts come from the list sweep: `list --json` names the anonymous volume, and no key where there is none.
    const listed = await runCli(['list', '--json', '--profile', profile, '--profile-label', 'hermes-profile', '--as-of', asOf], { env: h.env });
    assert.equal(listed.code, 0, listed.stderr);
    const byId = new Map((JSON.parse(listed.stdout) as { containers: Array<{ id: string; volumes?: string[] }> }).containers.map((e) => [e.id, e]));
    assert.deepEqual(byId.get(withVolume)?.volumes, anon);
    assert.ok(byId.has(id) && !('volumes' in byId.get(id)!), 'no volumes key for a container without anonymous volumes');
    assert.ok(
      r.report!.attention.some((l) => /2 container\(s\) past the threshold/.test(l)),
      r.report!.attention.join('\n'),
    );
    assert.deepEqual(await fx.remaining().then((ids) => ids.filter((x) => x === id || x === withVolume).length), 2, 'status removed nothing');
  });

  describe('each breaker tripped: exit 1', () => {
    const label = () => ['--label', `hermes-janitor-test-run=${fx.runId}-none`];

    it('restart-guard (three restart-interrupted boots)', async () => {
      const h = home();
      for (let i = 0; i < 3; i++) await runCli(['restart-guard', 'check-and-record'], { env: h.env });
      const r = await status(h, label());
      assert.equal(r.code, 1, r.stdout);
      assert.equal(r.report!.breakers.restartGuard.tripped, true);
      assert.ok(r.report!.attention.some((l) => l.startsWith('restart-guard tripped')));
    });

    it('stuck-sessions (a session active across three restarts)', async () => {
      const h = home();
      for (let i = 0; i < 3; i++) assert.equal((await runCli(['stuck-sessions', 'record-shutdown', 'agent:main:dm:7'], { env: h.env })).code, 0);
      const r = await status(h, label());
      assert.equal(r.code, 1, r.stdout);
      assert.deepEqual(r.report!.breakers.stuckSessions.suspended, ['agent:main:dm:7']);
    });

    it('stop-hook (five blocks without progress)', async () => {
      const h = home();
      assert.equal((await runCli(['stop-hook', 'arm', '--remaining', '4', '--owner', 's1'], { env: h.env })).code, 0);
      const ok = await status(h, label());
      assert.equal(ok.code, 0, 'armed but not stalled needs no attention');
      assert.equal(ok.report!.breakers.stopHook.armed, true);
      const payload = JSON.stringify({ session_id: 's1', hook_event_name: 'Stop', stop_hook_active: true });
      for (let i = 0; i < 5; i++) await runCli(['stop-hook'], { env: h.env, input: payload });
      const r = await status(h, label());
      assert.equal(r.code, 1, r.stdout);
      assert.deepEqual(
        { blocks: r.report!.breakers.stopHook.blocks, stalled: r.report!.breakers.stopHook.stalled, owner: r.report!.breakers.stopHook.owner },
        { blocks: 5, stalled: true, owner: 's1' },
      );
    });

    it('tool-loop (the same call four times: the next one is denied)', async () => {
      const h = home();
      const payload = JSON.stringify({ session_id: 'loop-1', hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command: 'make' } });
      for (let i = 0; i < 3; i++) await runCli(['tool-loop', 'pre'], { env: h.env, input: payload });
      const calm = await status(h, label());
      assert.equal(calm.code, 0, 'three identical calls are not yet a loop');
      assert.deepEqual(
        calm.report!.breakers.toolLoop.sessions.map((s) => [s.session, s.streak]),
        [['loop-1', 3]],
      );
      await runCli(['tool-loop', 'pre'], { env: h.env, input: payload });
      const r = await status(h, label());
      assert.equal(r.code, 1, r.stdout);
      assert.deepEqual(r.report!.breakers.toolLoop.looping, ['loop-1']);
      // The 5th identical call is denied: a loop found and warned, which status counts (and says in its text).
      const denied = await runCli(['tool-loop', 'pre'], { env: h.env, input: payload });
      assert.match(denied.stdout, /"permissionDecision":"deny"/);
      const counted = await status(h, label());
      assert.deepEqual([counted.report!.breakers.toolLoop.warnings, counted.report!.breakers.toolLoop.stops], [1, 0]);
      assert.deepEqual(
        counted.report!.breakers.toolLoop.sessions.map((s) => [s.session, s.warnings, s.stops]),
        [['loop-1', 1, 0]],
      );
      assert.match((await status(h, label(), false)).stdout, /tool-loop: 1 session on record.*; loops found: 1 warned, 0 stopped/);
    });

    it('a stale reap lock (its holder pid is gone)', async () => {
      const h = home();
      mkdirSync(path.join(h.dir, 'janitor'), { mode: 0o700 });
      // A pid that cannot be running: above the kernel's pid_max.
      const pidMax = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
      writeFileSync(
        reapLockPath(h.dir, ENGINE_HOST),
        JSON.stringify({ pid: pidMax + 1, host: os.hostname(), acquiredAt: '2026-01-01T00:00:00.000Z', token: 'x' }),
      );
      const r = await status(h, label());
      assert.equal(r.code, 1, r.stdout);
      assert.deepEqual(
        r.report!.janitor.locks.map((l) => [l.pid, l.stale]),
        [[pidMax + 1, true]],
      );
      // A lock held by a live process is reported, not a problem.
      writeFileSync(
        reapLockPath(h.dir, ENGINE_HOST),
        JSON.stringify({ pid: process.pid, host: os.hostname(), acquiredAt: new Date().toISOString(), token: 'y' }),
      );
      const held = await status(h, label());
      assert.equal(held.code, 0, held.stdout);
      assert.deepEqual(
        held.report!.janitor.locks.map((l) => [l.pid, l.stale]),
        [[process.pid, false]],
      );
    });
  });

  describe('is the janitor running: a stale sweep, a watch not running or not healthy (exit 1), the verdict first', () => {
    const label = ['--label', `hermes-janitor-test-run=${fx.runId}-none`];
    /**
     * The ways to name the homes a run covers (each test runs with each, its reap, watch and status alike): the home of
     * `HERMES_HOME`, and the same home as a run over several homes names it (`--homes`: their one shared store and
     * lock; `--all-homes` finds homes from the password database and living hermes processes, which a throwaway home
     * is neither).
     */
    const SCOPES: Array<{ name: string; args: (h: { dir: string }) => string[] }> = [
      { name: 'HERMES_HOME', args: () => [] },
      { name: '--homes', args: (h) => ['--homes', h.dir] },
    ];
    /** status as it runs beside a watch: no check that it wrote nothing (the watch writes its record meanwhile). */
    const statusNow = async (h: { dir: string; env: Record<string, string> }, extra: string[]) => {
      const json = await runCli(['status', '--json', ...label, ...extra], { env: h.env });
      const text = await runCli(['status', ...label, ...extra], { env: h.env });
      return { code: json.code, report: JSON.parse(json.stdout) as Status, first: text.stdout.split('\n')[0]!, text: text.stdout, textCode: text.code };
    };

    for (const scope of SCOPES) {
      it(`${scope.name}: a last sweep older than twice its schedule is an attention item; --schedule judges it too`, async () => {
        const h = home();
        const reap = await runCli(['reap', '--once-per', '1h', '--quiet', ...label, ...scope.args(h)], { env: h.env });
        assert.equal(reap.code, 0, reap.stderr);
        const fresh = await status(h, [...label, ...scope.args(h)]);
        assert.equal(fresh.code, 0, fresh.stdout);
        assert.deepEqual(
          fresh.report!.janitor.freshness.map((f) => [f.scheduleSeconds, f.scheduleFrom, f.stale]),
          [[3600, 'reap --once-per', false]],
        );
        // The same stamp, as if its sweep completed 3 hours ago (more than twice the hour of its --once-per).
        const file = fresh.report!.janitor.sweeps[0]!.file;
        const stamp = JSON.parse(readFileSync(file, 'utf8')) as { completedAt: string };
        writeFileSync(file, JSON.stringify({ ...stamp, completedAt: new Date(Date.now() - 3 * 3600_000).toISOString() }));
        const stale = await status(h, [...label, ...scope.args(h)]);
        assert.equal(stale.code, 1, stale.stdout);
        assert.equal(stale.report!.verdict.line, `ATTENTION: 1 thing: no completed sweep for 3 hours on ${ENGINE_HOST}`);
        assert.match(stale.report!.attention[0]!, /more than twice the schedule of every 1 hour \(reap --once-per\): run hermes-janitor reap --homes? /);
        const text = await status(h, [...label, ...scope.args(h)], false);
        assert.equal(text.stdout.split('\n')[0], stale.report!.verdict.line, 'the verdict is the first line');
        assert.equal((await status(h, [...label, '--schedule', '2h', ...scope.args(h)])).code, 0, 'every 2 h: 3 hours is not twice that');
        assert.equal((await status(h, [...label, '--schedule', '1h', ...scope.args(h)])).code, 1);
      });

      it(`${scope.name}: a running watch is fine; stopped (SIGTERM) or killed it is not running; with its engine away, not healthy`, async () => {
        const h = home();
        const env = { ...h.env, HERMES_JANITOR_HEARTBEAT_EVERY: '1s' };
        const watch = async () => {
          const w = WatchProcess.start([...label, '--metrics-listen', '127.0.0.1:0', ...scope.args(h)], env);
          await w.waitFor('connected', (ls) => ls.some((l) => l.event === 'engine' && l.state === 'connected'));
          return w;
        };
        let w = await watch();
        let running = await statusNow(h, scope.args(h));
        for (let i = 0; i < 50 && running.report.janitor.watch?.heartbeatAt == null; i++) {
          await new Promise((r) => setTimeout(r, 200));
          running = await statusNow(h, scope.args(h));
        }
        assert.equal(running.code, 0, running.text);
        assert.equal(running.first, 'OK: nothing needs attention');
        const wr = running.report.janitor.watch!;
        assert.deepEqual([wr.pid, wr.process, wr.healthz?.status, wr.problem], [w.child.pid, 'alive', 200, null]);
        assert.equal(running.report.janitor.freshness[0]!.scheduleFrom, 'watch heartbeat', "a connected watch's stamps are its sweeps");
        assert.match(running.text, new RegExp(`reap lock: pid ${w.child.pid} .* \\(the watch\\)`));

        assert.equal((await w.stop('SIGTERM')).code, 0);
        const stopped = await statusNow(h, scope.args(h));
        assert.equal(stopped.code, 1, stopped.text);
        // The worst first; its stamps go stale too once two heartbeats (here 1 s) pass without one.
        assert.match(stopped.first, /^ATTENTION: (1 thing: watch not running|2 things, the worst first: watch not running; no completed sweep for .*)$/);
        assert.match(stopped.report.attention[0]!, new RegExp(`watch \\(pid ${w.child.pid}, .*\\) is not running: it stopped .* by SIGTERM`));

        w = await watch();
        w.child.kill('SIGKILL');
        await w.exited;
        const killed = await statusNow(h, scope.args(h));
        assert.equal(killed.code, 1, killed.text);
        assert.match(killed.first, /^ATTENTION: \d things, the worst first: watch not running; .*stale reap lock/);
        assert.match(killed.report.attention[0]!, /is not running: it ended without stopping \(killed or crashed\)/);

        // A watch whose engine does not answer: alive, /healthz 503, no heartbeat.
        const away = `unix://${path.join(path.dirname(h.dir), 'away.sock')}`;
        const lost = WatchProcess.start([...label, '--host', away, '--metrics-listen', '127.0.0.1:0', ...scope.args(h)], env);
        try {
          await lost.waitFor('metrics', (ls) => ls.some((l) => l.event === 'metrics'));
          let r = await statusNow(h, ['--host', away, ...scope.args(h)]);
          for (let i = 0; i < 50 && r.report.janitor.watch?.pid !== lost.child.pid; i++) {
            await new Promise((res) => setTimeout(res, 200));
            r = await statusNow(h, ['--host', away, ...scope.args(h)]);
          }
          assert.equal(r.code, 3, 'its engine is unreachable for status too');
          // (The killed watch's reap lock of the other engine is still there, stale: the last of three.)
          assert.ok(r.first.startsWith(`ATTENTION: 3 things, the worst first: engine ${away} unreachable; watch not healthy`), r.first);
          assert.match(r.report.attention[1]!, /is not healthy: its \/healthz \(.*\) answered 503/);
        } finally {
          await lost.stop('SIGTERM');
        }
      });
    }

    it('status takes the policy flags list and reap take, and its advice repeats them', async () => {
      const h = home();
      // Its own label beside the run's (which the fixture's cleanup removes it by), every profile: its own profile's.
      const own = ['--label', `hj-status-policy=${fx.runId}`, '--all-profiles'];
      await fx.create({ state: 'exited', labels: { 'hj-status-policy': fx.runId } });
      const policy = ['--idle-after', '2m', '--idle-after-owned', 'never', '--stopped-retention', '1d', '--idle-max-processes', '3', '--exec-max-age', '30m'];
      const asOf = ['--as-of', new Date(Date.now() + 3600_000).toISOString()];
      const listed = await runCli(['list', ...own, ...policy, '--no-stop-idle', ...asOf], { env: h.env });
      assert.equal(listed.code, 0, listed.stderr);
      const r = await status(h, [...own, ...policy, '--no-stop-idle', ...asOf]);
      assert.equal(r.code, 1, r.stderr);
      const advice = /: run (hermes-janitor reap .*)$/m.exec(r.report!.attention.join('\n'))?.[1] ?? '';
      assert.ok(advice.startsWith(`hermes-janitor reap --home ${h.dir} `), advice);
      assert.ok(advice.endsWith(`${policy.join(' ')} --no-stop-idle ${asOf.join(' ')}`), advice);
    });
  });

  it('the engine down (an address nothing listens on): exit 3, the rest still reported', async () => {
    const h = home();
    const sock = path.join(path.dirname(h.dir), 'nothing.sock');
    const r = await status(h, ['--host', `unix://${sock}`]);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.report!.engines[0]!.reachable, false);
    assert.equal(r.report!.containers, null);
    assert.equal(r.report!.breakers.restartGuard.tripped, false);
    const text = await status(h, ['--host', `unix://${sock}`], false);
    assert.equal(text.code, 3);
    assert.match(text.stdout, /UNREACHABLE/);
  });

  it('usage errors: exit 2 with one line, nothing written', async () => {
    const h = home();
    for (const args of [['--bogus'], ['--timeout', 'soon'], ['--host', 'ftp://x'], ['--log-format', 'json']]) {
      const r = await status(h, args, false);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.doesNotMatch(r.stderr, /\n\s+at /);
    }
  });
});
