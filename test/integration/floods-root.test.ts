/**
 * Bounded work over what users create (#47), as root on the real engine (Docker), with throwaway users made for the
 * run (`useradd`, removed at the end): an attacker and a victim. Each flood of the issue, and root's runs over it:
 * - the owner flood: the attacker's fake `hermes gateway run` (a stand-in named `hermes`, in a pid namespace of its
 *   own with the janitor's runs, so that no other hermes process of a shared machine counts) on a root of 100
 *   profiles with 31 KiB `config.yaml` each (a YAML slow to parse: flow sequences). Root's `reap --dry-run` over the
 *   victim's home (an exited container of its label to judge) and `status` return within `--timeout 5s` + 1 s
 *   (on main: status ran for 109 s here, reap past 6 s);
 * - the profile flood: root's `reap --all-profiles --dry-run --timeout 5s` over the attacker's root of 100 such
 *   profiles returns within 6 s (on main: 20-39 s in the issue);
 * - the session-file flood: 100,000 `hermes_bg_<id>.log` in a directory standing for `/tmp` and 300,000 in the
 *   attacker's `cache/terminal` (made by the attacker): `reap --timeout 1s` (text and `--json`) returns within 2 s,
 *   under 256 MB of RSS, the timeout reported; a run given the time (`--timeout 60s --dry-run --json`) stays under
 *   256 MB and reports the cap of both directories (on main: 3 s and 416 MB for 100,000; 9.3 s and 830 MB for
 *   300,000 with `--json`).
 * Timings are from the spawn of the CLI; the maximum RSS is GNU time's (`/usr/bin/time -f %M`), of the CLI's process.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { emptyManagedDir } from '../helpers/cli.js';
import { ENGINE_KIND, EngineFixture, requireEngine } from '../helpers/docker.js';
import { asUser, pidNamespace, runCliAs, standInScript, startStandIn } from '../helpers/owners.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';

const hex = (n: number) => randomBytes(n).toString('hex');
const has = (cmd: string, args = ['--help']) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const TIME = '/usr/bin/time';
const unmetReason =
  process.getuid?.() !== 0
    ? 'needs root (it makes throwaway users and runs the janitor as root over their homes)'
    : !has('useradd') || !has('userdel') || !has('setpriv', ['--version']) || !has('unshare', ['--version'])
      ? 'needs useradd, userdel, setpriv and unshare'
      : !existsSync(TIME)
        ? `needs GNU time at ${TIME} (the maximum RSS of the CLI's process)`
        : ENGINE_KIND !== 'docker'
          ? 'runs against Docker (one engine is enough for the floods)'
          : false;

/** The bound: 256 MB of RSS, in GNU time's KiB. */
const RSS_BOUND_KB = (256 * 1000 * 1000) / 1024;

interface User {
  name: string;
  uid: number;
  gid: number;
}

/** A config.yaml of 31 KiB that the YAML parser is slow on (flow sequences: about 0.2-0.5 s a file here). */
function floodConfig(): string {
  let s = 'terminal:\n  lifetime_seconds: 300\nflood: [';
  while (s.length < 31 * 1024 - 16) s += '[1,2],';
  return `${s}]\n`;
}

