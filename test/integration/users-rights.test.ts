/**
 * A user's settings are worth that user's rights (#47), as root on the real engine (Docker), with throwaway users made
 * for the run (`useradd`, removed at the end): an attacker without engine access, a victim, and a member of the engine
 * socket's group. Labels are shared between users (every user's first profile is `default`); here a random label
 * stands for it (a profile of that name in each home), so nothing of the shared engine but what the tests make is
 * selected.
 *
 * The victim's in-use sandbox (a quiet background job: kept `in-use` when judged by its own home) and never-started
 * container must be untouched by a run over the attacker's home whose config.yaml says `terminal.lifetime_seconds: 0`
 * and `janitor.idle_max_processes: 1000` (on main: the sandbox stopped, the container removed after 120 s instead of
 * 600 s); the same settings in the home of a member of the socket's group, and in a root-owned home, apply as written.
 * The idle threshold is the operator's `--idle-after 2s` (the proof's samples are real time); the never-started
 * container is aged with `--as-of`.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { ENGINE_KIND, ENGINE_SOCKET, EngineFixture, docker, requireEngine } from '../helpers/docker.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';

const hex = (n: number) => randomBytes(n).toString('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const has = (cmd: string, args = ['--help']) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const unmetReason =
  process.getuid?.() !== 0
    ? 'needs root (it makes throwaway users and runs the janitor as root over their homes)'
    : !has('useradd') || !has('userdel')
      ? 'needs useradd and userdel (passwd)'
      : ENGINE_KIND !== 'docker'
        ? "runs against Docker's socket (its group is what a member is in)"
        : false;

interface User {
  name: string;
  uid: number;
  gid: number;
}
interface Entry {
  id: string;
  reason?: string;
  idleReason?: string;
  processes?: number | null;
}
interface ReapJson {
  removed: Entry[];
  stopped: Entry[];
  kept: Entry[];
  untrustedSettings?: Array<{ setting: string; value: string; reason: string; detail: string }>;
}

/** Starts a background job the way hermes does (one short exec whose quiet job outlives it), and waits until it runs. */
async function startJob(id: string): Promise<void> {
  const job =
    `( sh -c 'trap "" HUP; exec sleep 900' > /tmp/hermes_bg_t.log 2>&1; rc=$?; printf '%s' "$rc" > /tmp/hermes_bg_t.exit )` +
    ' > /dev/null 2>&1 & echo $! > /tmp/hermes_bg_t.pid';
  await docker(['exec', id, 'sh', '-c', job]);
  const cmdlines = 'for f in /proc/[0-9]*/cmdline; do busybox tr "\\0" " " < "$f"; echo; done';
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(100)) {
    if (/^sleep 900 ?$/m.test(await docker(['exec', id, 'sh', '-c', cmdlines]).catch(() => ''))) return;
  }
  throw new Error(`the background job in ${id.slice(0, 12)} did not start`);
}

