/**
 * The exec-tree pass (#29): the pure rules (passes/exec-trees/rule.ts), hermes' timeouts (passes/exec-trees/settings.ts), the
 * /proc adapter against real processes of this host, and the reaper step against the engine simulator with a
 * process table the test controls: the re-check right before signalling, where a failed proof signals nothing.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { configOf } from '../../src/adapters/config.js';
import { parseDotenv } from '../../src/hermes/dotenv.js';
import { resolveHermesSettings } from '../../src/hermes/settings.js';
import { createDockerodeEngine } from '../../src/adapters/dockerode-engine.js';
import type { EngineClient } from '../../src/adapters/engine.js';
import { type ProcAccess, parseStat, procAccess } from '../../src/passes/exec-trees/proc-table.js';
import {
  type ProcEntry,
  type ProcIdentity,
  execAgeSeconds,
  execBoundSeconds,
  isAbandoned,
  recheckExec,
  signalTargets,
  treeOf,
} from '../../src/passes/exec-trees/rule.js';
import { selectionFrom } from '../../src/core/selection.js';
import { type ExecTreeOptions, resolveExecTrees } from '../../src/passes/exec-trees/settings.js';
import { hermesCommandTimeouts } from '../../src/hermes/timeouts.js';
import { resolveRunSettings } from '../../src/reaper/settings.js';
import { abandonedLoad, endAbandonedTrees, surveyExecs } from '../../src/passes/exec-trees/run.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

const table = (rows: Array<[pid: number, ppid: number, start?: number]>) =>
  new Map<number, ProcEntry>(rows.map(([pid, ppid, start]) => [pid, { pid, ppid, startTicks: start ?? pid * 10 }]));

// A sandbox as the host sees it: the runtime's shim (50) holds tini (100) and each exec's process; tini holds the
// main command (101) and a background job left to it (102, 103); exec 200 (sh) holds 201 and 202 (its grandchild 203).
const HOST = table([
  [1, 0],
  [50, 1],
  [100, 50],
  [101, 100],
  [102, 100],
  [103, 102],
  [200, 50],
  [201, 200],
  [202, 200],
  [203, 202],
  [300, 50],
]);

describe('exec trees: the pure rules', () => {
  it('a tree is the exec process and its descendants by parent links; init, its command and a job left to init never are', () => {
    assert.deepEqual(
      treeOf(HOST, 200).map((p) => p.pid),
      [200, 201, 202, 203],
    );
    const targets = signalTargets({ procs: HOST }, { pid: 200, startTicks: 2000 }, 100)!;
    assert.deepEqual(targets.map((p) => p.pid).sort(), [200, 201, 202, 203]);
    for (const never of [100, 101, 102, 103, 50, 1]) assert.ok(!targets.some((p) => p.pid === never), `pid ${never} is never signalled`);
    // An "exec" whose process is init or sits under it is refused outright.
    assert.equal(signalTargets({ procs: HOST }, { pid: 100, startTicks: 1000 }, 100), null);
    assert.equal(signalTargets({ procs: HOST }, { pid: 102, startTicks: 1020 }, 100), null);
    assert.deepEqual(treeOf(HOST, 999), []);
  });

  it('the bound is 2 x the longest timeout, or --exec-max-age; an unknown age is never abandoned', () => {
    const t = {
      timeouts: [
        { name: 'a', seconds: 600, source: 'default' },
        { name: 'b', seconds: 180, source: 'default' },
      ],
    };
    assert.equal(execBoundSeconds(t), 1200);
    assert.equal(execBoundSeconds(t, 90), 90);
    assert.equal(isAbandoned(null, 0), false);
    assert.equal(isAbandoned(1200, 1200), false);
    assert.equal(isAbandoned(1200.5, 1200), true);
  });

  it("ages come from the exec_start event where seen, else from the process' start", () => {
    const asOf = new Date(100_000);
    assert.equal(execAgeSeconds(asOf, { eventMs: 40_000, processStartMs: 10_000 }), 60);
    assert.equal(execAgeSeconds(asOf, { processStartMs: 10_000 }), 90);
    assert.equal(execAgeSeconds(asOf, {}), null);
    assert.equal(execAgeSeconds(asOf, { processStartMs: 200_000 }), 0);
  });

  it('the re-check: still running, the same process (pid and start time), still past the bound', () => {
    const seen: ProcIdentity = { pid: 200, startTicks: 2000 };
    const ok = { running: true, pid: 200, startTicks: 2000, ageSeconds: 50 };
    assert.equal(recheckExec(seen, ok, 40), null);
    assert.equal(recheckExec(seen, { ...ok, running: false }, 40), 'exec-ended');
    assert.equal(recheckExec(seen, { ...ok, startTicks: 2001 }, 40), 'process-changed');
    assert.equal(recheckExec(seen, { ...ok, startTicks: null }, 40), 'process-changed');
    assert.equal(recheckExec(seen, { ...ok, pid: 201 }, 40), 'process-changed');
    assert.equal(recheckExec(seen, { ...ok, ageSeconds: 30 }, 40), 'within-bound');
    assert.equal(recheckExec(seen, { ...ok, ageSeconds: null }, 40), 'within-bound');
  });
});

describe("exec trees: hermes' timeouts, read the way hermes reads them", () => {
  const none = configOf('/h/config.yaml', undefined);
  /** hermes' settings as the resolver gives them, from an environment, config.yaml's data and a `.env` text. */
  const settingsOf = (env: Record<string, string>, data?: unknown, dotenv?: string) =>
    resolveHermesSettings({
      env,
      dotenv: dotenv === undefined ? null : { path: '/h/.env', data: parseDotenv(dotenv) },
      managedDotenv: null,
      config: data === undefined ? null : { path: '/h/config.yaml', data },
      managedConfig: null,
      home: '/h',
      cwd: '/',
    });
  const at = (env: Record<string, string>, config = none, dotenv?: string) => ({ hermes: settingsOf(env, config.data, dotenv), config });
  it('defaults: 2 x TERMINAL_MAX_FOREGROUND_TIMEOUT 600 = 1200 s', () => {
    const r = resolveExecTrees({}, at({}));
    assert.equal(r.boundSeconds, 1200);
    assert.equal(r.end, true);
    assert.match(r.boundSource, /^2 x TERMINAL_MAX_FOREGROUND_TIMEOUT 600s \(default\)$/);
  });

  it('terminal.timeout in config.yaml wins over TERMINAL_TIMEOUT; the longest of all three counts', () => {
    const cfg = configOf('/h/config.yaml', { terminal: { timeout: 900 }, code_execution: { timeout: 1000 } });
    const t = hermesCommandTimeouts(settingsOf({ TERMINAL_TIMEOUT: '30', TERMINAL_MAX_FOREGROUND_TIMEOUT: '5' }, cfg.data), cfg);
    assert.deepEqual(
      t.timeouts.map((x) => [x.name, x.seconds]),
      [
        ['TERMINAL_MAX_FOREGROUND_TIMEOUT', 5],
        ['terminal.timeout', 900],
        ['code_execution.timeout', 1000],
      ],
    );
    assert.equal(resolveExecTrees({}, at({ TERMINAL_TIMEOUT: '30' }, cfg)).boundSeconds, 2000);
    assert.equal(hermesCommandTimeouts(settingsOf({ TERMINAL_TIMEOUT: '700' }), none).timeouts[1]!.seconds, 700);
    // A value hermes cannot read gives hermes' own default, as hermes does.
    assert.equal(hermesCommandTimeouts(settingsOf({ TERMINAL_MAX_FOREGROUND_TIMEOUT: 'lots' }), none).timeouts[0]!.seconds, 600);
    // <home>/.env is read as hermes reads it: it beats the environment, and config.yaml's terminal.timeout beats it.
    const fromDotenv = hermesCommandTimeouts(
      settingsOf({ TERMINAL_TIMEOUT: '30' }, undefined, 'TERMINAL_TIMEOUT=800\nTERMINAL_MAX_FOREGROUND_TIMEOUT=9\n'),
      none,
    );
    assert.deepEqual(
      fromDotenv.timeouts.slice(0, 2).map((x) => [x.seconds, x.source]),
      [
        [9, '/h/.env'],
        [800, '/h/.env'],
      ],
    );
    const both = hermesCommandTimeouts(settingsOf({}, { terminal: { timeout: 50 } }, 'TERMINAL_TIMEOUT=800\n'), none);
    assert.deepEqual([both.timeouts[1]!.seconds, both.timeouts[1]!.source], [50, 'config.yaml terminal.timeout']);
  });

  it('the pass is for the hermes selection only: a --label selection has none (its bound would mean nothing there)', async () => {
    const where = { env: {}, config: none, hermes: settingsOf({}), home: '/nonexistent-hj', now: () => new Date(0), selectorGiven: false };
    const store = { location: 'mem', read: async () => ({ value: undefined }), update: async () => undefined } as never;
    const hermes = await resolveRunSettings({ idleStore: store }, { ...where, selection: selectionFrom({ profile: null }) });
    assert.equal((hermes.idle.sweeps?.execTrees as ExecTreeOptions | undefined)?.boundSeconds, 1200);
    const ci = await resolveRunSettings(
      { idleStore: store },
      { ...where, selection: selectionFrom({ profile: null, labels: ['ci-job'] }), selectorGiven: true },
    );
    assert.equal(ci.idle.sweeps, undefined);
  });

  it('--exec-max-age and janitor.exec_max_age replace it; --keep-exec-trees and janitor.keep_exec_trees turn ending off', () => {
    assert.equal(resolveExecTrees({ execMaxAgeSeconds: 30 }, at({})).boundSeconds, 30);
    const cfg = configOf('/h/config.yaml', { janitor: { exec_max_age: '20m', keep_exec_trees: true } });
    const r = resolveExecTrees({}, at({}, cfg));
    assert.deepEqual([r.boundSeconds, r.end, r.boundSource], [1200, false, 'janitor.exec_max_age in /h/config.yaml']);
    assert.equal(resolveExecTrees({ keepExecTrees: false }, at({}, cfg)).end, true);
    assert.throws(
      () => resolveExecTrees({}, at({}, configOf('/h/config.yaml', { janitor: { exec_max_age: 'soon' } }))),
      new RegExp(
        /^UsageError: janitor\.exec_max_age in \/h\/config\.yaml must be a duration such as 20m or 1h/.source +
          / \(or seconds\), got 'soon': fix the file or pass --exec-max-age$/.source,
      ),
    );
  });
});

