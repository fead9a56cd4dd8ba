/**
 * `watch` against the engine simulator's event stream, for faults the real engine cannot be made to produce on
 * demand: a stream cut mid-event, duplicated and out-of-order events, an event for a container already gone.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { BIN, REPO, quietProcRoot, quietSystemTmp, tempDir } from '../helpers/cli.js';
import { EngineSimulator, rfc3339Nano } from '../helpers/engine-simulator.js';
import { WatchProcess, type WatchLine } from '../helpers/watch-process.js';

const home = tempDir('hj-watch-sim-');
const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  home.cleanup();
});

const LABELS = { 'ci-job': '1' };
const states = (ls: WatchLine[]) => ls.filter((l) => l.event === 'engine').map((l) => l.state);

/**
 * Deadlines are handled in time order: a container that exits now, removed at its own deadline (now + the 2 s
 * threshold), shows that every earlier deadline has been handled. Then the watcher is stopped (it finishes what is
 * in flight), so nothing can still be on its way when the test looks.
 */
async function afterEarlierDeadlines(sim: EngineSimulator, w: WatchProcess): Promise<string> {
  const marker = sim.add({ labels: LABELS, state: 'running' });
  sim.setState(marker, 'exited');
  await w.waitFor('the marker removed at its deadline', (ls) => ls.some((l) => l.event === 'removed' && l.id === marker), 10_000);
  assert.equal((await w.stop()).code, 0);
  return marker;
}

async function setUp(): Promise<{ sim: EngineSimulator; w: WatchProcess }> {
  const sim = await EngineSimulator.start({ recordRemovals: true });
  cleanups.push(() => sim.close());
  // A selection other than hermes': a short --older-than needs no --force-threshold.
  const w = WatchProcess.start(['--host', sim.host, '--home', home.dir, '--label', 'ci-job=1', '--all-profiles', '--older-than', '2s']);
  cleanups.push(() => w.kill());
  await w.waitFor('connected', (ls) => states(ls).includes('connected'));
  return { sim, w };
}

