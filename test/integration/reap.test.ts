import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { EngineFixture, after as plus, docker, pinPath, requireEngine } from '../helpers/docker.js';

interface Entry {
  id: string;
  name: string;
  profile: string | null;
  state: string;
  finishedAt: string;
  ageSeconds: number | null;
}
interface ReapJson {
  dryRun: boolean;
  asOf: string;
  thresholdSeconds: number;
  profile: string | null;
  removed: Entry[];
  kept: Array<Entry & { reason: string }>;
  failed: Array<Entry & { error: string }>;
  hosts: Array<{ host: string; reachable: boolean; error: string | null }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ids = (entries: Entry[]) => entries.map((e) => e.id).sort();

describe('reap and list against the real engine', () => {
  const fx = new EngineFixture();
  const home = tempDir('hj-home-');
  const env = { HOME: home.dir, HERMES_HOME: path.join(home.dir, 'hermes') };

  before(requireEngine);
  after(async () => {
    await fx.cleanup();
    home.cleanup();
  });

  it('removes only old exited containers of the selected profile, and keeps everything else', async () => {
    const old = await fx.create({ state: 'exited' });
    const oldFinished = await fx.finishedAt(old);
    await sleep(1500);
    const young = await fx.create({ state: 'exited' });
    const running = await fx.create({ state: 'running' });
    const created = await fx.create({ state: 'created' });
    const otherProfile = await fx.create({ state: 'exited', profile: `${fx.profile}-other` });
    const unlabelled = await fx.create({ state: 'exited', agent: null });
    const agentZero = await fx.create({ state: 'exited', agent: '0' });
    // Threshold with --lifetime 0 is 120 s: as of old's FinishedAt + 120 s, old is due and young is not.
    const asOf = plus(oldFinished, 120);

    const dry = await runCli(['reap', '--dry-run', '--json', '--profile', fx.profile, '--lifetime', '0', '--as-of', asOf], { env });
    assert.equal(dry.code, 0, dry.stderr);
    const dj = JSON.parse(dry.stdout) as ReapJson;
    assert.equal(dj.dryRun, true);
    assert.deepEqual(ids(dj.removed), [old]);
    assert.equal((await fx.remaining()).length, 7, 'a dry run removes nothing');

    const res = await runCli(['reap', '--json', '--profile', fx.profile, '--lifetime', '0', '--as-of', asOf], { env });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as ReapJson;
    assert.equal(out.dryRun, false);
    assert.equal(out.thresholdSeconds, 120);
    assert.equal(out.profile, fx.profile);
    assert.equal(out.asOf, asOf);
    assert.deepEqual(ids(out.removed), [old]);
    assert.deepEqual(out.failed, []);
    const removed = out.removed[0]!;
    assert.equal(removed.finishedAt, oldFinished, 'finishedAt is the raw engine string');
    assert.ok(removed.ageSeconds !== null && removed.ageSeconds >= 120 && removed.ageSeconds < 121);
    assert.equal(removed.profile, fx.profile);
    assert.match(removed.name, /^hermes-[0-9a-f]{8}$/);
    const young1 = out.kept.find((k) => k.id === young);
    assert.equal(young1?.reason, 'too-recent');
    assert.deepEqual(
      out.hosts.map((h) => h.reachable),
      [true],
    );

    const left = await fx.remaining();
    assert.deepEqual(left, [young, running, created, otherProfile, unlabelled, agentZero].sort());
    assert.equal(await fx.state(running), 'running');
  });

  it('list shows every labelled container of the profile in any state, with verdicts', async () => {
    const res = await runCli(['list', '--json', '--profile', fx.profile, '--lifetime', '0'], { env });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { profile: string; containers: Array<Entry & { verdict: string; reason: string }> };
    assert.equal(out.profile, fx.profile);
    const byState = Object.fromEntries(out.containers.map((c) => [c.state, c]));
    assert.deepEqual(Object.keys(byState).sort(), ['created', 'exited', 'running']);
    assert.equal(byState.running!.reason, 'running');
    // Never started: aged by its Created time (the never-started rule), young here.
    assert.equal(byState.created!.reason, 'too-recent');
    assert.equal((byState.created as unknown as { rule: string }).rule, 'never-started');
    assert.equal(byState.created!.finishedAt, '0001-01-01T00:00:00Z');
    assert.ok(typeof byState.created!.ageSeconds === 'number' && byState.created!.ageSeconds >= 0);
    for (const c of out.containers) assert.equal(c.verdict, 'keep');

    const table = await runCli(['ls', '--profile', fx.profile], { env });
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /VERDICT/);
    assert.match(table.stdout, /too-recent/);
    assert.equal(table.stdout.trimEnd().split('\n').length, 4, 'a header and one line per container');
    // One profile: no PROFILE column; --wide shows every column.
    const wide = await runCli(['ls', '--wide', '--profile', fx.profile], { env });
    assert.equal(wide.stdout.split('\n').filter((l) => l.includes(fx.profile)).length, 3);
  });

  it('derives the profile from HERMES_HOME the way hermes does', async () => {
    const id = await fx.create({ state: 'exited' });
    const asOf = plus(await fx.finishedAt(id), 600);
    const profileHome = path.join(home.dir, 'root', 'profiles', fx.profile);
    const res = await runCli(['reap', '--json', '--as-of', asOf], { env: { ...env, HERMES_HOME: profileHome } });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as ReapJson;
    assert.equal(out.profile, fx.profile);
    assert.equal(out.thresholdSeconds, 600);
    assert.ok(ids(out.removed).includes(id));
    for (const r of out.removed) assert.equal(r.profile, fx.profile);
  });

  it('reads the lifetime from config.yaml, which wins over the environment (hermes bridges its terminal keys last)', async () => {
    const cfgHome = path.join(home.dir, 'cfg', 'profiles', fx.profile);
    mkdirSync(cfgHome, { recursive: true });
    writeFileSync(path.join(cfgHome, 'config.yaml'), 'terminal:\n  lifetime_seconds: 30\n');
    const id = await fx.create({ state: 'exited' });
    const asOf = plus(await fx.finishedAt(id), 120);
    const res = await runCli(['reap', '--json', '--as-of', asOf], { env: { ...env, HERMES_HOME: cfgHome } });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as ReapJson;
    assert.equal(out.thresholdSeconds, 120, 'lifetime 30 counts as 60');
    assert.deepEqual(ids(out.removed), [id]);
    const viaEnv = await runCli(['reap', '--json', '--dry-run'], { env: { ...env, HERMES_HOME: cfgHome, TERMINAL_LIFETIME_SECONDS: '400' } });
    assert.equal((JSON.parse(viaEnv.stdout) as ReapJson).thresholdSeconds, 120, 'config.yaml wins over the environment, as in hermes');
  });

  it('two reap processes racing over the same orphans remove every one, without failures', async () => {
    const orphans = await fx.createMany(12, { state: 'exited' });
    const latest = (await Promise.all(orphans.map((id) => fx.finishedAt(id)))).sort().at(-1)!;
    const args = ['reap', '--json', '--profile', fx.profile, '--as-of', plus(latest, 600), '--concurrency', '4'];
    // Different hermes roots, so the per-home lock does not serialise them: they really race on the engine.
    const envB = { ...env, HERMES_HOME: path.join(home.dir, 'second-root') };
    const [a, b] = await Promise.all([runCli(args, { env }), runCli(args, { env: envB })]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    const ja = JSON.parse(a.stdout) as ReapJson;
    const jb = JSON.parse(b.stdout) as ReapJson;
    assert.deepEqual([...ja.failed, ...jb.failed], []);
    // Every orphan reported removed at least once in total: the engine can answer 204 to two racing DELETEs of one
    // container (see the 20-process race in faults.test.ts), so a double report is the engine's doing.
    const all = [...ids(ja.removed), ...ids(jb.removed)].filter((id) => orphans.includes(id));
    assert.deepEqual([...new Set(all)].sort(), [...orphans].sort(), 'every orphan removed at least once');
    const remaining = await fx.remaining();
    for (const id of orphans) assert.ok(!remaining.includes(id));
    for (const k of [...ja.kept, ...jb.kept].filter((e) => orphans.includes(e.id))) assert.equal(k.reason, 'gone');
  });

  it('reports a container whose removal fails, removes the rest, and exits 1', async () => {
    const [bad, good] = await fx.createMany(2, { state: 'exited' });
    const asOf = plus((await Promise.all([fx.finishedAt(bad!), fx.finishedAt(good!)])).sort()[1]!, 600);
    const full = await docker(['inspect', '--format', '{{.Id}}', bad!]);
    const pinned = pinPath(full);
    const { execFileSync } = await import('node:child_process');
    execFileSync('chattr', ['+i', pinned]);
    try {
      const res = await runCli(['reap', '--profile', fx.profile, '--as-of', asOf], { env });
      assert.equal(res.code, 1, res.stderr);
      assert.match(res.stderr, new RegExp(`failed\\s+${bad!.slice(0, 12)}.*HTTP 500`));
      assert.match(res.stdout, new RegExp(`removed\\s+${good!.slice(0, 12)}`));
      assert.match(res.stdout, /Removed 1, stopped 0, kept \d+, failed 1/);
      assert.ok(!(await fx.remaining()).includes(good!));
    } finally {
      execFileSync('chattr', ['-i', pinned]);
    }
  });

  it('does nothing when disabled, and says so', async () => {
    const id = await fx.create({ state: 'exited' });
    const asOf = plus(await fx.finishedAt(id), 6000);
    for (const value of ['false', 'off', 'NO']) {
      const res = await runCli(['reap', '--json', '--profile', fx.profile, '--as-of', asOf], {
        env: { ...env, TERMINAL_DOCKER_ORPHAN_REAPER: value },
      });
      assert.equal(res.code, 0);
      const out = JSON.parse(res.stdout) as { disabled: boolean; reason: string };
      assert.equal(out.disabled, true);
      assert.match(out.reason, /TERMINAL_DOCKER_ORPHAN_REAPER/);
    }
    const cfgHome = path.join(home.dir, 'off');
    mkdirSync(cfgHome, { recursive: true });
    writeFileSync(path.join(cfgHome, 'config.yaml'), 'terminal:\n  docker_orphan_reaper: false\n');
    const byConfig = await runCli(['reap', '--home', cfgHome, '--profile', fx.profile, '--as-of', asOf], { env });
    assert.equal(byConfig.code, 0);
    assert.match(byConfig.stderr, /disabled by config.yaml terminal.docker_orphan_reaper/);
    const stillOff = await runCli(['reap', '--json', '--dry-run', '--home', cfgHome, '--profile', fx.profile, '--as-of', asOf], {
      env: { ...env, TERMINAL_DOCKER_ORPHAN_REAPER: 'Yes' },
    });
    assert.equal((JSON.parse(stillOff.stdout) as { disabled: boolean }).disabled, true, 'config.yaml overrides the environment');
    // Removal left to the janitor: hermes' own reaper stays off, the janitor reaps (HERMES_JANITOR_REAPER).
    const leftToJanitor = await runCli(['reap', '--json', '--dry-run', '--home', cfgHome, '--profile', fx.profile, '--as-of', asOf], {
      env: { ...env, HERMES_JANITOR_REAPER: 'true' },
    });
    assert.equal(leftToJanitor.code, 0, leftToJanitor.stderr);
    assert.ok(ids((JSON.parse(leftToJanitor.stdout) as ReapJson).removed).includes(id), 'HERMES_JANITOR_REAPER=true reaps despite hermes switch');
    const notOn = await runCli(['reap', '--json', '--dry-run', '--home', cfgHome, '--profile', fx.profile, '--as-of', asOf], {
      env: { ...env, HERMES_JANITOR_REAPER: 'maybe' },
    });
    assert.equal((JSON.parse(notOn.stdout) as { disabled: boolean }).disabled, true, 'anything but an explicit yes follows hermes');
    writeFileSync(path.join(cfgHome, '.env'), 'TERMINAL_DOCKER_ORPHAN_REAPER=Yes\n');
    writeFileSync(path.join(cfgHome, 'config.yaml'), 'janitor: {}\n');
    const enabled = await runCli(['reap', '--json', '--dry-run', '--home', cfgHome, '--profile', fx.profile, '--as-of', asOf], {
      env: { ...env, TERMINAL_DOCKER_ORPHAN_REAPER: 'false' },
    });
    assert.ok(ids((JSON.parse(enabled.stdout) as ReapJson).removed).includes(id), '<home>/.env overrides the environment');
    assert.ok((await fx.remaining()).includes(id));
    const listed = await runCli(['list', '--json', '--profile', fx.profile], { env: { ...env, TERMINAL_DOCKER_ORPHAN_REAPER: 'false' } });
    assert.equal(listed.code, 0, 'list still works when reap is disabled');
  });

  it('--all-profiles drops the profile filter but still only touches hermes-agent=1', async () => {
    const mine = await fx.create({ state: 'exited', profile: `${fx.profile}-x` });
    const notOurs = await fx.create({ state: 'exited', agent: '0', profile: `${fx.profile}-x` });
    const res = await runCli(['reap', '--json', '--dry-run', '--all-profiles', '--as-of', plus(await fx.finishedAt(notOurs), 600)], { env });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as ReapJson;
    assert.equal(out.profile, null);
    const removed = ids(out.removed);
    assert.ok(removed.includes(mine));
    assert.ok(!removed.includes(notOurs));
  });

  it('an unreachable engine is one clean line and exit 3', async () => {
    const res = await runCli(['reap', '--host', `unix://${home.dir}/no.sock`], { env });
    assert.equal(res.code, 3);
    assert.equal(res.stderr.trim().split('\n').length, 1);
    assert.match(res.stderr, /cannot reach the engine at unix:\/\/.*no\.sock/);
    assert.doesNotMatch(res.stderr, /\n\s+at /);
    const viaEnv = await runCli(['list', '--json'], { env: { ...env, DOCKER_HOST: 'tcp://127.0.0.1:9' } });
    assert.equal(viaEnv.code, 3);
    const out = JSON.parse(viaEnv.stdout) as { hosts: Array<{ host: string; reachable: boolean; error: string }> };
    assert.deepEqual(
      out.hosts.map((h) => [h.host, h.reachable]),
      [['tcp://127.0.0.1:9', false]],
    );
  });
});
