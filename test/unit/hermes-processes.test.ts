/**
 * The living-hermes-process rules (core/hermes-processes.ts) and the procfs reader on this host's real processes
 * (adapters/hermes-processes.ts): a process started with an argv naming hermes and a HERMES_HOME is found, with its
 * profile; its start time agrees with the clock; the janitor's own name does not count.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { listHermesProcesses } from '../../src/adapters/hermes-processes.js';
import {
  homeVariables, isPython, mayServe, namesHermes, parseBootTime, parseCmdline, parseStatComm, parseStatusUid, servedProfile, shownCommand, startedAtMs,
} from '../../src/core/hermes-processes.js';

describe('hermes processes: command lines', () => {
  it("names hermes: its scripts, modules and entry files; not hermes-janitor; not other programs", () => {
    for (const argv of [
      ['/home/u/.local/bin/hermes', 'gateway', 'run'],
      ['hermes-gateway'],
      ['/usr/bin/python3', '/home/u/.local/bin/hermes-agent'],
      ['/home/u/.hermes/hermes-agent/venv/bin/python', '/home/u/.hermes/hermes-agent/venv/bin/hermes', 'chat'],
      ['python3', '-m', 'hermes_cli.main', 'chat'],
      ['python3', '-u', '-mgateway.run'],
      ['python', '/opt/checkout/run_agent.py', '--query', 'x'],
      ['python', '-m', 'acp_adapter.entry'],
      ['node', '/srv/Hermes/agent.js'],
      ['sh', '/tmp/hj-standin-x/hermes-standin.sh', '-'],
      ['/usr/bin/env', 'PYTHONUNBUFFERED=1', 'python3', '/opt/hermes-agent/cli.py'],
    ]) assert.equal(namesHermes(argv), true, argv.join(' '));
    for (const argv of [
      ['node', '/work/wt/bin/hermes-janitor.js', 'reap'],
      ['node', '/opt/hermes_janitor/cli.js'],
      ['python3', '-m', 'http.server'],
      ['sleep', '600'],
      ['python', 'my_run_agent_tool.py'],
      // A sandbox's background job (its processes are visible on the host): a word in a command string or a file argument.
      ['sh', '-c', "( sh -c 'exec sleep 600' > /tmp/hermes_bg_t.log 2>&1 ) & echo $! > /tmp/hermes_bg_t.pid"],
      ['bash', '/root/.pyenv/libexec/pyenv-exec', 'python3', '-c', 'print("hermesProcesses")'],
      ['tail', '-f', '/home/u/.hermes/logs/hermes.log'],
      ['vim', 'hermes-notes.txt'],
    ]) assert.equal(namesHermes(argv), false, argv.join(' '));
  });

  it('Python interpreters by argv[0] or comm', () => {
    assert.equal(isPython(['/usr/bin/python3.12', 'x.py'], 'python3.12'), true);
    assert.equal(isPython(['myprog'], 'python3'), true);
    assert.equal(isPython(['/usr/bin/python-config'], 'python-config'), false);
    assert.equal(isPython(['node'], 'node'), false);
  });

  it('procfs fields: cmdline, environ (HERMES_HOME and HOME only), btime, Uid, comm with parentheses and spaces', () => {
    assert.deepEqual(parseCmdline('a\0b c\0\0'), ['a', 'b c', '']);
    assert.deepEqual(homeVariables('OPENAI_API_KEY=sk-x\0HERMES_HOME=/h\0HOME=/root\0X=1'), { hermesHome: '/h', home: '/root' });
    assert.equal(parseBootTime('cpu  1 2 3\nbtime 1764230000\nprocesses 5\n'), 1764230000);
    assert.equal(parseBootTime('cpu 1\n'), null);
    assert.equal(parseStatusUid('Name:\tsh\nUid:\t1001\t1001\t1001\t1001\n'), 1001);
    assert.equal(parseStatComm('42 (a (b) c) S 1 2'), 'a (b) c');
    assert.equal(startedAtMs(12345, 1_700_000_000), 1_700_000_123_450);
    assert.equal(shownCommand(['a', 'b\nc']), 'a b\\nc');
    assert.equal(shownCommand(['x'.repeat(300)]).length, 200);
  });
});

describe('hermes processes: the profile served, by the label rule', () => {
  const facts = (env: { hermesHome?: string; home?: string } | null, argv = ['hermes', 'gateway'], cwd: string | null = '/') => ({ argv, env, cwd });
  it('HERMES_HOME under the root: default, a named profile, custom; ~ and a relative home', () => {
    assert.deepEqual(servedProfile(facts({ hermesHome: '/home/u/.hermes', home: '/home/u' })), { profile: 'default' });
    assert.deepEqual(servedProfile(facts({ hermesHome: '/home/u/.hermes/profiles/work', home: '/home/u' })), { profile: 'work' });
    // A home outside ~/.hermes that is not <root>/profiles/<name> is its own root: the janitor's rule (hermes-home.ts).
    assert.deepEqual(servedProfile(facts({ hermesHome: '/srv/hermes-x', home: '/home/u' })), { profile: 'default' });
    assert.deepEqual(servedProfile(facts({ hermesHome: '/home/u/.hermes/other/x', home: '/home/u' })), { profile: 'custom' });
    assert.deepEqual(servedProfile(facts({ hermesHome: '/srv/root/profiles/ops', home: '/home/u' })), { profile: 'ops' });
    assert.deepEqual(servedProfile(facts({ hermesHome: '~/.hermes/profiles/a1', home: '/home/u' })), { profile: 'a1' });
    assert.deepEqual(servedProfile(facts({ hermesHome: '.hermes/profiles/b', home: '/home/u' }, undefined, '/home/u')), { profile: 'b' });
  });
  it('-p/--profile names the profile', () => {
    assert.deepEqual(servedProfile(facts({ home: '/home/u' }, ['hermes', '-p', 'coder', 'gateway'])), { profile: 'coder' });
    assert.deepEqual(servedProfile(facts({ home: '/home/u' }, ['hermes', '--profile=ops'])), { profile: 'ops' });
  });
  it('unverifiable means every profile: environment unreadable, several profiles, no HOME, no HERMES_HOME, relative home without cwd', () => {
    const none = (f: ReturnType<typeof facts>) => {
      const r = servedProfile(f);
      assert.equal(r.profile, null, JSON.stringify(f));
      return (r as { why: string }).why;
    };
    assert.match(none({ ...facts(null), envProblem: 'EACCES' } as ReturnType<typeof facts>), /environment cannot be read \(EACCES\)/);
    assert.match(none(facts({ hermesHome: '/h', home: '/home/u' }, ['hermes', 'gateway', '--all-profiles'])), /several profiles/);
    assert.match(none(facts({ hermesHome: '/h' })), /HOME/);
    assert.match(none(facts({ home: '/home/u' })), /no HERMES_HOME/);
    assert.match(none(facts({ hermesHome: 'rel', home: '/home/u' }, undefined, null)), /relative HERMES_HOME/);
    assert.equal(mayServe({ profile: null }, 'any'), true);
    assert.equal(mayServe({ profile: 'a' }, 'b'), false);
  });
});

describe('hermes processes: this host (real processes)', () => {
  it('a process whose argv names hermes, with HERMES_HOME, is listed with its profile, owner and start time; once gone, it is not', async () => {
    const before = Date.now();
    const child = spawn('bash', ['-c', 'exec -a hermes-gateway-standin sleep 600'], {
      env: { PATH: process.env.PATH, HOME: '/home/standin', HERMES_HOME: '/home/standin/.hermes/profiles/ops', OPENAI_API_KEY: 'sk-never-read' },
      stdio: 'ignore',
    });
    const exited = once(child, 'exit');
    try {
      await once(child, 'spawn');
      // exec -a replaces sh's command line with sleep's: wait for that event itself (the command line changing).
      let found;
      for (let i = 0; i < 200 && !found; i++) {
        found = listHermesProcesses().processes.find((p) => p.pid === child.pid);
        if (!found) await new Promise((r) => setImmediate(r));
      }
      assert.ok(found, 'the stand-in is listed');
      assert.equal(found.profile, 'ops');
      assert.equal(found.uid, process.getuid!());
      assert.equal(found.hermes, true);
      assert.match(found.command, /^hermes-gateway-standin 600$/);
      assert.doesNotMatch(JSON.stringify(found), /sk-never-read/);
      // btime is whole seconds: within a second (and the spawn) of the clock.
      assert.ok(found.startedAtMs >= before - 1500 && found.startedAtMs <= Date.now() + 1000, `${found.startedAtMs} vs ${before}`);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    assert.equal(listHermesProcesses().processes.some((p) => p.pid === child.pid), false);
  });

  it('a fake procfs with no boot time or no directory: nothing is known (readable: false)', () => {
    assert.equal(listHermesProcesses({ procRoot: '/nonexistent-proc' }).readable, false);
  });

  it('HERMES_JANITOR_PROC_ROOT points the scan elsewhere (tests, diagnosis); unset or empty: /proc', async () => {
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const os = await import('node:os');
    const { procRootOf } = await import('../../src/adapters/hermes-processes.js');
    assert.equal(procRootOf({}), '/proc');
    assert.equal(procRootOf({ HERMES_JANITOR_PROC_ROOT: ' ' }), '/proc');
    const dir = mkdtempSync(`${os.tmpdir()}/hj-proc-unit-`);
    try {
      writeFileSync(`${dir}/stat`, 'btime 1700000000\n');
      const t = listHermesProcesses({ procRoot: procRootOf({ HERMES_JANITOR_PROC_ROOT: dir }) });
      assert.deepEqual([t.readable, t.processes], [true, []], 'a table of its own: no process, whatever runs on this machine');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
