/**
 * The idle rule under engine faults and races (simulator; the real-engine behaviour is in idle-volumes.test.ts).
 * The library's reaper runs with its own clock, so "idle for an hour" takes no waiting.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import os from 'node:os';
import { createReaper } from '../../src/reaper/api.js';
import { reap as sweepReap } from '../../src/reaper/sweep.js';
import { createDockerodeEngine } from '../../src/adapters/dockerode-engine.js';
import { parseEngineUrl } from '../../src/adapters/engine-host.js';
import { MemoryStateStore } from '../../src/adapters/state-file.js';
import { defaultSelection } from '../../src/core/selection.js';
import { emptyManagedDir, quietProcRoot, runCli, tempDir } from '../helpers/cli.js';
import { type ContainerFaults, EngineSimulator, type SimContainerSpec, rfc3339Nano } from '../helpers/engine-simulator.js';

const PROFILE = 'idle-faults';
const LABELS = { 'hermes-agent': '1', 'hermes-profile': PROFILE };
const HOUR = 3600;

describe('idle rule under faults (simulator)', () => {
  const home = tempDir('hj-idle-faults-');
  const sims: EngineSimulator[] = [];
  after(async () => {
    await Promise.all(sims.map((s) => s.close()));
    home.cleanup();
  });

  /** A sandbox started two hours ago, idle unless a fault says otherwise. */
  const sandbox = (faults?: ContainerFaults, extra: Partial<SimContainerSpec> = {}): SimContainerSpec => ({
    labels: LABELS,
    state: 'running',
    startedAt: rfc3339Nano(new Date(Date.now() - 2 * HOUR * 1000)),
    ...(faults ? { faults } : {}),
    ...extra,
  });

  async function setup(containers: SimContainerSpec[]) {
    const sim = await EngineSimulator.start({ containers });
    sims.push(sim);
    let clock = new Date();
    const store = new MemoryStateStore();
    const reaper = createReaper({
      host: sim.host,
      profile: PROFILE,
      home: home.dir,
      env: { HERMES_MANAGED_DIR: emptyManagedDir(), HERMES_JANITOR_PROC_ROOT: quietProcRoot() },
      now: () => clock,
      idleAfterSeconds: HOUR,
      idleStore: store,
    });
    const advance = (s: number) => (clock = new Date(clock.getTime() + s * 1000));
    return { sim, reaper, advance, store };
  }

  it('an idle sandbox is stopped after an hour of observed idleness, not before', async () => {
    const { sim, reaper, advance } = await setup([sandbox()]);
    const [id] = sim.ids();
    const first = await reaper.reap();
    assert.deepEqual(first.stopped, []);
    assert.equal(first.kept[0]?.idleReason, 'observing');
    advance(HOUR - 1);
    const early = await reaper.reap();
    assert.deepEqual([early.stopped.length, early.kept[0]?.idleReason], [0, 'idle-too-recent']);
    advance(1);
    const dry = await reaper.reap({ dryRun: true });
    assert.deepEqual(
      dry.stopped.map((e) => e.id),
      [id],
    );
    assert.equal(sim.get(id!)?.state, 'running', 'a dry run stops nothing');
    const res = await reaper.reap();
    assert.deepEqual(
      res.stopped.map((e) => [e.id, e.rule, e.idleSeconds]),
      [[id, 'idle', HOUR]],
    );
    assert.equal(sim.get(id!)?.state, 'exited');
    assert.equal(sim.stats.forcedRemovals, 0);
  });

  it('stats that fail or lack the CPU counter never stop: idleSeconds null, no failure', async () => {
    const { sim, reaper, advance } = await setup([
      sandbox({ statsStatus: 500 }),
      sandbox({ statsBody: '{"read":"2026-01-01T00:00:00Z","cpu_stats":{},"memory_stats":{}}' }),
      sandbox({ statsBody: '{not json' }),
    ]);
    for (let i = 0; i < 3; i++) {
      const r = await reaper.reap();
      assert.deepEqual(r.stopped, []);
      assert.deepEqual(r.failed, []);
      assert.equal(r.kept.length, 3, JSON.stringify(r));
      for (const k of r.kept) assert.deepEqual([k.reason, k.idleSeconds, k.idleReason], ['running', null, 'stats-unavailable']);
      advance(2 * HOUR);
    }
    assert.equal(sim.stats.byKind.stop, 0);
    assert.ok(sim.ids().every((id) => sim.get(id)?.state === 'running'));
  });

  it('the proof re-checked right before the stop fails: activity or an exec since the sample; nothing is stopped', async () => {
    // Stats call 1: the first run's sample; 2: the second run's, which is the re-check's fresh sample (the proof
    // of the earlier runs suffices as of now, if nothing happened since). Inspect 2 is the second run's, 3 the re-check's.
    // (A restart there is a restart, not a failed proof: see "a restart after the last sample" below.)
    const { sim, reaper, advance, store } = await setup([sandbox({ touchOnStats: 2 }), sandbox({ execAfterInspect: 2 })]);
    const [touched, exec] = sim.ids() as [string, string];
    await reaper.reap();
    advance(HOUR + 5);
    const r = await reaper.reap();
    assert.deepEqual(r.stopped, [], JSON.stringify(r.kept));
    assert.deepEqual(r.failed, []);
    for (const id of [touched, exec]) {
      const k = r.kept.find((e) => e.id === id);
      assert.equal(k?.idleReason, 'proof-failed', `${id.slice(0, 12)}: ${JSON.stringify(k)}`);
      assert.equal(sim.get(id)?.state, 'running');
    }
    assert.equal(sim.stats.byKind.stop, 0);
    // The activity found by the re-check resets the proof: the next run starts observing afresh.
    const doc = store.snapshot() as { engines: Record<string, Record<string, { since: string }>> };
    const rec = Object.values(doc.engines)[0]![touched]!;
    assert.ok(Date.parse(rec.since) > Date.now() + HOUR * 1000 - 60_000, 'since moved to the re-check');
  });

  it('a finished exec still listed (as Podman does) does not block; a running one does', async () => {
    const { sim, reaper, advance } = await setup([
      sandbox(undefined, { execIds: ['e-done'], finishedExecs: ['e-done'] }),
      sandbox(undefined, { execIds: ['e-live'] }),
    ]);
    const [done, live] = sim.ids() as [string, string];
    await reaper.reap();
    advance(HOUR);
    const r = await reaper.reap();
    assert.deepEqual(
      r.stopped.map((e) => e.id),
      [done],
    );
    assert.equal(r.kept.find((e) => e.id === live)?.idleReason, 'exec-in-flight');
  });

  describe("proven idle by earlier runs, cgroup readable here: the stop slot's inspect is the run's only one", () => {
    /**
     * The sweep as `reap` runs it, with the cgroup reader of a janitor on the engine's host: the simulator's counters
     * through the container's init pid, none for `unreadable` containers. `afterNextLocalRead(id, fn)` runs `fn` right
     * after the next cgroup read of `id` (something happens between that read and the next step).
     */
    async function fastSetup(containers: SimContainerSpec[]) {
      const sim = await EngineSimulator.start({ containers, record: true });
      sims.push(sim);
      const engine = await createDockerodeEngine(parseEngineUrl(sim.host, {}, os.homedir()));
      const store = new MemoryStateStore();
      const unreadable = new Set<string>();
      const hooks = new Map<string, () => void>();
      const afterNextLocalRead = (id: string, fn: () => void) => hooks.set(id, fn);
      /** The cgroup's process count where the engine's stats give none (the simulator's `pids: null`). */
      const cgroupPids = new Map<string, number>();
      const localCounters = (id: string, pid: number) => {
        const read = unreadable.has(id) ? null : sim.counters(id, pid);
        const c = read && cgroupPids.has(id) ? { ...read, pids: cgroupPids.get(id)! } : read;
        const hook = hooks.get(id);
        hooks.delete(id);
        hook?.();
        return c;
      };
      let clock = new Date();
      /** One sweep as `reap` runs it, `advance` seconds after the last (the clock is the sweep's own). */
      const run = (advance = 0) => {
        clock = new Date(clock.getTime() + advance * 1000);
        return sweepReap({
          engine,
          selection: defaultSelection(PROFILE),
          thresholdSeconds: 600,
          asOf: clock,
          concurrency: 8,
          dryRun: false,
          idle: {
            stopIdle: true,
            idleAfterSeconds: HOUR,
            store,
            now: () => clock,
            localCounters,
          },
        });
      };
      /** Two observations half an hour apart on record; then an hour and a minute since the first. */
      const proven = async () => {
        await run();
        clock = new Date(clock.getTime() + (HOUR / 2) * 1000);
        const second = await run();
        assert.deepEqual(second.stopped, [], 'idle for half the threshold: kept');
        clock = new Date(clock.getTime() + (HOUR / 2 + 60) * 1000);
      };
      /** Requests of the last pass about container `id`, by kind. */
      const requestsOf = (id: string, from: number) =>
        sim.requests
          .slice(from)
          .filter((r) => r.url.includes(id))
          // The stop's cost (#38): an inspect with the writable layer's size, once the sandbox is stopped.
          .map((r) => (r.kind === 'inspect' && /[?&]size=(1|true)\b/.test(r.url) ? 'inspect size' : r.kind));
      return { sim, run, proven, unreadable, requestsOf, store, afterNextLocalRead, cgroupPids };
    }

    it('stops it with one inspect and no stats request; the proof and the stop happen together', async () => {
      const { sim, run, proven, requestsOf } = await fastSetup([sandbox()]);
      const [id] = sim.ids() as [string];
      await proven();
      const mark = sim.requests.length;
      const r = await run();
      assert.deepEqual(
        r.stopped.map((e) => [e.id, e.rule, e.idleSeconds]),
        [[id, 'idle', HOUR + 60]],
      );
      assert.deepEqual(requestsOf(id, mark), ['inspect', 'stop', 'inspect size']);
      assert.equal(sim.get(id)?.state, 'exited');
    });

    it('anything else its inspect shows is judged as usual from that inspect: a restart, an exec, activity, gone', async () => {
      const { sim, run, proven, requestsOf, afterNextLocalRead } = await fastSetup([sandbox(), sandbox(), sandbox(), sandbox(), sandbox()]);
      const [restarted, withExec, touched, gone, idle] = sim.ids() as [string, string, string, string, string];
      await proven();
      // Restarted once the list's row was found proven (its init process read), before its stop slot.
      afterNextLocalRead(restarted, () => sim.restart(restarted));
      sim.setExecs(withExec, ['e-live']);
      sim.touch(touched);
      sim.afterNextList(() => sim.delete(gone)); // removed by someone else between the list and its stop slot
      const mark = sim.requests.length;
      const r = await run();
      assert.deepEqual(
        r.stopped.map((e) => e.id),
        [idle],
      );
      const why = (id: string) => r.kept.find((e) => e.id === id);
      assert.equal(why(restarted)?.idleReason, 'observing');
      assert.equal(why(withExec)?.idleReason, 'exec-in-flight');
      assert.equal(why(touched)?.idleReason, 'proof-failed');
      assert.equal(why(gone)?.reason, 'gone');
      for (const id of [restarted, withExec, touched]) {
        assert.equal(sim.get(id)?.state, 'running', id);
        const kinds = requestsOf(id, mark);
        assert.equal(kinds.filter((k) => k === 'inspect').length, 1, `${id}: ${kinds.join(' ')}`);
        assert.ok(!kinds.includes('stop'), `${id}: ${kinds.join(' ')}`);
      }
    });

    it('a job started after the last sample prevents the stop: from the cgroup, and from the engine', async () => {
      for (const readable of [true, false]) {
        const { sim, run, unreadable, requestsOf } = await fastSetup([sandbox()]);
        const [id] = sim.ids() as [string];
        if (!readable) unreadable.add(id);
        await run(); // one sample; an hour and a minute later it is proof enough, if nothing happened since
        // Between the last sample and the stop pass: one more process, and no counter moved.
        sim.afterNextList(() => sim.setPids(id, 3));
        const mark = sim.requests.length;
        const r = await run(HOUR + 60);
        assert.deepEqual(r.stopped, [], `cgroup readable: ${readable}`);
        assert.deepEqual([r.kept[0]?.idleReason, r.kept[0]?.processes], ['in-use', 3], `cgroup readable: ${readable}`);
        assert.equal(sim.get(id)?.state, 'running');
        // The cgroup path re-checks in the stop slot without the engine's stats; the engine path asks for them.
        assert.deepEqual(requestsOf(id, mark), readable ? ['inspect'] : ['inspect', 'stats'], `cgroup readable: ${readable}`);
      }
    });

    describe('a restart after the last sample reads as a restart (observing, its proof starts again), never proof-failed', () => {
      // Each case: proven idle by two runs (inspects 1-2, stats 1-2), then the third run meets a restart (a new
      // StartedAt, init pid and cgroup) at one point of its path; its requests about the container show that path.
      // `forget-pid`: the record lacks the init pid (as an earlier janitor wrote it), so the sweep inspects first.
      const cases: Array<{
        path: string;
        readable: boolean;
        faults?: ContainerFaults;
        before?: 'restart' | 'forget-pid';
        afterLocalRead?: boolean;
        requests: string[];
      }> = [
        // Restarted before the run: the sweep's own inspect sees the new StartedAt (the old init pid is gone, so the
        // proof on record cannot skip it).
        { path: 'before the run: the first inspect (engine stats)', readable: false, before: 'restart', requests: ['inspect', 'stats'] },
        { path: 'before the run: the first inspect (cgroup)', readable: true, before: 'restart', requests: ['inspect', 'stats'] },
        // Earlier runs' proof lets the sweep skip its first inspect; restarted after that was decided: the stop
        // slot's inspect (3) is the one that sees it.
        { path: "the stop slot's inspect, the sweep's first skipped (cgroup)", readable: true, afterLocalRead: true, requests: ['inspect', 'stats'] },
        // Restarted right after that inspect (3): its init pid is gone, so the cgroup cannot be read; the usual way
        // then asks the engine's stats (a new cgroup's counters under the old StartedAt) and one more inspect (4) tells.
        {
          path: "between the stop slot's inspect and the cgroup read, the sweep's first skipped",
          readable: true,
          faults: { restartOnInspect: 3 },
          requests: ['inspect', 'stats', 'inspect', 'stats'],
        },
        // The sweep inspects (3), its cgroup is found readable, then the restart: the stop slot's inspect (4) sees it.
        {
          path: "the stop slot's inspect after the sweep's (cgroup)",
          readable: true,
          before: 'forget-pid',
          afterLocalRead: true,
          requests: ['inspect', 'inspect', 'stats'],
        },
        // Restarted right after the sweep's inspect (3): the old init pid is gone, the engine's sample shows a new
        // cgroup's counters; one more inspect (4) tells.
        {
          path: "between the sweep's inspect and the re-check (cgroup readable)",
          readable: true,
          before: 'forget-pid',
          faults: { restartOnInspect: 3 },
          requests: ['inspect', 'stats', 'inspect', 'stats'],
        },
        // Restarted right after the stop slot's inspect (4): the cgroup read fails with the init pid, the engine's
        // sample shows a new cgroup's counters; one more inspect (5) tells.
        {
          path: "between the stop slot's inspect and its sample (cgroup readable)",
          readable: true,
          before: 'forget-pid',
          faults: { restartOnInspect: 4 },
          requests: ['inspect', 'inspect', 'stats', 'inspect', 'stats'],
        },
        // The engine path: the sweep's inspect (3), the re-check's engine sample (3), then the restart: the stop
        // slot's inspect (4) sees it.
        {
          path: "the stop slot's inspect after the engine's sample (engine stats)",
          readable: false,
          faults: { restartAfterStats: 3 },
          requests: ['inspect', 'stats', 'inspect', 'stats'],
        },
        // Restarted between the sweep's inspect (3) and the re-check's engine sample: a new cgroup's counters under
        // the old StartedAt; one more inspect (4) tells.
        {
          path: "between the sweep's inspect and the re-check's engine sample (engine stats)",
          readable: false,
          faults: { restartOnInspect: 3 },
          requests: ['inspect', 'stats', 'inspect', 'stats'],
        },
      ];
      for (const c of cases) {
        it(c.path, async () => {
          const { sim, run, proven, unreadable, requestsOf, store, afterNextLocalRead } = await fastSetup([sandbox(c.faults)]);
          const [id] = sim.ids() as [string];
          if (!c.readable) unreadable.add(id);
          await proven();
          const before = store.snapshot() as { engines: Record<string, Record<string, { last: Record<string, unknown> }>> };
          const oldStart = Object.values(before.engines)[0]![id]!.last.startedAt;
          if (c.before === 'restart') sim.restart(id);
          if (c.before === 'forget-pid') {
            for (const recs of Object.values(before.engines)) for (const r of Object.values(recs)) delete r.last.pid;
            await store.update(() => ({ next: before, result: undefined }));
          }
          if (c.afterLocalRead) afterNextLocalRead(id, () => sim.restart(id));
          const mark = sim.requests.length;
          const r = await run();
          assert.deepEqual([r.stopped, r.failed], [[], []], JSON.stringify(r));
          const k = r.kept.find((e) => e.id === id);
          assert.deepEqual([k?.reason, k?.idleReason, k?.idleSeconds, k?.processes], ['running', 'observing', null, 2], JSON.stringify(k));
          assert.equal(sim.get(id)?.state, 'running');
          assert.deepEqual(requestsOf(id, mark), c.requests, 'the path taken');
          // The record is the new container's first sample: the proof starts again.
          const doc = store.snapshot() as { engines: Record<string, Record<string, { last: { startedAt: string }; samples: number }>> };
          const rec = Object.values(doc.engines)[0]![id]!;
          assert.notEqual(rec.last.startedAt, oldStart);
          assert.equal(rec.samples, 1);
        });
      }
    });

    it("engine stats without a process count take the cgroup's where it is readable; with neither, processes-unknown", async () => {
      const { sim, run, proven, unreadable, requestsOf, cgroupPids } = await fastSetup([
        sandbox(undefined, { pids: null }),
        sandbox(undefined, { pids: null }),
      ]);
      const [counted, unknown] = sim.ids() as [string, string];
      cgroupPids.set(counted, 2);
      unreadable.add(unknown);
      await proven();
      const mark = sim.requests.length;
      const r = await run();
      assert.deepEqual(
        r.stopped.map((e) => [e.id, e.processes]),
        [[counted, 2]],
        JSON.stringify(r),
      );
      assert.deepEqual(requestsOf(counted, mark), ['inspect', 'stop', 'inspect size']);
      const k = r.kept.find((e) => e.id === unknown);
      assert.deepEqual([k?.idleReason, k?.processes, k?.idleSeconds], ['processes-unknown', null, null]);
      assert.equal(sim.get(unknown)?.state, 'running');
    });

    it('a cgroup it cannot read here, or a failed stop, goes the usual way', async () => {
      const { sim, run, proven, unreadable, requestsOf } = await fastSetup([sandbox(), sandbox({ stopStatus: 500 })]);
      const [elsewhere, refused] = sim.ids() as [string, string];
      await proven();
      unreadable.add(elsewhere);
      const mark = sim.requests.length;
      const r = await run();
      // The engine's stats give the fresh sample: the sweep's inspect, its stats, the re-check's inspect, the stop.
      assert.deepEqual(
        r.stopped.map((e) => e.id),
        [elsewhere],
      );
      assert.deepEqual(requestsOf(elsewhere, mark), ['inspect', 'stats', 'inspect', 'stop', 'inspect size']);
      assert.deepEqual(
        r.failed.map((e) => [e.id, e.rule]),
        [[refused, 'idle']],
      );
      assert.match(r.failed[0]!.error, /HTTP 500/);
      assert.equal(sim.get(refused)?.state, 'running');
    });
  });

  describe('processes of its own (a background job): in use, never stopped', () => {
    it('in use while it holds more than its init and its command; the proof starts when the job ends', async () => {
      const { sim, reaper, advance } = await setup([sandbox(undefined, { pids: 4 }), sandbox()]);
      const [job, bare] = sim.ids() as [string, string];
      for (let i = 0; i < 3; i++) {
        const r = await reaper.reap();
        const k = r.kept.find((e) => e.id === job);
        assert.deepEqual([k?.idleReason, k?.processes, k?.idleSeconds], ['in-use', 4, null], JSON.stringify(r.kept));
        assert.deepEqual(
          r.stopped.map((e) => e.id),
          i === 1 ? [bare] : [],
        );
        advance(2 * HOUR);
      }
      sim.setPids(job, 2); // the job ended
      advance(5 * HOUR);
      const quiet = await reaper.reap();
      // (The bare sandbox stopped above is kept too now, as stopped-retained: the job's entry is found by its id.)
      const jobIn = (r: { kept: Array<{ id: string; idleReason?: string }> }) => r.kept.find((e) => e.id === job)?.idleReason;
      assert.deepEqual([quiet.stopped.length, jobIn(quiet)], [0, 'observing'], 'an hour of flat counters with the job does not count');
      advance(HOUR - 1);
      assert.equal(jobIn(await reaper.reap()), 'idle-too-recent');
      advance(1);
      assert.deepEqual(
        (await reaper.reap()).stopped.map((e) => [e.id, e.idleSeconds, e.processes]),
        [[job, HOUR, 2]],
      );
      assert.equal(sim.stats.byKind.stop, 2);
    });

    it('an engine that reports no process count never stops (processes-unknown), however idle', async () => {
      const { sim, reaper, advance } = await setup([sandbox(undefined, { pids: null })]);
      for (let i = 0; i < 3; i++) {
        const r = await reaper.reap();
        assert.deepEqual(r.stopped, []);
        assert.equal(r.kept.length, 1);
        assert.deepEqual([r.kept[0]!.idleReason, r.kept[0]!.processes, r.kept[0]!.idleSeconds], ['processes-unknown', null, null]);
        advance(2 * HOUR);
      }
      assert.equal(sim.stats.byKind.stop, 0);
    });

    it('without an init its command alone is idle; one more process (a zombie counts) is in use', async () => {
      const { sim, reaper, advance } = await setup([sandbox(undefined, { init: false }), sandbox(undefined, { init: false, pids: 2 })]);
      const [alone, withZombie] = sim.ids() as [string, string];
      await reaper.reap();
      advance(HOUR);
      const r = await reaper.reap();
      assert.deepEqual(
        r.stopped.map((e) => [e.id, e.processes]),
        [[alone, 1]],
      );
      assert.deepEqual([r.kept[0]?.id, r.kept[0]?.idleReason, r.kept[0]?.processes], [withZombie, 'in-use', 2]);
    });

    it('idleMaxProcesses lets a container hold more and still be idle; more than that is in use', async () => {
      const sim = await EngineSimulator.start({ containers: [sandbox(undefined, { pids: 5 }), sandbox(undefined, { pids: 6 })] });
      sims.push(sim);
      let clock = new Date();
      const reaper = createReaper({
        host: sim.host,
        profile: PROFILE,
        home: home.dir,
        env: { HERMES_MANAGED_DIR: emptyManagedDir(), HERMES_JANITOR_PROC_ROOT: quietProcRoot() },
        now: () => clock,
        idleAfterSeconds: HOUR,
        idleStore: new MemoryStateStore(),
        idleMaxProcesses: 5,
      });
      const [five, six] = sim.ids() as [string, string];
      await reaper.reap();
      clock = new Date(clock.getTime() + HOUR * 1000);
      const r = await reaper.reap();
      assert.deepEqual(
        r.stopped.map((e) => e.id),
        [five],
      );
      assert.deepEqual([r.kept[0]?.id, r.kept[0]?.idleReason], [six, 'in-use']);
      await assert.rejects(
        createReaper({
          host: sim.host,
          home: home.dir,
          env: { HERMES_MANAGED_DIR: emptyManagedDir(), HERMES_JANITOR_PROC_ROOT: quietProcRoot() },
          idleMaxProcesses: 0,
        }).reap(),
        /^UsageError: idleMaxProcesses must be a whole number >= 1, got '0'$/,
      );
    });

    it('records written before the count was kept stay valid: the proof on record is used, re-checked with a count', async () => {
      const { sim, reaper, advance, store } = await setup([sandbox()]);
      const [id] = sim.ids() as [string];
      const first = await reaper.reap();
      assert.equal(first.kept[0]?.idleReason, 'observing');
      // As an earlier janitor wrote it: no `pids`.
      const doc = store.snapshot() as { engines: Record<string, Record<string, { last: Record<string, unknown> }>> };
      for (const recs of Object.values(doc.engines)) for (const r of Object.values(recs)) delete r.last.pids;
      await store.update(() => ({ next: doc, result: undefined }));
      advance(HOUR);
      const r = await reaper.reap();
      assert.deepEqual(
        r.stopped.map((e) => [e.id, e.idleSeconds, e.processes]),
        [[id, HOUR, 2]],
      );
    });
  });

  it('a busy process is never idle', async () => {
    const { reaper, advance } = await setup([sandbox({ cpuPerStats: 5 * HOUR * 1_000_000 })]);
    for (let i = 0; i < 3; i++) {
      const r = await reaper.reap();
      assert.deepEqual(r.stopped, []);
      advance(HOUR);
    }
  });

  it('a failed stop is a failure: exit 1, reported, the rest carries on', async () => {
    const sim = await EngineSimulator.start({ containers: [sandbox({ stopStatus: 500 }), sandbox()] });
    sims.push(sim);
    const env = { HOME: home.dir, HERMES_HOME: path.join(home.dir, 'cli') };
    const args = ['reap', '--json', '--host', sim.host, '--profile', PROFILE, '--idle-after', '1s'];
    assert.equal((await runCli(args, { env })).code, 0);
    await new Promise((r) => setTimeout(r, 1200));
    const res = await runCli(args, { env });
    assert.equal(res.code, 1, res.stderr);
    const out = JSON.parse(res.stdout) as { stopped: Array<{ id: string }>; failed: Array<{ id: string; error: string }> };
    const [bad, good] = sim.ids() as [string, string];
    assert.deepEqual(
      out.stopped.map((e) => e.id),
      [good],
    );
    assert.deepEqual(
      out.failed.map((e) => e.id),
      [bad],
    );
    assert.match(out.failed[0]!.error, /HTTP 500/);
    const text = await runCli(['reap', '--host', sim.host, '--profile', PROFILE, '--idle-after', '1s'], { env });
    assert.equal(text.code, 1);
    assert.match(text.stderr, /failed\s+\w{12}\s+\S+\s+\(profile idle-faults, idle \d+ seconds?\): stop/);
  });
});
