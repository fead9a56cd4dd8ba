/**
 * The living-hermes-process rules (hermes/processes.ts) and the procfs reader on this host's real processes
 * (adapters/hermes-processes.ts): what is hermes (its entry points, modules, entry files, checkout, venv, PYTHONPATH;
 * never a path component that merely starts with `hermes-`), which of its processes serve the multiplexed surfaces,
 * and what each owns; a process started with an argv naming hermes and a HERMES_HOME is found, with its profile; its
 * start time agrees with the clock; the janitor's own name does not count.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { listHermesProcesses } from '../../src/adapters/hermes-processes.js';
import { isPython, mayServe, parseBootTime, parseCmdline, parseStatComm, parseStatusUid, shownCommand, startedAtMs } from '../../src/hermes/process-facts.js';
import {
  type HermesPlace,
  type PlaceProbe,
  allowlistOf,
  hermesCommand,
  normalizeProfileName,
  ownershipOf,
  processVariables,
  surfaceOf,
} from '../../src/hermes/processes.js';
import { LAUNCHERS } from '../fixtures/hermes-launchers/launchers.js';

/** A filesystem where only the given directories are hermes places. */
const probeOf =
  (places: Record<string, HermesPlace['kind']>): PlaceProbe =>
  (p) => {
    for (const [dir, kind] of Object.entries(places)) if (p === dir || p.startsWith(`${dir}/`)) return { kind, dir };
    return null;
  };
const none = probeOf({});
const isHermes = (argv: string[], probe = none, vars: { pythonPath?: string } | null = null) => hermesCommand(argv, vars, probe) !== null;

