import assert from 'node:assert/strict';
import fs, { existsSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { FileStateStore, MemoryStateStore, type StateStore } from '../../src/adapters/state-file.js';
import { createStopHook, defaultMarkerPath } from '../../src/breakers/stop-hook.js';
import { type StopMarker, armMarker, blockReason, decideStop, heartbeatMarker, madeProgress, parseMarker } from '../../src/core/stop-hook.js';
import { keepGoingAnswer, stopMessageAnswer } from '../../src/core/hook-answers.js';
import { readStop } from '../../src/core/hook-readings.js';
import { tempDir } from '../helpers/cli.js';

// The numbers these tests pin, stated here (not imported from the code under test): a change to one is a change this test must see.
/** The stop hook blocks at most 5 times in a row by default. */
const DEFAULT_MAX_BLOCKS = 5;
/** A lock file left by a dead holder is taken over after 1 minute. */
const LEFTOVER_AGE_MS = 60_000;

const marker = (over: Partial<StopMarker> = {}): StopMarker => ({ ...armMarker(3), ...over });
const stop = (sessionId?: string, stopHookActive?: boolean) => ({
  ...(sessionId !== undefined ? { sessionId } : {}),
  ...(stopHookActive !== undefined ? { stopHookActive } : {}),
});

describe('stop-hook core: decideStop', () => {
  it('allows the stop with no marker, remaining <= 0, or another session than the owner', () => {
    assert.deepEqual(decideStop(undefined, stop('s'), 5), { action: 'allow', why: 'no-marker' });
    assert.deepEqual(decideStop(marker({ remaining: 0 }), stop('s'), 5), { action: 'allow', why: 'finished' });
    assert.deepEqual(decideStop(marker({ remaining: -2 }), stop('s'), 5), { action: 'allow', why: 'finished' });
    assert.deepEqual(decideStop(marker({ ownerSession: 'owner' }), stop('bystander'), 5), { action: 'allow', why: 'not-owner' });
    // An owner is set but the input has no session id: a bystander too.
    assert.deepEqual(decideStop(marker({ ownerSession: 'owner' }), stop(), 5), { action: 'allow', why: 'not-owner' });
  });

  it('holds the owner, and any session when no owner is set', () => {
    assert.equal(decideStop(marker({ ownerSession: 'owner' }), stop('owner'), 5).action, 'block');
    assert.equal(decideStop(marker(), stop('anyone'), 5).action, 'block');
    assert.equal(decideStop(marker(), stop(), 5).action, 'block');
  });

  it('blocks with the exact reason and counts the block', () => {
    const d = decideStop(marker({ remaining: 7 }), stop('s'), 5);
    assert.equal(d.action, 'block');
    if (d.action !== 'block') return;
    assert.equal(d.reason, '7 items remain: continue with the next one');
    assert.deepEqual(keepGoingAnswer('claude', d.reason), { stdout: { decision: 'block', reason: '7 items remain: continue with the next one' } });
    assert.equal(d.next.blocks, 1);
    assert.equal(d.next.seenHeartbeat, 0);
    assert.equal(d.next.seenRemaining, 7);
  });

  it('releases the stop after maxBlocks blocks without progress, then holds again (cap release)', () => {
    let m = marker();
    const actions: string[] = [];
    for (let i = 0; i < 7; i++) {
      const d = decideStop(m, stop('s', true), 3);
      actions.push(d.action);
      if (d.action === 'allow') break;
      m = d.next;
      if (d.action === 'release') {
        assert.equal(d.next.blocks, 0);
        const out = stopMessageAnswer('claude', d.message);
        assert.ok(out && 'stdout' in out);
        assert.deepEqual(Object.keys(out.stdout), ['systemMessage']);
        assert.match(String(out.stdout.systemMessage), /3 consecutive stops with no progress/);
        assert.match(String(out.stdout.systemMessage), /stop-hook heartbeat/);
      }
    }
    assert.deepEqual(actions, ['block', 'block', 'block', 'release', 'block', 'block', 'block']);
  });

  it('resets blocks on progress: a new heartbeat, or remaining below the last one seen', () => {
    const atCap = marker({ blocks: 5, heartbeat: 4, seenHeartbeat: 4, remaining: 3, seenRemaining: 3 });
    assert.equal(decideStop(atCap, stop('s', true), 5).action, 'release');
    const beat = decideStop(heartbeatMarker(atCap), stop('s', true), 5);
    assert.equal(beat.action, 'block');
    assert.equal(beat.action === 'block' && beat.next.blocks, 1);
    const fewer = decideStop({ ...atCap, remaining: 2 }, stop('s', true), 5);
    assert.equal(fewer.action === 'block' && fewer.next.blocks, 1);
    // More remaining than seen is not progress.
    assert.equal(decideStop({ ...atCap, remaining: 9 }, stop('s', true), 5).action, 'release');
    assert.equal(madeProgress(atCap), false);
  });

  it('treats stop_hook_active false as a fresh stop, and a missing one as true', () => {
    const atCap = marker({ blocks: 5 });
    const fresh = decideStop(atCap, stop('s', false), 5);
    assert.equal(fresh.action === 'block' && fresh.next.blocks, 1);
    assert.equal(decideStop(atCap, stop('s'), 5).action, 'release');
    assert.equal(decideStop(atCap, stop('s', true), 5).action, 'release');
  });

  it('keeps unknown fields when it rewrites the marker', () => {
    const d = decideStop(marker({ note: 'keep me', nested: { a: 1 } }), stop('s'), 5);
    assert.equal(d.action, 'block');
    assert.deepEqual(d.action === 'block' && [d.next.note, d.next.nested], ['keep me', { a: 1 }]);
  });

  it('allows stops of other hook events (a SubagentStop is not the run)', () => {
    assert.deepEqual(decideStop(marker(), { sessionId: 's', event: 'SubagentStop' }, 5), { action: 'allow', why: 'other-event' });
    assert.equal(decideStop(marker(), { sessionId: 's', event: 'Stop' }, 5).action, 'block');
  });

  it('with maxBlocks 1 blocks once, then releases', () => {
    const first = decideStop(marker(), stop('s', true), 1);
    assert.equal(first.action, 'block');
    assert.equal(first.action === 'block' && decideStop(first.next, stop('s', true), 1).action, 'release');
  });
});

describe('stop-hook core: parsing', () => {
  it('parses a marker, filling defaults and keeping unknown fields', () => {
    const r = parseMarker({ remaining: 2, extra: [1] });
    assert.deepEqual(r, { ok: true, value: { remaining: 2, heartbeat: 0, blocks: 0, extra: [1] } });
    const owned = parseMarker({ remaining: 2, heartbeat: 3, blocks: 1, ownerSession: 'x', seenHeartbeat: 3, seenRemaining: 2 });
    assert.ok(owned.ok && owned.value.ownerSession === 'x');
    const nullOwner = parseMarker({ remaining: 2, ownerSession: null });
    assert.ok(nullOwner.ok && !('ownerSession' in nullOwner.value));
  });

  it('rejects corrupt markers', () => {
    for (const bad of [
      null,
      3,
      'x',
      [],
      {},
      { remaining: '3' },
      { remaining: 1.5 },
      { remaining: 3, blocks: -1 },
      { remaining: 3, heartbeat: 'x' },
      { remaining: 3, ownerSession: 5 },
      { remaining: 3, seenHeartbeat: true },
    ]) {
      assert.equal(parseMarker(bad).ok, false, JSON.stringify(bad));
    }
  });

  it('reads the Stop input (Claude Code) and rejects wrong types', () => {
    assert.deepEqual(readStop({ session_id: 's', transcript_path: '/t', cwd: '/c', hook_event_name: 'Stop', stop_hook_active: false }, 'claude'), {
      ok: true,
      value: { sessionId: 's', stopHookActive: false, event: 'Stop', role: 'stop' },
    });
    assert.deepEqual(readStop({}, 'claude'), { ok: true, value: { event: 'Stop', role: 'stop' } });
    assert.deepEqual(readStop({ hook_event_name: 'SessionStart' }, 'claude'), { ok: true, value: { event: 'SessionStart', role: 'other' } });
    for (const bad of [null, [], 'x', 1, { session_id: 5 }, { stop_hook_active: 'true' }, { cwd: {} }, { hook_event_name: 1 }, { transcript_path: [] }]) {
      assert.equal(readStop(bad, 'claude').ok, false, JSON.stringify(bad));
    }
  });

  it('words the reason exactly', () => {
    assert.equal(blockReason(1), '1 items remain: continue with the next one');
    assert.equal(createStopHook({ home: '/nonexistent-hj', env: {} }).maxBlocks, DEFAULT_MAX_BLOCKS, 'the default cap');
  });
});

describe('stop-hook breaker (in process)', () => {
  const tmp = tempDir('hj-stop-unit-');
  after(tmp.cleanup);

  it('arms, blocks, heartbeats, releases and disarms with a memory store', async () => {
    const store = new MemoryStateStore();
    const hook = createStopHook({ store, maxBlocks: 2 });
    assert.equal((await hook.decide({ session_id: 's' })).why, 'no-marker');
    await hook.arm({ remaining: 3, owner: 's' });
    assert.deepEqual(store.snapshot(), { remaining: 3, heartbeat: 0, blocks: 0, seenHeartbeat: 0, seenRemaining: 3, ownerSession: 's' });
    assert.equal((await hook.decide({ session_id: 'other', stop_hook_active: true })).why, 'not-owner');
    const b1 = await hook.decide({ session_id: 's', hook_event_name: 'Stop', stop_hook_active: false });
    assert.deepEqual(b1.output, { decision: 'block', reason: '3 items remain: continue with the next one' });
    assert.equal((await hook.decide({ session_id: 's', stop_hook_active: true })).action, 'block');
    const rel = await hook.decide({ session_id: 's', stop_hook_active: true });
    assert.equal(rel.action, 'release');
    assert.ok(rel.output && 'systemMessage' in rel.output);
    assert.equal((store.snapshot() as StopMarker).blocks, 0);
    await hook.decide({ session_id: 's', stop_hook_active: true });
    await hook.decide({ session_id: 's', stop_hook_active: true });
    const beat = await hook.heartbeat({ remaining: 2 });
    assert.equal(beat?.heartbeat, 1);
    const afterBeat = await hook.decide({ session_id: 's', stop_hook_active: true });
    assert.equal(afterBeat.action, 'block');
    assert.equal(afterBeat.output && 'reason' in afterBeat.output && afterBeat.output.reason, '2 items remain: continue with the next one');
    assert.equal(await hook.disarm(), true);
    assert.equal(await hook.disarm(), false);
    assert.equal((await hook.decide({ session_id: 's' })).why, 'no-marker');
    assert.equal(await hook.heartbeat(), undefined);
  });

  it('allows malformed input and unusable markers with a warning, printing nothing', async () => {
    const hook = createStopHook({ store: new MemoryStateStore({ remaining: 'many' }) });
    const r = await hook.decide({ session_id: 's' });
    assert.equal(r.action, 'allow');
    assert.equal(r.why, 'unusable-marker');
    assert.equal(r.output, undefined);
    assert.equal(r.warnings.length, 1);
    const bad = await createStopHook({ store: new MemoryStateStore(armMarker(3)) }).decide({ stop_hook_active: 'yes' } as never);
    assert.equal(bad.why, 'malformed-input');
    assert.equal(bad.output, undefined);
    assert.match(bad.warnings[0]!, /stop_hook_active/);
  });

  it('never blocks when the marker cannot be saved: allows with a systemMessage', async () => {
    const failing: StateStore = {
      location: '/nowhere/marker.json',
      read: async () => ({ value: armMarker(4) }),
      update: async () => {
        throw new Error('EROFS: read-only file system');
      },
      remove: async () => undefined,
    };
    const r = await createStopHook({ store: failing }).decide({ session_id: 's' });
    assert.equal(r.action, 'allow');
    assert.equal(r.why, 'save-failed');
    assert.ok(r.output && 'systemMessage' in r.output);
    assert.match((r.output as { systemMessage: string }).systemMessage, /could not save the run marker \/nowhere\/marker\.json/);
    assert.match(r.warnings[0]!, /EROFS/);
  });

  it('never throws, even when the store throws on read', async () => {
    const broken: StateStore = {
      location: 'x',
      read: async () => {
        throw new Error('EIO');
      },
      update: async () => {
        throw new Error('EIO');
      },
      remove: async () => undefined,
    };
    const r = await createStopHook({ store: broken }).decide({ session_id: 's' });
    assert.equal(r.action, 'allow');
    assert.equal(r.output, undefined);
  });

  it('leaves the disk alone when there is nothing to do (no directory is created)', async () => {
    const file = path.join(tmp.dir, 'untouched', 'stop-hook', 'marker.json');
    const r = await createStopHook({ marker: file }).decide({ session_id: 's' });
    assert.equal(r.why, 'no-marker');
    assert.equal(existsSync(path.dirname(file)), false);
  });

  it('writes the marker file 0600 in a 0700 directory, keeping unknown fields', async () => {
    const home = path.join(tmp.dir, 'home1');
    const hook = createStopHook({ home, env: {} });
    assert.equal(hook.location, defaultMarkerPath(home));
    await hook.arm({ remaining: 2 });
    const file = defaultMarkerPath(home);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(file)).mode & 0o777, 0o700);
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), mine: 'x' }));
    await hook.decide({ session_id: 's' });
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).mine, 'x');
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).blocks, 1);
  });

  it("flushes the run's own writes to disk (arm, heartbeat), not a stop's count of blocks", async (t) => {
    const home = path.join(tmp.dir, 'durable');
    const hook = createStopHook({ home, env: {} });
    const fsyncs = t.mock.method(fs, 'fsyncSync');
    await hook.arm({ remaining: 2 });
    assert.equal(fsyncs.mock.callCount(), 1, 'arm');
    assert.equal((await hook.decide({ session_id: 's', stop_hook_active: true })).action, 'block');
    assert.equal((await hook.decide({ session_id: 's', stop_hook_active: true })).action, 'block');
    assert.equal(fsyncs.mock.callCount(), 1, 'the stops are written (blocks 2), not flushed');
    assert.equal(JSON.parse(readFileSync(defaultMarkerPath(home), 'utf8')).blocks, 2);
    await hook.heartbeat({ remaining: 1 });
    assert.equal(fsyncs.mock.callCount(), 2, 'heartbeat');
  });

  it("leaves a killed writer's temporary files to the run's next write, not to a stop's", async () => {
    const home = path.join(tmp.dir, 'leftovers');
    const hook = createStopHook({ home, env: {} });
    await hook.arm({ remaining: 2 });
    const dir = path.dirname(defaultMarkerPath(home));
    const leftover = path.join(dir, 'marker.json.4242.0badc0de.tmp');
    writeFileSync(leftover, '{"remaining":');
    const old = new Date(Date.now() - LEFTOVER_AGE_MS - 5000);
    fs.utimesSync(leftover, old, old);
    assert.equal((await hook.decide({ session_id: 's', stop_hook_active: true })).action, 'block');
    assert.equal(existsSync(leftover), true, 'a stop does not read the directory');
    await hook.heartbeat({ remaining: 1 });
    assert.equal(existsSync(leftover), false, "the run's heartbeat removes it");
  });

  it('counts every one of concurrent stops (serialised read-modify-write)', async () => {
    const file = path.join(tmp.dir, 'concurrent', 'marker.json');
    mkdirSync(path.dirname(file), { recursive: true });
    const hook = createStopHook({ store: new FileStateStore(file), maxBlocks: 50 });
    await hook.arm({ remaining: 9 });
    const results = await Promise.all(Array.from({ length: 12 }, () => hook.decide({ session_id: 's', stop_hook_active: true })));
    assert.ok(
      results.every((r) => r.action === 'block'),
      JSON.stringify(results),
    );
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).blocks, 12);
  });

  it('rejects invalid counts', async () => {
    assert.throws(() => createStopHook({ store: new MemoryStateStore(), maxBlocks: 0 }), RangeError);
    await assert.rejects(createStopHook({ store: new MemoryStateStore() }).arm({ remaining: -1 }), RangeError);
  });

  it('reports status without writing', async () => {
    const store = new MemoryStateStore({ remaining: 2, blocks: 1, other: true });
    const s = await createStopHook({ store }).status();
    assert.equal(s.armed, true);
    assert.equal(s.marker?.blocks, 1);
    assert.deepEqual(store.snapshot(), { remaining: 2, blocks: 1, other: true });
    const corrupt = await createStopHook({ store: new MemoryStateStore([1]) }).status();
    assert.equal(corrupt.armed, false);
    assert.match(corrupt.problem ?? '', /not a JSON object/);
  });
});
