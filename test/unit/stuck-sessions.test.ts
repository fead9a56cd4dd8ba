import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { MemoryStateStore, type StateStore } from '../../src/adapters/state-file.js';
import { createStuckSessions, restartFailureCountsFile } from '../../src/breakers/stuck-sessions.js';
import { main } from '../../src/cli/main.js';
import type { Context } from '../../src/context.js';
import {
  type StuckSessionsState,
  clearKeys,
  countsOf,
  parseStuckSessions,
  recordShutdown,
  serializeStuckSessions,
  suspend,
} from '../../src/core/stuck-sessions.js';
import { assertUsageError, tempDir } from '../helpers/cli.js';

const parse = (v: unknown) => parseStuckSessions(v).state;
const doc = (s: StuckSessionsState | null) => (s === null ? null : serializeStuckSessions(s));

describe('stuck-sessions core: reading the state', () => {
  it('reads the flat shape and the newer {"count": n, ...} shape', () => {
    const r = parseStuckSessions({ a: 2, b: { count: 5, since: 'x', nested: { k: 1 } }, c: 0 });
    assert.equal(r.problem, undefined);
    assert.equal(r.skipped, 0);
    assert.deepEqual(countsOf(r.state), { a: 2, b: 5, c: 0 });
    assert.deepEqual(serializeStuckSessions(r.state), { a: 2, b: { count: 5, since: 'x', nested: { k: 1 } }, c: 0 });
  });

  it('skips entries that are neither a count nor an object', () => {
    const r = parseStuckSessions({ a: 1, b: 'x', c: null, d: [1], e: true, f: -1 });
    assert.deepEqual(countsOf(r.state), { a: 1 });
    assert.equal(r.skipped, 5);
  });

  it('counts an object entry without a usable count as 0, keeping its fields', () => {
    const r = parseStuckSessions({ a: { note: 'n' }, b: { count: 'x', note: 'm' } });
    assert.deepEqual(countsOf(r.state), { a: 0, b: 0 });
    assert.deepEqual(serializeStuckSessions(r.state), { a: { count: 0, note: 'n' }, b: { count: 0, note: 'm' } });
  });

  it('treats a document that is not an object as empty and says why', () => {
    for (const bad of [null, 3, 'x', [1, 2], true]) {
      const r = parseStuckSessions(bad);
      assert.equal(r.state.entries.size, 0);
      assert.match(r.problem ?? '', /treated as empty/, JSON.stringify(bad));
    }
    assert.equal(parseStuckSessions(undefined).problem, undefined);
  });

  it('keeps a session key named __proto__ as an ordinary key', () => {
    const state = parse(JSON.parse('{"__proto__": 2, "constructor": {"count": 1, "x": 1}}'));
    const next = recordShutdown(state, ['__proto__', 'constructor']).next!;
    const out = serializeStuckSessions(next)!;
    assert.equal(JSON.stringify(out), '{"__proto__":3,"constructor":{"count":2,"x":1}}');
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
  });
});

describe('stuck-sessions core: transitions', () => {
  it('record-shutdown adds 1 to each given key and drops every other key', () => {
    const state = parse({ a: 1, b: 2, gone: 7 });
    assert.deepEqual(doc(recordShutdown(state, ['a', 'b', 'new']).next), { a: 2, b: 3, new: 1 });
  });

  it('record-shutdown counts a key given twice once', () => {
    assert.deepEqual(doc(recordShutdown(parse({ a: 1 }), ['a', 'a']).next), { a: 2 });
  });

  it('record-shutdown keeps the other fields of an object entry', () => {
    const state = parse({ a: { count: 2, reason: 'restart_timeout', at: 123 }, b: 1 });
    assert.deepEqual(doc(recordShutdown(state, ['a']).next), { a: { count: 3, reason: 'restart_timeout', at: 123 } });
  });

  it('record-shutdown with no keys changes nothing', () => {
    assert.equal(recordShutdown(parse({ a: 1 }), []).next, null);
  });

  it('suspend returns the keys at or over the threshold and all counts', () => {
    const state = parse({ a: 3, b: 2, c: { count: 4, x: 1 }, d: 10 });
    assert.deepEqual(suspend(state, 3), { suspended: ['a', 'c', 'd'], counts: { a: 3, b: 2, c: 4, d: 10 } });
    assert.deepEqual(suspend(state, 5).suspended, ['d']);
    assert.deepEqual(suspend(state, 1).suspended, ['a', 'b', 'c', 'd']);
  });

  it('clear drops the keys, and an empty state means: delete the file', () => {
    const state = parse({ a: 3, b: 1 });
    const one = clearKeys(state, ['a', 'zzz']);
    assert.deepEqual(one.cleared, ['a']);
    assert.deepEqual(doc(one.next), { b: 1 });
    const two = clearKeys(one.next, ['b']);
    assert.equal(serializeStuckSessions(two.next), undefined);
    assert.deepEqual(countsOf(state), { a: 3, b: 1 }, 'the input state is not modified');
  });
});

