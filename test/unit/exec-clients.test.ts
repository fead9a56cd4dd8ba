/**
 * The client rule of the exec-tree pass (#38): an exec is abandoned only when no living `docker`/`podman` client of
 * this host is attached to it (its arguments name the container, then the exec's own command), and past the bound.
 * The pure rule (passes/exec-trees/rule-clients.ts), the procfs reader (passes/exec-trees/clients.ts) against procfs trees the test
 * makes, and the reaper step against the engine simulator with a process table and a client table the test
 * controls: a living client keeps an exec at any age; clients that cannot be seen keep it; a client that comes
 * between the survey and the signal keeps it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDockerodeEngine } from '../../src/adapters/dockerode-engine.js';
import type { EngineClient } from '../../src/adapters/engine.js';
import { clientReader, readClientTable } from '../../src/passes/exec-trees/clients.js';
import type { ProcAccess } from '../../src/passes/exec-trees/proc-table.js';
import { type ClientProcess, type ClientTable, assignClients, clientOf, namesContainer } from '../../src/passes/exec-trees/rule-clients.js';
import type { ProcEntry, ProcIdentity } from '../../src/passes/exec-trees/rule.js';
import { endAbandonedTrees, surveyExecs } from '../../src/passes/exec-trees/run.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

const ID = `4f3c2b1a${'0'.repeat(48)}9e8d7c6b`;
const C = { id: ID, name: 'hermes-1a2b3c4d' };
const STREAM = ['bash', '-c', 'export DISPLAY=:1; exec sleep 100000'];
const proc = (argv: string[], o: Partial<ClientProcess> = {}): ClientProcess => ({ pid: 4242, uid: 1000, startedAtMs: 1_000, comm: 'docker', argv, ...o });

describe('exec clients: the pure rule', () => {
  it("a client names the container (full id, an id prefix, its name) right before the exec's own command, after an exec subcommand", () => {
    for (const argv of [
      ['docker', 'exec', '-i', ID, ...STREAM],
      ['/usr/bin/docker', 'exec', '-i', '-u', 'hermes', ID.slice(0, 12), ...STREAM],
      ['docker', '-H', 'unix:///run/docker.sock', 'container', 'exec', '-i', 'hermes-1a2b3c4d', ...STREAM],
      ['podman', 'exec', '-i', '/hermes-1a2b3c4d', ...STREAM],
      ['docker', '--context', 'exec', 'exec', '-e', 'A=1', '-w', '/workspace', ID, ...STREAM],
    ]) {
      assert.equal(clientOf(proc(argv), C, STREAM), true, argv.join(' '));
    }
  });

  it('anything else is no client: another container, another command, a command it only starts with, no exec', () => {
    const other = `${'a'.repeat(64)}`;
    for (const [argv, comm] of [
      [['docker', 'exec', '-i', other, ...STREAM], 'docker'],
      [['docker', 'exec', '-i', ID, 'bash', '-c', 'exec sleep 100001'], 'docker'],
      [['docker', 'exec', '-i', ID, ...STREAM, 'more'], 'docker'],
      [['docker', 'run', '-i', ID, ...STREAM], 'docker'],
      [['docker', 'exec', ID], 'docker'],
      [['ssh', 'host', 'docker', 'run', '-i', ID, ...STREAM], 'ssh'],
      [['docker', 'exec', '-i', 'hermes-1a2b3c4', ...STREAM], 'docker'],
    ] as Array<[string[], string]>) {
      assert.equal(clientOf(proc(argv, { comm }), C, STREAM), false, argv.join(' '));
    }
    assert.equal(namesContainer('', C), false);
    assert.equal(namesContainer('4F3C', C), false, 'ids are lower-case hex');
  });

  it('by what it runs, whatever its program is called: podman-remote, a docker CLI copied under another name (#47)', () => {
    assert.equal(clientOf(proc(['/opt/bin/dkr', 'exec', ID, ...STREAM], { comm: 'docker' }), C, STREAM), true);
    assert.equal(clientOf(proc(['docker', 'exec', ID, ...STREAM], { comm: 'python3' }), C, STREAM), true);
    assert.equal(clientOf(proc(['dkr', 'exec', ID, ...STREAM], { comm: 'dkr' }), C, STREAM), true);
    assert.equal(clientOf(proc(['podman-remote', 'exec', '-it', ID, ...STREAM], { comm: 'podman-remote' }), C, STREAM), true);
    assert.equal(clientOf(proc(['ssh', 'host', 'docker', 'exec', '-i', ID, ...STREAM], { comm: 'ssh' }), C, STREAM), true, 'kept: the safe side');
  });

  const table = (clients: ClientProcess[], unverifiable: string | null = null): ClientTable => ({ clients, unverifiable });
  const exec = (id: string, ageSeconds: number | null, command = STREAM) => ({ id, command, ageSeconds });

  it('several execs of one command: the newest keep the living clients, one each; the rest have none', () => {
    const v = assignClients(
      C,
      [exec('old', 5000), exec('new', 10), exec('mid', 900)],
      table([
        proc(['docker', 'exec', '-i', ID, ...STREAM], { pid: 11, startedAtMs: 2_000 }),
        proc(['docker', 'exec', '-i', ID, ...STREAM], { pid: 12, startedAtMs: 9_000 }),
      ]),
    );
    assert.deepEqual(v.get('new')?.client, { pid: 12, since: new Date(9_000).toISOString() });
    assert.deepEqual(v.get('mid')?.client, { pid: 11, since: new Date(2_000).toISOString() });
    assert.equal(v.get('old')?.client, null);
    assert.equal(v.get('old')?.unverifiable, null);
  });

  it('an exec of unknown age takes a client last (it is never ended); execs of other commands take none', () => {
    const v = assignClients(
      C,
      [exec('unknown', null), exec('known', 4000), exec('other', 4000, ['sh', '-c', 'x'])],
      table([proc(['docker', 'exec', ID, ...STREAM])]),
    );
    assert.equal(v.get('known')?.client?.pid, 4242);
    assert.equal(v.get('unknown')?.client, null);
    assert.equal(v.get('other')?.client, null);
  });

  it('clients that cannot be seen: every exec unverifiable, none said to have no client', () => {
    const v = assignClients(C, [exec('a', 5000)], table([], 'procfs is mounted with hidepid=2'));
    assert.deepEqual(v.get('a'), { client: null, unverifiable: 'procfs is mounted with hidepid=2' });
  });
});

describe('exec clients: the procfs reader', () => {
  let root = '';
  const pid = (n: number, comm: string, argv: string[] | 'dir', uid = 1000) => {
    const dir = path.join(root, String(n));
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'stat'), `${n} (${comm}) S 1 ${n} ${n} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 ${n * 100} 0 0`);
    writeFileSync(path.join(dir, 'status'), `Name:\t${comm}\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\n`);
    if (argv === 'dir') mkdirSync(path.join(dir, 'cmdline'));
    else writeFileSync(path.join(dir, 'cmdline'), argv.length ? `${argv.join('\0')}\0` : '');
  };
  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'hj-clients-'));
    writeFileSync(path.join(root, 'stat'), 'cpu 1 2 3\nbtime 1700000000\n');
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('reads the docker and podman processes (their arguments, owner, start), and only those', () => {
    pid(300, 'docker', ['docker', 'exec', '-i', ID, ...STREAM]);
    pid(301, 'podman', ['podman', 'exec', ID, 'sh']);
    pid(302, 'bash', ['bash', '-c', `docker exec ${ID} sh`]);
    pid(303, 'docker', []); // a zombie: no arguments
    const t = readClientTable(root);
    assert.equal(t.unverifiable, null);
    assert.deepEqual(t.clients.map((c) => [c.pid, c.comm, c.uid, c.startedAtMs, c.argv.length]).sort(), [
      [300, 'docker', 1000, 1_700_000_000_000 + 300_000, 7],
      [301, 'podman', 1000, 1_700_000_000_000 + 301_000, 4],
    ]);
  });

  it('with every: any process that runs an exec, whatever its program (read once an exec is past its bound, #47)', () => {
    pid(310, 'podman-remote', ['podman-remote', 'exec', '-it', ID, 'sh']);
    pid(311, 'dkr', ['/opt/dkr', '--log-level', 'error', 'exec', ID, ...STREAM]);
    pid(312, 'bash', ['bash', '-c', 'exec sleep 1']);
    pid(313, 'sleep', ['sleep', '100']);
    const narrow = readClientTable(root).clients.map((c) => c.pid);
    assert.ok(!narrow.includes(310) && !narrow.includes(311), 'docker and podman only without every');
    const wide = readClientTable(root, true).clients.map((c) => c.pid);
    assert.ok(wide.includes(310) && wide.includes(311) && wide.includes(300), JSON.stringify(wide));
    assert.ok(!wide.includes(312) && !wide.includes(313), 'no exec subcommand among its arguments: not kept');
    for (const n of [310, 311, 312, 313]) rmSync(path.join(root, String(n)), { recursive: true });
  });

  it('a client whose arguments cannot be read makes the table unverifiable; no procfs too', () => {
    pid(304, 'docker', 'dir');
    assert.match(readClientTable(root).unverifiable ?? '', /the arguments of docker process 304 cannot be read/);
    rmSync(path.join(root, '304'), { recursive: true });
    assert.match(readClientTable(path.join(root, 'none')).unverifiable ?? '', /cannot be read/);
  });

  it('a reader reuses its last table for the given age, and reads afresh with 0', () => {
    let now = 0;
    const read = clientReader(root, () => now);
    const first = read(1000);
    pid(305, 'docker', ['docker', 'exec', ID, 'true']);
    assert.equal(read(1000), first);
    now = 500;
    assert.equal(read(1000).clients.length, first.clients.length);
    assert.equal(read(0).clients.length, first.clients.length + 1);
  });
});

/** A process table the test controls, recording every signal sent. */
class FakeProc implements ProcAccess {
  procs = new Map<number, ProcEntry>();
  readonly sent: Array<[number, string]> = [];
  snapshot() {
    return { procs: new Map(this.procs), bootMs: 0, ticksPerSecond: 100 };
  }
  startTicks(pid: number) {
    return this.procs.get(pid)?.startTicks ?? null;
  }
  inContainer(pid: number) {
    return this.procs.has(pid);
  }
  alive(p: ProcIdentity) {
    return this.procs.get(p.pid)?.startTicks === p.startTicks;
  }
  /** The host's pid namespace: the janitor sees the engine's processes. */
  pidNamespace(): string | null {
    return this.partial;
  }
  partial: string | null = null;
  signal(p: ProcIdentity, sig: 'SIGTERM' | 'SIGKILL', _container: string) {
    if (this.procs.get(p.pid)?.startTicks !== p.startTicks) return 'changed' as const;
    this.sent.push([p.pid, sig]);
    this.procs.delete(p.pid);
    return 'sent' as const;
  }
}