describe('watch against the simulator: event stream faults', () => {
  it('a stream cut mid-event: reconnects after 1 s, resyncs, and removes what exited while it was cut off', async () => {
    const { sim, w } = await setUp();
    const id = sim.add({ labels: LABELS, state: 'running' });
    sim.cutEventStreams(true);
    sim.setState(id, 'exited'); // no stream to tell it
    await w.waitFor('disconnected', (ls) => states(ls).includes('disconnected'), 5000);
    const down = w.events('engine').find((l) => l.state === 'disconnected')!;
    assert.equal(down.retryInSeconds, 1);
    await w.waitFor('reconnected', (ls) => states(ls).filter((s) => s === 'connected').length === 2, 10_000);
    await w.waitFor('removed', (ls) => ls.some((l) => l.event === 'removed' && l.id === id), 10_000);
    assert.equal(sim.get(id), undefined);
    assert.equal((await w.stop()).code, 0);
  });

  it('duplicated and out-of-order events: removed once, at the deadline of the latest exit; an event for a gone container changes nothing', async () => {
    const { sim, w } = await setUp();
    const dup = sim.add({ labels: LABELS, state: 'running' });
    const late = sim.add({ labels: LABELS, state: 'running' });
    const now = Date.now();
    // Duplicated: the same die event three times.
    sim.setState(dup, 'exited', new Date(now));
    sim.emit({ id: dup, action: 'die', time: new Date(now) });
    sim.emit({ id: dup, action: 'die', time: new Date(now) });
    // Out of order: it exited now; a `start` from 5 s earlier arrives after the `die` and must not cancel it.
    sim.setState(late, 'exited', new Date(now));
    sim.emit({ id: late, action: 'start', time: new Date(now - 5000) });
    // Gone already: a die for a container the engine no longer has.
    sim.emit({ id: 'f'.repeat(64), action: 'die', time: new Date(now), attributes: { ...LABELS } });
    await w.waitFor('both removed', (ls) => [dup, late].every((id) => ls.some((l) => l.event === 'removed' && l.id === id)), 10_000);
    const marker = await afterEarlierDeadlines(sim, w);
    assert.deepEqual(sim.removals.map((r) => r.id).sort(), [dup, late, marker].sort(), 'each removed exactly once, nothing else');
    assert.equal(sim.stats.byKind.remove, 3, 'no second removal attempt');
    for (const r of sim.removals) assert.ok(r.atMs >= now + 2000, 'never before the deadline');
    assert.equal(w.events('failed').length, 0);
    assert.equal(sim.stats.forcedRemovals, 0);
    assert.deepEqual(states(w.lines), ['connected'], 'no reconnect');
  });

  it('a container started again before its deadline is not removed (the re-check and the start event both keep it)', async () => {
    const { sim, w } = await setUp();
    const id = sim.add({ labels: LABELS, state: 'running' });
    // Exited half a second ago, started again now: the stream brings the die, then the start, in that order.
    sim.setState(id, 'exited', new Date(Date.now() - 500));
    sim.setState(id, 'running');
    const marker = await afterEarlierDeadlines(sim, w); // its deadline (FinishedAt + 2 s) has come and gone
    assert.equal(sim.get(id)?.state, 'running');
    assert.deepEqual(
      w.events('removed').map((l) => l.id),
      [marker],
    );
    assert.deepEqual(
      sim.removals.map((r) => r.id),
      [marker],
    );
  });

  it('a never-started container found by the first sweep is removed at Created + threshold, not before (rule never-started)', async () => {
    const sim = await EngineSimulator.start({ recordRemovals: true });
    cleanups.push(() => sim.close());
    const created = new Date();
    const id = sim.add({ labels: LABELS, state: 'created', created });
    const w = WatchProcess.start(['--host', sim.host, '--home', home.dir, '--label', 'ci-job=1', '--all-profiles', '--older-than', '4s']);
    cleanups.push(() => w.kill());
    await w.waitFor('removed', (ls) => ls.some((l) => l.event === 'removed' && l.id === id), 10_000);
    const ev = w.events('removed').find((l) => l.id === id)!;
    assert.equal(ev.rule, 'never-started');
    assert.equal(ev.trigger, 'deadline', 'kept by the sweep, removed at its deadline');
    // The simulator's Created is its whole second plus .123456789: the deadline is that + 4 s.
    const deadline = Math.floor(created.getTime() / 1000) * 1000 + 123 + 4000;
    const at = sim.removals.find((r) => r.id === id)!.atMs;
    assert.ok(at >= deadline && at < deadline + 1500, `removed ${at - deadline} ms after its deadline`);
    assert.equal((await w.stop()).code, 0);
  });
});

describe('watch --dry-run and the idle rule (simulator)', () => {
  it('says would-stop once per idle period, not at every idle re-check; again after activity reset the proof', async () => {
    const sim = await EngineSimulator.start({ record: true });
    cleanups.push(() => sim.close());
    const profile = 'watch-dry-idle';
    const id = sim.add({
      labels: { 'hermes-agent': '1', 'hermes-profile': profile },
      state: 'running',
      startedAt: rfc3339Nano(new Date(Date.now() - 3600_000)),
    });
    const w = WatchProcess.start(['--host', sim.host, '--home', home.dir, '--profile', profile, '--idle-after', '1s', '--dry-run']);
    cleanups.push(() => w.kill());
    const wouldStop = () => w.events('would-stop').filter((l) => l.id === id);
    // Each idle check samples the sandbox's stats: the simulator's record of those requests is the check's event. A
    // check's line comes before the next check's sample, so n more samples mean n - 1 more checks said their piece.
    const samples = () => sim.requests.filter((r) => r.kind === 'stats' && r.url.includes(id)).length;
    const checks = async (n: number, what: string) => {
      const target = samples() + n + 1;
      await w.waitFor(what, () => samples() >= target, 15_000);
    };
    await w.waitFor('would-stop', () => wouldStop().length > 0, 10_000);
    // A dry run stops nothing: it is found idle again at each re-check (one per idle threshold, 1 s here).
    await checks(3, 'three idle re-checks');
    assert.equal(wouldStop().length, 1, 'said once while the same idle period goes on');
    sim.touch(id); // activity: the next sample resets the proof
    await w.waitFor('would-stop after the activity', () => wouldStop().length > 1, 10_000);
    const [first, second] = wouldStop() as [WatchLine, WatchLine];
    assert.ok(Date.parse(second.time) - Date.parse(first.time) >= 3000);
    assert.ok((second.idleSeconds as number) < 3, `a new idle period: idle ${String(second.idleSeconds)} s`);
    await checks(2, 'two more idle re-checks');
    assert.equal(wouldStop().length, 2);
    assert.equal(sim.get(id)?.state, 'running', 'a dry run stops nothing');
    assert.equal((await w.stop()).code, 0);
  });
});

