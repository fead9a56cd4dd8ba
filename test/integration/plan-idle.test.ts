/**
 * Plans (`reap --dry-run --plan-out`, `reap --plan`): flags left out are taken from the plan, and a plan's stops
 * are proved again at apply. Runs the built CLI against the engine simulator.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { EngineSimulator, rfc3339Nano } from '../helpers/engine-simulator.js';

const PROFILE = 'plans';
const LABELS = { 'hermes-agent': '1', 'hermes-profile': PROFILE };
const OLD = '2026-01-01T00:00:00.123456789Z';

describe('reap plans (simulator)', () => {
  const home = tempDir('hj-plan-');
  const env = { HOME: home.dir, HERMES_HOME: path.join(home.dir, 'hermes') };
  const sims: EngineSimulator[] = [];
  after(async () => {
    await Promise.all(sims.map((s) => s.close()));
    home.cleanup();
  });
  const start = async (opts: Parameters<typeof EngineSimulator.start>[0]) => {
    const s = await EngineSimulator.start(opts);
    sims.push(s);
    return s;
  };

  it('a flag not given again is taken from the plan; only a different value disagrees', async () => {
    const sim = await start({
      containers: [
        { labels: LABELS, finishedAt: OLD },
        { labels: { ...LABELS, late: '1' }, finishedAt: OLD },
      ],
    });
    const plan = path.join(home.dir, 'p1.json');
    const base = ['--host', sim.host, '--profile', PROFILE, '--lifetime', '0'];
    const dry = await runCli(['reap', '--dry-run', ...base, '--exclude-label', 'late', '--plan-out', plan], { env });
    assert.equal(dry.code, 0, dry.stderr);
    const differ = await runCli(['reap', '--plan', plan, ...base, '--exclude-label', 'other'], { env });
    assert.equal(differ.code, 2);
    assert.match(differ.stderr, /exclusions other \(plan: late\)/);
    const lifetime = await runCli(['reap', '--plan', plan, '--profile', PROFILE, '--lifetime', '5000'], { env });
    assert.equal(lifetime.code, 2);
    assert.match(lifetime.stderr, /threshold 10000 s \(plan: 120 s\)/);
    const res = await runCli(['reap', '--json', '--plan', plan, '--profile', PROFILE, '--lifetime', '0'], { env });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { removed: Array<{ id: string }> };
    assert.equal(out.removed.length, 1);
    assert.equal(sim.size, 1, 'the excluded container stays');
    assert.equal(sim.get(sim.ids()[0]!)?.labels.late, '1');
  });

  it('no plan is written when an engine did not answer, cut the list off, or the run timed out: exit 3, one line', async () => {
    const answers = await start({ containers: [{ labels: LABELS, finishedAt: OLD }] });
    const down = await start({ containers: [{ labels: LABELS, finishedAt: OLD }] });
    await down.goDown();
    const cut = await start({ bulk: [{ count: 50, labels: LABELS, finishedAt: OLD }], faults: { dropListMidBody: true } });
    const hangs = await start({ containers: [{ labels: LABELS, finishedAt: OLD }], faults: { hang: true } });
    const cases: Array<[string, string[], RegExp]> = [
      ['an engine down', ['--host', answers.host, '--host', down.host], /did not answer \(cannot reach the engine/],
      ['a list cut off', ['--host', answers.host, '--host', cut.host], /engine unix:\S+ did not answer/],
      ['a timeout', ['--host', hangs.host, '--timeout', '1s'], /the dry run timed out after --timeout 1s/],
    ];
    for (const [what, hosts, why] of cases) {
      for (const json of [[], ['--json']]) {
        const plan = path.join(home.dir, `incomplete-${what.replace(/ /g, '-')}${json.length ? '-json' : ''}.json`);
        const res = await runCli(['reap', '--dry-run', ...hosts, '--profile', PROFILE, '--lifetime', '0', ...json, '--plan-out', plan], { env });
        assert.equal(res.code, 3, `${what}: ${res.stderr}`);
        assert.equal(res.stdout, '', what);
        const lines = res.stderr.trimEnd().split('\n');
        assert.equal(lines.length, 1, `${what}: ${res.stderr}`);
        assert.match(lines[0]!, new RegExp(`^hermes-janitor: no plan written to ${plan.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: `), what);
        assert.match(lines[0]!, why, what);
        assert.equal(existsSync(plan), false, `${what}: a plan was written`);
      }
    }
    assert.equal(answers.size, 1, 'a dry run removes nothing');
  });

  it("a plan's stops are re-proved at apply: one that did something since is not stopped", async () => {
    const startedAt = rfc3339Nano(new Date(Date.now() - 3_600_000));
    const sim = await start({
      containers: [
        { labels: LABELS, state: 'running', startedAt },
        { labels: LABELS, state: 'running', startedAt },
      ],
    });
    const [quiet, woke] = sim.ids() as [string, string];
    const base = ['--host', sim.host, '--profile', PROFILE, '--idle-after', '1s'];
    assert.equal((await runCli(['list', ...base], { env })).code, 0);
    await new Promise((r) => setTimeout(r, 1100));
    const plan = path.join(home.dir, 'p2.json');
    const dry = await runCli(['reap', '--dry-run', ...base, '--plan-out', plan], { env });
    assert.equal(dry.code, 0, dry.stderr);
    const doc = JSON.parse(readFileSync(plan, 'utf8')) as { stops: Array<{ id: string }>; idleAfterSeconds: number; stopIdle: boolean };
    assert.deepEqual(doc.stops.map((s) => s.id).sort(), [quiet, woke].sort());
    assert.deepEqual([doc.idleAfterSeconds, doc.stopIdle], [1, true]);
    sim.touch(woke); // an exec after the plan was made
    const res = await runCli(['reap', '--json', '--plan', plan], { env });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { stopped: Array<{ id: string }>; kept: Array<{ id: string; idleReason?: string }> };
    assert.deepEqual(
      out.stopped.map((s) => s.id),
      [quiet],
    );
    assert.ok(out.kept.some((k) => k.id === woke));
    assert.equal(sim.get(woke)?.state, 'running');
    assert.equal(sim.get(quiet)?.state, 'exited');
  });
});
