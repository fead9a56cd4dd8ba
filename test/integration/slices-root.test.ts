/**
 * The whole-directory readers of #47, as root on the real engine (Docker), over the home of a throwaway user without
 * engine access (`useradd`, removed at the end) who filled the directories root reads (made by that user, as
 * floods-root.test.ts makes its floods):
 * - `<home>/sandboxes/docker` with 6,000 task directories (the cap is 4,096 a run): `reap --sandbox-dirs-older-than`
 *   returns within `--timeout` + 1 s; given the time, it reports the cap (`sandboxDirs.capped`, the warning line,
 *   `status`'s `sandboxDirsDetail.capped`) and judged every directory it took (kept: changed recently), no more;
 * - one task directory of 100,000 files: measured and removed a slice of names at a time, under 256 MB of RSS, within
 *   `--timeout 1s` + 1 s when cut short;
 * - `<home>/tool-loop` with 5,000 history names: root's `tool-loop status` and `status` say the cap (`status
 *   --timeout 5s` within 6 s);
 * - `<home>/runtime/execution-targets.d` with 5,000 names: a warning past the cap, the run goes on (`reap --timeout
 *   5s` within 6 s).
 * Timings are from the spawn of the CLI; the maximum RSS is GNU time's (`/usr/bin/time -f %M`), of the CLI's process.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { emptyManagedDir } from '../helpers/cli.js';
import { ENGINE_KIND, requireEngine } from '../helpers/docker.js';
import { asUser, runCliAs } from '../helpers/owners.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';

const hex = (n: number) => randomBytes(n).toString('hex');
const has = (cmd: string, args = ['--help']) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const TIME = '/usr/bin/time';
const unmetReason =
  process.getuid?.() !== 0
    ? 'needs root (it makes a throwaway user and runs the janitor as root over its home)'
    : !has('useradd') || !has('userdel') || !has('setpriv', ['--version'])
      ? 'needs useradd, userdel and setpriv'
      : !existsSync(TIME)
        ? `needs GNU time at ${TIME} (the maximum RSS of the CLI's process)`
        : ENGINE_KIND !== 'docker'
          ? 'runs against Docker (one engine is enough for the floods)'
          : false;

/** The bound: 256 MB of RSS, in GNU time's KiB. */
const RSS_BOUND_KB = (256 * 1000 * 1000) / 1024;
/** The caps as the code names them (src/passes/sandbox-dirs/rule.ts TASK_DIRS_CAP, src/breakers/tool-loop.ts, src/adapters/execution-targets.ts). */
const TASK_DIRS_CAP = 4096;
const DIR_CAP = 4096;

interface User {
  name: string;
  uid: number;
  gid: number;
}

interface SandboxDirsJson {
  removed: Array<{ path: string }>;
  kept: Array<{ path: string; reason: string }>;
  failed: Array<{ path: string; error: string }>;
  capped?: Array<{ path: string; capped: number }>;
}

