/**
 * A hermes home that is a regular file is a usage error for the commands that read the home as a whole: one line
 * naming it and where it came from, exit 2, for `reap`, `list`, `watch` and `status` (it used to read as an empty
 * home: `status` said nothing needed attention, `reap` failed with "unexpected error ... ENOTDIR", exit 1). Through
 * the built CLI, against the engine simulator (the engine answers: only the home is wrong).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

describe('a hermes home that is not a directory', () => {
  let dir: string;
  let file: string;
  let sim: EngineSimulator;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'hj-homefile-'));
    file = path.join(dir, 'hermes-home');
    writeFileSync(file, 'not a directory\n');
    sim = await EngineSimulator.start({
      bulk: [{ count: 2, labels: { 'hermes-agent': '1', 'hermes-profile': 'custom' }, finishedAt: '2020-01-01T00:00:00Z' }],
    });
  });
  after(async () => {
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const cmd of [['reap'], ['reap', '--dry-run'], ['list'], ['watch'], ['status']]) {
    it(`${cmd.join(' ')}: $HERMES_HOME a regular file: one line naming it, exit 2, the engine untouched`, async () => {
      const res = await runCli([...cmd, '--host', sim.host], { env: { HERMES_HOME: file }, killAfterMs: 20_000 });
      assert.equal(res.code, 2, res.stderr);
      assert.equal(res.stdout, '');
      const lines = res.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, res.stderr);
      assert.match(lines[0]!, new RegExp(`hermes home '${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}' \\(from \\$HERMES_HOME\\) is not a directory`));
      assert.equal(sim.size, 2);
    });
  }

  it('--home a regular file, and a --profile under a root that is a file: named the same way', async () => {
    const viaFlag = await runCli(['status', '--host', sim.host, '--home', file]);
    assert.equal(viaFlag.code, 2, viaFlag.stderr);
    assert.match(viaFlag.stderr, /^hermes-janitor: .*\(from --home\) is not a directory: point --home at hermes' home directory\n$/);
    const profile = await runCli(['list', '--host', sim.host, '--profile', 'work'], { env: { HERMES_HOME: file } });
    assert.equal(profile.code, 2, profile.stderr);
    assert.match(profile.stderr, new RegExp(`'${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/profiles/work' \\(from \\$HERMES_HOME\\) is not a directory`));
  });

  it('a home that does not exist yet is still an empty home (exit 0)', async () => {
    const res = await runCli(['list', '--host', sim.host, '--all-profiles'], { env: { HERMES_HOME: path.join(dir, 'not-yet') } });
    assert.equal(res.code, 0, res.stderr);
  });
});
