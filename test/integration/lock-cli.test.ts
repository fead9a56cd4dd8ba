import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { reapLockPath } from '../../src/adapters/janitor-files.js';
import { runCli, tempDir } from '../helpers/cli.js';

const tmp = tempDir('hj-lock-cli-');
after(() => tmp.cleanup());

describe('a FIFO planted at a lock path, through the CLI', () => {
  it('reap exits 2 at once with one line naming the lock path, never hanging or touching the engine', async () => {
    const home = path.join(tmp.dir, 'reap-home');
    const host = `unix://${path.join(tmp.dir, 'no-engine.sock')}`;
    const lock = reapLockPath(home, host);
    fs.mkdirSync(path.dirname(lock), { recursive: true });
    execFileSync('mkfifo', [lock]);
    const r = await runCli(['reap', '--host', host], { env: { HERMES_HOME: home }, killAfterMs: 20_000 });
    assert.equal(r.signal, null, 'the process was killed: it hung');
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`${lock.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*FIFO`));
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  });

  it('a breaker whose state lock is a FIFO fails open with one warning instead of hanging', async () => {
    const home = path.join(tmp.dir, 'hook-home');
    const marker = path.join(home, 'stop-hook', 'marker.json');
    fs.mkdirSync(path.dirname(marker), { recursive: true });
    execFileSync('mkfifo', [`${marker}.lock`]);
    const r = await runCli(['stop-hook', 'arm', '--remaining', '3'], { env: { HERMES_HOME: home }, killAfterMs: 20_000 });
    assert.equal(r.signal, null, 'the process was killed: it hung');
    assert.match(r.stderr, /marker\.json\.lock.*FIFO/);
    const hook = await runCli(['stop-hook'], {
      env: { HERMES_HOME: home },
      input: JSON.stringify({ hook_event_name: 'Stop', session_id: 's' }),
      killAfterMs: 20_000,
    });
    assert.equal(hook.signal, null);
    assert.equal(hook.code, 0, 'the hook lets the session stop');
    assert.doesNotMatch(hook.stdout, /"block"/);
  });
});
