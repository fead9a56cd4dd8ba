import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { type HeldLock, LockPathError, acquireLock, lockHolder, lockState, releasableAtOnce, tryAcquireLock } from '../../src/adapters/file-lock.js';
import { liveness, parseStatStartTime, processStartTime, selfIdentity } from '../../src/adapters/process-identity.js';
import { FileStateStore } from '../../src/adapters/state-file.js';
import { tempDir } from '../helpers/cli.js';

// The numbers these tests pin, stated here (not imported from the code under test): a change to one is a change this test must see.
/** A lock file left by a dead holder is taken over after 1 minute. */
const LEFTOVER_AGE_MS = 60_000;

const tmp = tempDir('hj-lock-');
after(() => tmp.cleanup());
let n = 0;
const freshDir = () => {
  const d = path.join(tmp.dir, `case-${n++}`);
  fs.mkdirSync(d);
  return d;
};

/** A pid that existed a moment ago and has exited. */
function deadPid(): number {
  const r = spawnSync('true');
  assert.ok(r.pid);
  return r.pid;
}

function writeRecord(lockPath: string, over: Record<string, unknown>): string {
  const raw = JSON.stringify({ pid: deadPid(), host: os.hostname(), acquiredAt: new Date(0).toISOString(), token: 'dead0000dead0000', ...over });
  fs.writeFileSync(lockPath, raw);
  return raw;
}

const FS_CALLS = [
  'openSync',
  'closeSync',
  'readFileSync',
  'writeFileSync',
  'writeSync',
  'readSync',
  'fstatSync',
  'lstatSync',
  'statSync',
  'linkSync',
  'unlinkSync',
  'renameSync',
  'readdirSync',
  'futimesSync',
  'fsyncSync',
  'readlinkSync',
] as const;

/**
 * Runs `fn` (whose filesystem calls are synchronous) with `steps[k]` run just before its k-th filesystem call.
 * The steps' own calls are not counted; steps numbered past `fn`'s last call run after it. Returns how many calls `fn`
 * made synchronously.
 */
function interleave<T>(steps: Map<number, () => void>, fn: () => T): { result: T; calls: number } {
  const originals = new Map<string, unknown>();
  let count = 0;
  let inStep = false;
  const table = fs as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const name of FS_CALLS) {
    const orig = table[name]!;
    originals.set(name, orig);
    table[name] = (...args: unknown[]) => {
      if (!inStep) {
        const step = steps.get(count++);
        if (step) {
          inStep = true;
          try {
            step();
          } finally {
            inStep = false;
          }
        }
      }
      return orig.apply(fs, args);
    };
  }
  let result: T;
  try {
    result = fn();
  } finally {
    for (const [name, orig] of originals) table[name] = orig as (...a: unknown[]) => unknown;
  }
  // Steps scheduled past the calls `fn` made run after it, in order.
  for (const k of [...steps.keys()].filter((key) => key >= count).sort((a, b) => a - b)) steps.get(k)!();
  return { result, calls: count };
}

const tokenAt = (lockPath: string): string | null => {
  try {
    return (JSON.parse(fs.readFileSync(lockPath, 'utf8')) as { token: string }).token;
  } catch {
    return null;
  }
};

