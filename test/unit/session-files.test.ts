/**
 * Every place a hermes release puts session files (#38): the directories for each profile a run serves
 * (hermes/session-dirs.ts), whose word each is as root (passes/temp-dirs/dirs.ts), hermes' other session files
 * (passes/session-files/rule.ts), and the session-file pass against real directories with a process table the test
 * controls (passes/session-files/run.ts): abandoned triplets, code sandboxes and sockets go; a triplet whose log changed
 * a minute ago, a living owner's, a symlink and what hermes removed first stay.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ProcessTable } from '../../src/adapters/hermes-processes.js';
import { groupSessionEntries, sessionFileName } from '../../src/passes/session-files/rule.js';
import { OPERATOR, sessionDirs } from '../../src/hermes/session-dirs.js';
import { ownerOfDir } from '../../src/passes/temp-dirs/dirs.js';
import { sessionFilePass, summarizeSessionFiles } from '../../src/passes/session-files/run.js';

const src = (value: string, source = 'default') => ({ value, source });
const settings = (o: Partial<Record<'terminalTempDir' | 'tmpDir' | 'tmp' | 'temp', { value: string; source: string }>> = {}) => ({
  terminalTempDir: src(''),
  tmpDir: src(''),
  tmp: src(''),
  temp: src(''),
  ...o,
});

describe('session directories: every place a hermes release puts session files', () => {
  it('per profile: terminal.temp_dir, TMPDIR/TMP/TEMP (terminal.env first), cache/terminal, cache/scratch; /tmp last; each once', () => {
    const dirs = sessionDirs([
      {
        profile: 'default',
        home: '/h/.hermes',
        terminalEnv: { TMPDIR: '/cfg/tmp/', TERMINAL_TEMP_DIR: 'relative' },
        settings: settings({
          terminalTempDir: src('/data/hermes-tmp', 'config.yaml terminal.temp_dir'),
          tmpDir: src('/env/tmp', 'env TMPDIR'),
          temp: src('/tmp', '/h/.hermes/.env'),
        }),
      },
      {
        profile: 'work',
        home: '/h/.hermes/profiles/work',
        terminalEnv: null,
        settings: settings({ tmpDir: src('/cfg/tmp', '/h/.hermes/profiles/work/.env') }),
      },
    ]);
    assert.deepEqual(
      dirs.map((d) => [d.dir, d.from]),
      [
        ['/data/hermes-tmp', 'TERMINAL_TEMP_DIR'],
        ['/cfg/tmp', 'terminal.env.TMPDIR'],
        ['/tmp', 'TEMP'],
        ['/h/.hermes/cache/terminal', 'cache/terminal'],
        ['/h/.hermes/cache/scratch', 'cache/scratch'],
        ['/h/.hermes/profiles/work/cache/terminal', 'cache/terminal'],
        ['/h/.hermes/profiles/work/cache/scratch', 'cache/scratch'],
      ],
    );
    // One directory named by two profiles (and by /tmp's own rule): once, with every reading that puts files there.
    const cfg = dirs.find((d) => d.dir === '/cfg/tmp')!;
    assert.equal(cfg.readings.length, 2);
    assert.match(cfg.readings[0]!, /^profile default: TMPDIR: get_temp_dir \(tools\/environments\/local\.py, every release\).*, from terminal\.env$/);
    assert.match(cfg.readings[1]!, /^profile work: TMPDIR: /);
    const tmp = dirs.find((d) => d.dir === '/tmp')!;
    assert.deepEqual(
      tmp.namedBy.map((n) => n.source),
      ['/h/.hermes/.env', OPERATOR],
    );
    assert.match(dirs.find((d) => d.from === 'cache/terminal')!.readings[0]!, /releases since PR #97205/);
    assert.match(dirs.find((d) => d.from === 'TERMINAL_TEMP_DIR')!.readings[0]!, /^profile default: terminal\.temp_dir: get_temp_dir first/);
  });

  it("no variable set: the home's cache/terminal and cache/scratch, and the system temp directory (a test's own)", () => {
    assert.deepEqual(
      sessionDirs([{ profile: 'default', home: '/h', terminalEnv: null, settings: settings() }], '/t/sys').map((d) => d.dir),
      ['/h/cache/terminal', '/h/cache/scratch', '/t/sys'],
    );
  });

  it("as root over a user's home: every directory under it is held to its owner; elsewhere, only one that user alone named", () => {
    const owners = new Map<string, number | null>([
      ['/home/u/.hermes', 1000],
      ['/root/.hermes', null],
    ]);
    const named = (dir: string, ...by: Array<[home: string, source: string]>) => ({ dir, namedBy: by.map(([home, source]) => ({ home, source })) });
    assert.equal(ownerOfDir(named('/home/u/.hermes/cache/terminal', ['/home/u/.hermes', 'default']), owners), 1000);
    // Under their home, even when the operator's environment named it.
    assert.equal(ownerOfDir(named('/home/u/.hermes/tmp', ['/home/u/.hermes', 'env TMPDIR']), owners), 1000);
    assert.equal(ownerOfDir(named('/srv/t', ['/home/u/.hermes', 'config.yaml terminal.env']), owners), 1000);
    assert.equal(ownerOfDir(named('/srv/t', ['/home/u/.hermes', '/home/u/.hermes/.env']), owners), 1000);
    assert.equal(ownerOfDir(named('/srv/t', ['/home/u/.hermes', 'env TMPDIR']), owners), undefined);
    assert.equal(ownerOfDir(named('/srv/t', ['/home/u/.hermes', '/etc/hermes/.env']), owners), undefined);
    assert.equal(ownerOfDir(named('/tmp', ['/home/u/.hermes', '/home/u/.hermes/.env'], ['', OPERATOR]), owners), undefined);
    assert.equal(ownerOfDir(named('/root/.hermes/cache/terminal', ['/root/.hermes', 'default']), owners), undefined);
  });
});

describe('session files: the names and the grouping', () => {
  it("exactly hermes' names: background-job triplets, mkdtemp sandboxes, uuid4-hex sockets", () => {
    assert.deepEqual(sessionFileName('hermes_bg_a1-B_2.log'), { kind: 'background-job', entry: 'hermes_bg_a1-B_2' });
    assert.deepEqual(sessionFileName('hermes_bg_x.exit'), { kind: 'background-job', entry: 'hermes_bg_x' });
    assert.deepEqual(sessionFileName('hermes_sandbox_ab1_cd2z'), { kind: 'code-sandbox', entry: 'hermes_sandbox_ab1_cd2z' });
    assert.deepEqual(sessionFileName(`hermes_rpc_${'a'.repeat(32)}.sock`), { kind: 'rpc-socket', entry: `hermes_rpc_${'a'.repeat(32)}.sock` });
    for (const n of [
      'hermes_bg_.log',
      'hermes_bg_x.log.1',
      'hermes_bg_x y.log',
      'hermes_sandbox_ABCDEFGH',
      'hermes_sandbox_abc',
      `hermes_rpc_${'a'.repeat(31)}.sock`,
      'hermes_rpc_x.sock',
    ]) {
      assert.equal(sessionFileName(n), null, n);
    }
  });

  it('a triplet is one entry, judged by its newest change; the wrong type for a name is set apart', () => {
    const f = (name: string, mtimeMs: number, type: 'file' | 'directory' | 'socket' | 'symlink' = 'file') => ({ name, uid: 1000, mtimeMs, type });
    const { entries, wrongType } = groupSessionEntries([
      f('hermes_bg_j.pid', 100),
      f('hermes_bg_j.log', 900),
      f('hermes_bg_j.exit', 200),
      f('hermes_bg_k.log', 5, 'symlink'),
      f('hermes_sandbox_aaaaaaaa', 50, 'directory'),
      f('hermes_sandbox_bbbbbbbb', 50),
      f('unrelated.log', 1),
    ]);
    assert.deepEqual(
      entries.map((e) => [e.kind, e.entry, e.names, e.lastChangeMs]),
      [
        ['code-sandbox', 'hermes_sandbox_aaaaaaaa', ['hermes_sandbox_aaaaaaaa'], 50],
        ['background-job', 'hermes_bg_j', ['hermes_bg_j.log', 'hermes_bg_j.pid', 'hermes_bg_j.exit'], 900],
      ],
    );
    assert.deepEqual(
      wrongType.map((x) => x.name),
      ['hermes_bg_k.log', 'hermes_sandbox_bbbbbbbb'],
    );
  });
});

describe('the session-file pass (real directories, a process table the test controls)', () => {
  let root = '';
  const uid = process.geteuid!();
  const NOW = Date.now();
  const DAY = 86_400_000;
  const none: ProcessTable = { processes: [], hidden: null, blindUids: null, readable: true };
  const hermesOf = (startedAtMs: number): ProcessTable => ({
    processes: [
      {
        pid: 4242,
        uid,
        startedAtMs,
        command: 'hermes gateway run',
        hermes: true,
        python: false,
        profile: null,
        serves: 'all-profiles',
        owns: null,
        ownsWhy: 'test',
      },
    ],
    hidden: null,
    blindUids: null,
    readable: true,
  });
  const age = (p: string, ms: number) => utimesSync(p, new Date(NOW - ms), new Date(NOW - ms));
  const opts = (dir: string, processes: ProcessTable, dryRun = false) => ({
    tempDirs: [{ dir, from: 'cache/terminal' }],
    thresholdMs: 600_000,
    dryRun,
    now: () => new Date(NOW),
    processes: () => processes,
  });

  /** A directory with a job's triplet, a sandbox directory (nested files), a socket, all a day old. */
  function fixture(): { dir: string; sock: string; box: string } {
    const dir = mkdtempSync(path.join(root, 'd-'));
    for (const s of ['log', 'pid', 'exit']) writeFileSync(path.join(dir, `hermes_bg_job1.${s}`), s);
    const box = path.join(dir, 'hermes_sandbox_ab12cd34');
    mkdirSync(path.join(box, 'sub'), { recursive: true });
    writeFileSync(path.join(box, 'script.py'), 'print(1)');
    writeFileSync(path.join(box, 'sub', 'out.txt'), 'x');
    const sock = path.join(dir, `hermes_rpc_${'0a'.repeat(16)}.sock`);
    const made = spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(sock)}, () => process.exit(0))`]);
    assert.equal(made.status, 0, String(made.stderr));
    for (const p of [path.join(box, 'sub', 'out.txt'), path.join(box, 'sub'), path.join(box, 'script.py'), box, sock]) age(p, DAY);
    for (const s of ['log', 'pid', 'exit']) age(path.join(dir, `hermes_bg_job1.${s}`), DAY);
    return { dir, sock, box };
  }

  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'hj-sessfiles-'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('no hermes of their owner alive: the triplet, the sandbox directory (and what is in it) and the socket go', async () => {
    const { dir, sock, box } = fixture();
    const r = await sessionFilePass(opts(dir, none));
    assert.deepEqual(r.removed.map((x) => [x.kind, path.basename(x.path), x.files.map((f) => path.basename(f))]).sort(), [
      ['background-job', 'hermes_bg_job1', ['hermes_bg_job1.log', 'hermes_bg_job1.pid', 'hermes_bg_job1.exit']],
      ['code-sandbox', 'hermes_sandbox_ab12cd34', ['hermes_sandbox_ab12cd34']],
      ['rpc-socket', path.basename(sock), [path.basename(sock)]],
    ]);
    assert.deepEqual([r.kept, r.failed, r.cutShort], [[], [], false]);
    assert.deepEqual(readdirSync(dir), []);
    assert.equal(existsSync(box), false);
  });

  it('a triplet whose .log changed a minute ago is kept, however old its .pid; a sandbox changed inside is kept too', async () => {
    const { dir, box } = fixture();
    age(path.join(dir, 'hermes_bg_job1.log'), 60_000);
    age(path.join(box, 'sub', 'out.txt'), 60_000);
    const r = await sessionFilePass(opts(dir, none));
    assert.deepEqual(r.kept.map((k) => [k.kind, k.reason]).sort(), [
      ['background-job', 'changed-recently'],
      ['code-sandbox', 'changed-recently'],
    ]);
    assert.deepEqual(
      r.removed.map((x) => x.kind),
      ['rpc-socket'],
    );
    assert.ok(existsSync(path.join(dir, 'hermes_bg_job1.pid')));
    assert.ok(existsSync(path.join(box, 'sub', 'out.txt')));
  });

  it('a living hermes of their owner started before their last change keeps them all (owner-alive); one started after does not', async () => {
    const { dir } = fixture();
    const kept = await sessionFilePass(opts(dir, hermesOf(NOW - 2 * DAY)));
    assert.deepEqual(
      kept.kept.map((k) => k.reason),
      ['owner-alive', 'owner-alive', 'owner-alive'],
    );
    assert.equal(readdirSync(dir).length, 5);
    const r = await sessionFilePass(opts(dir, hermesOf(NOW - 3_600_000)));
    assert.equal(r.removed.length, 3);
  });

  it('the proof is taken again right before removing: a hermes seen then keeps them', async () => {
    const { dir } = fixture();
    let reads = 0;
    const r = await sessionFilePass({ ...opts(dir, none), processes: () => (reads++ === 0 ? none : hermesOf(NOW - 2 * DAY)) });
    assert.deepEqual(r.removed, []);
    assert.deepEqual(
      r.kept.map((k) => k.reason),
      ['owner-alive', 'owner-alive', 'owner-alive'],
    );
    assert.equal(reads, 2, 'one read for the pass, one for the owner right before removing');
  });

  it('nothing past the threshold: the entries are kept as before and no process table is read', async () => {
    const { dir, box } = fixture();
    for (const f of readdirSync(dir)) age(path.join(dir, f), 60_000);
    age(path.join(box, 'sub', 'out.txt'), 60_000);
    let reads = 0;
    const r = await sessionFilePass({
      ...opts(dir, none),
      processes: () => {
        reads++;
        return none;
      },
    });
    assert.deepEqual(
      r.kept.map((k) => k.reason),
      ['changed-recently', 'changed-recently', 'changed-recently'],
    );
    assert.deepEqual([r.removed, r.processesHidden, r.cutShort], [[], null, false]);
    assert.equal(reads, 0);
  });

  it('a dry run removes nothing; a symlink named like a log is never followed; a summary counts each kind', async () => {
    const { dir } = fixture();
    const target = path.join(root, 'precious');
    writeFileSync(target, 'keep me');
    symlinkSync(target, path.join(dir, 'hermes_bg_evil.log'));
    const dry = await sessionFilePass(opts(dir, none, true));
    assert.equal(dry.removed.length, 3);
    assert.equal(readdirSync(dir).length, 6);
    assert.deepEqual(
      dry.kept.map((k) => [path.basename(k.path), k.reason]),
      [['hermes_bg_evil.log', 'not-regular']],
    );
    const [s] = summarizeSessionFiles(dry);
    assert.deepEqual(s!.kinds, {
      'background-job': { found: 1, abandoned: 1 },
      'code-sandbox': { found: 1, abandoned: 1 },
      'rpc-socket': { found: 1, abandoned: 1 },
    });
    await sessionFilePass(opts(dir, none));
    assert.deepEqual(readdirSync(dir), ['hermes_bg_evil.log']);
    assert.equal(existsSync(target), true);
  });

  it("what hermes' own pruner removed first is gone, never a failure", async () => {
    const { dir, box } = fixture();
    let first = true;
    // The pruner runs between the pass's look and its removal (right when the process table is read again).
    const r = await sessionFilePass({
      ...opts(dir, none),
      processes: () => {
        if (!first) {
          for (const s of ['log', 'pid', 'exit']) rmSync(path.join(dir, `hermes_bg_job1.${s}`));
          rmSync(box, { recursive: true });
        }
        first = false;
        return none;
      },
    });
    assert.deepEqual(r.failed, []);
    assert.deepEqual(r.kept.map((k) => [k.kind, k.reason]).sort(), [
      ['background-job', 'gone'],
      ['code-sandbox', 'gone'],
    ]);
  });

  it("the run's abort stops it between entries (cutShort)", async () => {
    const { dir } = fixture();
    const ctl = new AbortController();
    ctl.abort();
    const r = await sessionFilePass({ ...opts(dir, none), signal: ctl.signal });
    assert.equal(r.cutShort, true);
    assert.equal(readdirSync(dir).length, 5);
  });
});
