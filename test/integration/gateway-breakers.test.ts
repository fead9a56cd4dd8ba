/**
 * The gateway loop breakers as a user runs them: the built CLI (`node bin/hermes-janitor.js`, built by
 * `npm run build`) in a temporary HERMES_HOME.
 */
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO, assertUsageError, runCli, tempDir } from '../helpers/cli.js';

const tmp = tempDir('hj-gw-');
let n = 0;
/** A fresh hermes home (not created) and the environment that selects it. */
function freshHome(): { home: string; env: Record<string, string> } {
  const home = path.join(tmp.dir, `home-${n++}`);
  return { home, env: { HERMES_HOME: home, HOME: tmp.dir } };
}
const bootsFile = (home: string) => path.join(home, 'gateway', 'restart_loop.json');
const countsFile = (home: string) => path.join(home, '.restart_failure_counts');
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as unknown;

before(() => {
  assert.ok(
    existsSync(path.join(REPO, 'dist', 'cli', 'commands', 'restart-guard.js')),
    "the CLI is not built: run 'npm run build' (or 'npx tsc -p tsconfig.json') first",
  );
});
after(tmp.cleanup);

/**
 * Runs `count` CLI invocations at once, reading the state file over and over while they run: every read must
 * parse (the writes are atomic).
 */
