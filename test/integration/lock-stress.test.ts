import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { REPO } from '../helpers/cli.js';

describe('file lock under contention with dying holders (bench/stress-lock.ts, real processes)', () => {
  it('6 contenders for 10 s plus processes that die holding it: no overlap, no wait over 5 s, nothing left behind', (t) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(REPO, 'bench', 'stress-lock.ts'), '--seconds', '10', '--procs', '6'], {
      cwd: REPO,
      encoding: 'utf8',
      timeout: 120_000,
    });
    const last = r.stdout.trim().split('\n').at(-1) ?? '';
    assert.ok(last.startsWith('{'), `stress output: ${r.stdout}\n${r.stderr}`);
    const res = JSON.parse(last) as {
      acquisitions: number;
      dyingProcesses: number;
      killed: number;
      overlaps: number;
      timeouts: number;
      crashed: number;
      waitMs: { max: number };
      left: string[];
    };
    for (const line of r.stdout.trim().split('\n').slice(0, 4)) t.diagnostic(line);
    assert.equal(res.overlaps, 0, 'two holders in the critical section at once');
    assert.equal(res.timeouts, 0);
    assert.equal(res.crashed, 0, r.stderr);
    assert.ok(res.waitMs.max <= 5000, `an acquisition waited ${res.waitMs.max} ms`);
    assert.deepEqual(res.left, []);
    assert.ok(res.acquisitions > 100, `only ${res.acquisitions} acquisitions`);
    assert.ok(res.dyingProcesses > 10 && res.killed > 0, 'holders died, some by SIGKILL');
    assert.equal(r.status, 0);
  });
});