describe('the whole-directory readers: root over directories a user without engine access filled (#47)', { skip: skipUnless(unmetReason) }, () => {
  let base = '';
  let attacker: User;
  let top = '';
  let home = '';

  before(async () => {
    failUnderCi(unmetReason);
    await requireEngine();
    // tmpfs where there is one: 100,000 files are made in seconds there.
    base = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'hj-slices-'));
    chmodSync(base, 0o755);
    const name = `hjs${hex(4)}`;
    execFileSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', name]);
    const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
    attacker = { name, uid: id('-u'), gid: id('-g') };
    top = path.join(base, 'att');
    home = path.join(top, '.hermes');
    mkdirSync(home, { recursive: true });
    execFileSync('chown', ['-R', `${attacker.uid}:${attacker.gid}`, top]);
    execFileSync('chmod', ['-R', 'go-rwx', top]);
  });

  after(() => {
    try {
      if (base) rmSync(base, { recursive: true, force: true });
    } finally {
      if (attacker) {
        spawnSync('userdel', [attacker.name], { stdio: 'ignore' });
        spawnSync('groupdel', [attacker.name], { stdio: 'ignore' });
      }
    }
  });

  /** Runs `code` (a script for `node -e`) as the attacker: what it makes is theirs. */
  function asAttacker(code: string): void {
    execFileSync('setpriv', [...asUser(attacker), process.execPath, '-e', code], { stdio: 'inherit' });
  }

  /** Root's run of the CLI over the attacker's home, timed from its spawn; `rss`: under GNU time, its maximum RSS in KiB. */
  async function rootRun(args: string[], opts: { rss?: boolean } = {}) {
    const out = path.join(base, `time-${hex(3)}`);
    const time = opts.rss ? [TIME, '-f', '%M', '-o', out] : [];
    // Root's state for the user's home in the test's own directory, not the host's /var/lib/hermes-janitor.
    const env = { HOME: base, HERMES_HOME: home, HERMES_MANAGED_DIR: emptyManagedDir(), HERMES_JANITOR_STATE_DIR: path.join(base, 'root-state') };
    const t0 = Date.now();
    const r = await runCliAs(null, args, env, time, 120_000);
    const ms = Date.now() - t0;
    const rssKb = opts.rss ? Number(readFileSync(out, 'utf8').trim().split('\n').at(-1)) : null;
    return { ...r, ms, rssKb };
  }

  const label = () => ['--label', `hj-slices=${hex(4)}`]; // no container of it: the directories are the run

  it('6,000 task directories: within --timeout + 1 s; given the time, the cap reported and every directory taken judged', async (t) => {
    const docker = path.join(home, 'sandboxes', 'docker');
    // Changed just now: each is judged by its files (kept, changed-recently), without asking the engines again for
    // each (what an old one costs: about 25 ms a directory here, so 4,096 old ones take a run of minutes).
    asAttacker(
      `const fs=require('fs');const d=${JSON.stringify(docker)};fs.mkdirSync(d,{recursive:true});` +
        `for(let i=0;i<6000;i++)fs.mkdirSync(d+'/task-'+i.toString(36))`,
    );
    try {
      const cut = await rootRun(['reap', '--dry-run', '--sandbox-dirs-older-than', '1d', '--timeout', '2s', ...label()], { rss: true });
      assert.ok(cut.code === 0 || cut.code === 3, `exit ${cut.code}: ${cut.stderr}`);
      assert.ok(cut.ms <= 3000, `reap --timeout 2s returned after ${cut.ms} ms`);
      assert.ok(cut.rssKb! < RSS_BOUND_KB, `max RSS ${cut.rssKb} KiB`);
      const full = await rootRun(['reap', '--dry-run', '--json', '--sandbox-dirs-older-than', '1d', '--timeout', '60s', ...label()], { rss: true });
      assert.equal(full.code, 0, `${full.ms} ms: ${full.stderr.slice(-600)}`);
      const s = (JSON.parse(full.stdout) as { sandboxDirs: SandboxDirsJson }).sandboxDirs;
      assert.deepEqual(
        s.capped?.map((c) => ({ path: c.path, capped: c.capped })),
        [{ path: docker, capped: TASK_DIRS_CAP }],
      );
      const judged = new Set([...s.removed, ...s.kept, ...s.failed].map((d) => d.path));
      assert.equal(judged.size, TASK_DIRS_CAP, 'every directory taken is judged, and no other');
      assert.deepEqual(new Set(s.kept.map((k) => k.reason)), new Set(['changed-recently']), JSON.stringify(s.kept.slice(0, 3)));
      const quiet = await rootRun(['reap', '--dry-run', '--quiet', '--sandbox-dirs-older-than', '1d', '--timeout', '60s', ...label()]);
      assert.equal(quiet.code, 0, quiet.stderr);
      assert.match(quiet.stderr, new RegExp(`${docker.replace(/[/.]/g, '\\$&')} holds more than ${TASK_DIRS_CAP} entries \\(a run takes ${TASK_DIRS_CAP}\\)`));
      for (const [what, r] of [
        ['reap --dry-run --timeout 2s', cut],
        ['reap --dry-run --json --timeout 60s', full],
      ] as const)
        t.diagnostic(`${what}: exit ${r.code} in ${r.ms} ms, max RSS ${r.rssKb} KiB`);
      const status = await rootRun(['status', '--json', '--timeout', '100s']);
      const detail = (JSON.parse(status.stdout) as { sandboxDirsDetail?: { capped?: number } }).sandboxDirsDetail;
      assert.equal(detail?.capped, TASK_DIRS_CAP, status.stdout.slice(0, 400));
    } finally {
      rmSync(path.join(home, 'sandboxes'), { recursive: true, force: true });
    }
  });

  it('a task directory of 100,000 files: measured and removed a slice at a time, under 256 MB, within --timeout 1s + 1 s', async (t) => {
    const docker = path.join(home, 'sandboxes', 'docker');
    const big = path.join(docker, 'task-big');
    asAttacker(
      `const fs=require('fs');const d=${JSON.stringify(big)};fs.mkdirSync(d,{recursive:true});const old=new Date(Date.now()-2*86400e3);` +
        `for(let i=0;i<100000;i++){const p=d+'/f'+i.toString(36);fs.closeSync(fs.openSync(p,'w'));fs.utimesSync(p,old,old)}` +
        `fs.utimesSync(d,old,old);fs.utimesSync(${JSON.stringify(docker)},old,old)`,
    );
    try {
      const cut = await rootRun(['reap', '--dry-run', '--sandbox-dirs-older-than', '1d', '--timeout', '1s', ...label()], { rss: true });
      assert.ok(cut.code === 0 || cut.code === 3, `exit ${cut.code}: ${cut.stderr}`);
      assert.ok(cut.ms <= 2000, `reap --timeout 1s returned after ${cut.ms} ms`);
      const full = await rootRun(['reap', '--json', '--sandbox-dirs-older-than', '1d', '--timeout', '100s', ...label()], { rss: true });
      assert.equal(full.code, 0, full.stderr);
      const s = (JSON.parse(full.stdout) as { sandboxDirs: SandboxDirsJson }).sandboxDirs;
      assert.deepEqual(
        s.removed.map((d) => d.path),
        [big],
        full.stdout.slice(0, 600),
      );
      assert.equal(existsSync(big), false, 'removed');
      assert.ok(full.rssKb! < RSS_BOUND_KB, `max RSS ${full.rssKb} KiB`);
      for (const [what, r] of [
        ['reap --dry-run --timeout 1s', cut],
        ['reap --json --timeout 100s (removes it)', full],
      ] as const)
        t.diagnostic(`${what}: exit ${r.code} in ${r.ms} ms, max RSS ${r.rssKb} KiB`);
    } finally {
      rmSync(path.join(home, 'sandboxes'), { recursive: true, force: true });
    }
  });

  it("5,000 tool-loop history names: root's tool-loop status and status report the cap", async () => {
    const dir = path.join(home, 'tool-loop');
    asAttacker(
      `const fs=require('fs');const d=${JSON.stringify(dir)};fs.mkdirSync(d,{recursive:true});` +
        `for(let i=0;i<5000;i++)fs.writeFileSync(d+'/s'+i+'-'+(i.toString(16).padStart(16,'0'))+'.json','{}')`,
    );
    try {
      const text = await rootRun(['tool-loop', 'status']);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, new RegExp(`holds more than ${DIR_CAP} entries: the sessions among the first ${DIR_CAP} read are shown`));
      const json = await rootRun(['tool-loop', 'status', '--json']);
      const j = JSON.parse(json.stdout) as { sessions: unknown[]; capped?: number };
      assert.equal(j.capped, DIR_CAP);
      assert.ok(j.sessions.length <= DIR_CAP, `${j.sessions.length} sessions`);
      const status = await rootRun(['status', '--json', '--timeout', '5s']);
      assert.ok(status.ms <= 6000, `status --timeout 5s returned after ${status.ms} ms`);
      const s = JSON.parse(status.stdout) as { breakers: { toolLoop: { capped?: number } } };
      assert.equal(s.breakers.toolLoop.capped, DIR_CAP, status.stdout.slice(0, 400));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('5,000 names in the runtime registry of execution targets: a warning past the cap, the run goes on', async () => {
    const dir = path.join(home, 'runtime', 'execution-targets.d');
    asAttacker(
      `const fs=require('fs');const d=${JSON.stringify(dir)};fs.mkdirSync(d,{recursive:true});` +
        `for(let i=0;i<5000;i++)fs.writeFileSync(d+'/p'+i+'.json','{}')`,
    );
    try {
      const r = await rootRun(['reap', '--dry-run', '--timeout', '5s', ...label()]);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.ms <= 6000, `reap --timeout 5s returned after ${r.ms} ms`);
      assert.match(r.stderr, new RegExp(`holds more than ${DIR_CAP} entries: only the fragments among the first ${DIR_CAP} read are known`));
    } finally {
      rmSync(path.join(home, 'runtime'), { recursive: true, force: true });
    }
  });
});
