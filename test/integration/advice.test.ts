/**
 * Advice that can be pasted: the command `status` and `list` advise repeats the selection and the engine they were
 * run with, quoted for a POSIX shell, so pasted into `sh` it acts on what was shown: the profile given, not the
 * default one (engine simulator; hermes-janitor on PATH is the built CLI).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BIN, NOBODY, hasSetpriv, runCli, tempDir } from '../helpers/cli.js';
import { unmet } from '../helpers/preconditions.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';
import { shellQuote } from '../../src/cli/advice.js';

const OLD = '2026-01-01T00:00:00Z';

describe('advice that can be pasted', () => {
  const tmp = tempDir('hj-advice-');
  const home = path.join(tmp.dir, 'my hermes'); // a space: the advice must quote it
  const bin = path.join(tmp.dir, 'bin');
  const p = `work${process.pid}`;
  const other = `other${process.pid}`;
  let sim: EngineSimulator;

  before(async () => {
    mkdirSync(home);
    mkdirSync(bin);
    writeFileSync(path.join(bin, 'hermes-janitor'), `#!/bin/sh\nexec '${process.execPath}' '${BIN}' "$@"\n`);
    chmodSync(path.join(bin, 'hermes-janitor'), 0o755);
    const labels = (profile: string) => ({ 'hermes-agent': '1', 'hermes-profile': profile });
    sim = await EngineSimulator.start({
      containers: [
        { name: 'hermes-0a0a0a0a', labels: labels(p), finishedAt: OLD },
        { name: 'hermes-0b0b0b0b', labels: labels(p), finishedAt: OLD },
        { name: 'hermes-0c0c0c0c', labels: labels(other), finishedAt: OLD },
      ],
    });
  });
  after(async () => {
    await sim.close();
    tmp.cleanup();
  });

  /**
   * Runs `line` as a user pasting it would: `sh -c`, hermes-janitor on PATH, no DOCKER_HOST, another directory (not
   * spawnSync: the simulator answers from this process).
   */
  function paste(line: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = spawn('sh', ['-c', line], { env: { PATH: `${bin}:/usr/bin:/bin`, HOME: tmp.dir }, cwd: '/' });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
  }

  it("status --profile P: the reap it advises, pasted into sh, removes P's orphans and nothing of another profile", async () => {
    const st = await runCli(['status', '--home', home, '--profile', p, '--host', sim.host], { env: { HOME: tmp.dir } });
    assert.equal(st.code, 1, st.stderr);
    const m = /2 container\(s\) past the threshold.*: run (hermes-janitor reap .*)$/m.exec(st.stdout);
    assert.ok(m, st.stdout);
    const advice = m[1]!;
    assert.equal(advice, `hermes-janitor reap --home '${home}' --profile ${p} --host ${sim.host}`);
    const r = await paste(advice);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^Removed 2,/m);
    assert.deepEqual(
      sim.ids().map((id) => sim.get(id)!.name),
      ['hermes-0c0c0c0c'],
      'the other profile is untouched',
    );
  });

  it('list: the reap it advises repeats the home (from HERMES_HOME), the selection, the engine and the policy flags', async () => {
    const res = await runCli(['list', '--all-profiles', '--host', sim.host, '--older-than', '1h', '--label', 'hermes-agent=1'], {
      env: { HOME: tmp.dir, HERMES_HOME: home },
    });
    assert.equal(res.code, 0, res.stderr);
    assert.match(
      res.stderr,
      new RegExp(
        `them: hermes-janitor reap --home '${home.replace(/[/.]/g, '\\$&')}' --all-profiles --label hermes-agent=1 ` +
          `--host ${sim.host.replace(/[/.]/g, '\\$&')} --older-than 1h$`,
        'm',
      ),
    );
  });

  it("status as a user, the home from HERMES_HOME: the advice names it; pasted as root it removes that home's orphans, not root's own", async (t) => {
    const needs = 'needs root and setpriv (util-linux): the status runs as nobody, the paste as root';
    if (unmet(t, process.getuid?.() !== 0 || !hasSetpriv() ? needs : false)) return;
    // The user's hermes home, a profile of it (nobody's, as a user's is), on an engine the user can reach (loopback TCP).
    const base = mkdtempSync(path.join(os.tmpdir(), 'hj-advice-user-'));
    chmodSync(base, 0o755);
    const userHome = path.join(base, 'user');
    const userHermes = path.join(userHome, '.hermes', 'profiles', p);
    mkdirSync(userHermes, { recursive: true });
    for (const d of [userHome, path.join(userHome, '.hermes'), path.join(userHome, '.hermes', 'profiles'), userHermes]) chownSync(d, NOBODY, NOBODY);
    const labels = (profile: string) => ({ 'hermes-agent': '1', 'hermes-profile': profile });
    const tcp = await EngineSimulator.start({
      port: 0,
      containers: [
        { name: 'hermes-1a1a1a1a', labels: labels(p), finishedAt: OLD },
        { name: 'hermes-1b1b1b1b', labels: labels('default'), finishedAt: OLD },
      ],
    });
    const state = mkdtempSync(path.join(os.tmpdir(), 'hj-advice-state-')); // root's state for the user's home
    try {
      const st = await runCli(['status', '--host', tcp.host], { env: { HOME: userHome, HERMES_HOME: userHermes }, unprivileged: true });
      assert.equal(st.code, 1, st.stderr + st.stdout);
      assert.match(st.stdout.split('\n')[0]!, /^ATTENTION: 1 thing: 1 container\(s\) past the threshold$/, 'the verdict on the first line');
      const advice = /past the threshold.*: run (hermes-janitor reap .*)$/m.exec(st.stdout)?.[1];
      assert.equal(advice, `hermes-janitor reap --home ${userHermes} --host ${tcp.host}`, 'the home from HERMES_HOME, named');
      // Pasted by root: its own HOME, no HERMES_HOME (alone, `reap` would judge root's ~/.hermes, profile default).
      const r = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const child = spawn('sh', ['-c', advice!], { env: { PATH: `${bin}:/usr/bin:/bin`, HOME: tmp.dir, HERMES_JANITOR_STATE_DIR: state }, cwd: '/' });
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        child.stdout.resume();
        child.on('close', (status) => resolve({ status, stderr }));
      });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(
        tcp.ids().map((id) => tcp.get(id)!.name),
        ['hermes-1b1b1b1b'],
        "the user's orphan removed; root's own default profile untouched",
      );
    } finally {
      await tcp.close();
      rmSync(base, { recursive: true, force: true });
      rmSync(state, { recursive: true, force: true });
    }
  });

  it('values are quoted for a POSIX shell, control characters included', () => {
    for (const v of ['plain', 'a b', "it's", '$HOME', 'a;b', '', 'tab\there', 'new\nline', 'back\\slash']) {
      const out = spawnSync('bash', ['-c', `printf '%s' ${shellQuote(v)}`], { encoding: 'utf8' }).stdout;
      assert.equal(out, v, `${JSON.stringify(v)} -> ${shellQuote(v)}`);
      assert.ok(!shellQuote(v).includes('\n'), 'one line');
    }
  });
});