describe('file lock: at most one holder under every interleaving', () => {
  it('B taking over a dead lock while A takes it over first and C tries: never two holders (issue 11 interleaving)', async () => {
    // Count B's filesystem calls on an undisturbed takeover, then put A before call i and C before call j, for all i <= j.
    const probe = freshDir();
    writeRecord(path.join(probe, 'x.lock'), {});
    const { calls } = interleave(new Map(), () => void acquireLock(path.join(probe, 'x.lock'), { waitMs: 0 }));
    assert.ok(calls >= 4, `B made ${calls} filesystem calls`);
    let scenarios = 0;
    for (let i = 0; i <= calls; i++) {
      for (let j = i; j <= calls; j++) {
        const dir = freshDir();
        const L = path.join(dir, 'x.lock');
        writeRecord(L, {});
        const others: Array<Promise<HeldLock | null>> = [];
        const steps = new Map<number, () => void>([
          [i, () => void others.push(acquireLock(L, { waitMs: 0 }))],
          [j === i ? -1 : j, () => void others.push(acquireLock(L, { waitMs: 0 }))],
        ]);
        if (j === i) steps.set(i, () => void others.push(acquireLock(L, { waitMs: 0 }), acquireLock(L, { waitMs: 0 })));
        const b = interleave(steps, () => acquireLock(L, { waitMs: 0 })).result;
        const got = (await Promise.all([b, ...others])).filter((h): h is HeldLock => h !== null);
        assert.ok(got.length <= 1, `A at call ${i}, C at call ${j}: ${got.length} holders at once`);
        if (got.length === 1) {
          assert.equal(tokenAt(L), got[0]!.info.token, `A at ${i}, C at ${j}: the lock file names its holder`);
          assert.ok(got[0]!.held());
        }
        for (const h of got) await h.release();
        assert.equal(fs.existsSync(L), false, 'released: nothing left at the lock path');
        scenarios++;
      }
    }
    assert.ok(scenarios > 10);
  });

  it('a holder releasing during a takeover is never revived, and a taker after it gets a lock that is really there', async () => {
    const probe = freshDir();
    writeRecord(path.join(probe, 'x.lock'), {});
    const { calls } = interleave(new Map(), () => void acquireLock(path.join(probe, 'x.lock'), { waitMs: 0 }));
    for (let i = 0; i <= calls; i++) {
      for (let j = i + 1; j <= calls + 1; j++) {
        for (let k = j; k <= calls + 1; k++) {
          const dir = freshDir();
          const L = path.join(dir, 'x.lock');
          writeRecord(L, {});
          let a: HeldLock | null = null;
          let c: HeldLock | null = null;
          const releases: Array<Promise<void>> = [];
          const steps = new Map<number, () => void>([
            [i, () => (a = tryAcquireLock(L))],
            [j, () => void (a && releases.push(a.release()))],
          ]);
          const prev = steps.get(k);
          steps.set(k, () => {
            prev?.();
            c = tryAcquireLock(L);
          });
          const b = await interleave(steps, () => acquireLock(L, { waitMs: 0 })).result;
          await Promise.all(releases);
          const aToken = (a as HeldLock | null)?.info.token;
          const live = [b, c].filter((h): h is HeldLock => h !== null);
          assert.ok(live.length <= 1, `A ${i}, release ${j}, C ${k}: ${live.length} holders`);
          const at = tokenAt(L);
          if (aToken) assert.notEqual(at, aToken, `A ${i}, release ${j}, C ${k}: A's released lock was revived`);
          if (live.length === 1) assert.equal(at, live[0]!.info.token, `A ${i}, release ${j}, C ${k}: the holder's lock is not there`);
          else assert.equal(at, null, `A ${i}, release ${j}, C ${k}: a lock nobody holds`);
          for (const h of live) await h.release();
        }
      }
    }
  });
});

