/**
 * Exec trees hermes abandoned (#29), against the real engine: Docker, and Podman through its Docker-compatible API
 * (HERMES_JANITOR_TEST_ENGINE=podman DOCKER_HOST=unix:///run/hermes-janitor/podman.sock).
 *
 * hermes runs each command as `docker exec <id> bash -c CMD` and, at its timeout, kills its exec client only
 * (`timeout -s KILL 2 docker exec ...` does the same here): the tree runs on in the sandbox. The bound is set short
 * through hermes' own settings: TERMINAL_MAX_FOREGROUND_TIMEOUT=1 in the profile's .env, `terminal.timeout: 3` and
 * `code_execution.timeout: 1` in the profile's config.yaml: 2 x 3 s = 6 s.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, afterEach, before, describe, it } from 'node:test';
import { createDockerodeEngine } from '../../src/adapters/dockerode-engine.js';
import type { EngineClient } from '../../src/adapters/engine.js';
import { type ProcAccess, procAccess } from '../../src/passes/exec-trees/proc-table.js';
import { type ProcIdentity, treeOf } from '../../src/passes/exec-trees/rule.js';
import { endAbandonedTrees, surveyExecs } from '../../src/passes/exec-trees/run.js';
import { unmet } from '../helpers/preconditions.js';
import { runCli, tempDir } from '../helpers/cli.js';
import { WatchProcess } from '../helpers/watch-process.js';
import { ENGINE_HOST, ENGINE_KIND, ENGINE_SOCKET, EngineFixture, docker, requireEngine } from '../helpers/docker.js';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const BOUND_S = 6;

interface ExecJson {
  id: string;
  ageSeconds: number | null;
  processes: number | null;
  command: string;
  abandoned: boolean;
}
interface Entry {
  id: string;
  name: string;
  state: string;
  idleReason?: string;
  processes?: number | null;
  execs?: ExecJson[];
}
interface Trees {
  ended: Array<{ container: string; execId: string; ageSeconds: number; processes: number; killed: number }>;
  kept: Array<{ container: string; execId: string; reason: string }>;
  failed: unknown[];
}
interface ReapJson {
  stopped: Entry[];
  kept: Entry[];
  failed: Entry[];
  execTrees: Trees;
}

/** A command whose client hermes' timeout killed: the client is SIGKILLed after 2 s, the exec runs on. */
async function abandonedExec(id: string, script: string): Promise<void> {
  await run('timeout', ['-s', 'KILL', '2', 'docker', 'exec', id, 'sh', '-c', script]).catch(() => undefined);
}

/** A background job started the way hermes starts one: one short exec, the job left to init. */
async function startJob(id: string): Promise<void> {
  const job =
    `( sh -c 'trap "" HUP; exec sleep 600' > /tmp/hermes_bg_t.log 2>&1; rc=$?; printf '%s' "$rc" > /tmp/hermes_bg_t.exit )` +
    ' > /dev/null 2>&1 & echo $! > /tmp/hermes_bg_t.pid';
  await docker(['exec', id, 'sh', '-c', job]);
}

const jobAlive = (id: string) =>
  docker(['exec', id, 'sh', '-c', 'kill -0 "$(cat /tmp/hermes_bg_t.pid)" && echo alive']).then(
    (o) => o === 'alive',
    () => false,
  );

const NS_LAST_PID = '/proc/sys/kernel/ns_last_pid';

/** Blocks for `ms` (inside a synchronous hook). */
const blockFor = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Ends process `pid` (SIGKILL) and hands its pid to a new host process (`sleep 300`, a child of a shell of this
 * test's: not in any sandbox) through `ns_last_pid`; tried again while other processes of the machine take it first.
 */
function handPidToHostProcess(pid: number): number {
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 500 && existsSync(`/proc/${pid}`); i++) blockFor(10);
  for (let attempt = 0; attempt < 200; attempt++) {
    const r = spawnSync('sh', ['-c', `echo ${pid - 1} > ${NS_LAST_PID}; sleep 300 > /dev/null 2>&1 & echo $!`], { encoding: 'utf8' });
    const got = Number(r.stdout.trim());
    if (got === pid) return got;
    if (got > 0) process.kill(got, 'SIGKILL');
  }
  throw new Error(`pid ${pid} could not be handed to another process`);
}