describe("a user's settings are worth that user's rights: root over homes of users with and without engine access (#47)", {
  skip: skipUnless(unmetReason),
}, () => {
  const fx = new EngineFixture();
  const users: User[] = [];
  let base: string;
  let socketGroup: string | null = null;

  before(async () => {
    failUnderCi(unmetReason);
    await requireEngine();
    base = mkdtempSync(path.join(os.tmpdir(), 'hj-rights-'));
    chmodSync(base, 0o755);
    const gid = statSync(ENGINE_SOCKET).gid;
    socketGroup = gid === 0 ? null : (execFileSync('getent', ['group', String(gid)], { encoding: 'utf8' }).split(':')[0] ?? null);
  });

  after(async () => {
    try {
      await fx.cleanup();
      if (base) rmSync(base, { recursive: true, force: true });
    } finally {
      for (const u of users) {
        spawnSync('userdel', [u.name], { stdio: 'ignore' });
        spawnSync('groupdel', [u.name], { stdio: 'ignore' });
      }
    }
  });

  function user(groups: string[] = []): User {
    const name = `hjr${hex(4)}`;
    execFileSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', ...(groups.length ? ['-G', groups.join(',')] : []), name]);
    const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
    const u = { name, uid: id('-u'), gid: id('-g') };
    users.push(u);
    return u;
  }

  /** `<base>/<who>/.hermes/profiles/<label>` (each directory the owner's, 0700), with `config` as its config.yaml. */
  function profileHome(owner: User | null, label: string, config: string | null): string {
    const top = path.join(base, `${owner?.name ?? 'root'}-${hex(3)}`);
    const home = path.join(top, '.hermes', 'profiles', label);
    mkdirSync(home, { recursive: true, mode: 0o700 });
    if (config !== null) writeFileSync(path.join(home, 'config.yaml'), config);
    for (const p of [
      top,
      path.join(top, '.hermes'),
      path.join(top, '.hermes', 'profiles'),
      home,
      ...(config !== null ? [path.join(home, 'config.yaml')] : []),
    ]) {
      chmodSync(p, statSync(p).isDirectory() ? 0o700 : 0o600);
      if (owner) chownSync(p, owner.uid, owner.gid);
    }
    return home;
  }

  const ATTACK = 'terminal:\n  lifetime_seconds: 0\njanitor:\n  idle_max_processes: 1000\n';

  async function reap(home: string, args: string[]): Promise<ReapJson & { stderr: string }> {
    const env = { HOME: base, HERMES_HOME: home, HERMES_JANITOR_STATE_DIR: path.join(base, 'state') };
    const r = await runCli(['reap', '--json', '--idle-after', '2s', ...args], { env });
    assert.equal(r.code, 0, r.stderr);
    return { ...(JSON.parse(r.stdout) as ReapJson), stderr: r.stderr };
  }

  /** A never-started container and a running sandbox with a quiet background job, labelled `label`. */
  async function victimsOf(label: string): Promise<{ created: string; inUse: string }> {
    const [created, inUse] = await Promise.all([fx.create({ profile: label, state: 'created' }), fx.create({ profile: label, state: 'running' })]);
    await startJob(inUse);
    return { created, inUse };
  }

  /** Two reaps over `home` an idle threshold apart, judging ages 200 s from now (120 s < 200 s < 600 s). */
  async function twoReaps(home: string): Promise<ReapJson & { stderr: string }> {
    const asOf = new Date(Date.now() + 200_000).toISOString();
    const first = await reap(home, ['--as-of', asOf]);
    await sleep(2600);
    const second = await reap(home, ['--as-of', asOf]);
    return { ...second, removed: [...first.removed, ...second.removed], stopped: [...first.stopped, ...second.stopped] };
  }

  it("the victim's in-use sandbox and never-started container are untouched by a run over the attacker's home; each refusal said once", async () => {
    const label = `t-${hex(5)}`;
    const attacker = user();
    const victim = user();
    const { created, inUse } = await victimsOf(label);
    // Judged by its own home, the victim's sandbox is in use.
    const own = await reap(profileHome(victim, label, null), ['--dry-run']);
    assert.equal(own.kept.find((e) => e.id === inUse)?.idleReason, 'in-use', JSON.stringify(own.kept));

    const home = profileHome(attacker, label, ATTACK);
    const out = await twoReaps(home);
    assert.deepEqual([out.removed, out.stopped], [[], []], JSON.stringify(out));
    assert.equal(out.kept.find((e) => e.id === created)?.reason, 'too-recent', 'judged by 600 s, not 120 s');
    assert.equal(out.kept.find((e) => e.id === inUse)?.idleReason, 'in-use');
    assert.deepEqual([await fx.state(created), await fx.state(inUse)], ['created', 'running']);
    assert.deepEqual(
      out.untrustedSettings?.map((u) => [u.setting, u.value, u.reason]),
      [
        ['terminal.lifetime_seconds', '0', 'untrusted-setting'],
        ['janitor.idle_max_processes', '1000', 'untrusted-setting'],
      ],
    );
    assert.match(out.untrustedSettings![0]!.detail, new RegExp(`uid ${attacker.uid} \\(${attacker.name}\\) cannot act on the engine \\(no access to `));
    assert.equal(out.stderr, '', 'JSON: no warning line');
    // Text: one line each (also with --quiet); status names them and needs attention.
    const env = { HOME: base, HERMES_HOME: home, HERMES_JANITOR_STATE_DIR: path.join(base, 'state') };
    const text = await runCli(['reap', '--dry-run', '--quiet'], { env });
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stderr.split('\n').filter((l) => l.includes('(untrusted-setting)'));
    assert.deepEqual(
      lines.map((l) => l.replace(/ in .*/, '')),
      ['hermes-janitor: warning: terminal.lifetime_seconds 0', 'hermes-janitor: warning: janitor.idle_max_processes 1000'],
      text.stderr,
    );
    const st = await runCli(['status', '--json'], { env });
    const s = JSON.parse(st.stdout) as {
      trust: { refused: Array<{ what: string; reason: string; path: string }>; settings?: { worth: string } };
      attention: string[];
    };
    assert.equal(s.trust.settings?.worth, 'keep-more');
    assert.deepEqual(
      s.trust.refused.filter((r) => r.what === 'setting').map((r) => [r.reason, r.path]),
      [
        ['untrusted-setting', path.join(home, 'config.yaml')],
        ['untrusted-setting', path.join(home, 'config.yaml')],
      ],
    );
    assert.ok(s.attention.some((a) => a.includes('janitor.idle_max_processes 1000')) && st.code === 1, st.stdout);
  });

  it("the same settings in the home of a member of the engine socket's group apply as written", async (t) => {
    if (socketGroup === null) return t.skip(`the engine socket ${ENGINE_SOCKET} has no group other than root's`);
    const label = `t-${hex(5)}`;
    const member = user([socketGroup]);
    const { created, inUse } = await victimsOf(label);
    const home = profileHome(member, label, ATTACK);
    const out = await twoReaps(home);
    assert.deepEqual(out.untrustedSettings, undefined);
    const st = await runCli(['status'], { env: { HOME: base, HERMES_HOME: home, HERMES_JANITOR_STATE_DIR: path.join(base, 'state') } });
    assert.match(st.stdout, new RegExp(`their settings apply as written: uid ${member.uid} \\(${member.name}\\) is in group \\d+ \\(${socketGroup}\\) of `));
    assert.deepEqual(
      out.removed.map((e) => e.id),
      [created],
      'judged by 120 s',
    );
    assert.deepEqual(
      out.stopped.map((e) => e.id),
      [inUse],
      `up to 1000 processes may be idle: ${JSON.stringify(out.kept)}`,
    );
  });

  it('a root-owned home, as before: its settings apply as written', async () => {
    const label = `t-${hex(5)}`;
    const { created, inUse } = await victimsOf(label);
    const out = await twoReaps(profileHome(null, label, ATTACK));
    assert.deepEqual(out.untrustedSettings, undefined);
    assert.deepEqual([out.removed.map((e) => e.id), out.stopped.map((e) => e.id)], [[created], [inUse]], JSON.stringify(out.kept));
  });
});
