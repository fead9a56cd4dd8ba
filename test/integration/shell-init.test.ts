/**
 * `shell-init`: the snippet takes `--home`/`--profile` (before or after `shell-init`) into the reap it runs, and tests
 * the stamp's age in the shell itself, starting hermes-janitor only when a sweep is due (or when the shell's
 * environment is not the one the stamp was named for). hermes-janitor is a stand-in on PATH here that records each
 * start, so "starts no node" is what the test sees; the stamp is written by a real `reap` (engine simulator).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fishQuote } from '../../src/cli/advice.js';
import { runCli, tempDir } from '../helpers/cli.js';
import { failUnderCi, unmet } from '../helpers/preconditions.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

const has = (cmd: string) => spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
/** Why a shell's test cannot run here (scripts/engine.sh installs zsh and fish: under CI a missing one fails). */
const missing = (shell: string) => !has(shell) && `${shell} is not installed (scripts/engine.sh shells installs it)`;

describe('shell-init', () => {
  const tmp = tempDir('hj-shell-init-');
  const profile = `shell${process.pid}`;
  const starts = path.join(tmp.dir, 'starts.log');
  const shim = path.join(tmp.dir, 'shim');
  let sim: EngineSimulator;
  let env: Record<string, string>;

  before(async () => {
    sim = await EngineSimulator.start({ containers: [] });
    env = { HOME: tmp.dir, DOCKER_HOST: sim.host };
    mkdirSync(shim);
    writeFileSync(path.join(shim, 'hermes-janitor'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${starts}'\n`);
    chmodSync(path.join(shim, 'hermes-janitor'), 0o755);
  });
  after(async () => {
    await sim.close();
    tmp.cleanup();
  });

  /** Runs an interactive shell that sources the snippet, with the stand-in first on PATH; what it started. */
  function startShell(shell: 'bash' | 'zsh' | 'fish', rc: string, extraEnv: Record<string, string> = {}): string[] {
    rmSync(starts, { force: true });
    const shellEnv = { PATH: `${shim}:/usr/bin:/bin`, ...env, ...extraEnv };
    const args = shell === 'bash' ? ['--rcfile', rc, '-i', '-c', 'exit'] : ['-i', '-c', `source ${rc}`];
    const r = spawnSync(shell, args, { env: shellEnv, encoding: 'utf8', input: '' });
    assert.equal(r.status, 0, `${shell}: ${r.stderr}`);
    return existsSync(starts) ? readFileSync(starts, 'utf8').trim().split('\n') : [];
  }

  function stampFile(): string {
    const dir = path.join(tmp.dir, '.hermes', 'profiles', profile, 'janitor', 'stamps');
    const [name] = readdirSync(dir);
    return path.join(dir, name!);
  }

  it('--profile and --home, before or after shell-init, are in the reap it runs', async () => {
    const beforeIt = await runCli(['--profile', 'work', 'shell-init', 'bash'], { env });
    assert.equal(beforeIt.code, 0, beforeIt.stderr);
    assert.match(beforeIt.stdout, /hermes-janitor reap --profile work --once-per 1h --background --fail-open --quiet/);
    const afterIt = await runCli(['shell-init', 'zsh', '--home', '/srv/my hermes', '--every', '30m'], { env });
    assert.match(afterIt.stdout, /hermes-janitor reap --home '\/srv\/my hermes' --once-per 30m --background --fail-open --quiet/);
    assert.equal(spawnSync('bash', ['-n'], { input: beforeIt.stdout }).status, 0, 'valid bash');
    failUnderCi(missing('zsh'));
    if (has('zsh')) assert.equal(spawnSync('zsh', ['-n'], { input: afterIt.stdout }).status, 0, 'valid zsh');
  });

  it('reap --once-per says why it skipped under -v, and never skips a --dry-run', async () => {
    const p = `${profile}-v`;
    assert.equal((await runCli(['reap', '--quiet', '--profile', p], { env })).code, 0);
    const skipped = await runCli(['reap', '--once-per', '1h', '-v', '--profile', p], { env });
    assert.equal(skipped.code, 0, skipped.stderr);
    assert.match(skipped.stderr, /--once-per 1h: .*last sweep completed \d+ seconds? ago \(.*stamps.*\.json\)/);
    assert.match(skipped.stderr, /--once-per 1h: skipped: every engine was swept within it/);
    sim.resetStats();
    const dry = await runCli(['reap', '--once-per', '1h', '--dry-run', '-v', '--profile', p], { env });
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stderr, /a dry run always sweeps/);
    assert.match(dry.stdout, /^Would remove 0/m);
    assert.ok(sim.stats.byKind.list > 0, 'the dry run asked the engine');
  });

  it('fish reads back every value fishQuote wrote, controls and quotes included (the one quoting of completion and shell-init)', (t) => {
    if (unmet(t, missing('fish'))) return;
    const values = ['plain', '', "it's", 'a\\b', "\\'", "x\\'; touch /tmp/nope #", 'line\none', 'r\u202el\u009b2J', '$HOME (echo x) *'];
    for (const v of values) {
      const r = spawnSync('fish', ['--no-config', '-c', `printf '%s' ${fishQuote(v)}`], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, v, JSON.stringify(fishQuote(v)));
      assert.doesNotMatch(fishQuote(v), /\n/);
    }
  });

  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    it(`${shell}: a hostile --home or HERMES_HOME (\\', ; touch) is one word to the shell: nothing of it runs (#47)`, async (t) => {
      if (unmet(t, missing(shell))) return;
      const marker = path.join(tmp.dir, `pwned-${shell}`);
      const hostile = path.join(tmp.dir, `h\\'; touch ${marker}; echo \\'\\\\ x`);
      const ways: Array<{ args: string[]; env: Record<string, string> }> = [
        { args: ['shell-init', shell, '--home', hostile], env: {} },
        { args: ['shell-init', shell], env: { HERMES_HOME: hostile } },
      ];
      for (const way of ways) {
        const snippet = await runCli(way.args, { env: { ...env, ...way.env } });
        assert.equal(snippet.code, 0, snippet.stderr);
        const rc = path.join(tmp.dir, `rc-hostile.${shell}`);
        writeFileSync(rc, snippet.stdout);
        const started = startShell(shell, rc, way.env);
        assert.equal(existsSync(marker), false, `${shell} ran the injected command:\n${snippet.stdout}`);
        const home = way.env.HERMES_HOME ? '' : `--home ${hostile} `;
        assert.deepEqual(started, [`reap ${home}--once-per 1h --background --fail-open --quiet`], `${shell}: the home reached the reap whole`);
      }
    });
  }

  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    it(`${shell}: a fresh stamp starts nothing; a stale or missing one, or another engine, starts the reap`, async (t) => {
      if (unmet(t, missing(shell))) return;
      const snippet = await runCli(['shell-init', shell, '--profile', profile], { env });
      assert.equal(snippet.code, 0, snippet.stderr);
      const rc = path.join(tmp.dir, `rc.${shell}`);
      writeFileSync(rc, snippet.stdout);

      const reap = await runCli(['reap', '--quiet', '--profile', profile], { env });
      assert.equal(reap.code, 0, reap.stderr);
      assert.deepEqual(startShell(shell, rc), [], 'fresh: nothing started');

      assert.deepEqual(
        startShell(shell, rc, { DOCKER_HOST: 'unix:///elsewhere.sock' }),
        [`reap --profile ${profile} --once-per 1h --background --fail-open --quiet`],
        'another engine: hermes-janitor decides',
      );

      const file = stampFile();
      const stamp = JSON.parse(readFileSync(file, 'utf8')) as { completedAt: string };
      const stale = new Date(Date.parse(stamp.completedAt) - 2 * 3600_000);
      writeFileSync(file, `${JSON.stringify({ ...stamp, completedAt: stale.toISOString() })}\n`);
      spawnSync('touch', ['-d', stale.toISOString(), file]);
      assert.equal(startShell(shell, rc).length, 1, 'stale: the reap is started');

      rmSync(file);
      assert.equal(startShell(shell, rc).length, 1, 'missing: the reap is started');
    });
  }
});