describe('hermes processes: what is hermes', () => {
  it('its entry points, run directly or by an interpreter; its modules and entry files', () => {
    for (const argv of [
      ['/home/u/.local/bin/hermes', 'gateway', 'run'],
      ['/usr/bin/python3', '/home/u/.local/bin/hermes-agent'],
      ['hermes-acp'],
      ['/home/u/.hermes/hermes-agent/venv/bin/python', '/home/u/.hermes/hermes-agent/venv/bin/hermes', 'chat'],
      ['/bin/sh', '/tmp/x/hermes', 'gateway', 'run'],
      ['python3', '-m', 'hermes_cli.main', 'chat'],
      ['python3', '-u', '-mgateway.run'],
      ['python3', '-m', 'tui_gateway.entry'],
      ['python', '/opt/checkout/run_agent.py', '--query', 'x'],
      ['python', '/opt/checkout/gateway/run.py'],
      ['python', '-m', 'acp_adapter.entry'],
      ['/usr/bin/env', 'PYTHONUNBUFFERED=1', 'python3', '-m', 'hermes_cli.main', 'gateway'],
    ])
      assert.equal(isHermes(argv), true, argv.join(' '));
  });

  it('not: a path component that starts with hermes-, the janitor, other programs, words in a command string', () => {
    for (const argv of [
      ['bash', '/opt/hermes-notes/backup.sh'],
      ['sh', '/tmp/hj-standin-x/hermes-standin.sh', '-'],
      ['hermes-gateway'],
      ['node', '/srv/Hermes/agent.js'],
      ['/usr/bin/env', 'PYTHONUNBUFFERED=1', 'python3', '/opt/hermes-agent/cli.py'],
      ['node', '/work/wt/bin/hermes-janitor.js', 'reap'],
      ['node', '/opt/hermes_janitor/cli.js'],
      ['python3', '-m', 'http.server'],
      ['sleep', '600'],
      ['python', 'my_run_agent_tool.py'],
      ['sh', '-c', "( sh -c 'exec sleep 600' > /tmp/hermes_bg_t.log 2>&1 ) & echo $! > /tmp/hermes_bg_t.pid"],
      ['bash', '/root/.pyenv/libexec/pyenv-exec', 'python3', '-c', 'print("hermesProcesses")'],
      ['tail', '-f', '/home/u/.hermes/logs/hermes.log'],
      ['vim', 'hermes-notes.txt'],
    ])
      assert.equal(isHermes(argv), false, argv.join(' '));
  });

  it('what the filesystem says: a script in a checkout, an interpreter of its venv, a PYTHONPATH naming it (hermes as a library)', () => {
    const probe = probeOf({ '/opt/hermes-agent': 'checkout', '/srv/venvs/h': 'venv' });
    assert.equal(isHermes(['python3', '/opt/hermes-agent/batch_runner.py'], probe), true);
    assert.match(hermesCommand(['python3', '/opt/hermes-agent/batch_runner.py'], null, probe)!.why, /checkout \/opt\/hermes-agent/);
    assert.equal(isHermes(['bash', '/opt/hermes-agent/scripts/install.sh'], probe), false, 'a shell script there is not hermes running');
    assert.equal(isHermes(['/srv/venvs/h/bin/python3', 'driver.py'], probe), true);
    assert.equal(isHermes(['/usr/bin/python3', 'driver.py'], probe, { pythonPath: '/x:/opt/hermes-agent' }), true);
    assert.match(hermesCommand(['/usr/bin/python3', 'driver.py'], { pythonPath: '/opt/hermes-agent' }, probe)!.why, /PYTHONPATH/);
    assert.equal(isHermes(['/usr/bin/python3', 'driver.py'], probe, { pythonPath: '/opt/other' }), false);
    assert.equal(isHermes(['/usr/bin/python3', '/opt/other/driver.py'], probe), false);
  });

  it('Python interpreters by argv[0] or comm', () => {
    assert.equal(isPython(['/usr/bin/python3.12', 'x.py'], 'python3.12'), true);
    assert.equal(isPython(['myprog'], 'python3'), true);
    assert.equal(isPython(['/usr/bin/python-config'], 'python-config'), false);
    assert.equal(isPython(['node'], 'node'), false);
  });

  it('procfs fields: cmdline, environ (only the variables the rules read), btime, Uid, comm with parentheses and spaces', () => {
    assert.deepEqual(parseCmdline('a\0b c\0\0'), ['a', 'b c', '']);
    assert.deepEqual(processVariables('OPENAI_API_KEY=sk-x\0HERMES_HOME=/h\0HOME=/root\0PYTHONPATH=/p\0X=1\0TERMINAL_DOCKER_SHARED_CONTAINER_KEY=team'), {
      hermesHome: '/h',
      home: '/root',
      pythonPath: '/p',
      sharedKey: 'team',
    });
    assert.equal(parseBootTime('cpu  1 2 3\nbtime 1764230000\nprocesses 5\n'), 1764230000);
    assert.equal(parseBootTime('cpu 1\n'), null);
    assert.equal(parseStatusUid('Name:\tsh\nUid:\t1001\t1001\t1001\t1001\n'), 1001);
    assert.equal(parseStatComm('42 (a (b) c) S 1 2'), 'a (b) c');
    assert.equal(startedAtMs(12345, 1_700_000_000), 1_700_000_123_450);
    assert.equal(shownCommand(['a', 'b\nc']), 'a b\\nc');
    assert.equal(shownCommand(['x'.repeat(300)]).length, 200);
  });
});

