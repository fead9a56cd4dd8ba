/**
 * hermes' sandbox directories: the rules (pure), the filesystem side on real files (sizes against `du -sxB1`,
 * symlinks never followed), and the removal pass against the engine simulator (engines injected, clock injected).
 * The real engine, tmpfs mounts and unprivileged runs are in test/integration/sandbox-dirs.test.ts.
 */
import { resolveHermesSettings } from '../../src/hermes/settings.js';
import assert from 'node:assert/strict';
import { existsSync, linkSync, mkdirSync, readFileSync, readdirSync, renameSync, symlinkSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { createDockerodeEngine } from '../../src/adapters/dockerode-engine.js';
import type { EngineClient } from '../../src/adapters/engine.js';
import { readMountPoints, removeTaskDir, scanTaskDir } from '../../src/passes/dir-trees/files.js';
import { claimName, parseMountInfo, refusalLine } from '../../src/passes/dir-trees/rule.js';
import { listTaskDirs } from '../../src/passes/sandbox-dirs/files.js';
import {
  type MountRef,
  type SandboxRoot,
  isSameOrInside,
  keepByEngines,
  keepByFiles,
  normalizeHostPath,
  sandboxRoot,
  summarize,
  totalBytes,
  usageByTaskDir,
} from '../../src/passes/sandbox-dirs/rule.js';
import { UsageError } from '../../src/errors.js';
import { removeUnusedSandboxDirs } from '../../src/passes/sandbox-dirs/run.js';
import { surveySandboxDirs } from '../../src/passes/sandbox-dirs/status.js';
import { tempDir } from '../helpers/cli.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';
import { ageTree, du, makeTaskDir, sanitizeTaskIdForPath } from '../helpers/sandbox-dirs.js';

// The numbers these tests pin, stated here (not imported from the code under test): a change to one is a change this test must see.
/** The deepest tree a removal descends (docs/reaping.md). */
const MAX_REMOVAL_DEPTH = 256;

const mount = (source: string, name = 'hermes-1'): MountRef => ({ host: 'unix:///e.sock', id: `${name}-id`, name, state: 'running', source });
const DAY = 86_400_000;

describe('sandbox roots and what "used" means (pure)', () => {
  it('the root is $TERMINAL_SANDBOX_DIR when set and not empty (relative to the working directory), else <home>/sandboxes', () => {
    const rootOf = (env: Record<string, string>) =>
      sandboxRoot(
        resolveHermesSettings({ home: '/h/.hermes', cwd: '/w', env, dotenv: null, managedDotenv: null, config: null, managedConfig: null }).sandboxRoot,
        '/h/.hermes',
      );
    assert.deepEqual(rootOf({}), { root: '/h/.hermes/sandboxes', from: 'home', source: 'default' });
    assert.deepEqual(rootOf({ TERMINAL_SANDBOX_DIR: '' }), { root: '/h/.hermes/sandboxes', from: 'home', source: 'env TERMINAL_SANDBOX_DIR' });
    assert.deepEqual(rootOf({ TERMINAL_SANDBOX_DIR: '/srv/sb/' }), { root: '/srv/sb', from: 'TERMINAL_SANDBOX_DIR', source: 'env TERMINAL_SANDBOX_DIR' });
    assert.deepEqual(rootOf({ TERMINAL_SANDBOX_DIR: 'sb' }), { root: '/w/sb', from: 'TERMINAL_SANDBOX_DIR', source: 'env TERMINAL_SANDBOX_DIR' });
  });

  it('mount sources are compared as normalised absolute paths, by whole components', () => {
    assert.equal(normalizeHostPath('/a//b/./c/'), '/a/b/c');
    assert.equal(normalizeHostPath('/a/b/../c'), '/a/c');
    assert.equal(normalizeHostPath('/'), '/');
    assert.equal(normalizeHostPath('named-volume'), null);
    assert.equal(normalizeHostPath(''), null);
    assert.equal(isSameOrInside('/a/b', '/a/b'), true);
    assert.equal(isSameOrInside('/a/b/c', '/a/b'), true);
    assert.equal(isSameOrInside('/a/bc', '/a/b'), false);
    assert.equal(isSameOrInside('/a', '/a/b'), false);
    assert.equal(isSameOrInside('/x', '/'), true);
  });

  it('a task directory is used by a mount of it or inside it, under any spelling of <root>/docker; never by a sibling or a parent', () => {
    const parent = '/h/sandboxes/docker';
    const usage = usageByTaskDir(
      [parent, '/data/sandboxes/docker'],
      [
        mount('/h/sandboxes/docker/t1/home', 'a'),
        mount('/h/sandboxes/docker/t1/workspace', 'a'), // the same container twice: listed once
        mount('/h/sandboxes/docker//t2/', 'b'), // the directory itself, as the engine may spell it
        mount('/data/sandboxes/docker/t3/home/x', 'c'), // through the resolved root
        mount('/h/sandboxes/docker/t4x/home', 'd'), // t4x, not t4
        mount('/h/sandboxes/docker', 'e'), // the parent: no task directory
        mount('/h/sandboxes', 'f'),
        mount('/h/sandboxes/docker/../docker/t5/home', 'g'),
        mount('', 'h'),
      ],
    );
    assert.deepEqual([...usage.keys()].sort(), ['t1', 't2', 't3', 't4x', 't5']);
    assert.deepEqual(
      usage.get('t1')!.map((m) => m.name),
      ['a'],
    );
    assert.equal(usage.has('t4'), false);
  });

  it('removal by the files: a real directory, no mounts inside, unchanged for the whole duration (the boundary included)', () => {
    const now = Date.parse('2026-11-23T12:00:00Z');
    const facts = { kind: 'directory' as const, mountPoint: false, mounts: [], lastChangeMs: now - 3_600_000, claimedAtMs: null };
    assert.equal(keepByFiles(facts, now, 3_600_000), null, 'exactly the duration: goes');
    assert.equal(keepByFiles(facts, now, 3_600_001)?.reason, 'changed-recently');
    assert.equal(keepByFiles({ ...facts, lastChangeMs: now + 60_000 }, now, 0)?.reason, 'changed-recently', 'a change in the future is a change now');
    assert.equal(keepByFiles({ ...facts, kind: 'symlink' }, now, 0)?.reason, 'symlink');
    assert.equal(keepByFiles({ ...facts, kind: 'other' }, now, 0)?.reason, 'not-a-directory');
    assert.equal(keepByFiles({ ...facts, kind: 'missing' }, now, 0)?.reason, 'gone');
    assert.equal(keepByFiles({ ...facts, mountPoint: true }, now, 0)?.reason, 'mount-point');
    const inside = keepByFiles({ ...facts, mounts: ['/r/docker/t/workspace/m'] }, now, 0)!;
    assert.equal(inside.reason, 'mount-inside');
    assert.match(inside.detail, /\/r\/docker\/t\/workspace\/m/);
    // Renamed by a run removing it: left alone for the duration (that run is on it), then removed as any other.
    assert.equal(keepByFiles({ ...facts, claimedAtMs: now - 1000 }, now, 3_600_000)?.reason, 'being-removed');
    assert.equal(keepByFiles({ ...facts, claimedAtMs: now - 3_600_000 }, now, 3_600_000), null);
  });

  it('removal by the engines: every engine answered and no container uses it', () => {
    assert.equal(keepByEngines([], []), null);
    const used = keepByEngines([mount('/x', 'hermes-9')], [])!;
    assert.equal(used.reason, 'in-use');
    assert.match(used.detail, /hermes-9 \(running\) on unix:\/\/\/e\.sock/);
    const down = keepByEngines([], [{ host: 'tcp://b:2375', error: 'ECONNREFUSED' }])!;
    assert.equal(down.reason, 'engine-unanswered');
    assert.match(down.detail, /tcp:\/\/b:2375/);
  });

  it('sizes add up with a hard-linked file counted once; status numbers come from the unused ones only', () => {
    const a = { name: 'a', bytes: 100, shared: new Map([['1:7', 40]]), lastChangeMs: 5 };
    const b = { name: 'b', bytes: 60, shared: new Map([['1:7', 40]]), lastChangeMs: 3 };
    const c = { name: 'c', bytes: 10, shared: new Map<string, number>(), lastChangeMs: null };
    assert.equal(totalBytes([a, b, c]), 130);
    assert.deepEqual(summarize('/r', [a, b, c], new Map([['a', []]])), {
      root: '/r',
      count: 3,
      bytes: 130,
      unused: 2,
      unusedBytes: 70,
      oldestUnusedChange: new Date(3).toISOString(),
    });
    assert.deepEqual(summarize('/r', [a], null), { root: '/r', count: 1, bytes: 100, unused: null, unusedBytes: null, oldestUnusedChange: null });
  });

  it('mount points from /proc/self/mountinfo, escapes decoded; the claim name stays a valid file name', () => {
    const text = '36 25 0:32 / /tmp/a\\040b rw - tmpfs tmpfs rw\n37 25 8:1 /x /srv/bind rw - ext4 /dev/sda1 rw\n';
    assert.deepEqual(parseMountInfo(text), ['/tmp/a b', '/srv/bind']);
    assert.ok(Buffer.byteLength(claimName('x'.repeat(255), 'abcd1234')) <= 255);
  });

  it('a refusal is one line: the directory, the first file refused, the fix, and what became of it', () => {
    const r = { path: '/r/docker/t/workspace/build/out.o', code: 'EACCES', op: 'remove' as const, owner: { path: '/r/docker/t/workspace/build', uid: 0 } };
    const line = refusalLine('/r/docker/t', r, 65534, { partial: false, leftAt: '/r/docker/t' });
    assert.equal(
      line,
      'cannot remove /r/docker/t: /r/docker/t/workspace/build/out.o: permission denied ' +
        '(/r/docker/t/workspace/build belongs to uid 0; this run is uid 65534): ' +
        'run it as root, or as the owner; nothing was removed',
    );
    assert.match(refusalLine('/r/docker/t', r, 65534, { partial: true, leftAt: '/r/docker/.x' }), /PARTLY REMOVED, what is left is at \/r\/docker\/\.x$/);
    assert.doesNotMatch(line, /\n/);
    // Refused although this run owns the directory (or is root): an attribute, and root would not help.
    const pinned = { ...r, code: 'EPERM', owner: { path: '/r/docker/t/workspace/build', uid: 65534 } };
    assert.match(
      refusalLine('/r/docker/t', pinned, 65534, { partial: true, leftAt: '/r/docker/.x' }),
      new RegExp(
        /out\.o: operation not permitted \(EPERM\) .*: it is immutable or append-only/.source +
          / \(lsattr shows it\): chattr -i \(or -a\) it as root, then run again; PARTLY REMOVED/.source,
      ),
    );
    assert.match(
      refusalLine('/r/docker/t', { ...pinned, owner: { path: '/b', uid: 1000 } }, 0, { partial: false, leftAt: '/r/docker/t' }),
      /immutable or append-only/,
    );
    // A sticky directory of someone else's: that owner, or root.
    assert.match(
      refusalLine('/r/docker/t', { ...pinned, owner: { path: '/b/f', uid: 1000 } }, 65534, { partial: false, leftAt: '/r/docker/t' }),
      /permission denied .*run it as root, or as the owner/,
    );
    // A file name an agent wrote with a newline in it: still one line, no forged second one.
    const forged = { ...r, path: '/r/docker/t/workspace/x\nremoved sandbox dir /home/u/precious (1 B, unchanged 1 day)' };
    const one = refusalLine('/r/docker/t\r', forged, 65534, { partial: true, leftAt: '/r/docker/.x\n' });
    assert.doesNotMatch(one, /[\n\r]/);
    assert.ok(one.startsWith('cannot remove /r/docker/t\\u000d: /r/docker/t/workspace/x\\u000aremoved sandbox dir'), one);
    assert.ok(one.endsWith('what is left is at /r/docker/.x\\u000a'), one);
  });

  it("hermes' task directory names (the helper the tests build them with)", () => {
    assert.equal(sanitizeTaskIdForPath('abc-1.2_x'), 'abc-1.2_x');
    assert.equal(sanitizeTaskIdForPath(''), 'default');
    assert.match(sanitizeTaskIdForPath('agent:main:telegram:42'), /^agent_main_telegram_42-[0-9a-f]{12}$/);
    assert.match(sanitizeTaskIdForPath('..'), /^task-[0-9a-f]{12}$/);
  });
});

describe('task directories on disk (real files)', () => {
  const dirs: Array<() => void> = [];
  afterEach(() => {
    for (const c of dirs.splice(0)) c();
  });
  function root(): SandboxRoot {
    const t = tempDir('hj-sbx-');
    dirs.push(t.cleanup);
    return { root: path.join(t.dir, 'sandboxes'), from: 'home' };
  }
  const place = async (r: SandboxRoot) => ({ parentDev: (await listTaskDirs(r)).parentDev!, mountPoints: await readMountPoints() });

  it('size on disk as du -sxB1 counts it: allocated blocks, hard links once, symlinks as links, sparse files as allocated', async () => {
    const r = root();
    const t = makeTaskDir(r.root, 'agent:cron:nightly', 64);
    linkSync(path.join(t.home, '.cache', 'pip', 'wheel.whl'), path.join(t.workspace, 'wheel-link.whl'));
    symlinkSync('/etc/passwd', path.join(t.workspace, 'passwd-link'));
    symlinkSync('/usr', path.join(t.workspace, 'usr-link'));
    writeFileSync(path.join(t.workspace, 'sparse'), '');
    truncateSync(path.join(t.workspace, 'sparse'), 50 * 1024 * 1024);
    const s = await scanTaskDir(t.dir, await place(r));
    assert.equal(s.kind, 'directory');
    assert.equal(s.bytes, du([t.dir]));
    assert.ok(s.bytes < 1024 * 1024, `a 50 MiB sparse file and /usr through a link are not counted (${s.bytes})`);
    assert.deepEqual(s.unreadable, []);
    assert.deepEqual(s.mounts, []);
  });

  it('the last change is the newest modification time of any entry, directories included', async () => {
    const r = root();
    const t = makeTaskDir(r.root, 'task-1');
    const old = new Date(Date.now() - 40 * DAY);
    ageTree(t.dir, old);
    const p = await place(r);
    // utimes takes seconds as a double: the nanoseconds stored may be a hair off the millisecond asked for.
    const near = (ms: number, want: Date) => assert.ok(Math.abs(ms - want.getTime()) < 1, `${ms} vs ${want.getTime()}`);
    near((await scanTaskDir(t.dir, p)).lastChangeMs, old);
    // A directory deep inside changed (an entry added and removed, or renamed): only its mtime moves.
    const recent = new Date(Date.now() - 60_000);
    utimesSync(path.join(t.workspace, 'repo', 'src'), recent, recent);
    near((await scanTaskDir(t.dir, p)).lastChangeMs, recent);
  });

  it('removal removes a symlink as a link: the file and the directory it points at outside survive', async () => {
    const r = root();
    const t = makeTaskDir(r.root, 'task-2');
    const outside = path.join(path.dirname(r.root), 'outside');
    mkdirSync(path.join(outside, 'dir'), { recursive: true });
    writeFileSync(path.join(outside, 'file'), 'keep me');
    writeFileSync(path.join(outside, 'dir', 'inner'), 'keep me too');
    symlinkSync(path.join(outside, 'file'), path.join(t.workspace, 'link-to-file'));
    symlinkSync(path.join(outside, 'dir'), path.join(t.home, 'link-to-dir'));
    const outcome = await removeTaskDir(t.dir, (await place(r)).parentDev);
    assert.deepEqual(outcome, { status: 'removed' });
    assert.equal(existsSync(t.dir), false);
    assert.deepEqual(readdirSync(path.join(r.root, 'docker')), [], 'no claimed leftover');
    assert.equal(readFileSync(path.join(outside, 'file'), 'utf8'), 'keep me');
    assert.equal(readFileSync(path.join(outside, 'dir', 'inner'), 'utf8'), 'keep me too');
  });

  it('a task directory that is gone (another run removed it) is "gone", never removed twice', async () => {
    const r = root();
    const t = makeTaskDir(r.root, 'task-3');
    const parentDev = (await place(r)).parentDev;
    const [a, b] = await Promise.all([removeTaskDir(t.dir, parentDev), removeTaskDir(t.dir, parentDev)]);
    assert.deepEqual([a.status, b.status].sort(), ['gone', 'removed']);
  });

  it('<root>/docker swapped for a symlink after it was listed: the removal refuses, nothing is removed where the link points', async () => {
    const r = root();
    const t = makeTaskDir(r.root, 'task-4');
    const listing = await listTaskDirs(r);
    const docker = path.join(r.root, 'docker');
    const elsewhere = path.join(path.dirname(r.root), 'elsewhere');
    mkdirSync(path.join(elsewhere, 'task-4'), { recursive: true });
    writeFileSync(path.join(elsewhere, 'task-4', 'precious'), 'keep me');
    renameSync(docker, `${docker}.real`);
    symlinkSync(elsewhere, docker);
    const outcome = await removeTaskDir(t.dir, listing.parentDev!, { parentIno: listing.parentIno! });
    assert.equal(outcome.status, 'failed');
    assert.ok(outcome.status === 'failed' && outcome.refusal.code.startsWith('ECHANGED') && !outcome.partial, JSON.stringify(outcome));
    assert.equal(readFileSync(path.join(elsewhere, 'task-4', 'precious'), 'utf8'), 'keep me');
    assert.ok(existsSync(path.join(`${docker}.real`, 'task-4', 'home', '.bash_history')), 'the real task directory is untouched too');
  });

  it(`a tree deeper than ${MAX_REMOVAL_DEPTH} levels is refused, named, and left where it was`, async () => {
    const r = root();
    const t = makeTaskDir(r.root, 'task-5');
    let deep = t.workspace;
    for (let i = 0; i <= MAX_REMOVAL_DEPTH; i++) deep = path.join(deep, 'd');
    mkdirSync(deep, { recursive: true });
    const outcome = await removeTaskDir(t.dir, (await place(r)).parentDev);
    assert.ok(outcome.status === 'failed' && /levels deep: not entered/.test(outcome.refusal.code), JSON.stringify(outcome).slice(0, 300));
    assert.ok(existsSync(deep) || existsSync(outcome.leftAt), 'what is left is still there');
  });

  it(
    'status: unused is unknown (null) without an answering engine, 0 with no task directories; ' + 'a --timeout cut is reported, never a partial size',
    async () => {
      const r = root();
      const empty = await surveySandboxDirs(r, [], ['unix:///down.sock']);
      assert.deepEqual(empty.summary, { root: r.root, count: 0, bytes: 0, unused: 0, unusedBytes: 0, oldestUnusedChange: null });
      const t = makeTaskDir(r.root, 'big');
      for (let i = 0; i < 600; i++) writeFileSync(path.join(t.workspace, `f${i}`), '');
      const down = await surveySandboxDirs(r, [], ['unix:///down.sock']);
      assert.equal(down.summary.count, 1);
      assert.equal(down.summary.bytes, du([t.dir]));
      assert.equal(down.summary.unused, null);
      assert.match(down.detail.usageUnknown!, /down\.sock did not answer/);
      const cut = await surveySandboxDirs(r, [], [], AbortSignal.abort());
      assert.equal(cut.summary.count, null);
      assert.match(cut.detail.error!, /cut short/);
      await assert.rejects(scanTaskDir(t.dir, await place(r), { signal: AbortSignal.abort() }));
    },
  );

  it('a sandbox root or docker directory that is a file is bad input, one line naming it; a missing one has no task directories', async () => {
    const r = root();
    assert.deepEqual((await listTaskDirs(r)).entries, []);
    mkdirSync(path.dirname(r.root), { recursive: true });
    writeFileSync(r.root, 'not a directory');
    await assert.rejects(
      listTaskDirs(r),
      (err: Error) => err instanceof UsageError && /sandbox root .*sandboxes.* is not a directory: move/.test(err.message) && !err.message.includes('\n'),
    );
    await assert.rejects(
      listTaskDirs({ root: r.root, from: 'TERMINAL_SANDBOX_DIR' }),
      /from TERMINAL_SANDBOX_DIR\) is not a directory: point TERMINAL_SANDBOX_DIR at a directory, or unset it$/,
    );
    const r2 = root();
    mkdirSync(r2.root, { recursive: true });
    writeFileSync(path.join(r2.root, 'docker'), '');
    await assert.rejects(listTaskDirs(r2), /docker is not a directory/);
  });
});