describe('bounded work over what users create: root over the floods of a user without engine access (#47)', { skip: skipUnless(unmetReason) }, () => {
  const fx = new EngineFixture();
  const users: User[] = [];
  let base = '';
  let attacker: User;
  let victim: User;
  let attackerRoot = '';
  let ns: Awaited<ReturnType<typeof pidNamespace>> | null = null;
  let script: ReturnType<typeof standInScript> | null = null;

  function user(): User {
    const name = `hjf${hex(4)}`;
    execFileSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', name]);
    const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
    const u = { name, uid: id('-u'), gid: id('-g') };
    users.push(u);
    return u;
  }

  /** Makes each directory from `top` down to `dir` the owner's, 0700 (as a user's home is). */
  function own(top: string, dir: string, owner: User): void {
    for (let p = dir; p.startsWith(top); p = path.dirname(p)) {
      chmodSync(p, 0o700);
      chownSync(p, owner.uid, owner.gid);
    }
  }

  before(async () => {
    failUnderCi(unmetReason);
    await requireEngine();
    // tmpfs where there is one: 400,000 files are made in seconds there.
    base = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'hj-floods-'));
    chmodSync(base, 0o755);
    attacker = user();
    victim = user();
    attackerRoot = path.join(base, 'att', '.hermes');
    const config = floodConfig();
    for (let i = 0; i < 100; i++) {
      const p = path.join(attackerRoot, 'profiles', `p${String(i).padStart(3, '0')}`);
      mkdirSync(p, { recursive: true });
      writeFileSync(path.join(p, 'config.yaml'), config);
    }
    writeFileSync(path.join(attackerRoot, 'config.yaml'), config);
    execFileSync('chown', ['-R', `${attacker.uid}:${attacker.gid}`, path.join(base, 'att')]);
    execFileSync('chmod', ['-R', 'go-rwx', path.join(base, 'att')]);
  });

  after(async () => {
    try {
      await fx.cleanup();
      await ns?.close();
      script?.cleanup();
      if (base) rmSync(base, { recursive: true, force: true });
    } finally {
      for (const u of users) {
        spawnSync('userdel', [u.name], { stdio: 'ignore' });
        spawnSync('groupdel', [u.name], { stdio: 'ignore' });
      }
    }
  });

  /** Root's run of the CLI (in `prefix`'s namespace, if any), timed from its spawn; `rss`: under GNU time, its maximum RSS in KiB. */
  async function rootRun(args: string[], env: Record<string, string>, opts: { prefix?: string[]; rss?: boolean } = {}) {
    const out = path.join(base, `time-${hex(3)}`);
    const time = opts.rss ? [TIME, '-f', '%M', '-o', out] : [];
    // Root's state for the users' homes in the test's own directory, not the host's /var/lib/hermes-janitor.
    const full = { HOME: base, HERMES_MANAGED_DIR: emptyManagedDir(), HERMES_JANITOR_STATE_DIR: path.join(base, 'root-state'), ...env };
    const t0 = Date.now();
    const r = await runCliAs(null, args, full, [...(opts.prefix ?? []), ...time], 120_000);
    const ms = Date.now() - t0;
    const rssKb = opts.rss ? Number(readFileSync(out, 'utf8').trim().split('\n').at(-1)) : null;
    return { ...r, ms, rssKb };
  }

  it("the owner flood: root's reap over another home and status return within --timeout 5s + 1 s", async (t) => {
    const label = `t-${hex(5)}`;
    const vtop = path.join(base, `vic-${hex(3)}`);
    const vhome = path.join(vtop, '.hermes', 'profiles', label);
    mkdirSync(vhome, { recursive: true });
    own(vtop, vhome, victim);
    await fx.create({ profile: label, state: 'exited' }); // judged: its owners are read
    ns = await pidNamespace();
    script = standInScript();
    const gateway = await startStandIn(script.script, '-', { HOME: path.dirname(attackerRoot), HERMES_HOME: attackerRoot }, attacker, ns.prefix, [
      'gateway',
      'run',
    ]);
    try {
      const env = { HERMES_HOME: vhome };
      const reap = await rootRun(['reap', '--dry-run', '--json', '--timeout', '5s'], env, { prefix: ns.prefix });
      assert.ok(reap.code === 0 || reap.code === 3, `reap exit ${reap.code}: ${reap.stderr}`);
      assert.ok(reap.ms <= 6000, `reap returned after ${reap.ms} ms (--timeout 5s + 1 s)`);
      const status = await rootRun(['status', '--json', '--timeout', '5s'], env, { prefix: ns.prefix });
      assert.ok([0, 1, 3].includes(status.code ?? -1), `status exit ${status.code}: ${status.stderr}`);
      assert.ok(status.ms <= 6000, `status returned after ${status.ms} ms (--timeout 5s + 1 s)`);
      t.diagnostic(`reap --dry-run: exit ${reap.code} in ${reap.ms} ms; status: exit ${status.code} in ${status.ms} ms`);
      // The stand-in was seen, and what it serves was not read past the budget: said, never silent.
      const s = JSON.parse(status.stdout) as { hermesProcesses?: { processes: Array<{ command: string; serves: string; ownsWhy?: string }> } };
      const seen = s.hermesProcesses?.processes.find((p) => p.command.includes(script!.script));
      assert.ok(seen, `the fake gateway is in status: ${status.stdout.slice(0, 600)}`);
      assert.equal(seen.serves, 'all-profiles');
      assert.match(seen.ownsWhy ?? '', /more than 64 profiles under it \(101\)/);
    } finally {
      await gateway.kill();
    }
  });

  it("the profile flood: root's reap --all-profiles over 100 such profiles returns within --timeout 5s + 1 s", async (t) => {
    const r = await rootRun(['reap', '--all-profiles', '--dry-run', '--timeout', '5s', '--label', `hj-floods=${hex(4)}`], { HERMES_HOME: attackerRoot });
    assert.ok(r.code === 0 || r.code === 3, `exit ${r.code}: ${r.stderr}`);
    assert.ok(r.ms <= 6000, `returned after ${r.ms} ms (--timeout 5s + 1 s)`);
    if (r.code === 3) assert.match(r.stderr, /timed out|did not finish within the run's --timeout/, r.stderr);
    t.diagnostic(`reap --all-profiles: exit ${r.code} in ${r.ms} ms`);
  });

  it('the session-file flood: 100,000 files in /tmp and 300,000 in a temp directory: within the timeout + 1 s, under 256 MB, reported', async (t) => {
    const sysTmp = path.join(base, 'systmp');
    mkdirSync(sysTmp);
    chmodSync(sysTmp, 0o1777);
    const uTop = path.join(base, `usr-${hex(3)}`);
    const uRoot = path.join(uTop, '.hermes');
    const cache = path.join(uRoot, 'cache', 'terminal');
    mkdirSync(cache, { recursive: true });
    own(uTop, cache, attacker);
    // hermes' own names (passes/session-files/rule.ts: `hermes_bg_<id>.log`), made fast: one node process per directory.
    const make = (dir: string, n: number, prefix: string[]) =>
      execFileSync(
        prefix[0] ?? process.execPath,
        [
          ...prefix.slice(1),
          ...(prefix.length ? [process.execPath] : []),
          '-e',
          `const fs=require('fs');for(let i=0;i<${n};i++)fs.closeSync(fs.openSync(${JSON.stringify(dir)}+'/hermes_bg_j'+i.toString(36)+'.log','w'))`,
        ],
        { stdio: 'inherit' },
      );
    make(sysTmp, 100_000, []);
    make(cache, 300_000, ['setpriv', ...asUser(attacker)]);
    assert.equal(statSync(path.join(cache, 'hermes_bg_j0.log')).uid, attacker.uid);
    const env = { HERMES_HOME: uRoot, HERMES_JANITOR_SYSTEM_TMP: sysTmp };
    const label = ['--label', `hj-floods=${hex(4)}`]; // no container: the passes over the files are the run
    try {
      const text = await rootRun(['reap', '--timeout', '1s', ...label], env, { rss: true });
      assert.ok(text.code === 3 || text.code === 0, `exit ${text.code}: ${text.stderr}`);
      assert.ok(text.ms <= 2000, `reap --timeout 1s returned after ${text.ms} ms`);
      assert.ok(text.rssKb! < RSS_BOUND_KB, `max RSS ${text.rssKb} KiB`);
      if (text.code === 3) assert.match(text.stderr, /timed out after --timeout 1s/);
      const json = await rootRun(['reap', '--json', '--timeout', '1s', ...label], env, { rss: true });
      assert.ok(json.code === 3 || json.code === 0, `exit ${json.code}: ${json.stderr}`);
      assert.ok(json.ms <= 2000, `reap --json --timeout 1s returned after ${json.ms} ms`);
      assert.ok(json.rssKb! < RSS_BOUND_KB, `max RSS ${json.rssKb} KiB`);
      assert.equal((JSON.parse(json.stdout) as { timedOut: boolean }).timedOut, json.code === 3, json.stdout.slice(0, 400));
      // Given the time, the cap holds memory down and is reported for both directories.
      const full = await rootRun(['reap', '--dry-run', '--json', '--timeout', '60s', ...label], env, { rss: true });
      assert.equal(full.code, 0, full.stderr);
      assert.ok(full.rssKb! < RSS_BOUND_KB, `max RSS ${full.rssKb} KiB`);
      const dirs = (JSON.parse(full.stdout) as { sessionFiles: { tempDirs: Array<{ dir: string; capped?: number }> } }).sessionFiles.tempDirs;
      assert.deepEqual(
        [sysTmp, cache].map((d) => dirs.find((x) => x.dir === d)?.capped !== undefined),
        [true, true],
        JSON.stringify(dirs),
      );
      for (const [what, r] of [
        ['reap --timeout 1s', text],
        ['reap --json --timeout 1s', json],
        ['reap --dry-run --json --timeout 60s', full],
      ] as const)
        t.diagnostic(`${what}: exit ${r.code} in ${r.ms} ms, max RSS ${r.rssKb} KiB`);
      const quiet = await rootRun(['reap', '--dry-run', '--quiet', '--timeout', '60s', ...label], env);
      assert.equal(quiet.code, 0, quiet.stderr);
      assert.equal(quiet.stderr.split('\n').filter((l) => l.includes("holds more of hermes' files than one run takes (20000 a run)")).length, 2, quiet.stderr);
    } finally {
      rmSync(sysTmp, { recursive: true, force: true });
      rmSync(uTop, { recursive: true, force: true });
    }
  });
});
