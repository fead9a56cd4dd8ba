/**
 * Named execution targets against the real engine (Docker, and Podman through its compatible API), #43:
 * - a profile whose config.yaml sets `terminal.targets.box: {backend: docker, lifetime_seconds: 3600}`: an exited
 *   sandbox finished 30 minutes ago is kept (threshold 7200 s, as hermes' targets-aware reaper computes it), removed
 *   once past 7200 s; `status --json` and `status` show the target's reading; without the target, removed as today
 *   (threshold 600);
 * - a docker target with `docker_orphan_reaper: false` keeps the profile's sandboxes (`reaper-off`); an ssh target's
 *   long lifetime does not count; a target of the runtime registry counts;
 * - sandboxes labelled with the task-id forms of named targets and the multiplexer's scope, and task directories named
 *   as hermes names them: a used directory stays, unused old ones go, whatever the form.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, EngineFixture, RUN_LABEL, after as plus, requireEngine } from '../helpers/docker.js';
import { ageTree, makeTaskDir } from '../helpers/sandbox-dirs.js';
import { legacyTargetTaskId, profileScopeOf, targetTaskId } from '../../src/hermes/task-ids.js';

interface TargetReading {
  target: string;
  backend: string;
  counts: boolean;
  from: string;
  value: unknown;
  source: string;
}
interface Sourced {
  value: unknown;
  source: string;
  target?: string;
  targets?: TargetReading[];
}
interface StatusJson {
  settings: Record<string, Sourced>;
  held: Record<string, { reason: string; why: string }>;
}
interface Entry {
  id: string;
  reason?: string;
}
interface ReapJson {
  disabled?: boolean;
  reason?: string;
  thresholdSeconds: number;
  removed: Entry[];
  kept: Entry[];
  sandboxDirs?: { removed: Array<{ path: string }> };
}

describe(`named execution targets (${ENGINE_KIND}): a docker target's lifetime and reaper switch`, () => {
  const fx = new EngineFixture();
  const tmp = tempDir('hj-targets-');
  let n = 0;
  /** A fresh home with `config.yaml` written as given (none: no file). */
  const home = (yaml?: string) => {
    const h = path.join(tmp.dir, `home-${n++}`);
    mkdirSync(h, { recursive: true });
    if (yaml !== undefined) writeFileSync(path.join(h, 'config.yaml'), yaml);
    return h;
  };
  const sel = (h: string) => ['--home', h, '--profile', fx.profile, '--label', `${RUN_LABEL}=${fx.runId}`];
  const env = { HOME: tmp.dir };
  const reap = async (h: string, asOf: string, extra: string[] = []) => {
    const r = await runCli(['reap', '--json', ...sel(h), '--as-of', asOf, ...extra], { env });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as ReapJson;
  };
  const status = async (h: string) => {
    const r = await runCli(['status', '--json', ...sel(h)], { env });
    assert.ok(r.code === 0 || r.code === 1, r.stderr);
    return JSON.parse(r.stdout) as StatusJson;
  };
  const BOX = 'terminal:\n  targets:\n    box:\n      backend: docker\n      lifetime_seconds: 3600\n';

  before(requireEngine);
  afterEach(() => fx.removeContainers());
  after(async () => {
    await fx.cleanup();
    tmp.cleanup();
  });

  it('targets.box {backend: docker, lifetime_seconds: 3600}: finished 30 minutes ago is kept (threshold 7200 s), status shows the target', async () => {
    const h = home(BOX);
    const id = await fx.create({ state: 'exited' });
    const finished = await fx.finishedAt(id);
    const young = await reap(h, plus(finished, 1800));
    assert.equal(young.thresholdSeconds, 7200);
    assert.deepEqual(young.removed, []);
    assert.equal(young.kept.find((e) => e.id === id)?.reason, 'too-recent');
    const s = await status(h);
    const life = s.settings.lifetimeSeconds!;
    assert.deepEqual([life.value, life.source, life.target], [3600, 'config.yaml terminal.targets.box.lifetime_seconds', 'box']);
    assert.deepEqual(life.targets, [
      { target: 'box', backend: 'docker', counts: true, from: 'config.yaml', value: 3600, source: 'config.yaml terminal.targets.box.lifetime_seconds' },
    ]);
    const text = await runCli(['status', ...sel(h)], { env });
    const from = 'config\\.yaml terminal\\.targets\\.box\\.lifetime_seconds';
    const row = `\\n {2}lifetime: 3600 s \\(${from};.*execution targets: box \\(docker\\) 3600 s from ${from}: acting on target box\\)`;
    assert.match(text.stdout, new RegExp(row));
    const old = await reap(h, plus(finished, 7200));
    assert.deepEqual(
      old.removed.map((e) => e.id),
      [id],
      'removed once 2 x 3600 s have passed',
    );
  });

  it('without the target: removed as today (threshold 600), and status has no targets', async () => {
    const h = home();
    const id = await fx.create({ state: 'exited' });
    const out = await reap(h, plus(await fx.finishedAt(id), 1800));
    assert.equal(out.thresholdSeconds, 600);
    assert.deepEqual(
      out.removed.map((e) => e.id),
      [id],
    );
    const life = (await status(h)).settings.lifetimeSeconds!;
    assert.deepEqual([life.value, life.source, life.targets, life.target], [300, 'default', undefined, undefined]);
  });

  it("a docker target's docker_orphan_reaper: false keeps the sandboxes (reaper-off); an ssh target's lifetime does not count", async () => {
    const h = home(
      'terminal:\n  targets:\n    quiet:\n      backend: docker\n      docker_orphan_reaper: false\n    far:\n      backend: ssh\n' +
        '      ssh_host: example.org\n      ssh_user: u\n      lifetime_seconds: 86400\n',
    );
    const id = await fx.create({ state: 'exited' });
    const out = await reap(h, plus(await fx.finishedAt(id), 86400 * 3));
    assert.deepEqual([out.disabled, out.reason, out.removed], [true, 'reaper disabled by config.yaml terminal.targets.quiet.docker_orphan_reaper', []]);
    assert.equal(await fx.state(id), 'exited', 'kept');
    const s = await status(h);
    assert.equal(s.settings.lifetimeSeconds!.value, 300, "the ssh target's 86400 s does not count");
    assert.deepEqual(
      [s.settings.dockerOrphanReaper!.value, s.settings.dockerOrphanReaper!.source],
      [false, 'config.yaml terminal.targets.quiet.docker_orphan_reaper'],
    );
    assert.deepEqual(
      s.settings.lifetimeSeconds!.targets!.map((t) => [t.target, t.backend, t.counts]),
      [
        ['quiet', 'docker', true],
        ['far', 'ssh', false],
      ],
    );
  });

  it("a target of the profile's runtime registry counts (<home>/runtime/execution-targets.d/<provider>.json)", async () => {
    const h = home();
    const reg = path.join(h, 'runtime', 'execution-targets.d');
    mkdirSync(reg, { recursive: true });
    const fragment = {
      version: 1,
      provider: 'acme',
      targets: { gpu: { config: { backend: 'docker', lifetime_seconds: 5400 }, owner_id: 'o', generation: '1', state: 'ready' } },
    };
    writeFileSync(path.join(reg, 'acme.json'), JSON.stringify(fragment), { mode: 0o600 });
    const id = await fx.create({ state: 'exited' });
    const out = await reap(h, plus(await fx.finishedAt(id), 3600));
    assert.equal(out.thresholdSeconds, 10800);
    assert.equal(out.kept.find((e) => e.id === id)?.reason, 'too-recent');
  });

  it("sandboxes labelled with a named target's task ids, and task directories named as hermes names them: used kept, unused removed", async () => {
    const h = home(BOX);
    const root = path.join(h, 'sandboxes');
    const scope = profileScopeOf(h);
    const ids = [
      targetTaskId('session-1', '0123456789abcdef0123', scope),
      legacyTargetTaskId('session-2', 'box', scope),
      `profile-${scope}:session-3`,
      `task-${'a'.repeat(16)}-storage-${'b'.repeat(20)}`,
    ];
    const dirs = ids.map((id) => makeTaskDir(root, id));
    for (const d of dirs) ageTree(d.dir, new Date(Date.now() - 40 * 86_400_000));
    const used = await fx.create({
      state: 'running',
      labels: { 'hermes-task-id': 'task-0a1b2c3d4e5f6071-target-0123456789abcdef0123' },
      args: ['-v', `${dirs[0]!.home}:/root`, '-v', `${dirs[0]!.workspace}:/workspace`],
    });
    const out = await reap(h, new Date().toISOString(), ['--sandbox-dirs-older-than', '30d']);
    assert.deepEqual(out.removed, [], `the running sandbox ${used} stays`);
    assert.deepEqual(
      out.sandboxDirs!.removed.map((r) => r.path).sort(),
      dirs
        .slice(1)
        .map((d) => d.dir)
        .sort(),
    );
    assert.equal(existsSync(dirs[0]!.dir), true, 'the directory a container uses stays, whatever its name');
  });
});
