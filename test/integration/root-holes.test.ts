/**
 * The smaller holes of root over many users (#47), as root with two throwaway users made for the run (`useradd`,
 * removed with `userdel -r` at the end): an attacker, who owns a hermes home and the directory above a textfile
 * directory, and a victim, who left shell snapshots and background-job files in the shared temp directory. The
 * attacker has no engine access. The real engine (Docker) answers; a label of the run's own selects no container.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CliResult, emptyManagedDir } from '../helpers/cli.js';
import { requireEngine } from '../helpers/docker.js';
import { runCliAs } from '../helpers/owners.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';

const hex = (n: number) => randomBytes(n).toString('hex');
const has = (cmd: string, args = ['--version']) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const unmetReason =
  process.getuid?.() !== 0
    ? 'needs root (it makes two throwaway users and runs the janitor as root over their homes)'
    : !has('useradd', ['--help']) || !has('userdel', ['--help'])
      ? 'needs useradd and userdel (passwd)'
      : false;

interface User {
  name: string;
  uid: number;
  gid: number;
}
const DAY = 86_400_000;
const old = (p: string) => utimesSync(p, new Date(Date.now() - 3 * DAY), new Date(Date.now() - 3 * DAY));

function makeUser(prefix: string): User {
  const name = `${prefix}${hex(4)}`;
  execFileSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', name]);
  const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
  return { name, uid: id('-u'), gid: id('-g') };
}
function dropUser(u: User | undefined): void {
  if (!u) return;
  spawnSync('userdel', ['-r', u.name], { stdio: 'ignore' });
  if (spawnSync('id', [u.name], { stdio: 'ignore' }).status === 0) execFileSync('userdel', [u.name]);
}

describe('root over many users: the smaller holes (#47)', { skip: skipUnless(unmetReason) }, () => {
  let attacker: User;
  let victim: User;
  let base: string;
  let tmp: string;
  const label = `hj-holes-${hex(5)}=1`; // selects no container of the shared engine

  before(async () => {
    failUnderCi(unmetReason);
    await requireEngine();
    attacker = makeUser('hja');
    victim = makeUser('hjv');
    base = mkdtempSync(path.join(os.tmpdir(), 'hj-holes-'));
    chmodSync(base, 0o755);
    tmp = path.join(base, 'tmp');
    mkdirSync(tmp);
    chmodSync(tmp, 0o1777); // the shared temp directory of every user, as /tmp
  });

  after(() => {
    try {
      if (base) rmSync(base, { recursive: true, force: true });
    } finally {
      dropUser(attacker);
      dropUser(victim);
    }
  });

  /** A hermes home of `owner`'s (`<base>/<name>/.hermes`, theirs, 0700). */
  function homeOf(owner: User): string {
    const top = path.join(base, `home-${owner.name}-${hex(3)}`);
    const h = path.join(top, '.hermes');
    mkdirSync(h, { recursive: true, mode: 0o700 });
    chmodSync(top, 0o700);
    for (const p of [top, h]) chownSync(p, owner.uid, owner.gid);
    return h;
  }

  /** The built CLI as root over `home`, with the shared temp directory as the system's. */
  function janitor(args: string[], home: string): Promise<CliResult> {
    return runCliAs(
      null,
      args,
      {
        HOME: base,
        HERMES_HOME: home,
        HERMES_JANITOR_STATE_DIR: path.join(base, 'state'),
        HERMES_JANITOR_SYSTEM_TMP: tmp,
        HERMES_MANAGED_DIR: emptyManagedDir(),
        ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}),
      },
      [],
      60_000,
    );
  }

  it("--metrics-file: a symlink planted by the owner of the textfile directory's parent is refused with one line; nothing written through it", async () => {
    const parent = path.join(base, `exporter-${hex(3)}`);
    const textfile = path.join(parent, 'textfile');
    mkdirSync(textfile, { recursive: true, mode: 0o755 });
    chownSync(parent, attacker.uid, attacker.gid); // the textfile directory itself stays root's
    const etc = path.join(base, `etc-${hex(3)}`); // root's, where root's files live
    mkdirSync(etc, { mode: 0o755 });
    const h = homeOf(attacker);
    const prom = path.join(textfile, 'hermes_janitor.prom');

    // As the attacker could: the textfile directory moved aside, a symlink to root's directory in its place.
    renameSync(textfile, path.join(parent, 'moved'));
    symlinkSync(etc, textfile);
    lchownSync(textfile, attacker.uid, attacker.gid);
    for (const args of [
      ['reap', '--label', label, '--metrics-file', prom],
      ['reap', '--label', label, '--dry-run', '--metrics-file', prom],
    ]) {
      const r = await janitor(args, h);
      assert.equal(r.code, 2, `exit ${r.code}; ${r.stderr}`);
      assert.match(r.stderr, /^hermes-janitor: [^\n]+\n$/, r.stderr);
      assert.match(r.stderr, new RegExp(`--metrics-file .*refused: .*is a symlink in a directory uid ${attacker.uid} \\(${attacker.name}\\) can change`));
      assert.deepEqual(readdirSync(etc), [], 'nothing written through the symlink');
    }
    // HERMES_JANITOR_METRICS_FILE is held to the same rule.
    const viaEnv = await runCliAs(null, ['reap', '--label', label], {
      HOME: base,
      HERMES_HOME: h,
      HERMES_JANITOR_STATE_DIR: path.join(base, 'state'),
      HERMES_JANITOR_SYSTEM_TMP: tmp,
      HERMES_MANAGED_DIR: emptyManagedDir(),
      HERMES_JANITOR_METRICS_FILE: prom,
      ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}),
    });
    assert.equal(viaEnv.code, 2, viaEnv.stderr);
    assert.match(viaEnv.stderr, /^hermes-janitor: HERMES_JANITOR_METRICS_FILE .*refused: .*symlink/);
    assert.deepEqual(readdirSync(etc), []);

    // No symlink yet, but the attacker could plant one at any time: refused too, naming who and the fix.
    rmSync(textfile);
    renameSync(path.join(parent, 'moved'), textfile);
    const r = await janitor(['reap', '--label', label, '--metrics-file', prom], h);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`^hermes-janitor: --metrics-file .*refused: uid ${attacker.uid} \\(${attacker.name}\\) can change .*chmod go-w.*\\n$`));
    assert.equal(existsSync(prom), false);

    // A textfile directory only root can change: written as before.
    const safe = path.join(base, `textfile-${hex(3)}`);
    mkdirSync(safe, { mode: 0o755 });
    const ok = await janitor(['reap', '--label', label, '--metrics-file', path.join(safe, 'hj.prom')], h);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(readFileSync(path.join(safe, 'hj.prom'), 'utf8'), /^hermes_janitor_last_run_success(\{[^}]*\})? 1$/m);
    assert.deepEqual(
      readdirSync(safe).filter((n) => n.endsWith('.tmp')),
      [],
    );
  });

  it("a run over the attacker's home reports, logs and removes none of the victim's snapshots or session files", async () => {
    const session = hex(6);
    const victimSnap = path.join(tmp, `hermes-snap-${session}.sh`);
    const victimJob = path.join(tmp, `hermes_bg_${hex(5)}.log`);
    writeFileSync(victimSnap, 'declare -x VICTIM_SECRET_TOKEN="s3cr3t"\ndeclare -x PATH="/usr/bin"\n', { mode: 0o600 });
    writeFileSync(victimJob, 'victim job output\n', { mode: 0o600 });
    const ownSnap = path.join(tmp, `hermes-snap-${hex(6)}.sh`);
    writeFileSync(ownSnap, 'declare -x ATTACKER_OWN_API_KEY="x"\n', { mode: 0o600 });
    for (const [f, u] of [
      [victimSnap, victim],
      [victimJob, victim],
      [ownSnap, attacker],
    ] as const) {
      chownSync(f, u.uid, u.gid);
      old(f);
    }
    const h = homeOf(attacker);
    const leaks = (text: string) =>
      [path.basename(victimSnap), path.basename(victimJob), 'VICTIM_SECRET_TOKEN', `uid ${victim.uid}`, `"owner":${victim.uid}`].filter((x) =>
        text.includes(x),
      );

    const dry = await janitor(['reap', '--dry-run', '--json', '--label', label], h);
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(leaks(dry.stdout + dry.stderr), [], dry.stdout);
    const j = JSON.parse(dry.stdout) as { shellSnapshots: { removed: Array<{ path: string; secretNames: string[] }> } };
    assert.deepEqual(
      j.shellSnapshots.removed.map((x) => [x.path, x.secretNames]),
      [[ownSnap, ['ATTACKER_OWN_API_KEY']]],
      "the attacker's own snapshot is still found",
    );

    // reap --background: what the run writes goes into the attacker's janitor.log.
    const log = path.join(h, 'logs', 'janitor.log');
    for (const args of [
      ['reap', '--background', '--dry-run', '--json', '--label', label],
      ['reap', '--background', '--dry-run', '-v', '--label', label],
    ]) {
      const bg = await janitor(args, h);
      assert.equal(bg.code, 0, bg.stderr);
      const deadline = Date.now() + 30_000;
      const runs = () => (existsSync(log) ? readFileSync(log, 'utf8').split(/^--- .*hermes-janitor .*$/m).length - 1 : 0);
      const want = args.includes('--json') ? 1 : 2;
      const done = () => runs() >= want && /(\}\s*$|reap: |Would remove|nothing to)/.test(readFileSync(log, 'utf8'));
      while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      await new Promise((r) => setTimeout(r, 1500)); // the detached run's last lines
      const text = readFileSync(log, 'utf8');
      assert.match(text, new RegExp(path.basename(ownSnap)), `the attacker's own run is logged: ${text}`);
      assert.deepEqual(leaks(text), [], text);
    }

    // Not a dry run: the victim's files stay (their own runs, or root over a home of root's, judge them).
    const real = await janitor(['reap', '--json', '--label', label], h);
    assert.equal(real.code, 0, real.stderr);
    assert.deepEqual(leaks(real.stdout), []);
    assert.ok(existsSync(victimSnap) && existsSync(victimJob), "the victim's files are untouched");
    assert.equal(existsSync(ownSnap), false, "the attacker's own abandoned snapshot is removed");
  });
});