class BrokenStore implements StateStore {
  readonly location = '/broken/.restart_failure_counts';
  async read(): Promise<never> {
    throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
  }
  async update(): Promise<never> {
    throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
  }
  async remove(): Promise<never> {
    throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
  }
}

describe('stuck-sessions breaker (in process)', () => {
  it('runs the shutdown / start-up / success cycle', async () => {
    const store = new MemoryStateStore();
    const stuck = createStuckSessions({ store });
    for (let i = 0; i < 3; i++) await stuck.recordShutdown(['s1', 's2']);
    await stuck.recordShutdown(['s1']);
    assert.deepEqual(store.snapshot(), { s1: 4 });
    await stuck.recordShutdown(['s1', 's3']);
    assert.deepEqual((await stuck.status()).counts, { s1: 5, s3: 1 });
    assert.deepEqual((await stuck.status()).atThreshold, ['s1']);
    const s = await stuck.suspend();
    assert.deepEqual(s.suspended, ['s1']);
    assert.deepEqual(s.counts, { s1: 5, s3: 1 });
    assert.equal(store.snapshot(), undefined, 'suspend deletes the counts');
    await stuck.recordShutdown(['s3']);
    const c = await stuck.clear(['s3']);
    assert.deepEqual(c.cleared, ['s3']);
    assert.equal(c.deleted, true);
    assert.equal(store.snapshot(), undefined);
  });

  it('uses the threshold option', async () => {
    const store = new MemoryStateStore({ a: 1, b: 2 });
    assert.deepEqual((await createStuckSessions({ store, threshold: 2 }).suspend()).suspended, ['b']);
    assert.throws(() => createStuckSessions({ store, threshold: 0 }), RangeError);
  });

  it('fails open: errors are reported, never thrown', async () => {
    const stuck = createStuckSessions({ store: new BrokenStore() });
    for (const r of [await stuck.recordShutdown(['a']), await stuck.suspend(), await stuck.clear(['a']), await stuck.status()]) {
      assert.match(r.error ?? '', /EIO.*fails open/);
    }
    assert.deepEqual((await stuck.suspend()).suspended, []);
  });
});

// ---- The command, in process ---------------------------------------------------------------------------------

async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const ctx: Context = {
    argv: args,
    env,
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    stdin: Readable.from([]),
    cwd: '/',
    homedir: '/nonexistent-home',
    now: () => new Date(1_700_000_000_000),
  };
  const code = await main(args, ctx);
  return { code, stdout, stderr };
}