/** A procfs root showing `pid` with its real stat and a cgroup naming container `f...f` (removed after the file). */
function fakeProcRoot(pid: number): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hj-proc-'));
  mkdirSync(path.join(dir, 'proc', String(pid)), { recursive: true });
  symlinkSync(`/proc/${pid}/stat`, path.join(dir, 'proc', String(pid), 'stat'));
  writeFileSync(path.join(dir, 'proc', String(pid), 'cgroup'), `0::/system.slice/docker-${'f'.repeat(64)}.scope\n`);
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('exec trees: /proc on this host (real processes)', () => {
  it('parses a stat line whose command name holds spaces and parentheses', () => {
    const line = '4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 1000 100 18446744073709551615';
    assert.deepEqual(parseStat(4242, line), { pid: 4242, ppid: 17, startTicks: 123456 });
  });

  it("signals only the process that was seen: the same pid with another start time, or out of the sandbox's cgroup, is not signalled", async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    const exited = once(child, 'exit');
    try {
      const proc = procAccess();
      const pid = child.pid!;
      const start = proc.startTicks(pid)!;
      assert.ok(Number.isSafeInteger(start), 'its start time is readable');
      const snap = proc.snapshot()!;
      assert.equal(snap.procs.get(pid)?.ppid, process.pid, 'its parent is this process');
      // The pid "reused" by another process: a start time that differs.
      // Its cgroup as the sandbox's: this process's own (the test's own cgroup names no container).
      const container = 'f'.repeat(64);
      const mine = procAccess(path.join(fakeProcRoot(pid), 'proc'));
      assert.equal(proc.signal({ pid, startTicks: start + 1 }, 'SIGTERM', container), 'changed');
      assert.equal(proc.signal({ pid, startTicks: start }, 'SIGTERM', container), 'changed', 'the start time seen, another cgroup');
      assert.equal(proc.alive({ pid, startTicks: start }), true, 'not signalled');
      assert.equal(child.exitCode, null);
      assert.equal(mine.signal({ pid, startTicks: start }, 'SIGTERM', container), 'sent');
      const [, signal] = await exited;
      assert.equal(signal, 'SIGTERM');
      assert.equal(proc.alive({ pid, startTicks: start }), false);
      assert.equal(proc.signal({ pid, startTicks: start }, 'SIGKILL', container), 'gone');
    } finally {
      child.kill('SIGKILL');
    }
  });
});