async function concurrently(count: number, args: string[], env: Record<string, string>, file: string) {
  let running = true;
  const watcher = (async () => {
    while (running) {
      try {
        const text = readFileSync(file, 'utf8');
        JSON.parse(text); // throws, and fails the test, on a torn or partial file
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      await new Promise((r) => setImmediate(r));
    }
  })();
  try {
    return await Promise.all(Array.from({ length: count }, () => runCli(args, { env })));
  } finally {
    running = false;
    await watcher;
  }
}

describe('restart-guard (built CLI)', () => {
  it('counts 20 concurrent check-and-record runs, none lost, each seeing a distinct count', async () => {
    const { home, env } = freshHome();
    const results = await concurrently(20, ['restart-guard', 'check-and-record', '--json', '--max', '50', '--window', '3600'], env, bootsFile(home));
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    for (const r of results) assert.equal(r.stderr, '');
    const counts = results.map((r) => (JSON.parse(r.stdout) as { count: number }).count).sort((a, b) => a - b);
    assert.deepEqual(
      counts,
      Array.from({ length: 20 }, (_, i) => i + 1),
      'each run saw the one before it',
    );
    const doc = readJson(bootsFile(home)) as { boots: unknown[] };
    assert.deepEqual(Object.keys(doc), ['boots']);
    assert.equal(doc.boots.length, 20);
    assert.ok(doc.boots.every((b) => typeof b === 'number' && Number.isFinite(b)));
    assert.equal(statSync(bootsFile(home)).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(bootsFile(home))).mode & 0o777, 0o700);
    assert.equal(statSync(home).mode & 0o777, 0o700);
    assert.equal(existsSync(`${bootsFile(home)}.lock`), false, 'no lock left behind');
  });

  it('writes exactly {"boots": [<epoch seconds>]}', async () => {
    const { home, env } = freshHome();
    const beforeRun = Date.now() / 1000;
    const r = await runCli(['restart-guard', 'check-and-record'], { env });
    const afterRun = Date.now() / 1000;
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(bootsFile(home), 'utf8');
    assert.match(text, /^\{"boots":\[\d+(\.\d+)?\]\}\n?$/);
    const [boot] = (JSON.parse(text) as { boots: number[] }).boots;
    assert.ok(boot! >= beforeRun - 1 && boot! <= afterRun + 1, 'the boot is now, in epoch seconds');
  });

  it('trips when two recent boots are already recorded, and tells how to clear it', async () => {
    const { home, env } = freshHome();
    mkdirSync(path.dirname(bootsFile(home)), { recursive: true });
    const now = Date.now() / 1000;
    writeFileSync(bootsFile(home), JSON.stringify({ boots: [now - 10, now - 5] }));
    const r = await runCli(['restart-guard', 'check-and-record'], { env });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /tripped: 3 restart-interrupted boots within 60 s \(max 3\)/);
    assert.match(r.stderr, /restart-guard clear/);
    assert.equal((await runCli(['restart-guard', 'status'], { env })).code, 1);
    assert.equal((await runCli(['restart-guard', 'clear'], { env })).code, 0);
    assert.equal(existsSync(bootsFile(home)), false);
    assert.equal((await runCli(['restart-guard', 'status'], { env })).code, 0);
  });

  it('does not trip on boots spread wider than the window, and drops the old ones', async () => {
    const { home, env } = freshHome();
    mkdirSync(path.dirname(bootsFile(home)), { recursive: true });
    const now = Date.now() / 1000;
    writeFileSync(bootsFile(home), JSON.stringify({ boots: [now - 140, now - 70] }));
    const r = await runCli(['restart-guard', 'check-and-record'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal((readJson(bootsFile(home)) as { boots: number[] }).boots.length, 1);
  });

  it('replaces a corrupt or wrongly shaped file with a valid one', async () => {
    for (const bad of ['{"boots": [1, 2', '{"boots": "x"}', '[]', '', '\u0000\u0001garbage']) {
      const { home, env } = freshHome();
      mkdirSync(path.dirname(bootsFile(home)), { recursive: true });
      writeFileSync(bootsFile(home), bad);
      const r = await runCli(['restart-guard', 'check-and-record', '--max', '1'], { env });
      assert.equal(r.code, 1, `${JSON.stringify(bad)}: ${r.stderr}`);
      const doc = readJson(bootsFile(home)) as { boots: number[] };
      assert.deepEqual(Object.keys(doc), ['boots']);
      assert.equal(doc.boots.length, 1, JSON.stringify(bad));
    }
  });

  it('never overwrites the target of a symlink planted at the state path', async () => {
    const { home, env } = freshHome();
    mkdirSync(path.dirname(bootsFile(home)), { recursive: true });
    const victim = path.join(tmp.dir, `victim-${n}`);
    writeFileSync(victim, 'do not touch\n');
    symlinkSync(victim, bootsFile(home));
    const r = await runCli(['restart-guard', 'check-and-record'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(readFileSync(victim, 'utf8'), 'do not touch\n');
    assert.equal(lstatSync(bootsFile(home)).isSymbolicLink(), false);
    assert.equal((readJson(bootsFile(home)) as { boots: number[] }).boots.length, 1);
  });

  it('fails open (exit 0, one warning line) when the state cannot be written', async () => {
    const { home, env } = freshHome();
    mkdirSync(bootsFile(home), { recursive: true }); // a directory where the file should be
    const r = await runCli(['restart-guard', 'check-and-record', '--max', '1'], { env });
    assert.equal(r.code, 0);
    assert.equal(r.stderr.split('\n').filter(Boolean).length, 1, r.stderr);
    assert.match(r.stderr, /^hermes-janitor: warning: .*fails open/);
  });

  it('uses --profile (before or after the subcommand) and rejects bad profile names with exit 2', async () => {
    const { home, env } = freshHome();
    assert.equal((await runCli(['--profile', 'work', 'restart-guard', 'check-and-record'], { env })).code, 0);
    assert.equal((await runCli(['restart-guard', 'check-and-record', '--profile', 'work'], { env })).code, 0);
    assert.equal((readJson(bootsFile(path.join(home, 'profiles', 'work'))) as { boots: number[] }).boots.length, 2);
    for (const bad of ['../x', 'A B']) {
      const r = await runCli(['--profile', bad, 'restart-guard', 'status'], { env });
      assertUsageError(r, [`invalid profile '${bad}'`]);
    }
  });
});

describe('stuck-sessions (built CLI)', () => {
  it('counts 20 concurrent record-shutdown runs, none lost', async () => {
    const { home, env } = freshHome();
    const results = await concurrently(20, ['stuck-sessions', 'record-shutdown', 'agent:main:telegram:dm:1', 'k2'], env, countsFile(home));
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(readJson(countsFile(home)), { 'agent:main:telegram:dm:1': 20, k2: 20 });
    assert.equal(statSync(countsFile(home)).mode & 0o777, 0o600);
    assert.equal(statSync(home).mode & 0o777, 0o700);
  });

  it('runs the shutdown / start-up / success cycle with the flat file shape', async () => {
    const { home, env } = freshHome();
    for (let i = 0; i < 3; i++) assert.equal((await runCli(['stuck-sessions', 'record-shutdown', 'a', 'b'], { env })).code, 0);
    assert.equal((await runCli(['stuck-sessions', 'record-shutdown', 'a', 'c'], { env })).code, 0);
    assert.equal(readFileSync(countsFile(home), 'utf8').trim(), '{"a":4,"c":1}');
    const s = await runCli(['stuck-sessions', 'suspend'], { env });
    assert.equal(s.code, 0);
    assert.equal(s.stdout, 'a\n');
    assert.equal(existsSync(countsFile(home)), false);
    await runCli(['stuck-sessions', 'record-shutdown', 'x', 'y'], { env });
    await runCli(['stuck-sessions', 'clear', 'x'], { env });
    assert.deepEqual(readJson(countsFile(home)), { y: 1 });
    await runCli(['stuck-sessions', 'clear', 'y'], { env });
    assert.equal(existsSync(countsFile(home)), false);
  });

  it('reads the newer {"count": n, ...} entries and keeps their fields', async () => {
    const { home, env } = freshHome();
    mkdirSync(home, { recursive: true });
    writeFileSync(countsFile(home), JSON.stringify({ a: { count: 2, resume_reason: 'restart_timeout' }, b: 9 }));
    await runCli(['stuck-sessions', 'record-shutdown', 'a'], { env });
    assert.deepEqual(readJson(countsFile(home)), { a: { count: 3, resume_reason: 'restart_timeout' } });
    const s = await runCli(['stuck-sessions', 'suspend', '--json'], { env });
    assert.equal(s.code, 0);
    assert.deepEqual(JSON.parse(s.stdout), { schemaVersion: 1, suspended: ['a'], counts: { a: 3 } });
  });

  it('replaces a corrupt file, and leaves it alone when no key is given', async () => {
    const { home, env } = freshHome();
    mkdirSync(home, { recursive: true });
    writeFileSync(countsFile(home), '{"a": ');
    assert.equal((await runCli(['stuck-sessions', 'record-shutdown'], { env })).code, 0);
    assert.equal(readFileSync(countsFile(home), 'utf8'), '{"a": ');
    const r = await runCli(['stuck-sessions', 'record-shutdown', 'k'], { env });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /warning: .*not valid JSON/);
    assert.deepEqual(readJson(countsFile(home)), { k: 1 });
  });

  it('never overwrites the target of a symlink planted at the state path', async () => {
    const { home, env } = freshHome();
    mkdirSync(home, { recursive: true });
    const victim = path.join(tmp.dir, `victim-${n}`);
    writeFileSync(victim, '{"keep": 1}');
    symlinkSync(victim, countsFile(home));
    assert.equal((await runCli(['stuck-sessions', 'record-shutdown', 'k'], { env })).code, 0);
    assert.equal(readFileSync(victim, 'utf8'), '{"keep": 1}');
    assert.deepEqual(readJson(countsFile(home)), { k: 1 });
  });
});

describe('lifecycle-scan (built CLI)', () => {
  const must = ['hermes gateway restart', 'launchctl kickstart gui/501/ai.hermes.gateway', 'systemctl stop hermes-gateway.service', 'pkill -f hermes.*gateway'];
  const mustNot = [
    'hermes gateway start',
    'hermes cron list',
    'launchctl unload ai.hermes.update-checker.plist',
    'systemctl restart hermes-meta.service',
    'research the gateway architecture',
    'the payment gateway needs a restart',
  ];

  it('matches the must-match list (as TEXT and on stdin) and prints the line', async () => {
    const { env } = freshHome();
    for (const text of must) {
      const a = await runCli(['lifecycle-scan', text], { env });
      assert.equal(a.code, 1, text);
      assert.equal(a.stdout, `${text}\n`);
      const b = await runCli(['lifecycle-scan'], { env, input: `# cron job\n${text}\n` });
      assert.equal(b.code, 1, text);
      assert.equal(b.stdout, `${text}\n`);
    }
  });

  it('lets the must-not-match list through', async () => {
    const { env } = freshHome();
    for (const text of mustNot) {
      const r = await runCli(['lifecycle-scan', text], { env });
      assert.equal(r.code, 0, `${text}: ${r.stdout}`);
      assert.equal(r.stdout, '');
    }
    const all = await runCli(['lifecycle-scan'], { env, input: mustNot.join('\n') });
    assert.equal(all.code, 0);
  });

  it('scans a script under <home>/scripts with invalid UTF-8; a missing script is a warning', async () => {
    const { home, env } = freshHome();
    mkdirSync(path.join(home, 'scripts'), { recursive: true });
    writeFileSync(
      path.join(home, 'scripts', 'job.sh'),
      Buffer.concat([Buffer.from('#!/bin/sh\n\xff\xfe', 'latin1'), Buffer.from('systemctl --user \\\n  restart hermes-gateway\n')]),
    );
    const r = await runCli(['lifecycle-scan', '--script', 'job.sh'], { env });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /systemctl --user\s+restart hermes-gateway/);
    const m = await runCli(['lifecycle-scan', '--script', 'gone.sh'], { env });
    assert.equal(m.code, 0);
    assert.equal(m.stderr.split('\n').filter(Boolean).length, 1);
    assert.match(m.stderr, /warning: script .*gone.sh does not exist/);
  });

  it('finishes on a 10 MiB single-line stdin, warning that only the first 4 MiB were scanned', async () => {
    const { env } = freshHome();
    const r = await runCli(['lifecycle-scan'], { env, input: Buffer.alloc(10 * 1024 * 1024, 'hermes -p ') });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /warning: stdin is larger than 4 MiB: only its first 4 MiB were scanned/);
  });

  it('binary input: nothing found is exit 0 and silent; a command line inside it is still found, by its line', async () => {
    const { env } = freshHome();
    // 3 MiB of fixed pseudo-random bytes (every byte value, invalid UTF-8, NULs, CRs, newlines): the same on every
    // run, so the verdict is exact. It holds no lifecycle command.
    const binary = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0, x = 0x2545f491; i < binary.length; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      binary[i] = x >>> 24;
    }
    binary[binary.length - 1] = 0; // no backslash continuation onto the line appended below
    const clean = await runCli(['lifecycle-scan'], { env, input: binary });
    assert.deepEqual([clean.code, clean.signal, clean.stdout, clean.stderr], [0, null, '', '']);

    const command = 'systemctl --user restart hermes-gateway';
    const line = binary.filter((b) => b === 0x0a).length + 2;
    const found = await runCli(['lifecycle-scan'], { env, input: Buffer.concat([binary, Buffer.from(`\n${command}\n`), binary.subarray(0, 64 * 1024)]) });
    assert.equal(found.code, 1, found.stderr);
    assert.equal(found.stdout, `${command}\n`);
    const err = found.stderr.trimEnd().split('\n');
    assert.equal(err.length, 2, found.stderr);
    assert.equal(err[0], `lifecycle-scan: stdin line ${line}: gateway lifecycle command (a 'systemctl restart|stop|start' naming the gateway)`);
    assert.equal(err[1], 'lifecycle-scan: refused: this would restart, stop or kill the hermes gateway');
  });

  it('documents the exit codes and the read cap in --help', async () => {
    const r = await runCli(['lifecycle-scan', '--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /Exit codes:/);
    assert.match(r.stdout, /4 MiB/);
  });
});
