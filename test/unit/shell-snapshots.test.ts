/**
 * The shell-snapshot rules (passes/shell-snapshots/rule.ts) and the pass (passes/shell-snapshots/run.ts) on real files in a
 * temporary directory, with a given process table: names matched exactly, secret-looking names counted (values never
 * kept), abandoned only as a proof (no hermes-like process of the owner started before the last change), kept when
 * the owner's processes cannot be seen, and the temp directory found by hermes' order.
 */
import assert from 'node:assert/strict';
import {
  chownSync,
  closeSync,
  openSync,
  writeSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  existsSync,
  readFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { ProcessTable } from '../../src/adapters/hermes-processes.js';
import type { HermesProcess } from '../../src/hermes/process-facts.js';
import { isSecretName, secretNamesIn, snapshotName } from '../../src/passes/shell-snapshots/rule.js';
import { judgeSession } from '../../src/passes/temp-dirs/rule.js';
import { shellSnapshotPass, summarize } from '../../src/passes/shell-snapshots/run.js';

// The numbers these tests pin, stated here (not imported from the code under test): a change to one is a change this test must see.
/** A process started up to 2 s after a snapshot's last change still counts as its owner. */
const START_SLACK_MS = 2000;

const ID = '0123456789ab';
const me = process.geteuid!();

describe('shell snapshots: names', () => {
  it('exactly hermes-snap-<12 hex>.sh, its .tmp.<10> and hermes-cwd-<12 hex>.txt', () => {
    assert.deepEqual(snapshotName(`hermes-snap-${ID}.sh`), { id: ID, kind: 'snapshot' });
    assert.deepEqual(snapshotName(`hermes-snap-${ID}.sh.tmp.AbC123xyZ9`), { id: ID, kind: 'snapshot-tmp' });
    assert.deepEqual(snapshotName(`hermes-cwd-${ID}.txt`), { id: ID, kind: 'cwd' });
    for (const n of [
      'hermes-snap-0123456789AB.sh',
      'hermes-snap-0123456789abc.sh',
      'hermes-snap-0123456789a.sh',
      `hermes-snap-${ID}.sh.bak`,
      `hermes-snap-${ID}.shx`,
      `hermes-snap-${ID}.sh.tmp.short`,
      `hermes-snap-${ID}.sh.tmp.AbC123xyZ9/x`,
      `xhermes-snap-${ID}.sh`,
      `hermes-cwd-${ID}.txt~`,
      'hermes-snap-.sh',
    ])
      assert.equal(snapshotName(n), null, n);
  });

  it('secret-looking names; a dump yields names only', () => {
    for (const n of ['OPENAI_API_KEY', 'GH_TOKEN', 'MY_SECRET_X', 'DB_PASSWORD', 'GOOGLE_CREDENTIALS', 'aws_secret']) assert.equal(isSecretName(n), true, n);
    for (const n of ['PATH', 'KEYBOARD', 'TOKENIZERS_PARALLELISM', 'HOME']) assert.equal(isSecretName(n), false, n);
    const dump =
      'declare -x HOME="/root"\ndeclare -x OPENAI_API_KEY="sk-VALUE"\ndeclare -rx GH_TOKEN="ghp_VALUE"\n' +
      'export DB_PASSWORD=\'pw\'\ndeclare -x EMPTY_TOKEN\ndeclare -x MULTI="a\nb"\n';
    const names = secretNamesIn(dump);
    assert.deepEqual(names, ['DB_PASSWORD', 'EMPTY_TOKEN', 'GH_TOKEN', 'OPENAI_API_KEY']);
    assert.doesNotMatch(JSON.stringify(names), /VALUE|pw/);
  });
});

const proc = (p: Partial<HermesProcess> & { pid: number; startedAtMs: number }): HermesProcess => ({
  uid: 1000,
  command: 'hermes gateway',
  hermes: true,
  python: false,
  profile: 'default',
  serves: 'profile',
  owns: ['default'],
  ownsWhy: 'test',
  why: 'entry point hermes',
  ...p,
});

describe('shell snapshots: abandoned as a proof', () => {
  const now = Date.parse('2026-11-27T12:00:00Z');
  const change = now - 3_600_000;
  const s = { uid: 1000, lastChangeMs: change };
  const view = (processes: HermesProcess[], hidden: { why: string; uids: Set<number> | 'others' | 'all' } | null = null) => ({ processes, hidden, selfUid: 0 });
  it('abandoned: past the threshold and no hermes-like process of the owner started before the last change', () => {
    assert.equal(judgeSession(s, view([]), now, 600_000).abandoned, true);
    // Started after the change (a new session), another user's, or not hermes-like: no proof of use.
    assert.equal(judgeSession(s, view([proc({ pid: 1, startedAtMs: change + START_SLACK_MS + 1 })]), now, 600_000).abandoned, true);
    assert.equal(judgeSession(s, view([proc({ pid: 1, uid: 1001, startedAtMs: 0 })]), now, 600_000).abandoned, true);
    assert.equal(judgeSession(s, view([proc({ pid: 1, hermes: false, startedAtMs: 0 })]), now, 600_000).abandoned, true);
  });
  it('kept: recent, a hermes-like (or Python) process of the owner started before, processes hidden, another user (not root)', () => {
    assert.equal(judgeSession({ uid: 1000, lastChangeMs: now - 599_000 }, view([]), now, 600_000).reason, 'changed-recently');
    const alive = judgeSession(s, view([proc({ pid: 7, startedAtMs: change - 1000 })]), now, 600_000);
    assert.equal(alive.reason, 'owner-alive');
    assert.match(alive.detail, /pid 7 of uid 1000/);
    assert.equal(judgeSession(s, view([proc({ pid: 8, hermes: false, python: true, startedAtMs: change })]), now, 600_000).reason, 'owner-alive');
    // Within the slack (btime is whole seconds): kept.
    assert.equal(judgeSession(s, view([proc({ pid: 9, startedAtMs: change + START_SLACK_MS })]), now, 600_000).reason, 'owner-alive');
    assert.equal(judgeSession(s, view([], { why: 'hidepid=2', uids: 'others' }), now, 600_000).reason, 'processes-hidden');
    assert.equal(judgeSession(s, view([], { why: 'unreadable', uids: new Set([1000]) }), now, 600_000).reason, 'processes-hidden');
    assert.equal(judgeSession(s, view([], { why: 'unreadable', uids: new Set([5]) }), now, 600_000).abandoned, true);
    assert.equal(judgeSession(s, { processes: [], hidden: null, selfUid: 1001 }, now, 600_000).reason, 'other-user');
  });
});

describe('shell snapshots: the pass on real files', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const scratch = () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'hj-snap-unit-'));
    dirs.push(d);
    return d;
  };
  const old = (file: string, ms: number) => utimesSync(file, new Date(ms), new Date(ms));
  const table =
    (processes: HermesProcess[], hidden: string | null = null): (() => ProcessTable) =>
    () => ({ processes, hidden, blindUids: new Set(), readable: true });

  it('removes an abandoned session with its siblings; keeps a live one, a symlink (target untouched) and near-miss names', async () => {
    const d = scratch();
    const outside = scratch();
    const now = Date.now();
    const target = path.join(outside, 'precious');
    writeFileSync(target, 'keep me');
    const files = {
      dead: `hermes-snap-${ID}.sh`,
      deadTmp: `hermes-snap-${ID}.sh.tmp.AbC123xyZ9`,
      deadCwd: `hermes-cwd-${ID}.txt`,
      live: 'hermes-snap-aaaaaaaaaaaa.sh',
      link: 'hermes-snap-bbbbbbbbbbbb.sh',
      near: 'hermes-snap-0123456789AB.sh',
      near2: `hermes-snap-${ID}.sh.bak`,
    };
    writeFileSync(path.join(d, files.dead), 'declare -x OPENAI_API_KEY="sk-unit-secret"\n');
    for (const f of [files.deadTmp, files.deadCwd, files.near, files.near2]) writeFileSync(path.join(d, f), 'x');
    writeFileSync(path.join(d, files.live), 'declare -x HOME="/"\n');
    symlinkSync(target, path.join(d, files.link));
    for (const f of [files.dead, files.deadTmp, files.deadCwd, files.near, files.near2]) old(path.join(d, f), now - 7_200_000);
    old(path.join(d, files.live), now - 1_800_000);
    // A hermes-like process of this user started an hour ago: after the dead session's last change, before the live one's.
    const r = await shellSnapshotPass({
      tempDirs: [{ dir: d, from: 'TMPDIR' }],
      thresholdMs: 600_000,
      dryRun: false,
      now: () => new Date(now),
      processes: table([proc({ pid: 4242, uid: me, startedAtMs: now - 3_600_000 })]),
    });
    assert.deepEqual(r.failed, []);
    assert.equal(r.removed.length, 1);
    assert.equal(r.removed[0]!.path, path.join(d, files.dead));
    assert.deepEqual(r.removed[0]!.secretNames, ['OPENAI_API_KEY']);
    assert.deepEqual(new Set(r.removed[0]!.files), new Set([files.dead, files.deadTmp, files.deadCwd].map((f) => path.join(d, f))));
    for (const f of [files.dead, files.deadTmp, files.deadCwd]) assert.equal(existsSync(path.join(d, f)), false, f);
    for (const f of [files.live, files.near, files.near2]) assert.equal(existsSync(path.join(d, f)), true, f);
    assert.equal(readFileSync(target, 'utf8'), 'keep me');
    const kept = Object.fromEntries(r.kept.map((k) => [path.basename(k.path), k.reason]));
    assert.deepEqual(kept, { [files.link]: 'not-regular', [files.live]: 'owner-alive' });
    assert.doesNotMatch(JSON.stringify(r), /sk-unit-secret/);
  });

  it('a dry run removes nothing and the summary counts; hidden processes keep everything of the owner', async () => {
    const d = scratch();
    const now = Date.now();
    const f = path.join(d, `hermes-snap-${ID}.sh`);
    writeFileSync(f, 'declare -x A_TOKEN="t"\ndeclare -x B_KEY="k"\n');
    old(f, now - 7_200_000);
    const dry = await shellSnapshotPass({
      tempDirs: [
        { dir: d, from: 'TMPDIR' },
        { dir: d, from: 'again' },
      ],
      thresholdMs: 600_000,
      dryRun: true,
      now: () => new Date(now),
      processes: table([]),
    });
    assert.equal(dry.removed.length, 1);
    assert.equal(existsSync(f), true);
    assert.deepEqual(summarize(dry), [
      {
        dir: d,
        from: 'TMPDIR',
        snapshots: 1,
        abandoned: 1,
        oldestChange: new Date(statSync(f).mtimeMs).toISOString(),
        withSecretNames: 1,
        secretNames: 2,
        unreadable: 0,
        otherUsers: 0,
        problem: null,
      },
    ]);
    const hidden = await shellSnapshotPass({
      tempDirs: [{ dir: d, from: 'TMPDIR' }],
      thresholdMs: 600_000,
      dryRun: false,
      now: () => new Date(now),
      processes: () => ({ processes: [], hidden: 'procfs cannot be read', blindUids: null, readable: false }),
    });
    assert.equal(hidden.kept[0]!.reason, 'processes-hidden');
    assert.equal(existsSync(f), true);
  });

  it('the proof re-checked right before acting: a process that appears between the look and the removal keeps it', async () => {
    const d = scratch();
    const now = Date.now();
    const f = path.join(d, `hermes-snap-${ID}.sh`);
    writeFileSync(f, '');
    old(f, now - 7_200_000);
    let calls = 0;
    const r = await shellSnapshotPass({
      tempDirs: [{ dir: d, from: 'TMPDIR' }],
      thresholdMs: 600_000,
      dryRun: false,
      now: () => new Date(now),
      processes: () => ({ processes: calls++ === 0 ? [] : [proc({ pid: 1, uid: me, startedAtMs: 0 })], hidden: null, blindUids: new Set(), readable: true }),
    });
    assert.equal(r.kept[0]!.reason, 'owner-alive');
    assert.equal(existsSync(f), true);
  });

  it('a missing temp directory is no problem; a file there instead is one', async () => {
    const d = scratch();
    const r = await shellSnapshotPass({
      tempDirs: [{ dir: path.join(d, 'none') }, { dir: path.join(d, 'file') }].map((t) => ({ ...t, from: 'TMPDIR' })),
      thresholdMs: 1,
      dryRun: true,
      now: () => new Date(),
      processes: table([]),
    });
    writeFileSync(path.join(d, 'file'), '');
    const r2 = await shellSnapshotPass({
      tempDirs: [{ dir: path.join(d, 'file'), from: 'TMPDIR' }],
      thresholdMs: 1,
      dryRun: true,
      now: () => new Date(),
      processes: table([]),
    });
    assert.equal(r.tempDirs[0]!.problem, null);
    assert.match(r2.tempDirs[0]!.problem ?? '', /ENOTDIR/);
  });

  it('bounded by the input: the process table read once per pass, and once more per owner whose files are removed', async () => {
    const d = scratch();
    const now = Date.now();
    // 40 abandoned sessions of this user (and, as root, 40 of another): 80 files the rule removes.
    const owners = me === 0 ? [me, 4_000_123] : [me];
    for (const uid of owners) {
      for (let i = 0; i < 40; i++) {
        const f = path.join(d, `hermes-snap-${(uid * 100 + i).toString(16).padStart(12, '0').slice(-12)}.sh`);
        writeFileSync(f, 'declare -x A_TOKEN="t"\n');
        if (uid !== me) chownSync(f, uid, uid);
        old(f, now - 7_200_000);
      }
    }
    // A file changed recently (another owner's, whose processes are never asked about).
    writeFileSync(path.join(d, 'hermes-snap-ffffffffffff.sh'), '');
    const calls: number[][] = [];
    const r = await shellSnapshotPass({
      tempDirs: [{ dir: d, from: 'TMPDIR' }],
      thresholdMs: 600_000,
      dryRun: false,
      now: () => new Date(now),
      processes: (only) => {
        calls.push([...only.uids].sort((a, b) => a - b));
        return { processes: [], hidden: null, blindUids: new Set(), readable: true };
      },
    });
    assert.equal(r.removed.length, 40 * owners.length);
    assert.deepEqual(calls, [owners, ...owners.map((o) => [o])], 'once for the pass (the owners of old files), then once per owner right before its removals');
  });

  it('a file kept is not read again while unchanged (device, inode, size, mtime); changed, it is', async () => {
    const d = scratch();
    const f = path.join(d, `hermes-snap-${ID}.sh`);
    writeFileSync(f, 'declare -x AAAA_KEY="1"\n');
    const mtime = new Date(Math.floor(Date.now() / 1000) * 1000);
    utimesSync(f, mtime, mtime);
    const pass = () =>
      shellSnapshotPass({ tempDirs: [{ dir: d, from: 'TMPDIR' }], thresholdMs: 600_000, dryRun: false, now: () => new Date(), processes: table([]) });
    const first = await pass();
    assert.deepEqual(
      first.kept.map((k) => [k.reason, k.secretNames]),
      [['changed-recently', ['AAAA_KEY']]],
    );
    // Other words of the same size, its mtime put back: the same file as far as the pass can tell, not read again.
    writeFileSync(f, 'declare -x BBBB_KEY="1"\n');
    utimesSync(f, mtime, mtime);
    assert.deepEqual(
      (await pass()).kept.map((k) => k.secretNames),
      [['AAAA_KEY']],
    );
    utimesSync(f, mtime, new Date(mtime.getTime() + 1000));
    assert.deepEqual(
      (await pass()).kept.map((k) => k.secretNames),
      [['BBBB_KEY']],
    );
  });

  it('a sparse file is read no further than the blocks it has on disk', async () => {
    const d = scratch();
    const f = path.join(d, `hermes-snap-${ID}.sh`);
    writeFileSync(f, '');
    // 1 GiB of holes, a name at its end: nothing on disk to read, nothing found (and no gigabyte read).
    const fd = openSync(f, 'r+');
    writeSync(fd, 'declare -x CCCC_KEY="1"\n', 1024 * 1024 * 1024);
    closeSync(fd);
    const started = Date.now();
    const r = await shellSnapshotPass({
      tempDirs: [{ dir: d, from: 'TMPDIR' }],
      thresholdMs: 600_000,
      dryRun: true,
      now: () => new Date(),
      processes: table([]),
    });
    assert.deepEqual(
      r.kept.map((k) => k.secretNames),
      [[]],
    );
    assert.ok(Date.now() - started < 5000);
  });

  it("cut short by the run's abort (--timeout): nothing removed, the sessions not judged kept as cut-short, cutShort said", async () => {
    const d = scratch();
    const now = Date.now();
    const f = path.join(d, `hermes-snap-${ID}.sh`);
    writeFileSync(f, '');
    old(f, now - 7_200_000);
    const r = await shellSnapshotPass({
      tempDirs: [{ dir: d, from: 'TMPDIR' }],
      thresholdMs: 600_000,
      dryRun: false,
      now: () => new Date(now),
      processes: table([]),
      signal: AbortSignal.abort(),
    });
    assert.equal(r.cutShort, true);
    assert.deepEqual(r.removed, []);
    assert.equal(existsSync(f), true);
  });
});