describe('stuck-sessions command (in process)', () => {
  const tmp = tempDir('hj-ss-');
  after(tmp.cleanup);
  let n = 0;
  const freshHome = () => path.join(tmp.dir, `home-${n++}`);
  const read = (home: string) => JSON.parse(readFileSync(restartFailureCountsFile(home), 'utf8')) as unknown;

  it('writes the flat {"key": n} shape, 0600 in a 0700 directory', async () => {
    const home = freshHome();
    const r = await cli(['--home', home, 'stuck-sessions', 'record-shutdown', 'agent:main:telegram:dm:1', 'k2']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(readFileSync(restartFailureCountsFile(home), 'utf8').trim(), '{"agent:main:telegram:dm:1":1,"k2":1}');
    assert.equal(statSync(restartFailureCountsFile(home)).mode & 0o777, 0o600);
    assert.equal(statSync(home).mode & 0o777, 0o700);
  });

  it('suspend prints the keys at the threshold one per line, deletes the file and exits 0', async () => {
    const home = freshHome();
    for (let i = 0; i < 3; i++) await cli(['--home', home, 'stuck-sessions', 'record-shutdown', 'a', 'b']);
    await cli(['--home', home, 'stuck-sessions', 'record-shutdown', 'a', 'c']);
    assert.deepEqual(read(home), { a: 4, c: 1 });
    const r = await cli(['--home', home, 'stuck-sessions', 'suspend']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, 'a\n');
    assert.equal(existsSync(restartFailureCountsFile(home)), false);
    const again = await cli(['--home', home, 'stuck-sessions', 'suspend']);
    assert.equal(again.code, 0);
    assert.equal(again.stdout, '');
  });

  it('suspend --json prints exactly {"suspended": [...], "counts": {...}}', async () => {
    const home = freshHome();
    mkdirSync(home, { recursive: true });
    writeFileSync(restartFailureCountsFile(home), JSON.stringify({ a: 3, b: { count: 1, x: 'y' }, c: 7 }));
    const r = await cli(['--home', home, 'stuck-sessions', 'suspend', '--json', '--threshold', '2']);
    assert.equal(r.code, 0);
    assert.deepEqual(JSON.parse(r.stdout), { schemaVersion: 1, suspended: ['a', 'c'], counts: { a: 3, b: 1, c: 7 } });
    assert.equal(existsSync(restartFailureCountsFile(home)), false);
  });

  it('record-shutdown with no keys leaves the file untouched, even a corrupt one', async () => {
    const home = freshHome();
    mkdirSync(home, { recursive: true });
    writeFileSync(restartFailureCountsFile(home), '{"a": 2, "b": {"count": 1, "x": 1}}');
    const r = await cli(['--home', home, 'stuck-sessions', 'record-shutdown']);
    assert.equal(r.code, 0);
    assert.equal(readFileSync(restartFailureCountsFile(home), 'utf8'), '{"a": 2, "b": {"count": 1, "x": 1}}');
    writeFileSync(restartFailureCountsFile(home), 'not json');
    await cli(['--home', home, 'stuck-sessions', 'record-shutdown']);
    assert.equal(readFileSync(restartFailureCountsFile(home), 'utf8'), 'not json');
    const none = freshHome();
    await cli(['--home', none, 'stuck-sessions', 'record-shutdown']);
    assert.equal(existsSync(none), false, 'nothing is created');
  });

  it('keeps the other fields of hermes newer entries when updating them', async () => {
    const home = freshHome();
    mkdirSync(home, { recursive: true });
    writeFileSync(restartFailureCountsFile(home), JSON.stringify({ a: { count: 1, last_error: 'sigterm' }, b: 4 }));
    await cli(['--home', home, 'stuck-sessions', 'record-shutdown', 'a', 'new']);
    assert.deepEqual(read(home), { a: { count: 2, last_error: 'sigterm' }, new: 1 });
  });

  it('clear drops one key and deletes the file when it becomes empty', async () => {
    const home = freshHome();
    await cli(['--home', home, 'stuck-sessions', 'record-shutdown', 'a', 'b']);
    assert.equal((await cli(['--home', home, 'stuck-sessions', 'clear', 'a'])).code, 0);
    assert.deepEqual(read(home), { b: 1 });
    const missing = await cli(['--home', home, 'stuck-sessions', 'clear', 'zzz']);
    assert.equal(missing.code, 0);
    assert.deepEqual(read(home), { b: 1 });
    await cli(['--home', home, 'stuck-sessions', 'clear', 'b']);
    assert.equal(existsSync(restartFailureCountsFile(home)), false);
  });

  it('status lists the counts on stdout and --json describes them', async () => {
    const home = freshHome();
    for (let i = 0; i < 3; i++) await cli(['--home', home, 'stuck-sessions', 'record-shutdown', 'x']);
    await cli(['--home', home, 'stuck-sessions', 'record-shutdown', 'x', 'y']);
    const r = await cli(['--home', home, 'stuck-sessions', 'status']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, '4\tx\n1\ty\n');
    const j = await cli(['--home', home, 'stuck-sessions', 'status', '--json']);
    const parsed = JSON.parse(j.stdout) as Record<string, unknown>;
    assert.deepEqual(parsed.counts, { x: 4, y: 1 });
    assert.deepEqual(parsed.at_threshold, ['x']);
    assert.equal(parsed.threshold, 3);
    assert.deepEqual(read(home), { x: 4, y: 1 }, 'status is read-only');
  });

  it('replaces a corrupt or wrongly shaped file on the next write, with a warning', async () => {
    for (const bad of ['{"a": 1', '[1,2,3]', '"x"', 'null']) {
      const home = freshHome();
      mkdirSync(home, { recursive: true });
      writeFileSync(restartFailureCountsFile(home), bad);
      const r = await cli(['--home', home, 'stuck-sessions', 'record-shutdown', 'k']);
      assert.equal(r.code, 0);
      assert.match(r.stderr, /warning: .*treated as empty/, bad);
      assert.deepEqual(read(home), { k: 1 }, bad);
    }
  });

  it('never writes through a symlink planted at the state path', async () => {
    const home = freshHome();
    mkdirSync(home, { recursive: true });
    const target = path.join(tmp.dir, `victim-${n}`);
    writeFileSync(target, '{"precious": 1}');
    symlinkSync(target, restartFailureCountsFile(home));
    const r = await cli(['--home', home, 'stuck-sessions', 'record-shutdown', 'k']);
    assert.equal(r.code, 0);
    assert.equal(readFileSync(target, 'utf8'), '{"precious": 1}');
    assert.equal(lstatSync(restartFailureCountsFile(home)).isSymbolicLink(), false);
    assert.deepEqual(read(home), { k: 1 });
    // suspend deletes a planted link, not its target
    unlinkSync(restartFailureCountsFile(home));
    symlinkSync(target, restartFailureCountsFile(home));
    const s = await cli(['--home', home, 'stuck-sessions', 'suspend']);
    assert.equal(s.code, 0);
    assert.equal(s.stdout, '');
    assert.equal(readFileSync(target, 'utf8'), '{"precious": 1}');
    assert.equal(existsSync(restartFailureCountsFile(home)), false);
  });

  it('fails open when the state path is unusable: exit 0, one warning line', async () => {
    const home = freshHome();
    mkdirSync(restartFailureCountsFile(home), { recursive: true });
    const r = await cli(['--home', home, 'stuck-sessions', 'record-shutdown', 'k']);
    assert.equal(r.code, 0);
    assert.match(r.stderr, /^hermes-janitor: warning: cannot update .*fails open\)\n$/);
  });

  it('rejects bad usage with exit 2', async () => {
    const home = freshHome();
    for (const [args, names] of [
      [['stuck-sessions'], ["'stuck-sessions' needs a verb"]],
      [['stuck-sessions', 'bogus'], ["unknown stuck-sessions verb 'bogus'"]],
      [['stuck-sessions', 'clear'], ["missing required argument 'keys'"]],
      [['stuck-sessions', 'record-shutdown', ''], ['a session key must not be empty']],
      [['stuck-sessions', 'record-shutdown', 'a\nb'], ['session key "a\\nb" contains control characters']],
      [
        ['stuck-sessions', 'suspend', '--threshold', '0'],
        ['--threshold', "'0'"],
      ],
      [
        ['stuck-sessions', 'suspend', '--threshold', 'x'],
        ['--threshold', "'x'"],
      ],
      [['stuck-sessions', 'status', '--bogus'], ["unknown option '--bogus'"]],
    ] as Array<[string[], string[]]>) {
      assertUsageError(await cli(['--home', home, ...args]), names, JSON.stringify(args));
    }
    assert.equal(existsSync(home), false);
  });

  it('states the exit codes in --help', async () => {
    for (const sub of [[], ['record-shutdown'], ['suspend'], ['clear'], ['status']]) {
      const r = await cli(['stuck-sessions', ...sub, '--help']);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /Exit codes:/);
    }
  });
});
