/**
 * Every place hermes puts its session files (#38), through the built CLI: a fixture home with
 * `cache/terminal/hermes-snap-<12 hex>.sh` (its `.tmp.*` and `hermes-cwd-*` siblings), a `terminal.temp_dir` directory
 * holding another snapshot, an abandoned `hermes_bg_<id>` triplet, an `execute_code` sandbox directory and socket,
 * all older than the threshold: with no hermes process alive (the CLI's own process table: `HERMES_JANITOR_PROC_ROOT`),
 * one default `reap` removes them all and lists each with its directory; with a stand-in hermes of the same user
 * started before their last change (a process table holding it), they are all kept; a triplet whose `.log` changed a
 * minute ago is kept although its `.pid` is old. `status` and the metrics cover every directory.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';

const hex = (n: number) => randomBytes(n).toString('hex');
const BTIME = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))![1]);
/** Every fixture file last changed 11 s after the host booted (long past the threshold), the stand-in 1 s after boot. */
const CHANGED_MS = BTIME * 1000 + 11_000;

interface Entry {
  kind?: string;
  path: string;
  files?: string[];
  reason?: string;
}
interface Report {
  shellSnapshots: { removed: Entry[]; kept: Entry[]; tempDirs: Array<{ dir: string; from: string; readings: string[] }> };
  sessionFiles: { removed: Entry[]; kept: Entry[]; failed: unknown[] };
}