describe('watch --dry-run says "would" everywhere (simulator, built CLI, text output)', () => {
  it('its start line, each container line and the sweep summary say would remove / would stop; nothing says removed', async () => {
    const profile = `watch-dry-words-${Math.random().toString(36).slice(2, 8)}`;
    const labels = { 'hermes-agent': '1', 'hermes-profile': profile };
    const sim = await EngineSimulator.start({
      recordRemovals: true,
      bulk: [{ count: 2, labels, finishedAt: '2020-01-01T00:00:00Z' }],
      containers: [{ labels, state: 'running', startedAt: rfc3339Nano(new Date(Date.now() - 3600_000)) }],
    });
    cleanups.push(() => sim.close());
    const child = spawn(process.execPath, [BIN, 'watch', '--dry-run', '--host', sim.host, '--home', home.dir, '--profile', profile, '--idle-after', '1s'], {
      cwd: REPO,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        LANG: 'C.UTF-8',
        HOME: home.dir,
        HERMES_JANITOR_PROC_ROOT: quietProcRoot(),
        HERMES_JANITOR_SYSTEM_TMP: quietSystemTmp(),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'));
    let out = '';
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const closed = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    // Waited for: the first sweep's summary line, and the idle sandbox's line (a second sample, at its idle check).
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no sweep summary; stdout: ${out}; stderr: ${err}`)), 20_000);
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        if (/ swept \S+: .*\n/.test(out) && / Would stop .*\n/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.on('close', () => reject(new Error(`watch exited; stdout: ${out}; stderr: ${err}`)));
    });
    child.kill('SIGTERM');
    assert.equal(await closed, 0, err);
    const lines = out.trimEnd().split('\n');
    assert.match(lines[0]!, /watching .*would stop sandboxes idle 1 s.*, dry run\)$/);
    assert.equal(lines.filter((l) => / Would remove [0-9a-f]{12} /.test(l)).length, 2, out);
    assert.equal(lines.filter((l) => / Would stop [0-9a-f]{12} /.test(l)).length, 1, out);
    assert.match(out, / swept \S+: would remove 2, would stop 0, kept 1, failed 0;/);
    assert.doesNotMatch(out, /\b(removed|stopped) \d|\b[Rr]emoved [0-9a-f]{12}\b|\b[Ss]topped [0-9a-f]{12}\b/, 'a dry run line says it acted');
    assert.equal(sim.removals.length, 0);
  });

  it('NDJSON: the sweep event carries dryRun: true (its removed and stopped count what would be)', async () => {
    const profile = `watch-dry-json-${Math.random().toString(36).slice(2, 8)}`;
    const sim = await EngineSimulator.start({
      bulk: [{ count: 2, labels: { 'hermes-agent': '1', 'hermes-profile': profile }, finishedAt: '2020-01-01T00:00:00Z' }],
    });
    cleanups.push(() => sim.close());
    const w = WatchProcess.start(['--dry-run', '--host', sim.host, '--home', home.dir, '--profile', profile]);
    cleanups.push(() => w.kill());
    await w.waitFor('sweep', (ls) => ls.some((l) => l.event === 'sweep'));
    const sweep = w.events('sweep')[0]!;
    assert.equal(sweep.dryRun, true);
    assert.equal(sweep.removed, 2);
    assert.equal(w.events('would-remove').length, 2);
    assert.equal(w.events('removed').length, 0);
    assert.equal((await w.stop()).code, 0);
  });
});
