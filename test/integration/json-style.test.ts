/**
 * One JSON style (#39): every `--json` document starts with "schemaVersion"; a reap that did nothing (skipped for a
 * fresh stamp) still has its arrays, empty; the breakers' documents carry camelCase keys and ISO-8601 times beside
 * their older snake_case keys and epoch seconds (kept).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('one JSON style', () => {
  const tmp = tempDir('hj-json-');
  const env = { HOME: tmp.dir, HERMES_HOME: path.join(tmp.dir, 'hermes') };
  const profile = `json${process.pid}`;
  let sim: EngineSimulator;
  before(async () => {
    sim = await EngineSimulator.start({
      containers: [{ name: 'hermes-0a0a0a0a', labels: { 'hermes-agent': '1', 'hermes-profile': profile }, finishedAt: '2026-01-01T00:00:00Z' }],
    });
  });
  after(async () => {
    await sim.close();
    tmp.cleanup();
  });

  async function doc(args: string[]): Promise<Record<string, unknown>> {
    const r = await runCli([...args, '--json'], { env });
    assert.ok(r.code === 0 || r.code === 1, `${args.join(' ')}: ${r.code} ${r.stderr}`);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.equal(Object.keys(out)[0], 'schemaVersion', args.join(' '));
    assert.equal(out.schemaVersion, 1, args.join(' '));
    return out;
  }

  it('every command: schemaVersion first', async () => {
    const sel = ['--host', sim.host, '--profile', profile];
    for (const args of [
      ['list', ...sel],
      ['reap', '--dry-run', ...sel],
      ['status', ...sel],
      ['restart-guard', 'status'],
      ['restart-guard', 'check-and-record'],
      ['restart-guard', 'clear'],
      ['stuck-sessions', 'status'],
      ['stuck-sessions', 'suspend'],
      ['lifecycle-scan', 'echo', 'hi'],
      ['stop-hook', 'status'],
      ['tool-loop', 'status'],
    ]) {
      await doc(args);
    }
  });

  it('a reap skipped for a fresh stamp still has its arrays, empty', async () => {
    const sel = ['--host', sim.host, '--profile', profile, '--older-than', '1h'];
    const first = await doc(['reap', ...sel, '--once-per', '1h']);
    assert.equal((first.removed as unknown[]).length, 1);
    const skipped = await doc(['reap', ...sel, '--once-per', '1h']);
    assert.equal(skipped.skipped, 'fresh');
    for (const key of ['removed', 'stopped', 'kept', 'failed', 'hosts']) assert.ok(Array.isArray(skipped[key]), key);
    assert.deepEqual([skipped.removed, skipped.stopped, skipped.kept, skipped.failed], [[], [], [], []]);
  });

  it('the breakers: camelCase keys and ISO-8601 times beside the older keys', async () => {
    const g = await doc(['restart-guard', 'check-and-record']);
    assert.equal(g.windowSeconds, g.window_seconds);
    assert.equal(g.stateFile, g.state_file);
    assert.match(String(g.asOf), ISO);
    assert.equal(Date.parse(String(g.asOf)) / 1000, Math.round((g.now as number) * 1000) / 1000);
    assert.match(String(g.windowStart), ISO);
    assert.deepEqual(
      (g.boots as string[]).map((b) => Date.parse(b) / 1000),
      (g.state as { boots: number[] }).boots.map((b) => Math.round(b * 1000) / 1000),
    );
    const s = await doc(['stuck-sessions', 'status']);
    assert.deepEqual(s.atThreshold, s.at_threshold);
    assert.equal(s.stateFile, s.state_file);
    const l = await doc(['lifecycle-scan', 'echo', 'hi']);
    assert.equal(l.maxScanBytes, l.max_scan_bytes);
  });
});