describe(`exec trees hermes abandoned are ended; the job and young execs run on (${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const home = tempDir('hj-execs-');
  const hermesHome = path.join(home.dir, 'hermes');
  const env = { HOME: home.dir, HERMES_HOME: hermesHome };
  const sel = ['--profile', fx.profile];
  const clients: ChildProcess[] = [];
  let engine: EngineClient;
  const cli = async (args: string[]) => {
    const r = await runCli([...args, ...sel], { env });
    assert.equal(r.code, 0, r.stderr);
    return r;
  };
  const listed = async (id: string) =>
    (JSON.parse((await cli(['list', '--json', '--idle-after', '2s'])).stdout).containers as Entry[]).find((e) => e.id === id)!;
  const reapJson = async (args: string[] = []) => JSON.parse((await cli(['reap', '--json', '--idle-after', '2s', ...args])).stdout) as ReapJson;
  /** The exec's process and its descendants on this host, as they are now. */
  const treeNow = async (execId: string): Promise<ProcIdentity[]> => {
    const e = await engine.execInspect(execId);
    return e && e.pid ? treeOf(procAccess().snapshot()!.procs, e.pid) : [];
  };
  /** Waits (bounded) until the engine says the exec no longer runs. */
  const execEnds = async (execId: string, ms = 10_000) => {
    for (const until = Date.now() + ms; Date.now() < until; await sleep(100)) if (!(await engine.execInspect(execId))?.running) return;
    assert.fail(`the engine still reports exec ${execId.slice(0, 12)} running`);
  };

  /** Waits (bounded) until the engine runs the young exec (`sleep 120`). */
  const youngRunning = async (id: string, ms = 10_000) => {
    for (const until = Date.now() + ms; Date.now() < until; await sleep(50)) {
      const d = await engine.inspect(id);
      for (const x of d?.execIds ?? []) {
        const e = await engine.execInspect(x);
        if (e?.running && e.entrypoint === 'sleep') return;
      }
    }
    assert.fail('the young exec did not start');
  };

  before(async () => {
    await requireEngine();
    engine = await createDockerodeEngine({ host: ENGINE_HOST, socketPath: ENGINE_SOCKET });
    const profileHome = path.join(hermesHome, 'profiles', fx.profile);
    mkdirSync(profileHome, { recursive: true });
    writeFileSync(path.join(profileHome, 'config.yaml'), 'terminal:\n  timeout: 3\ncode_execution:\n  timeout: 1\n');
    // In the profile's .env, read by both of hermes' readings (the environment alone would only shorten the launch one).
    writeFileSync(path.join(profileHome, '.env'), 'TERMINAL_MAX_FOREGROUND_TIMEOUT=1\n');
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.kill('SIGKILL');
    await fx.removeContainers();
  });
  after(async () => {
    await fx.cleanup();
    home.cleanup();
  });

  it('ends the old tree; the background job and a young exec run on; the count is back to init + sleep + the job', async () => {
    const id = await fx.create({ state: 'running', cmd: ['sleep', 'infinity'] });
    await startJob(id);
    const baseline = (await listed(id)).processes!;
    assert.ok(baseline > 2, `init, sleep and the job: ${baseline}`);
    const t0 = Date.now();
    await abandonedExec(id, 'sleep 1000 & sleep 1000');
    await sleep(Math.max(0, t0 + BOUND_S * 1000 + 700 - Date.now()));
    // A second exec started just now, its client waiting for it (a command hermes is running).
    const young = spawn('docker', ['exec', id, 'sleep', '120'], { stdio: 'ignore' });
    clients.push(young);
    await youngRunning(id);
    const entry = await listed(id);
    const [old, fresh] = [...entry.execs!].sort((a, b) => b.ageSeconds! - a.ageSeconds!);
    assert.deepEqual([old!.abandoned, old!.processes, old!.command], [true, 2, 'sh -c sleep 1000 & sleep 1000'], JSON.stringify(entry.execs));
    assert.ok(old!.ageSeconds! > BOUND_S, `old exec ${old!.ageSeconds} s`);
    assert.deepEqual([fresh!.abandoned, fresh!.processes, fresh!.command], [false, 1, 'sleep 120']);
    const oldTree = await treeNow(old!.id);
    assert.equal(oldTree.length, 2);

    const out = await reapJson();
    assert.deepEqual(
      out.execTrees.ended.map((t) => [t.execId, t.container, t.processes, t.killed]),
      [[old!.id, entry.name, 2, 0]],
      JSON.stringify(out.execTrees),
    );
    assert.deepEqual([out.execTrees.kept, out.execTrees.failed], [[], []]);
    await execEnds(old!.id);
    for (const p of oldTree) assert.equal(procAccess().alive(p), false, `pid ${p.pid} of the old tree is gone`);
    assert.ok(await jobAlive(id), 'the background job runs on');
    assert.equal((await engine.execInspect(fresh!.id))?.running, true, 'the young exec runs on');
    assert.equal(await fx.state(id), 'running');
    const kept = out.kept.find((e) => e.id === id)!;
    assert.equal(kept.idleReason, 'exec-in-flight', 'the young exec is in flight');

    // The young command finishes (here: ended from the host, as if it had completed), its client returns.
    process.kill((await engine.execInspect(fresh!.id))!.pid, 'SIGKILL');
    await once(young, 'exit');
    await execEnds(fresh!.id);
    const now = await listed(id);
    assert.equal(now.processes, baseline, 'init + sleep + the job');
    assert.deepEqual((now.execs ?? []).length, 0);
    assert.equal(now.idleReason, 'in-use', 'the job is the sandbox in use');
  });

  it('a tree that ignores SIGTERM ends by SIGKILL after --stop-timeout', async () => {
    const id = await fx.create({ state: 'running', cmd: ['sleep', 'infinity'] });
    const t0 = Date.now();
    await abandonedExec(id, 'trap "" TERM; sleep 1000 & sleep 1000');
    await sleep(Math.max(0, t0 + BOUND_S * 1000 + 700 - Date.now()));
    const [x] = (await listed(id)).execs!;
    const tree = await treeNow(x!.id);
    assert.equal(tree.length, 2);
    const started = Date.now();
    const out = await reapJson(['--stop-timeout', '1']);
    assert.deepEqual(
      out.execTrees.ended.map((t) => [t.execId, t.processes, t.killed]),
      [[x!.id, 2, 2]],
      JSON.stringify(out.execTrees),
    );
    assert.ok(Date.now() - started >= 1000, 'SIGKILL came after the grace');
    await execEnds(x!.id);
    for (const p of tree) assert.equal(procAccess().alive(p), false);
  });

  it("a survivor's pid taken by a host process while SIGKILL waits: the host process survives, the rest of the tree is killed", async (t) => {
    if (unmet(t, process.getuid?.() !== 0 || !existsSync(NS_LAST_PID) ? `needs root and ${NS_LAST_PID} (to hand a pid to another process)` : false)) return;
    const id = await fx.create({ state: 'running', cmd: ['sleep', 'infinity'] });
    const t0 = Date.now();
    // The exec's shell waits for its child (so that a child that ends is reaped and its pid freed), then sleeps.
    await abandonedExec(id, 'trap "" TERM; sleep 1000 & wait $!; sleep 1000');
    await sleep(Math.max(0, t0 + BOUND_S * 1000 + 700 - Date.now()));
    const details = (await engine.inspect(id))!;
    // The real /proc, with the window right before the SIGKILL held open: the third snapshot is the SIGKILL phase's
    // (the survey's, the re-check's, then the survivors'); before it, the exec's child ends (its shell reaps it and
    // goes on to its last command) and a host process takes its pid. (Not the shell's own pid: it names the process
    // group while any of the tree lives, and the kernel hands out no pid still in use as a group's.)
    const real = procAccess();
    let snapshots = 0;
    let taker = 0;
    let victim = 0;
    const proc: ProcAccess = {
      ...real,
      snapshot() {
        if (++snapshots === 3) taker = handPidToHostProcess(victim);
        return real.snapshot();
      },
    };
    const opts = { boundSeconds: BOUND_S, boundSource: 'test', end: true, proc };
    try {
      const survey = await surveyExecs(engine, details, opts, { asOf: new Date() });
      const x = survey.execs.find((e) => e.view.abandoned)!;
      assert.ok(x?.root, JSON.stringify(survey.execs.map((e) => e.view)));
      const tree = await treeNow(x.view.id);
      assert.equal(tree.length, 2);
      victim = tree[1]!.pid;
      const r = await endAbandonedTrees(engine, details, survey, opts, { dryRun: false, stopTimeoutSeconds: 1, now: () => new Date(), container: 'c' });
      assert.equal(taker, victim, `the pid went to the host process: ${JSON.stringify(r)}`);
      const takerStart = real.startTicks(taker);
      assert.ok(takerStart !== null && real.alive({ pid: taker, startTicks: takerStart }), 'the host process that took the pid is alive');
      assert.deepEqual(
        r.ended.map((e) => e.processes),
        [2],
        JSON.stringify(r),
      );
      assert.ok(r.ended[0]!.killed >= 1, JSON.stringify(r));
      // SIGKILL sent: the exec's own process is gone a moment later.
      for (let i = 0; i < 50 && real.alive(tree[0]!); i++) await sleep(100);
      assert.equal(real.alive(tree[0]!), false, "the rest of the tree (the exec's own process) was killed");
    } finally {
      if (taker) process.kill(taker, 'SIGKILL');
    }
  });

  it('with the tree ended and nothing else running, the idle rule stops the sandbox on a later run', async () => {
    const id = await fx.create({ state: 'running', cmd: ['sleep', 'infinity'] });
    const t0 = Date.now();
    await abandonedExec(id, 'sleep 1000 & sleep 1000');
    await sleep(Math.max(0, t0 + BOUND_S * 1000 + 700 - Date.now()));
    // The abandoned tree is nobody's use: the idle rule observes (not in use, no exec in flight) even while it runs.
    const seen = await listed(id);
    assert.deepEqual([seen.idleReason, seen.execs!.map((x) => x.abandoned)], ['observing', [true]], JSON.stringify(seen));
    const status = JSON.parse((await cli(['status', '--json'])).stdout) as { runningSandboxes: Array<{ id: string; execs: ExecJson[] }> };
    assert.deepEqual(
      status.runningSandboxes.find((s) => s.id === id)?.execs.map((x) => [x.id, x.abandoned]),
      [[seen.execs![0]!.id, true]],
    );
    const statusText = (await cli(['status'])).stdout;
    assert.match(
      statusText,
      new RegExp(
        `^  exec ${seen.execs![0]!.id.slice(0, 12)} in ${seen.name}: running \\d+ seconds, 2 processes, no client, ABANDONED: sh -c sleep 1000 & sleep 1000$`,
        'm',
      ),
      statusText,
    );

    // --keep-exec-trees reports it and ends nothing.
    const kept = await reapJson(['--keep-exec-trees', '--idle-after', '60s']);
    assert.deepEqual(
      kept.execTrees.kept.map((k) => [k.execId, k.reason]),
      [[seen.execs![0]!.id, 'keep-exec-trees']],
    );
    assert.equal((await engine.execInspect(seen.execs![0]!.id))?.running, true);

    const metrics = path.join(home.dir, 'hj.prom');
    const text = await cli(['reap', '--idle-after', '60s', '--metrics-file', metrics]);
    assert.match(
      text.stdout,
      new RegExp(`^ended exec tree ${seen.execs![0]!.id.slice(0, 12)} in ${seen.name} \\(running \\d+ seconds, 2 processes\\)$`, 'm'),
      text.stdout,
    );
    assert.match(text.stdout, /; exec trees: ended 1, kept 0, failed 0 \(/);
    assert.match(readFileSync(metrics, 'utf8'), /^hermes_janitor_exec_trees\{state="ended",home="[^"]+"\} 1$/m);
    await execEnds(seen.execs![0]!.id);
    assert.equal(await fx.state(id), 'running');
    // Judged as any other sandbox from here: idle for the idle threshold (2 s), then stopped.
    let stopped: string[] = [];
    for (let round = 0; round < 3 && stopped.length === 0; round++) {
      await sleep(2600);
      // --idle-after-owned too: a hermes on this host (another run's stand-in, hermes itself) may own every profile.
      stopped = (await reapJson(['--idle-after-owned', '2s'])).stopped.map((e) => e.id);
    }
    assert.deepEqual(stopped, [id]);
    assert.equal(await fx.state(id), 'exited');
  });

  it("an exec whose command holds ESC, CR and an OSC 8 link: status's text has none of those bytes raw; its JSON keeps the command exact", async () => {
    const id = await fx.create({ state: 'running', cmd: ['sleep', 'infinity'] });
    const evil = 'sleep 1000 # \u001b[2J\u001b]8;;https://example.invalid/\u0007click\u001b]8;;\u0007\rforged line\u009b31m';
    await docker(['exec', '-d', id, 'sh', '-c', evil]);
    const text = (await cli(['status'])).stdout;
    assert.match(text, /exec [0-9a-f]{12} in \S+: .*sh -c sleep 1000 # \\u001b\[2J\\u001b\]8;;https:\/\/example\.invalid\/\\u0007click/, text);
    for (const raw of ['\u001b', '\r', '\u0007', '\u009b']) assert.ok(!text.includes(raw), `status text holds ${JSON.stringify(raw)} raw`);
    const json = (await cli(['status', '--json'])).stdout;
    for (const raw of ['\u001b', '\r', '\u0007', '\u009b']) assert.ok(!json.includes(raw), `status JSON holds ${JSON.stringify(raw)} raw`);
    const doc = JSON.parse(json) as { runningSandboxes: Array<{ id: string; execs: ExecJson[] }> };
    assert.deepEqual(
      doc.runningSandboxes.find((x) => x.id === id)?.execs.map((x) => x.command),
      [`sh -c ${evil}`],
    );
  });

  it('watch ends an abandoned tree at its idle re-check, aged by the exec_start event it saw', async () => {
    const w = WatchProcess.start([...sel, '--idle-after', '2s', '--stop-timeout', '1', '--exec-max-age', '5s'], env);
    try {
      await w.waitFor('connected', (lines) => lines.some((l) => l.event === 'engine' && l.state === 'connected'));
      const id = await fx.create({ state: 'running', cmd: ['sleep', 'infinity'] });
      await abandonedExec(id, 'sleep 1000 & sleep 1000');
      await w.waitFor('exec-tree-ended', (lines) => lines.some((l) => l.event === 'exec-tree-ended'), 40_000);
      const [ended] = w.events('exec-tree-ended');
      assert.equal(ended!.processes, 2, JSON.stringify(ended));
      assert.ok((ended!.ageSeconds as number) >= 5, JSON.stringify(ended));
      await execEnds(ended!.execId as string);
      assert.equal(await fx.state(id), 'running', 'ended the tree, not the sandbox (the idle rule judges it afresh)');
    } finally {
      await w.stop();
    }
  });
});