describe('session files in every place hermes puts them', () => {
  const t = tempDir('hj-sessdirs-');
  const home = path.join(t.dir, 'hermes');
  const cache = path.join(home, 'cache', 'terminal');
  const tempDirSetting = path.join(t.dir, 'hermes-tmp');
  const env = { HOME: t.dir, HERMES_HOME: home };
  const args = ['--json', '--lifetime', '0', '--label', `hj-sessdirs=${hex(4)}`]; // no container is selected
  let procRoot = '';

  before(() => {
    mkdirSync(cache, { recursive: true });
    mkdirSync(tempDirSetting, { recursive: true });
    writeFileSync(path.join(home, 'config.yaml'), `terminal:\n  temp_dir: ${tempDirSetting}\n`);
    // A process table holding one stand-in hermes of this user, started 1 s after boot (before the files' change).
    procRoot = mkdtempSync(path.join(os.tmpdir(), 'hj-standin-proc-'));
    writeFileSync(path.join(procRoot, 'stat'), `cpu 0\nbtime ${BTIME}\n`);
    const pid = path.join(procRoot, '4242');
    mkdirSync(pid);
    writeFileSync(path.join(pid, 'stat'), '4242 (python3) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0');
    writeFileSync(path.join(pid, 'status'), `Name:\tpython3\nUid:\t${process.getuid!()}\t${process.getuid!()}\t0\t0\n`);
    writeFileSync(path.join(pid, 'cmdline'), 'python3\0-m\0hermes_cli.main\0gateway\0run\0');
    writeFileSync(path.join(pid, 'environ'), `HERMES_HOME=${home}\0`);
  });
  after(() => {
    t.cleanup();
    rmSync(procRoot, { recursive: true, force: true });
  });

  /** The fixture, made afresh: what hermes leaves in cache/terminal and in terminal.temp_dir. */
  function fixture() {
    for (const d of [cache, tempDirSetting]) for (const n of readdirSync(d)) rmSync(path.join(d, n), { recursive: true, force: true });
    const id = hex(6);
    const snap = path.join(cache, `hermes-snap-${id}.sh`);
    const files = [snap, `${snap}.tmp.AbCdE12345`, path.join(cache, `hermes-cwd-${id}.txt`)];
    const other = path.join(tempDirSetting, `hermes-snap-${hex(6)}.sh`);
    const job = path.join(cache, `hermes_bg_${hex(4)}`);
    const live = path.join(cache, `hermes_bg_${hex(4)}`);
    const box = path.join(tempDirSetting, `hermes_sandbox_${hex(4)}`);
    const sock = path.join(tempDirSetting, `hermes_rpc_${hex(16)}.sock`);
    for (const f of [...files, other]) writeFileSync(f, 'declare -x OPENAI_API_KEY="sk-x"\n', { mode: 0o600 });
    for (const s of ['log', 'pid', 'exit']) for (const j of [job, live]) writeFileSync(`${j}.${s}`, s);
    mkdirSync(box);
    writeFileSync(path.join(box, 'script.py'), 'print(1)');
    assert.equal(spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(sock)}, () => process.exit(0))`]).status, 0);
    const when = new Date(CHANGED_MS);
    for (const f of [...files, other, path.join(box, 'script.py'), box, sock]) utimesSync(f, when, when);
    for (const s of ['log', 'pid', 'exit']) for (const j of [job, live]) utimesSync(`${j}.${s}`, when, when);
    // The live job's server still writes its log: a minute ago.
    utimesSync(`${live}.log`, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    return { snap, files, other, job, live, box, sock };
  }

  it(
    'no hermes alive: one default reap removes the snapshots in cache/terminal and terminal.temp_dir, ' +
      'the job, the sandbox and the socket; the live job stays',
    async () => {
      const f = fixture();
      const metrics = path.join(t.dir, 'm.prom');
      const r = await runCli(['reap', ...args, '--metrics-file', metrics], { env });
      assert.ok(r.code === 0 || r.code === 3, r.stderr);
      const rep = JSON.parse(r.stdout) as Report;
      assert.deepEqual(
        rep.shellSnapshots.removed.map((x) => [x.path, [...x.files!].sort()]).sort(),
        [
          [f.snap, [...f.files].sort()],
          [f.other, [f.other]],
        ].sort(),
      );
      assert.deepEqual(rep.sessionFiles.removed.map((x) => [x.kind, x.path]).sort(), [
        ['background-job', f.job],
        ['code-sandbox', f.box],
        ['rpc-socket', f.sock],
      ]);
      assert.deepEqual(
        rep.sessionFiles.kept.map((x) => [x.kind, x.path, x.reason]),
        [['background-job', f.live, 'changed-recently']],
      );
      for (const gone of [...f.files, f.other, `${f.job}.log`, `${f.job}.pid`, `${f.job}.exit`, f.box, f.sock]) assert.equal(existsSync(gone), false, gone);
      for (const s of ['log', 'pid', 'exit']) assert.ok(existsSync(`${f.live}.${s}`), `the live job's .${s}`);
      // Every directory, each with the hermes reading that puts files there.
      const dirs = new Map(rep.shellSnapshots.tempDirs.map((d) => [d.dir, d]));
      assert.equal(dirs.get(tempDirSetting)?.from, 'TERMINAL_TEMP_DIR');
      assert.match(dirs.get(tempDirSetting)!.readings.join('\n'), /terminal\.temp_dir: get_temp_dir first/);
      assert.equal(dirs.get(cache)?.from, 'cache/terminal');
      assert.ok(dirs.has(path.join(home, 'cache', 'scratch')));
      const prom = readFileSync(metrics, 'utf8');
      assert.match(prom, new RegExp(`hermes_janitor_shell_snapshots\\{temp_dir="${cache}",state="found",home="[^"]+"\\} 1`));
      assert.match(prom, new RegExp(`hermes_janitor_session_files\\{temp_dir="${tempDirSetting}",kind="code-sandbox",state="abandoned",home="[^"]+"\\} 1`));
      assert.match(prom, new RegExp(`hermes_janitor_session_files\\{temp_dir="${cache}",kind="background-job",state="found",home="[^"]+"\\} 2`));
    },
  );

  it('text: each removal on a line of its own, with its directory', async () => {
    const f = fixture();
    const r = await runCli(['reap', '--lifetime', '0', '--label', `hj-sessdirs=${hex(4)}`], { env });
    for (const line of [
      `removed shell snapshot ${f.snap} (`,
      `removed shell snapshot ${f.other} (`,
      `removed background job ${f.job} (`,
      `removed code sandbox ${f.box} (`,
      `removed rpc socket ${f.sock} (`,
    ]) {
      assert.ok(r.stdout.includes(line), `${line}\n${r.stdout}`);
    }
    assert.match(
      r.stdout,
      /; shell snapshots: removed 2, kept 0, failed 0; session files: removed 3 \(1 background job, 1 code sandbox, 1 rpc socket\), kept 1, failed 0/,
    );
  });

  it('a stand-in hermes of the same user, started before their last change, keeps them all', async () => {
    const f = fixture();
    const r = await runCli(['reap', ...args], { env: { ...env, HERMES_JANITOR_PROC_ROOT: procRoot } });
    const rep = JSON.parse(r.stdout) as Report;
    assert.deepEqual([rep.shellSnapshots.removed, rep.sessionFiles.removed], [[], []], r.stdout);
    assert.deepEqual(
      new Set([...rep.shellSnapshots.kept, ...rep.sessionFiles.kept].filter((k) => k.path !== f.live).map((k) => k.reason)),
      new Set(['owner-alive']),
    );
    for (const kept of [...f.files, f.other, `${f.job}.pid`, f.box, f.sock]) assert.ok(existsSync(kept), kept);
  });

  it('status: every directory with its readings, and the session files by kind', async () => {
    fixture();
    const st = await runCli(['status', '--lifetime', '0', '--label', `hj-sessdirs=${hex(4)}`], { env });
    assert.match(
      st.stdout,
      new RegExp(`Shell snapshots \\(${tempDirSetting}, from TERMINAL_TEMP_DIR\\)\\n  hermes puts files here: profile default: terminal\\.temp_dir`),
    );
    assert.match(st.stdout, new RegExp(`Shell snapshots \\(${cache}, from cache/terminal\\)\\n  hermes puts files here: .*releases since PR #97205`));
    assert.match(st.stdout, new RegExp(`  ${cache}: 2 background jobs \\(1 abandoned\\)`));
    assert.match(st.stdout, new RegExp(`  ${tempDirSetting}: 1 code sandbox \\(1 abandoned\\), 1 rpc socket \\(1 abandoned\\)`));
  });
});