describe('the removal pass (engine simulator, injected clock)', () => {
  let sim: EngineSimulator;
  let engine: EngineClient;
  const dirs: Array<() => void> = [];
  before(async () => {
    sim = await EngineSimulator.start();
    engine = await createDockerodeEngine({ host: sim.host, socketPath: sim.socketPath! });
  });
  after(() => sim.close());
  afterEach(() => {
    for (const id of sim.ids()) sim.delete(id);
    for (const c of dirs.splice(0)) c();
  });
  function root(): SandboxRoot {
    const t = tempDir('hj-sbx-pass-');
    dirs.push(t.cleanup);
    return { root: path.join(t.dir, 'sandboxes'), from: 'home' };
  }
  const HOUR = 3_600_000;
  /** Two task directories last changed 2 h before `now`. */
  function twoOld(r: SandboxRoot, now: Date) {
    const a = makeTaskDir(r.root, 'task-a');
    const b = makeTaskDir(r.root, 'task-b');
    ageTree(a.dir, new Date(now.getTime() - 2 * HOUR));
    ageTree(b.dir, new Date(now.getTime() - 2 * HOUR));
    return { a, b };
  }
  const pass = (r: SandboxRoot, now: Date, extra: Partial<Parameters<typeof removeUnusedSandboxDirs>[0]> = {}) =>
    removeUnusedSandboxDirs({ roots: [r], engines: [{ engine, answered: true }], olderThanMs: HOUR, dryRun: false, now: () => now, ...extra });

  it('removes what no container uses and nothing changed in for the duration, judged by the injected clock', async () => {
    const r = root();
    const now = new Date();
    const { a, b } = twoOld(r, now);
    sim.add({ state: 'exited', labels: {}, binds: [{ source: b.workspace, destination: '/workspace' }] });
    const early = await pass(r, new Date(now.getTime() - 90 * 60_000));
    assert.deepEqual(early.removed, [], 'an hour before, 30 min had passed: nothing goes');
    assert.deepEqual(
      early.kept.map((k) => k.reason),
      ['changed-recently', 'changed-recently'],
    );
    const res = await pass(r, now);
    assert.deepEqual(
      res.removed.map((x) => x.path),
      [a.dir],
    );
    assert.ok(Math.abs(Date.parse(res.removed[0]!.lastChange) - (now.getTime() - 2 * HOUR)) <= 1, res.removed[0]!.lastChange);
    assert.ok(res.removed[0]!.bytes >= 40 * 1024);
    assert.deepEqual(
      res.kept.map((k) => [k.path, k.reason]),
      [[b.dir, 'in-use']],
    );
    assert.deepEqual(res.failed, []);
    assert.equal(existsSync(a.dir), false);
    assert.equal(existsSync(b.dir), true);
  });

  it('asks the engines again right before each removal: a container that appears meanwhile keeps its directory', async () => {
    const r = root();
    const now = new Date();
    const { a, b } = twoOld(r, now);
    // After the re-check for task-a, a container mounting task-b appears.
    sim.afterNextList(() => sim.add({ state: 'created', labels: {}, binds: [{ source: b.home, destination: '/root' }] }));
    const res = await pass(r, now);
    assert.deepEqual(
      res.removed.map((x) => x.path),
      [a.dir],
    );
    assert.deepEqual(
      res.kept.map((k) => [k.path, k.reason]),
      [[b.dir, 'in-use']],
    );
    assert.equal(sim.stats.byKind.list >= 2, true, 'one list per directory removed');
  });

  it("old directories in use are kept on the pass's first answer (one list, not one per directory); an unused one is still asked about again", async () => {
    const r = root();
    const now = new Date();
    const used = Array.from({ length: 12 }, (_, i) => makeTaskDir(r.root, `task-u${String(i).padStart(2, '0')}`));
    for (const u of used) {
      ageTree(u.dir, new Date(now.getTime() - 2 * HOUR));
      sim.add({ state: 'running', labels: {}, binds: [{ source: u.workspace, destination: '/workspace' }] });
    }
    const lists = sim.stats.byKind.list;
    const res = await pass(r, now);
    assert.deepEqual(res.removed, []);
    assert.deepEqual(new Set(res.kept.map((k) => k.reason)), new Set(['in-use']));
    assert.equal(res.kept.length, 12);
    assert.equal(sim.stats.byKind.list - lists, 1, 'one question to the engine for twelve directories in use');
    // One more, unused, named to come after them: asked about again right before it goes.
    const late = makeTaskDir(r.root, 'task-zz');
    ageTree(late.dir, new Date(now.getTime() - 2 * HOUR));
    const mid = sim.stats.byKind.list;
    const again = await pass(r, now);
    assert.deepEqual(
      again.removed.map((x) => x.path),
      [late.dir],
    );
    assert.equal(sim.stats.byKind.list - mid, 2, 'the first answer, then the re-check right before the removal');
  });

  it('an engine of the run that did not answer, or one that fails its re-check: nothing is removed', async () => {
    const r = root();
    const now = new Date();
    const { a, b } = twoOld(r, now);
    const dead = await createDockerodeEngine({ host: 'unix:///nonexistent/hj.sock', socketPath: '/nonexistent/hj.sock' });
    const notAnswered = await pass(r, now, {
      engines: [
        { engine, answered: true },
        { engine: dead, answered: false, error: 'ENOENT' },
      ],
    });
    assert.deepEqual(notAnswered.removed, []);
    assert.deepEqual(
      notAnswered.kept.map((k) => k.reason),
      ['engine-unanswered', 'engine-unanswered'],
    );
    assert.match(notAnswered.kept[0]!.detail, /nonexistent/);
    const failsRecheck = await pass(r, now, {
      engines: [
        { engine, answered: true },
        { engine: dead, answered: true },
      ],
    });
    assert.deepEqual(failsRecheck.removed, []);
    assert.deepEqual(
      failsRecheck.kept.map((k) => k.reason),
      ['engine-unanswered', 'engine-unanswered'],
    );
    const none = await pass(r, now, { engines: [] });
    assert.deepEqual(none.removed, []);
    assert.ok(existsSync(a.dir) && existsSync(b.dir));
  });

  it('a dry run lists what would go, with sizes, and removes nothing; symlinks and files under docker/ are kept', async () => {
    const r = root();
    const now = new Date();
    const { a, b } = twoOld(r, now);
    symlinkSync(a.dir, path.join(r.root, 'docker', 'link-to-a'));
    writeFileSync(path.join(r.root, 'docker', 'stray-file'), '');
    const res = await pass(r, now, { dryRun: true });
    assert.deepEqual(
      res.removed.map((x) => [x.path, x.bytes]),
      [
        [a.dir, du([a.dir])],
        [b.dir, du([b.dir])],
      ],
    );
    assert.deepEqual(
      res.kept.map((k) => [path.basename(k.path), k.reason]),
      [
        ['link-to-a', 'symlink'],
        ['stray-file', 'not-a-directory'],
      ],
    );
    assert.ok(existsSync(a.dir) && existsSync(b.dir));
  });

  it('the same root given twice (two homes sharing TERMINAL_SANDBOX_DIR) is handled once; a root that is a file throws before anything goes', async () => {
    const r = root();
    const now = new Date();
    twoOld(r, now);
    const res = await pass(r, now, { roots: [r, { root: `${r.root}/`, from: 'TERMINAL_SANDBOX_DIR' }] });
    assert.equal(res.removed.length, 2);
    assert.equal(res.kept.length + res.failed.length, 0);
    const bad = root();
    mkdirSync(path.dirname(bad.root), { recursive: true });
    writeFileSync(bad.root, '');
    const good = root();
    const { a } = twoOld(good, now);
    await assert.rejects(pass(good, now, { roots: [good, bad] }), UsageError);
    assert.ok(existsSync(a.dir), 'nothing removed under the good root either');
  });
});
