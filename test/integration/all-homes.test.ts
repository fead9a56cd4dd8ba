/**
 * Every home in one run (#48), as root on the real engine, with two throwaway users whose `~/.hermes` the password
 * database names (`useradd -d`, removed at the end) and a root-owned home named by `--homes`: a profile label all three
 * have with different lifetimes (400 s, 350 s and 100 s: thresholds 800, 700 and 200 s), one label of each user's own
 * (900 s: 1800 s; hermes' default: 600 s), one of the root home's own (60 s: 120 s), and a label none has. Only this
 * run's containers are selected (`--label` of the run). The users cannot act on the engine, so their lifetimes are
 * longer than hermes' 300 s (theirs to set: they keep more); the shorter ones are the root-owned home's. One container
 * of the shared label has its task directory bound from the root home's sandbox root: its mount ties it to that home.
 *
 * `reap --all-homes --as-of` at several instants removes each exited container exactly when the later reading says;
 * the unknown label's container is kept and named; a `watch --all-homes` and a `reap --all-homes` take one lock (the
 * shared store), so the cron run never acts beside the service.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { EngineFixture, RUN_LABEL, requireEngine } from '../helpers/docker.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';
import { WatchProcess } from '../helpers/watch-process.js';

const hex = (n: number) => randomBytes(n).toString('hex');
const has = (cmd: string) => spawnSync(cmd, ['--help'], { stdio: 'ignore' }).status === 0;
const unmetReason =
  process.getuid?.() !== 0
    ? 'needs root (it makes throwaway users and runs the janitor as root over their homes)'
    : !has('useradd') || !has('userdel')
      ? 'needs useradd and userdel (passwd)'
      : false;

interface Entry {
  id: string;
  reason?: string;
  profile?: string | null;
}
interface ReapJson {
  removed: Entry[];
  kept: Entry[];
  skipped?: string;
}

describe('every home in one run: each container judged by the homes that have its profile (#48)', { skip: skipUnless(unmetReason) }, () => {
  const fx = new EngineFixture();
  const users: string[] = [];
  let base: string;
  const [shared, onlyU1, onlyU2, unknown, rootShort] = ['s', 'a', 'b', 'u', 'r'].map((x) => `t-${x}${hex(4)}`) as [string, string, string, string, string];

  /** A throwaway user whose home is `<base>/<name>` with a `.hermes` of theirs holding these profiles (`config` each). */
  function userWithHome(profiles: Record<string, string | null>): string {
    const name = `hjh${hex(4)}`;
    const dir = path.join(base, name);
    execFileSync('useradd', ['-M', '-d', dir, '--shell', '/usr/sbin/nologin', '--user-group', name]);
    users.push(name);
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
    writeHome(path.join(dir, '.hermes'), profiles, { uid, gid });
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
    return name;
  }

  function writeHome(root: string, profiles: Record<string, string | null>, owner: { uid: number; gid: number } | null): void {
    for (const [p, config] of Object.entries(profiles)) {
      const home = path.join(root, 'profiles', p);
      mkdirSync(home, { recursive: true, mode: 0o700 });
      if (config !== null) writeFileSync(path.join(home, 'config.yaml'), config);
    }
    if (owner) execFileSync('chown', ['-R', `${owner.uid}:${owner.gid}`, root]);
  }

  const lifetime = (s: number) => `terminal:\n  lifetime_seconds: ${s}\n`;
  const env = () => ({ HOME: base, HERMES_HOME: path.join(base, 'operator', '.hermes'), HERMES_JANITOR_STATE_DIR: path.join(base, 'state') });

  before(async () => {
    failUnderCi(unmetReason);
    await requireEngine();
    base = mkdtempSync(path.join(os.tmpdir(), 'hj-homes-'));
    chmodSync(base, 0o755);
  });

  after(async () => {
    try {
      await fx.cleanup();
      if (base) rmSync(base, { recursive: true, force: true });
    } finally {
      for (const u of users) {
        spawnSync('userdel', [u], { stdio: 'ignore' });
        spawnSync('groupdel', [u], { stdio: 'ignore' });
      }
    }
  });

  async function reap(args: string[]): Promise<ReapJson> {
    const r = await runCli(['reap', '--json', '--label', `${RUN_LABEL}=${fx.runId}`, ...args], { env: env() });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as ReapJson;
  }

  it('reap --all-homes --as-of removes each container exactly when the later reading says; an unknown profile is kept and named', async () => {
    // The users' longer lifetimes (theirs to set: they keep more), and a root-owned home (--homes) with the shorter ones.
    userWithHome({ [shared]: lifetime(400), [onlyU1]: lifetime(900) });
    userWithHome({ [shared]: lifetime(350), [onlyU2]: null });
    const rootHome = path.join(base, 'roothome', '.hermes');
    writeHome(rootHome, { [shared]: lifetime(100), [rootShort]: lifetime(60) }, null);
    // One more of the shared label, its task directory bound from the root home's sandbox root: tied to that home alone.
    const task = path.join(rootHome, 'profiles', shared, 'sandboxes', 'docker', `task-${hex(3)}`, 'workspace');
    mkdirSync(task, { recursive: true });
    const ids = await Promise.all([
      ...[shared, onlyU1, onlyU2, unknown, rootShort].map((profile) => fx.create({ profile, state: 'exited' })),
      fx.create({ profile: shared, state: 'exited', args: ['-v', `${task}:/workspace`] }),
    ]);
    const [s, a, b, u, r, tied] = ids as [string, string, string, string, string, string];
    const finished = await Promise.all(ids.map((id) => fx.finishedAt(id)));
    const latest = Math.max(...finished.map((f) => Date.parse(f.replace(/(\.\d{3})\d+/, '$1'))));
    const earliest = Math.min(...finished.map((f) => Date.parse(f.replace(/(\.\d{3})\d+/, '$1'))));
    assert.ok(latest - earliest < 5000, 'the containers exited within 5 s of each other');
    const at = (seconds: number) => ['--as-of', new Date((seconds > 0 ? latest + 1000 : earliest - 1000) + seconds * 1000).toISOString()];
    const flags = ['--all-homes', '--homes', rootHome];
    const removedAt = async (seconds: number) => (await reap([...flags, ...at(seconds)])).removed.map((e) => e.id).sort();

    // 120 s (the root home's rootShort): not before, then at once.
    assert.deepEqual(await removedAt(-115), []);
    assert.deepEqual(await removedAt(125), [r]);
    // 200 s for the one its mount ties to the root home (the shared label's own reading there: 100 s).
    assert.deepEqual(await removedAt(-195), []);
    assert.deepEqual(await removedAt(205), [tied]);
    // 600 s (the second user's label, hermes' default): the root home's 200 s for the shared label does not decide it.
    assert.deepEqual(await removedAt(-590), []);
    assert.deepEqual(await removedAt(605), [b]);
    // 800 s (the shared label: the later of 200, 700 and 800 s).
    assert.deepEqual(await removedAt(-790), []);
    assert.deepEqual(await removedAt(805), [s]);
    // 1800 s (the first user's own label).
    assert.deepEqual(await removedAt(-1790), []);
    // status's advice, pasted as root, acts on the same homes: it names them and removes what the run would.
    const due = await runCli(['status', '--json', '--label', `${RUN_LABEL}=${fx.runId}`, ...flags, ...at(1805)], { env: env() });
    const advice = /: run hermes-janitor (reap .*)$/m.exec((JSON.parse(due.stdout) as { attention: string[] }).attention.join('\n'))?.[1] ?? '';
    assert.ok(
      advice.includes(' --all-homes') && advice.includes(`--homes ${rootHome}`) && !advice.includes('--home '),
      `the advice names the run's homes: ${advice}`,
    );
    const pasted = await runCli([...advice.split(' '), '--json'], { env: env() });
    assert.equal(pasted.code, 0, pasted.stderr);
    assert.deepEqual(
      (JSON.parse(pasted.stdout) as ReapJson).removed.map((e) => e.id),
      [a],
    );
    // Ten days on: no home has the last one's label; kept, never judged by a default.
    const late = await reap([...flags, ...at(864_000)]);
    assert.deepEqual(late.removed, []);
    assert.deepEqual(
      late.kept.map((e) => [e.id, e.reason]),
      [[u, 'unknown-profile']],
    );
    const st = await runCli(['status', '--json', '--label', `${RUN_LABEL}=${fx.runId}`, ...flags], { env: env() });
    assert.deepEqual((JSON.parse(st.stdout) as { unknownProfiles?: string[] }).unknownProfiles, [unknown], st.stderr);
    const text = await runCli(['status', '--label', `${RUN_LABEL}=${fx.runId}`, ...flags], { env: env() });
    assert.match(text.stdout, new RegExp(`unknown profiles \\(kept: no home of the run has them\\): ${unknown}`), text.stdout);
    assert.match(text.stdout, /Containers \(all profiles, thresholds per profile\)/);
  });

  it('a watch --all-homes and a cron reap --all-homes take one lock in one store: the reap never acts beside the watch', async () => {
    const w = WatchProcess.start(['--all-homes', '--log-format', 'json', '--label', `${RUN_LABEL}=${fx.runId}`], env());
    try {
      await w.waitFor('started', (lines) => lines.some((l) => l.event === 'started'));
      const skipped = await reap(['--all-homes']);
      assert.equal(skipped.skipped, 'locked', JSON.stringify(skipped));
      // A run over one home keeps its own lock, as before (the layouts are not mixed: docs/operations.md).
      const alone = await runCli(['reap', '--json', '--dry-run', '--label', `${RUN_LABEL}=${fx.runId}`], { env: env() });
      assert.equal(alone.code, 0, alone.stderr);
    } finally {
      await w.stop();
    }
    assert.equal((await reap(['--all-homes'])).skipped, undefined, 'once the watch stopped, the reap runs');
  });

  it('--profile with --homes is a usage error (exit 2)', async () => {
    const r = await runCli(['reap', '--homes', base, '--profile', 'x'], { env: env() });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--homes and --all-homes judge every profile of each home/);
  });
});