describe('file lock: holders judged by pid, start time, boot and host', () => {
  it('reads field 22 of /proc/<pid>/stat even when the command name holds spaces and parentheses', () => {
    const fields = Array.from({ length: 50 }, (_, k) => String(k + 3));
    assert.equal(parseStatStartTime(`123 (a) b (c) ${fields.join(' ')}`), '22');
    assert.equal(parseStatStartTime('garbage'), null);
    assert.equal(parseStatStartTime('1 (x) S 1'), null);
  });

  it('takes over a lock whose pid now belongs to another process (pid reuse: other start time)', async () => {
    const child = spawn('sleep', ['30']);
    try {
      const real = processStartTime(child.pid!);
      assert.ok(real, 'procfs gives the start time');
      const dir = freshDir();
      const L = path.join(dir, 'x.lock');
      writeRecord(L, { pid: child.pid, startTime: String(Number(real) - 5), bootId: selfIdentity().bootId });
      const held = await acquireLock(L, { waitMs: 0 });
      assert.ok(held, 'a live pid with another start time is a dead holder');
      await held.release();

      writeRecord(L, { pid: child.pid, startTime: real, bootId: selfIdentity().bootId });
      assert.equal(await acquireLock(L, { waitMs: 50 }), null, 'the same pid and start time is a live holder');
      assert.equal(liveness({ pid: child.pid!, host: os.hostname(), startTime: real }), 'alive');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('takes over a lock recorded in an earlier boot; keeps one from another pid namespace or another host', async () => {
    const child = spawn('sleep', ['30']);
    try {
      const me = selfIdentity();
      const dir = freshDir();
      const L = path.join(dir, 'x.lock');
      writeRecord(L, { pid: child.pid, startTime: processStartTime(child.pid!), bootId: 'another-boot' });
      const held = await acquireLock(L, { waitMs: 0 });
      assert.ok(held, 'another boot id: its holder is gone');
      await held.release();

      const other = writeRecord(L, { pid: deadPid(), pidNs: 'pid:[1]', bootId: me.bootId });
      assert.equal(await acquireLock(L, { waitMs: 50 }), null, 'a holder in another pid namespace cannot be checked');
      assert.equal(fs.readFileSync(L, 'utf8'), other);

      writeRecord(L, { pid: deadPid(), host: `not-${os.hostname()}` });
      assert.equal(await acquireLock(L, { waitMs: 50 }), null, 'a holder on another host cannot be checked');
      const old = new Date(Date.now() - 60_000);
      fs.utimesSync(L, old, old);
      const stale = await acquireLock(L, { waitMs: 0, staleMs: 30_000 });
      assert.ok(stale, 'but past staleMs without a refresh it is taken over');
      await stale.release();
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a holder that refreshes keeps its lock past the staleness limit; one that stopped loses it, and its release leaves the new lock', async () => {
    const dir = freshDir();
    const L = path.join(dir, 'x.lock');
    const holder = await acquireLock(L, { waitMs: 0, staleMs: 300, refreshMs: 50 });
    assert.ok(holder);
    // Busy for three times the staleness limit while a contender keeps trying with that limit.
    assert.equal(await acquireLock(L, { waitMs: 1000, staleMs: 300 }), null);
    assert.ok(holder.held());
    assert.equal(tokenAt(L), holder.info.token);
    await holder.release();

    const stopped = await acquireLock(L, { waitMs: 0, staleMs: 300, refreshMs: 3_600_000 });
    assert.ok(stopped);
    const taker = await acquireLock(L, { waitMs: 2000, staleMs: 300 });
    assert.ok(taker, 'not refreshed for longer than staleMs: taken over');
    assert.equal(stopped.held(), false, 'the old holder can tell it lost the lock');
    await stopped.release();
    assert.equal(tokenAt(L), taker.info.token, "the old holder's release removed only its own lock");
    await taker.release();
    assert.equal(fs.existsSync(L), false);
  });

  it('lockHolder and lockState report the holder, when it last refreshed, and whether it is stale', async () => {
    const dir = freshDir();
    const L = path.join(dir, 'x.lock');
    assert.equal(await lockHolder(L), null);
    const held = await acquireLock(L, { waitMs: 0 });
    assert.ok(held);
    const h = await lockHolder(L);
    assert.equal(h?.pid, process.pid);
    assert.equal(h?.token, held.info.token);
    assert.ok(h?.refreshedAt);
    assert.deepEqual({ alive: (await lockState(L))?.holderAlive, stale: (await lockState(L))?.stale }, { alive: 'alive', stale: false });
    await held.release();
    writeRecord(L, {});
    assert.deepEqual({ alive: (await lockState(L))?.holderAlive, stale: (await lockState(L))?.stale }, { alive: 'dead', stale: true });
  });
});

describe('file lock: what sits at the lock path', () => {
  it('a FIFO at the lock path is an error naming the path, never a hang', async () => {
    const dir = freshDir();
    const L = path.join(dir, 'x.lock');
    execFileSync('mkfifo', [L]);
    await assert.rejects(acquireLock(L, { waitMs: 100 }), (err: Error) => err instanceof LockPathError && err.message.includes(L) && /FIFO/.test(err.message));
    await assert.rejects(lockHolder(L), LockPathError);
    // Through the CLI-facing state store too: the update fails with that error instead of blocking.
    const store = new FileStateStore(path.join(dir, 'x'));
    await assert.rejects(
      store.update(() => ({ next: { a: 1 }, result: 1 })),
      LockPathError,
    );
  });

  it('a symlink at the lock path is never followed nor replaced; its target is left intact', async () => {
    const dir = freshDir();
    const L = path.join(dir, 'x.lock');
    const target = path.join(dir, 'precious');
    fs.writeFileSync(target, 'keep me');
    fs.symlinkSync(target, L);
    await assert.rejects(acquireLock(L, { waitMs: 0 }), (err: Error) => err instanceof LockPathError && err.message.includes(L) && /symlink/.test(err.message));
    assert.equal(fs.readFileSync(target, 'utf8'), 'keep me');
    assert.ok(fs.lstatSync(L).isSymbolicLink());
    fs.unlinkSync(L);
    fs.symlinkSync(path.join(dir, 'nowhere'), L); // dangling: still not created through
    await assert.rejects(acquireLock(L, { waitMs: 0 }), LockPathError);
    assert.equal(fs.existsSync(path.join(dir, 'nowhere')), false);
  });
});

describe('file lock and state files: leftovers', () => {
  it('temporary and set-aside files older than a minute are removed on the next write; fresh ones and others stay', async () => {
    const dir = freshDir();
    const old = new Date(Date.now() - LEFTOVER_AGE_MS - 5000);
    const names = {
      oldTemp: 'state.json.4242.0badc0de.tmp',
      oldLockTemp: 'state.json.lock.77.deadbeef.tmp',
      oldAside: 'state.json.lock.stale-0123456789abcdef',
      freshTemp: 'state.json.4243.feedf00d.tmp',
      unrelated: 'notes.tmp',
    };
    for (const name of Object.values(names)) fs.writeFileSync(path.join(dir, name), 'x');
    for (const name of [names.oldTemp, names.oldLockTemp, names.oldAside, names.unrelated]) fs.utimesSync(path.join(dir, name), old, old);
    const store = new FileStateStore(path.join(dir, 'state.json'));
    await store.update(() => ({ next: { v: 1 }, result: undefined }));
    assert.deepEqual(fs.readdirSync(dir).sort(), [names.unrelated, names.freshTemp, 'state.json'].sort());
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(dir, 'state.json'), 'utf8')), { v: 1 });
  });

  it('a store whose directory another store keeps clean (removeLeftovers: false) leaves them to it', async () => {
    const dir = freshDir();
    const leftover = path.join(dir, 'state.json.4242.0badc0de.tmp');
    fs.writeFileSync(leftover, 'x');
    const old = new Date(Date.now() - LEFTOVER_AGE_MS - 5000);
    fs.utimesSync(leftover, old, old);
    await new FileStateStore(path.join(dir, 'state.json'), { removeLeftovers: false }).update(() => ({ next: { v: 1 }, result: undefined }));
    assert.equal(fs.existsSync(leftover), true);
    const taken = await acquireLock(path.join(dir, 'other.lock'), { waitMs: 0, removeLeftovers: false });
    await taken!.release();
    assert.equal(fs.existsSync(leftover), true);
    await new FileStateStore(path.join(dir, 'other.json')).update(() => ({ next: { v: 2 }, result: undefined }));
    assert.deepEqual(fs.readdirSync(dir).sort(), ['other.json', 'state.json']);
  });

  it('a takeover and a release leave nothing behind but the state file', async () => {
    const dir = freshDir();
    writeRecord(path.join(dir, 'state.json.lock'), {});
    const store = new FileStateStore(path.join(dir, 'state.json'));
    await store.update(() => ({ next: { v: 2 }, result: undefined }));
    assert.deepEqual(fs.readdirSync(dir), ['state.json']);
  });
});

describe('file lock: a release without the guard', () => {
  it('only while no taker can have judged the lock takeable: within a third of staleMs, the wall clock agreeing', () => {
    assert.equal(releasableAtOnce(5, 5, 30_000), true);
    assert.equal(releasableAtOnce(9_999, 10_200, 30_000), true);
    assert.equal(releasableAtOnce(10_000, 10_000, 30_000), false, 'held a third of staleMs: the guard');
    assert.equal(releasableAtOnce(5, 1_005, 30_000), false, 'the wall clock stepped forward');
    assert.equal(releasableAtOnce(5, -995, 30_000), false, 'the wall clock stepped back');
    assert.equal(releasableAtOnce(3_600_000, 3_600_000, undefined), true, 'without staleMs only death takes a lock');
  });

  it("a quick release goes through while another's guard is held, and removes the lock", async () => {
    const dir = freshDir();
    const L = path.join(dir, 'x.lock');
    const held = tryAcquireLock(L, { staleMs: 30_000, refresh: false });
    assert.ok(held);
    const guard = tryAcquireLock(`${L}.guard`); // a live taker's guard: the guarded release would wait ~10 s for it
    assert.ok(guard);
    await held.release();
    assert.equal(fs.existsSync(L), false);
    assert.equal(held.held(), false);
    await guard.release();
  });

  it("a quick release of a lock taken from its holder leaves the taker's lock", async () => {
    const dir = freshDir();
    const L = path.join(dir, 'x.lock');
    const a = tryAcquireLock(L, { staleMs: 30_000, refresh: false });
    assert.ok(a);
    // Taken from A as a takeover does it (a compare-and-delete, then a new link): A's file is no longer linked.
    fs.unlinkSync(L);
    const b = tryAcquireLock(L, { staleMs: 30_000, refresh: false });
    assert.ok(b);
    assert.equal(a.held(), false);
    await a.release();
    assert.equal(tokenAt(L), b.info.token, "A's release left B's lock");
    await b.release();
    assert.equal(fs.existsSync(L), false);
  });
});

describe('state files: replaced with or without a moment where the file is missing', () => {
  /** A lock-free look before each filesystem call of `fn`: what a reader in another process could find. */
  async function looks(file: string, fn: () => Promise<unknown>): Promise<Array<{ file: boolean; lock: boolean }>> {
    const seen: Array<{ file: boolean; lock: boolean }> = [];
    const table = fs as unknown as Record<string, (...a: unknown[]) => unknown>;
    const originals = FS_CALLS.map((name) => [name, table[name]!] as const);
    const { existsSync } = fs;
    for (const [name, orig] of originals) {
      table[name] = (...args: unknown[]) => {
        seen.push({ file: existsSync(file), lock: existsSync(`${file}.lock`) });
        return orig.apply(fs, args);
      };
    }
    try {
      await fn();
    } finally {
      for (const [name, orig] of originals) table[name] = orig;
    }
    seen.push({ file: existsSync(file), lock: existsSync(`${file}.lock`) });
    return seen;
  }

  it('by default a reader that takes no lock finds the file at every moment of an update', async () => {
    const file = path.join(freshDir(), 'state.json');
    const store = new FileStateStore(file);
    await store.update(() => ({ next: { v: 1 }, result: undefined }));
    const seen = await looks(file, () => store.update(() => ({ next: { v: 2 }, result: undefined })));
    assert.ok(seen.length > 8, `${seen.length} looks`);
    assert.deepEqual(
      seen.filter((x) => !x.file),
      [],
    );
    assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), { v: 2 });
  });

  it('alwaysPresent false: missing only for a moment, and only while its lock is held; never a symlink followed', async () => {
    const dir = freshDir();
    const file = path.join(dir, 'state.json');
    const store = new FileStateStore(file, { alwaysPresent: false, durable: false, removeLeftovers: false });
    await store.update(() => ({ next: { v: 1 }, result: undefined }));
    const seen = await looks(file, () => store.update(() => ({ next: { v: 2 }, result: undefined })));
    const missing = seen.filter((x) => !x.file);
    assert.equal(missing.length, 1, JSON.stringify(seen));
    assert.deepEqual(missing, [{ file: false, lock: true }]);
    assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), { v: 2 });
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    // A symlink planted at the path is removed, not written through.
    const target = path.join(dir, 'precious');
    fs.writeFileSync(target, 'keep me');
    fs.unlinkSync(file);
    fs.symlinkSync(target, file);
    await store.update(() => ({ next: { v: 3 }, result: undefined }));
    assert.equal(fs.readFileSync(target, 'utf8'), 'keep me');
    assert.ok(fs.lstatSync(file).isFile());
    assert.deepEqual(fs.readdirSync(dir).sort(), ['precious', 'state.json']);
  });
});