/** A process table the test controls, recording every signal sent. */
class FakeProc implements ProcAccess {
  procs = new Map<number, ProcEntry>();
  readonly sent: Array<[number, string]> = [];
  /** Processes that ignore SIGTERM. */
  readonly stubborn = new Set<number>();
  /** Processes outside the sandbox's cgroup (a host process). */
  readonly outside = new Set<number>();
  /** Runs right before the nth signal (the pid reused in between). */
  beforeSignal: (() => void) | null = null;
  /** Runs at each snapshot, with its number (1: the survey's). */
  onSnapshot: ((n: number) => void) | null = null;
  private snapshots = 0;
  snapshot() {
    this.snapshots++;
    this.onSnapshot?.(this.snapshots);
    return { procs: new Map(this.procs), bootMs: 0, ticksPerSecond: 100 };
  }
  startTicks(pid: number) {
    return this.procs.get(pid)?.startTicks ?? null;
  }
  /** The sandbox's id (its cgroup). */
  sandboxId = '';
  pidNamespace() {
    return null;
  }
  inContainer(pid: number, id: string) {
    return id === this.sandboxId && this.procs.has(pid) && !this.outside.has(pid);
  }
  alive(p: ProcIdentity) {
    return this.procs.get(p.pid)?.startTicks === p.startTicks;
  }
  signal(p: ProcIdentity, sig: 'SIGTERM' | 'SIGKILL', container: string) {
    this.beforeSignal?.();
    this.beforeSignal = null;
    const now = this.procs.get(p.pid);
    if (!now) return 'gone' as const;
    if (now.startTicks !== p.startTicks || !this.inContainer(p.pid, container)) return 'changed' as const;
    this.sent.push([p.pid, sig]);
    if (sig === 'SIGKILL' || !this.stubborn.has(p.pid)) this.procs.delete(p.pid);
    return 'sent' as const;
  }
}

