/**
 * What a reap asks the engine to measure (#44): the size of each writable layer (`size=1` on the inspect) costs the
 * engine more than the inspect itself, so it is asked only when the run's output shows what was freed: text and JSON
 * do, and so does a metrics file; `--quiet` alone shows nothing of it and asks for none. The containers go either way.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

async function reapWith(flags: string[]): Promise<{ sized: number; inspects: number; left: number; stdout: string }> {
  const profile = `sizes${process.pid}`;
  const labels = { 'hermes-agent': '1', 'hermes-profile': profile };
  const sim = await EngineSimulator.start({
    record: true,
    containers: ['hermes-0a0a0a0a', 'hermes-0b0b0b0b', 'hermes-0c0c0c0c'].map((name) => ({ name, labels, finishedAt: '2026-11-27T09:00:00Z' })),
  });
  const home = tempDir('hj-sizes-');
  try {
    const env = { HOME: home.dir, HERMES_HOME: path.join(home.dir, 'hermes') };
    const metrics = flags.includes('--metrics-file') ? [path.join(home.dir, 'janitor.prom')] : [];
    const r = await runCli(['reap', '--host', sim.host, '--profile', profile, '--as-of', '2026-11-27T12:00:00Z', ...flags, ...metrics], { env });
    assert.equal(r.code, 0, r.stderr);
    const inspects = sim.requests.filter((q) => q.kind === 'inspect');
    return { sized: inspects.filter((q) => /[?&]size=(1|true)\b/.test(q.url)).length, inspects: inspects.length, left: sim.size, stdout: r.stdout };
  } finally {
    await sim.close();
    home.cleanup();
  }
}

describe('reap: sizes are measured only for an output that shows them', () => {
  it('--quiet: no writable layer is sized, every container is removed', async () => {
    const r = await reapWith(['--quiet']);
    assert.deepEqual([r.sized, r.inspects, r.left, r.stdout], [0, 3, 0, '']);
  });

  it('text, JSON, and --quiet with a metrics file: each inspect sizes the layer', async () => {
    const text = await reapWith([]);
    assert.deepEqual([text.sized, text.left], [3, 0]);
    assert.match(text.stdout, /^Total reclaimed space: /m);
    const json = await reapWith(['--json']);
    assert.deepEqual([json.sized, json.left], [3, 0]);
    const doc = JSON.parse(json.stdout) as { removed: Array<{ reclaimedBytes?: number }> };
    assert.ok(doc.removed.every((e) => typeof e.reclaimedBytes === 'number'));
    const withMetrics = await reapWith(['--quiet', '--metrics-file']);
    assert.deepEqual([withMetrics.sized, withMetrics.left], [3, 0]);
  });
});