describe('hermes processes: the multiplexed surfaces', () => {
  const surface = (argv: string[]) => surfaceOf(hermesCommand(argv, null, none)!);
  it('the gateway however started, the dashboard, the TUI backend, the cron ticker; not their control verbs', () => {
    for (const argv of [
      ['hermes', 'gateway'],
      ['hermes', 'gateway', 'run'],
      ['hermes', 'gateway', 'run', '--replace'],
      ['hermes', 'gateway', 'start'],
      ['/v/bin/python', '-m', 'hermes_cli.main', 'gateway', 'run'],
      ['python3', '-m', 'gateway.run'],
      ['python', '/c/gateway/run.py'],
      ['hermes', '-m', 'gpt-x', 'gateway', 'run'],
    ])
      assert.equal(surface(argv).surface, 'gateway', argv.join(' '));
    assert.equal(surface(['hermes', 'dashboard']).surface, 'dashboard');
    assert.equal(surface(['python3', '-m', 'tui_gateway.entry']).surface, 'tui-gateway');
    assert.equal(surface(['hermes', 'cron', 'daemon']).surface, 'cron');
    for (const argv of [
      ['hermes', 'gateway', 'stop'],
      ['hermes', 'gateway', 'status'],
      ['hermes', 'dashboard', '--stop'],
      ['hermes', 'chat'],
      ['hermes'],
      ['hermes', 'cron', 'list'],
      ['hermes-agent'],
    ]) {
      assert.equal(surface(argv).surface, null, argv.join(' '));
    }
  });
  it("hermes' own launchers (systemd unit, launchd plist, Desktop and AppImage backends, gateway migrate): each a surface, by what it runs", () => {
    for (const l of LAUNCHERS) {
      const cmd = hermesCommand(l.argv, null, none);
      assert.ok(cmd, `${l.name} (${l.from}) is hermes`);
      assert.deepEqual(surfaceOf(cmd), { surface: l.surface, ...(l.profileArg ? { profileArg: l.profileArg } : {}) }, `${l.name} (${l.from})`);
    }
    const wrapped = hermesCommand(LAUNCHERS.find((l) => l.name === 'launchd')!.argv, null, none)!;
    assert.match(wrapped.why, /module hermes_cli\.main, run by hermes' wrapper hermes_cli\.stderr_timestamp/);
    // The wrapper without its command, or around something else, is not a gateway.
    assert.equal(hermesCommand(['python3', '-m', 'hermes_cli.stderr_timestamp', '--error-log', '/x'], null, none), null);
    assert.equal(hermesCommand(['python3', '-m', 'hermes_cli.stderr_timestamp', '--', 'sleep', '9'], null, none), null);
  });
  it("Desktop's backend on the default profile serves the root it was launched on; on a named one, that profile", () => {
    const home = { hermesHome: '/home/u/.hermes', home: '/home/u' };
    const owns = (argv: string[]) => ownershipOf(hermesCommand(argv, null, none)!, { vars: home, cwd: '/' });
    for (const name of ['desktop-serve', 'desktop-isolated', 'desktop-dashboard', 'appimage', 'migrate', 'launchd'])
      assert.equal(owns(LAUNCHERS.find((l) => l.name === name)!.argv).serves, 'root', name);
    const desktop = LAUNCHERS.find((l) => l.name === 'desktop-serve')!.argv.map((a) => (a === 'default' ? 'work' : a));
    assert.deepEqual(owns(desktop), { serves: 'profile', profile: 'work', home: '/home/u/.hermes/profiles/work', why: 'started with --profile work' });
  });
  it('-p/--profile is found before or after the subcommand', () => {
    assert.deepEqual(surface(['hermes', '-p', 'work', 'gateway', 'run']), { surface: 'gateway', profileArg: 'work' });
    assert.deepEqual(surface(['/v/bin/python', '-m', 'hermes_cli.main', '--profile', 'ops', 'gateway', 'run']), { surface: 'gateway', profileArg: 'ops' });
    assert.deepEqual(surface(['hermes', '--profile=coder']), { surface: null, profileArg: 'coder' });
  });
});

describe('hermes processes: what each owns', () => {
  const owned = (argv: string[], vars: { hermesHome?: string; home?: string } | null, cwd: string | null = '/') =>
    ownershipOf(hermesCommand(argv, null, none)!, { vars, cwd, ...(vars === null ? { envProblem: 'EACCES' } : {}) });
  it('a surface launched on a root serves the root; on a named profile, that profile; -p NAME owns NAME', () => {
    assert.deepEqual(owned(['hermes', 'gateway', 'run'], { hermesHome: '/srv/r', home: '/home/u' }), {
      serves: 'root',
      root: '/srv/r',
      why: 'the gateway launched on the hermes root /srv/r',
    });
    assert.equal((owned(['hermes', 'gateway', 'run'], { hermesHome: '/home/u/.hermes', home: '/home/u' }) as { root: string }).root, '/home/u/.hermes');
    assert.equal((owned(['hermes', 'dashboard'], { hermesHome: '/srv/r', home: '/home/u' }) as { serves: string }).serves, 'root');
    const named = owned(['hermes', 'gateway', 'run'], { hermesHome: '/srv/r/profiles/work', home: '/home/u' });
    assert.deepEqual(named, { serves: 'profile', profile: 'work', home: '/srv/r/profiles/work', why: 'the gateway launched on profile work' });
    const p = owned(['hermes', '-p', 'work'], { hermesHome: '/srv/r', home: '/home/u' });
    assert.deepEqual(p, { serves: 'profile', profile: 'work', home: '/srv/r/profiles/work', why: 'started with --profile work' });
    assert.equal((owned(['hermes', '-p', 'Work', 'gateway', 'run'], null) as { profile: string }).profile, 'work', '-p needs no environment');
    assert.equal((owned(['hermes', '-p', 'default', 'gateway', 'run'], { hermesHome: '/srv/r', home: '/home/u' }) as { serves: string }).serves, 'root');
  });
  it('any other hermes process owns the profile its home names (the label rule)', () => {
    const o = (h: string, cwd: string | null = '/') => owned(['hermes', 'chat'], { hermesHome: h, home: '/home/u' }, cwd) as { profile?: string };
    assert.equal(o('/home/u/.hermes').profile, 'default');
    assert.equal(o('/home/u/.hermes/profiles/work').profile, 'work');
    assert.equal(o('/srv/hermes-x').profile, 'default');
    assert.equal(o('/home/u/.hermes/other/x').profile, 'custom');
    assert.equal(o('~/.hermes/profiles/a1').profile, 'a1');
    assert.equal(o('.hermes/profiles/b', '/home/u').profile, 'b');
  });
  it('unverifiable owns everything: environment unreadable, several profiles, no HOME, no HERMES_HOME, relative home without cwd, a bad -p', () => {
    const why = (argv: string[], vars: { hermesHome?: string; home?: string } | null, cwd: string | null = '/') => {
      const r = owned(argv, vars, cwd);
      assert.equal(r.serves, 'unknown', JSON.stringify(r));
      return r.why;
    };
    assert.match(why(['hermes', 'gateway'], null), /environment cannot be read \(EACCES\)/);
    assert.match(why(['hermes', 'gateway', '--all-profiles'], { hermesHome: '/h', home: '/home/u' }), /several profiles/);
    assert.match(why(['hermes', 'gateway'], { hermesHome: '/h' }), /HOME/);
    assert.match(why(['hermes', 'gateway'], { home: '/home/u' }), /no HERMES_HOME/);
    assert.match(why(['hermes', 'chat'], { hermesHome: 'rel', home: '/home/u' }, null), /relative HERMES_HOME/);
    assert.match(why(['hermes', '-p', '../x'], { hermesHome: '/h', home: '/home/u' }), /unusable --profile/);
    assert.equal(mayServe({ owns: null }, 'any'), true);
    assert.equal(mayServe({ owns: ['a'] }, 'b'), false);
  });
  it("the root config.yaml's allowlist: absent serves all; not a list serves default only; entries normalised, bad ones skipped", () => {
    assert.equal(allowlistOf({}), null);
    assert.equal(allowlistOf({ gateway: { multiplex_profiles: true } }), null);
    assert.deepEqual(allowlistOf({ gateway: { multiplex_profile_allowlist: ['work', ' Ops ', 7, '../x', 'default'] } }), ['work', 'ops']);
    assert.deepEqual(allowlistOf({ gateway: { multiplex_profile_allowlist: 'work' } }), []);
    assert.deepEqual(allowlistOf({ multiplex_profile_allowlist: ['a'], gateway: { multiplex_profile_allowlist: ['b'] } }), ['a']);
    assert.equal(normalizeProfileName('DEFAULT'), 'default');
    assert.equal(normalizeProfileName('-x'), null);
  });
});

describe('hermes processes: this host (real processes)', () => {
  it('a process whose argv names hermes, with HERMES_HOME, is listed with its profile, owner and start time; once gone, it is not', async () => {
    const before = Date.now();
    const child = spawn('bash', ['-c', 'exec -a hermes sleep 600'], {
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
      assert.match(found.command, /^hermes 600$/);
      assert.equal(found.serves, 'profile');
      assert.match(found.why ?? '', /entry point hermes/);
      assert.doesNotMatch(JSON.stringify(found), /sk-never-read/);
      // btime is whole seconds: within a second (and the spawn) of the clock.
      assert.ok(found.startedAtMs >= before - 1500 && found.startedAtMs <= Date.now() + 1000, `${found.startedAtMs} vs ${before}`);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    assert.equal(
      listHermesProcesses().processes.some((p) => p.pid === child.pid),
      false,
    );
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
