/**
 * What a run freed (#39), on the real engine: a reap of five exited sandboxes that each wrote to their writable layer
 * and to an anonymous volume ends with the space reclaimed, `reclaimedBytes` in JSON (the layers and volumes as the
 * engine measured them) and the metric; `--images-over` takes Docker's spellings (10G).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_HOST, ENGINE_KIND, EngineFixture, docker, requireEngine } from '../helpers/docker.js';
import { setTimeout as sleep } from 'node:timers/promises';

const WRITE = ['sh', '-c', 'head -c 300000 /dev/zero > /layer; head -c 200000 /dev/zero > /data/v; touch /written; sleep 3600'];

describe(`reap: the space it freed (built CLI, ${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const t = tempDir('hj-reclaimed-');
  before(requireEngine);
  after(async () => {
    await fx.cleanup();
    t.cleanup();
  });
  const env = { HERMES_HOME: path.join(t.dir, 'hermes'), HOME: t.dir, DOCKER_HOST: ENGINE_HOST };
  const sel = () => ['--label', `hermes-janitor-test-run=${fx.runId}`, '--all-profiles', '--as-of', new Date(Date.now() + 3600_000).toISOString()];

  it('five exited sandboxes: a dry run says what it would reclaim; the reap reclaims it (text, JSON, metric)', async () => {
    // Running until both files are written, then stopped: an exited sandbox with a full layer and volume.
    const ids = await fx.createMany(5, { state: 'running', cmd: WRITE, args: ['-v', '/data'] });
    for (const id of ids) {
      for (let i = 0; i < 100 && (await docker(['exec', id, 'sh', '-c', 'test -f /written && echo y']).catch(() => '')) !== 'y'; i++) await sleep(100);
      await docker(['stop', '-t', '0', id]);
    }
    const dry = await runCli(['reap', '--dry-run', ...sel()], { env });
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /^Space it would reclaim: \d+(\.\d)? (KiB|MiB)$/m);

    const file = path.join(t.dir, 'janitor.prom');
    const r = await runCli(['reap', '--json', ...sel(), '--metrics-file', file], { env });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      removed: Array<{ reclaimedBytes: number }>;
      reclaimedBytes: number;
      reclaimed: { total: number; containers: number };
    };
    assert.equal(out.removed.length, 5);
    // Each one's layer (300 kB), and on Docker its anonymous volume (200 kB) as docker system df measures it.
    for (const e of out.removed) assert.ok(e.reclaimedBytes >= (ENGINE_KIND === 'docker' ? 500_000 : 300_000), JSON.stringify(e));
    assert.equal(
      out.reclaimed.containers,
      out.removed.reduce((n, e) => n + e.reclaimedBytes, 0),
    );
    assert.equal(
      out.reclaimedBytes,
      Object.entries(out.reclaimed)
        .filter(([k]) => k !== 'total')
        .reduce((n, [, v]) => n + v, 0),
    );
    assert.equal(out.reclaimedBytes, out.reclaimed.total);
    assert.match(readFileSync(file, 'utf8'), new RegExp(`^hermes_janitor_last_run_reclaimed_bytes\\{home="[^"]+"\\} ${out.reclaimedBytes}$`, 'm'));
  });

  it('--images-over takes 10G, 10g, 10GB and 10GiB', async () => {
    for (const size of ['10G', '10g', '10GB', '10GiB']) {
      const r = await runCli(['reap', '--dry-run', '--json', ...sel(), '--images-over', size], { env });
      assert.equal(r.code, 0, `${size}: ${r.stderr}`);
      assert.ok('images' in (JSON.parse(r.stdout) as object), size);
    }
  });
});