describe('exec clients: the reaper step (engine simulator, process and client tables the test controls)', () => {
  let sim: EngineSimulator;
  let engine: EngineClient;
  const asOf = new Date(1_000_000);
  const ctx = { dryRun: false, stopTimeoutSeconds: 0, now: () => asOf, container: 'hermes-test' };

  before(async () => {
    sim = await EngineSimulator.start();
    engine = await createDockerodeEngine({ host: sim.host, socketPath: sim.socketPath! });
  });
  after(() => sim.close());

  /**
   * A sandbox with two execs of the stream's command, both past the bound (999 s and 900 s old, bound 600 s), and a
   * client table the test changes: `clients.now` is what a read sees.
   */
  function sandbox() {
    const id = sim.add({ state: 'running', labels: { 'hermes-agent': '1' } });
    const older = randomBytes(32).toString('hex');
    const newer = randomBytes(32).toString('hex');
    sim.setExecDetails(id, older, { pid: 200, entrypoint: STREAM[0]!, arguments: STREAM.slice(1) });
    sim.setExecDetails(id, newer, { pid: 300, entrypoint: STREAM[0]!, arguments: STREAM.slice(1) });
    const p = new FakeProc();
    p.procs = new Map([
      [100, { pid: 100, ppid: 50, startTicks: 50 }],
      [200, { pid: 200, ppid: 50, startTicks: 100 }],
      [300, { pid: 300, ppid: 50, startTicks: 10_000 }],
    ]);
    const clients = { now: { clients: [] as ClientProcess[], unverifiable: null as string | null }, reads: 0 };
    const opts = { boundSeconds: 600, boundSource: 'test', end: true, proc: p, clients: () => (clients.reads++, clients.now) };
    const client = (n: number) => proc(['docker', 'exec', '-i', id, ...STREAM], { pid: n, startedAtMs: n });
    return { details: { id, pid: 100, execIds: [older, newer] }, older, newer, p, clients, client, opts };
  }

  it('a living client keeps its exec at any age (client-alive); the older exec of the same command, without one, is ended', async () => {
    const s = sandbox();
    s.clients.now = { clients: [s.client(7001)], unverifiable: null };
    const survey = await surveyExecs(engine, s.details, s.opts, { asOf });
    const views = new Map(survey.execs.map((x) => [x.view.id, x.view]));
    assert.deepEqual([views.get(s.newer)!.abandoned, views.get(s.newer)!.client], [false, { pid: 7001, since: new Date(7001).toISOString() }]);
    assert.deepEqual([views.get(s.older)!.abandoned, views.get(s.older)!.client, views.get(s.older)!.clientUnverifiable], [true, null, null]);
    const r = await endAbandonedTrees(engine, s.details, survey, s.opts, ctx);
    assert.deepEqual(r.kept, [{ container: 'hermes-test', execId: s.newer, reason: 'client-alive' }]);
    assert.deepEqual(
      r.ended.map((e) => e.execId),
      [s.older],
    );
    assert.deepEqual(s.p.sent, [[200, 'SIGTERM']]);
  });

  it('clients that cannot be seen keep every exec past the bound (client-unverifiable); nothing is signalled', async () => {
    const s = sandbox();
    s.clients.now = { clients: [], unverifiable: 'procfs is mounted with hidepid=2' };
    const survey = await surveyExecs(engine, s.details, s.opts, { asOf });
    assert.deepEqual(
      survey.execs.map((x) => [x.view.abandoned, x.view.clientUnverifiable]),
      [
        [false, 'procfs is mounted with hidepid=2'],
        [false, 'procfs is mounted with hidepid=2'],
      ],
    );
    const r = await endAbandonedTrees(engine, s.details, survey, s.opts, ctx);
    assert.deepEqual(
      r.kept.map((k) => k.reason),
      ['client-unverifiable', 'client-unverifiable'],
    );
    assert.deepEqual(s.p.sent, []);
  });

  it('re-checked right before the signal: a client seen then keeps the exec, though the survey saw none', async () => {
    const s = sandbox();
    const survey = await surveyExecs(engine, s.details, s.opts, { asOf });
    assert.deepEqual(
      survey.execs.map((x) => x.view.abandoned),
      [true, true],
    );
    const reads = s.clients.reads;
    // Two clients now: each exec has one.
    s.clients.now = { clients: [s.client(7001), s.client(7002)], unverifiable: null };
    const r = await endAbandonedTrees(engine, s.details, survey, s.opts, ctx);
    assert.deepEqual(r.kept.map((k) => k.reason).sort(), ['client-alive', 'client-alive']);
    assert.deepEqual(s.p.sent, []);
    assert.ok(s.clients.reads >= reads + 2, 'a fresh read of the clients before each tree');
  });

  it('a client killed: the next pass ends the exec it held', async () => {
    const s = sandbox();
    s.clients.now = { clients: [s.client(7001), s.client(7002)], unverifiable: null };
    const first = await endAbandonedTrees(engine, s.details, await surveyExecs(engine, s.details, s.opts, { asOf }), s.opts, ctx);
    assert.deepEqual(first.ended, []);
    s.clients.now = { clients: [s.client(7002)], unverifiable: null };
    const next = await endAbandonedTrees(engine, s.details, await surveyExecs(engine, s.details, s.opts, { asOf }), s.opts, ctx);
    assert.deepEqual(
      next.ended.map((e) => e.execId),
      [s.older],
    );
    assert.deepEqual(
      next.kept.map((k) => [k.execId, k.reason]),
      [[s.newer, 'client-alive']],
    );
  });

  it('a janitor in a pid namespace of its own: clients unverifiable in the view (why), every exec kept as pid-namespace', async () => {
    const s = sandbox();
    s.p.partial = "the janitor's pid namespace is not the host's";
    const survey = await surveyExecs(engine, s.details, s.opts, { asOf, execStarts: new Map([[s.older, 1000]]) });
    assert.deepEqual(
      survey.execs.map((x) => [x.view.abandoned, x.view.clientUnverifiable]),
      [
        [false, s.p.partial],
        [false, s.p.partial],
      ],
    );
    const r = await endAbandonedTrees(engine, s.details, survey, s.opts, ctx);
    assert.deepEqual(
      r.kept.map((k) => k.reason),
      ['pid-namespace', 'pid-namespace'],
    );
    assert.equal(s.clients.reads, 0);
  });

  it('an engine on another host: clients unverifiable in the view, every exec kept as engine-not-local', async () => {
    const s = sandbox();
    const remote = { ...engine, host: 'tcp://10.0.0.5:2376', execInspect: engine.execInspect.bind(engine) } as EngineClient;
    const far = await surveyExecs(remote, s.details, s.opts, { asOf, execStarts: new Map([[s.older, 1000]]) });
    assert.deepEqual(
      far.execs.map((x) => [x.view.abandoned, x.view.client]),
      [
        [false, null],
        [false, null],
      ],
    );
    assert.match(far.execs[0]!.view.clientUnverifiable ?? '', /not on this host/);
    assert.equal(s.clients.reads, 0, 'no process of this host is read for an engine elsewhere');
  });
});