describe('exec trees: the reaper step (engine simulator, a process table the test controls)', () => {
  let sim: EngineSimulator;
  let engine: EngineClient;
  // Exec ids of the latest sandbox (each its own: the simulator finds an exec in any of its containers).
  let EXEC = '';
  let YOUNG = '';
  // Boot at 0 ms, 100 ticks a second: start tick 100 is 1 s after boot; judged at 1000 s, it is 999 s old.
  const asOf = new Date(1_000_000);
  const opts = (proc: FakeProc) => ({ boundSeconds: 600, boundSource: 'test', end: true, proc });
  const ctx = { dryRun: false, stopTimeoutSeconds: 0, now: () => asOf, container: 'hermes-test' };

  before(async () => {
    sim = await EngineSimulator.start();
    engine = await createDockerodeEngine({ host: sim.host, socketPath: sim.socketPath! });
  });
  after(() => sim.close());

  /** A sandbox (init 100, command 101, a job 102 left to init) with an old exec (200 > 201) and a young one (300). */
  function sandbox() {
    const id = sim.add({ state: 'running', labels: { 'hermes-agent': '1' } });
    EXEC = randomBytes(32).toString('hex');
    YOUNG = randomBytes(32).toString('hex');
    sim.setExecDetails(id, EXEC, { pid: 200, entrypoint: 'sh', arguments: ['-c', 'sleep 1000 & sleep 1000'] });
    sim.setExecDetails(id, YOUNG, { pid: 300, entrypoint: 'sleep', arguments: ['5'] });
    const proc = new FakeProc();
    proc.procs = table([
      [100, 50, 50],
      [101, 100, 60],
      [102, 100, 70],
      [200, 50, 100],
      [201, 200, 110],
      [300, 50, 99_000],
    ]);
    proc.sandboxId = id;
    return { id, proc, details: { id, pid: 100, execIds: [EXEC, YOUNG] } };
  }

  it('ends the old tree (SIGTERM to its two processes), leaves the young exec, init, its command and the job', async () => {
    const { details, proc } = sandbox();
    const survey = await surveyExecs(engine, details, opts(proc), { asOf });
    assert.deepEqual(
      survey.execs.map((x) => [x.view.id, Math.round(x.view.ageSeconds!), x.view.processes, x.view.abandoned]),
      [
        [EXEC, 999, 2, true],
        [YOUNG, 10, 1, false],
      ],
    );
    assert.equal(survey.execs[0]!.view.command, 'sh -c sleep 1000 & sleep 1000');
    assert.deepEqual(abandonedLoad(survey), { execIds: new Set([EXEC]), processes: 2 });
    const r = await endAbandonedTrees(engine, details, survey, opts(proc), ctx);
    assert.deepEqual(r, { ended: [{ container: 'hermes-test', execId: EXEC, ageSeconds: 999, processes: 2, killed: 0 }], kept: [], failed: [] });
    assert.deepEqual(proc.sent, [
      [200, 'SIGTERM'],
      [201, 'SIGTERM'],
    ]);
    assert.deepEqual([...proc.procs.keys()].sort(), [100, 101, 102, 300]);
  });

  it('a tree that ignores SIGTERM gets SIGKILL after the grace', async () => {
    const { details, proc } = sandbox();
    proc.stubborn.add(200).add(201);
    const survey = await surveyExecs(engine, details, opts(proc), { asOf });
    const r = await endAbandonedTrees(engine, details, survey, opts(proc), ctx);
    assert.equal(r.ended[0]!.killed, 2);
    assert.deepEqual(proc.sent, [
      [200, 'SIGTERM'],
      [201, 'SIGTERM'],
      [200, 'SIGKILL'],
      [201, 'SIGKILL'],
    ]);
  });

  it('the exec pid reused by another process between the survey and the signal: nothing is signalled', async () => {
    const { details, proc } = sandbox();
    const survey = await surveyExecs(engine, details, opts(proc), { asOf });
    // The exec's process ended and the pid went to another process (another start time) before the re-check.
    proc.procs.set(200, { pid: 200, ppid: 50, startTicks: 98_000 });
    const r = await endAbandonedTrees(engine, details, survey, opts(proc), ctx);
    assert.deepEqual(r, { ended: [], kept: [{ container: 'hermes-test', execId: EXEC, reason: 'process-changed' }], failed: [] });
    assert.deepEqual(proc.sent, []);
  });

  it('a child pid reused between the tree snapshot and its signal is not signalled', async () => {
    const { details, proc } = sandbox();
    const survey = await surveyExecs(engine, details, opts(proc), { asOf });
    proc.beforeSignal = () => proc.procs.set(201, { pid: 201, ppid: 1, startTicks: 98_500 });
    await endAbandonedTrees(engine, details, survey, opts(proc), ctx);
    // The first signal (200) ran after the swap of 201; 201, now another process, got none.
    assert.deepEqual(proc.sent, [[200, 'SIGTERM']]);
    assert.equal(proc.procs.get(201)?.startTicks, 98_500);
  });

  it('a survivor whose pid another process took between the grace and SIGKILL: the new process survives', async () => {
    const { details, proc } = sandbox();
    proc.stubborn.add(200).add(201);
    const survey = await surveyExecs(engine, details, opts(proc), { asOf });
    // The window held open right before the SIGKILL phase: 200 ended, and the process of an exec hermes runs now
    // (under the runtime's shim, in the sandbox's cgroup) took its pid.
    proc.onSnapshot = (n) => {
      if (n === 3) proc.procs.set(200, { pid: 200, ppid: 50, startTicks: 99_500 });
    };
    const r = await endAbandonedTrees(engine, details, survey, opts(proc), ctx);
    assert.deepEqual(proc.sent, [
      [200, 'SIGTERM'],
      [201, 'SIGTERM'],
      [201, 'SIGKILL'],
    ]);
    assert.equal(r.ended[0]!.killed, 1);
    assert.equal(proc.procs.get(200)?.startTicks, 99_500, 'the new process at pid 200 was not signalled');
  });

  it("a process with the start time seen but out of the sandbox's cgroup is never signalled, SIGTERM or SIGKILL", async () => {
    const { details, proc } = sandbox();
    proc.stubborn.add(200);
    const survey = await surveyExecs(engine, details, opts(proc), { asOf });
    // 201 moved out of the sandbox's cgroup before the SIGTERM (as a process taking its pid with its start time would be).
    proc.beforeSignal = () => proc.outside.add(201);
    // 200 leaves the cgroup during the grace: its SIGKILL is refused too.
    proc.onSnapshot = (n) => {
      if (n === 3) proc.outside.add(200);
    };
    const r = await endAbandonedTrees(engine, details, survey, opts(proc), ctx);
    assert.deepEqual(proc.sent, [[200, 'SIGTERM']]);
    assert.equal(r.ended[0]!.killed, 0);
    assert.deepEqual([...proc.procs.keys()].sort(), [100, 101, 102, 200, 201, 300]);
  });

  it('an exec the engine says has ended since the survey: nothing is signalled', async () => {
    const { id, details, proc } = sandbox();
    const survey = await surveyExecs(engine, details, opts(proc), { asOf });
    sim.setExecs(id, []);
    const r = await endAbandonedTrees(engine, details, survey, opts(proc), ctx);
    assert.deepEqual(r.kept, [{ container: 'hermes-test', execId: EXEC, reason: 'exec-ended' }]);
    assert.deepEqual(proc.sent, []);
  });

  it('--keep-exec-trees and dry runs report, never signal; an engine on another host ends none and says why', async () => {
    const { details, proc } = sandbox();
    const survey = await surveyExecs(engine, details, opts(proc), { asOf });
    const kept = await endAbandonedTrees(engine, details, survey, { ...opts(proc), end: false }, ctx);
    assert.deepEqual(
      kept.kept.map((k) => k.reason),
      ['keep-exec-trees'],
    );
    const dry = await endAbandonedTrees(engine, details, survey, opts(proc), { ...ctx, dryRun: true });
    assert.deepEqual(
      dry.kept.map((k) => k.reason),
      ['dry-run'],
    );
    const remote = { ...engine, host: 'tcp://10.0.0.5:2376', execInspect: engine.execInspect.bind(engine) } as EngineClient;
    const far = await surveyExecs(remote, details, opts(proc), { asOf });
    assert.deepEqual(
      far.execs.map((x) => [x.view.ageSeconds, x.view.processes, x.view.abandoned]),
      [
        [null, null, false],
        [null, null, false],
      ],
    );
    const r = await endAbandonedTrees(remote, details, far, opts(proc), ctx);
    assert.deepEqual(
      r.kept.map((k) => k.reason),
      ['engine-not-local', 'engine-not-local'],
    );
    assert.deepEqual(proc.sent, []);
  });

  it("an exec whose process is not in the container's cgroup has no age here: never abandoned", async () => {
    const { details, proc } = sandbox();
    proc.inContainer = () => false;
    const survey = await surveyExecs(engine, details, opts(proc), { asOf });
    assert.deepEqual(
      survey.execs.map((x) => x.view.abandoned),
      [false, false],
    );
    const withEvent = await surveyExecs(engine, details, opts(proc), { asOf, execStarts: new Map([[EXEC, 1000]]) });
    assert.deepEqual(
      withEvent.execs.map((x) => [x.view.ageSeconds, x.view.abandoned]),
      [
        [999, true],
        [null, false],
      ],
    );
    const r = await endAbandonedTrees(engine, details, withEvent, opts(proc), ctx);
    assert.deepEqual(
      r.kept.map((k) => k.reason),
      ['process-not-found'],
    );
    assert.deepEqual(proc.sent, []);
  });
});
