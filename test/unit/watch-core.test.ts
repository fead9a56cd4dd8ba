import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseEngineEvent } from '../../src/adapters/engine-answers.js';
import type { EngineEvent } from '../../src/adapters/engine.js';
import { backoffMs } from '../../src/watch/backoff.js';
import { DeadlineQueue } from '../../src/watch/deadline-queue.js';
import { applyEvent, deadlineOfKept, forgetFromSweep, newTracker, seedFromSweep } from '../../src/watch/tracker.js';

// The numbers these tests pin, stated here (not imported from the code under test): a change to one is a change this test must see.
/** Watch looks at a sandbox 1 s after a start or an exec's end. */
const IDLE_SETTLE_MS = 1000;

const ev = (id: string, action: string, timeMs: number): EngineEvent => ({ id, action, timeMs, attributes: {} });

describe('DeadlineQueue', () => {
  it('pops in deadline order whatever the order of set, move and delete (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('set', 'delete'), fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 1000 })), { maxLength: 300 }),
        (ops) => {
          const q = new DeadlineQueue();
          const model = new Map<string, number>();
          for (const [op, k, at] of ops) {
            const id = `c${k}`;
            if (op === 'set') q.set(id, at), model.set(id, at);
            else q.delete(id), model.delete(id);
          }
          assert.equal(q.size, model.size);
          const popped = q.popDue(Infinity);
          assert.deepEqual(
            popped.map((p) => p.at),
            [...model.values()].sort((a, b) => a - b),
          );
          assert.deepEqual(new Set(popped.map((p) => p.id)), new Set(model.keys()));
          assert.equal(q.size, 0);
        },
      ),
    );
  });

  it('takes only what is due, at most max at a time, and peeks the earliest', () => {
    const q = new DeadlineQueue();
    q.set('a', 30);
    q.set('b', 10);
    q.set('c', 20);
    q.set('b', 40); // moved
    assert.deepEqual(q.peek(), { id: 'c', at: 20 });
    assert.deepEqual(q.popDue(25), [{ id: 'c', at: 20 }]);
    assert.deepEqual(q.popDue(100, 1), [{ id: 'a', at: 30 }]);
    assert.deepEqual(q.popDue(100), [{ id: 'b', at: 40 }]);
    assert.equal(q.peek(), undefined);
  });

  it('100k deadlines with many moves: in order, one entry each', () => {
    const q = new DeadlineQueue();
    for (let i = 0; i < 100_000; i++) q.set(`c${i}`, Math.floor(Math.random() * 1e9));
    for (let i = 0; i < 100_000; i += 2) q.set(`c${i}`, Math.floor(Math.random() * 1e9));
    let last = -1;
    let n = 0;
    for (const p of q.popDue(Infinity)) {
      assert.ok(p.at >= last);
      last = p.at;
      n++;
    }
    assert.equal(n, 100_000);
  });
});

describe('tracker transitions', () => {
  const T = 3; // threshold, seconds
  const now = () => 5_000_000;
  it('exit schedules at time + threshold; start cancels; destroy forgets; exec is activity only', () => {
    const s = newTracker();
    assert.deepEqual(applyEvent(s, ev('a', 'die', 1000), T, now), { kind: 'scheduled', id: 'a', at: 4000 });
    assert.deepEqual(applyEvent(s, ev('a', 'stop', 1010), T, now), { kind: 'scheduled', id: 'a', at: 4000 }, 'stop after die keeps the earlier deadline');
    assert.deepEqual(applyEvent(s, ev('a', 'start', 2000), T, now), { kind: 'cancelled', id: 'a' });
    assert.equal(s.deadlines.get('a'), undefined);
    assert.deepEqual(applyEvent(s, ev('a', 'exec_start', 2100), T, now), { kind: 'activity', id: 'a', at: 2100 });
    assert.equal(s.lastActivityMs.get('a'), 2100);
    assert.equal(s.deadlines.size, 0);
    applyEvent(s, ev('a', 'die', 3000), T, now);
    assert.deepEqual(applyEvent(s, ev('a', 'destroy', 3500), T, now), { kind: 'forgotten', id: 'a' });
    assert.equal(s.deadlines.size, 0);
    assert.equal(s.lastEventMs.size, 0);
    assert.deepEqual(applyEvent(s, ev('b', 'create', 100), T, now), { kind: 'scheduled', id: 'b', at: 3100 });
    assert.deepEqual(applyEvent(s, ev('b', 'remove', 200), T, now), { kind: 'forgotten', id: 'b' }, "Podman's name for destroy");
    assert.deepEqual(applyEvent(s, ev('c', 'rename', 200), T, now), { kind: 'ignored', id: 'c', why: 'not-tracked-action' });
  });

  it('an event older than the last one applied to that container is ignored; a duplicate changes nothing', () => {
    const s = newTracker();
    applyEvent(s, ev('a', 'die', 5000), T, now);
    assert.deepEqual(applyEvent(s, ev('a', 'start', 4000), T, now), { kind: 'ignored', id: 'a', why: 'out-of-order' });
    assert.equal(s.deadlines.get('a'), 8000);
    applyEvent(s, ev('a', 'die', 5000), T, now);
    assert.equal(s.deadlines.get('a'), 8000);
    assert.equal(s.deadlines.size, 1);
  });

  it('an event without a time is placed at the clock', () => {
    const s = newTracker();
    assert.deepEqual(applyEvent(s, ev('a', 'die', NaN), T, now), { kind: 'scheduled', id: 'a', at: 5_003_000 });
  });

  it('a sweep seeds deadlines unless an event since the sweep began knows better', () => {
    const s = newTracker();
    applyEvent(s, ev('a', 'start', 2000), T, now);
    assert.equal(seedFromSweep(s, 'a', 9999, 1500), false);
    assert.equal(seedFromSweep(s, 'b', 9999, 1500), true);
    assert.equal(s.deadlines.get('b'), 9999);
  });

  it('deadlineOfKept: FinishedAt + threshold, rounded up to the millisecond; only for too-recent', () => {
    assert.equal(deadlineOfKept({ reason: 'too-recent', finishedAt: '2026-01-01T00:00:00.000000001Z' }, 3), Date.UTC(2026, 0, 1) + 3001);
    assert.equal(deadlineOfKept({ reason: 'too-recent', finishedAt: '2026-01-01T00:00:00Z' }, 3), Date.UTC(2026, 0, 1) + 3000);
    assert.equal(deadlineOfKept({ reason: 'running', finishedAt: '2026-01-01T00:00:00Z' }, 3), null);
    assert.equal(deadlineOfKept({ reason: 'too-recent', finishedAt: '0001-01-01T00:00:00Z' }, 3), null);
  });

  it('a container that exits while it is re-checked (FinishedAt after the as-of instant) keeps its exit deadline', () => {
    // Seen on Docker: a `sleep 0.5` sandbox re-checked at its idle check exits between the as-of instant and the
    // inspect, so it is kept `future-finished-at`. It must still be removed at FinishedAt + threshold.
    const kept = { reason: 'future-finished-at', rule: 'exited', finishedAt: '2026-01-01T00:00:00.5Z', ageSeconds: -0.005 } as const;
    assert.equal(deadlineOfKept(kept, 3, { asOfMs: Date.UTC(2026, 0, 1) + 495 }), Date.UTC(2026, 0, 1) + 3500);
    // And its `die` event, applied while the re-check ran, is not undone by a kept verdict with nothing to schedule.
    const s = newTracker();
    applyEvent(s, ev('a', 'die', 2000), T, now);
    assert.equal(forgetFromSweep(s, 'a', 1500), false);
    assert.equal(s.deadlines.get('a'), 5000);
    assert.equal(forgetFromSweep(s, 'a', 2500), true, 'an event before the re-check started: the verdict decides');
    assert.equal(s.deadlines.has('a'), false);
  });
});

describe('tracker with the idle rule on', () => {
  const T = 3;
  const idle = { idleAfterSeconds: 10 };
  const now = () => 5_000_000;
  it('a start schedules the first idle sample right after it; an exec postpones, its end brings the check forward', () => {
    const s = newTracker();
    applyEvent(s, ev('a', 'die', 1000), T, now, idle);
    assert.deepEqual(applyEvent(s, ev('a', 'start', 2000), T, now, idle), { kind: 'scheduled', id: 'a', at: 2000 + IDLE_SETTLE_MS });
    assert.deepEqual(applyEvent(s, ev('a', 'exec_start', 2500), T, now, idle), { kind: 'activity', id: 'a', at: 2500, recheckAt: 12_500 });
    assert.equal(s.deadlines.get('a'), 12_500, 'while an exec runs: one check an idle threshold later at the latest');
    assert.deepEqual(applyEvent(s, ev('a', 'exec_die', 4000), T, now, idle), { kind: 'activity', id: 'a', at: 4000, recheckAt: 4000 + IDLE_SETTLE_MS });
    assert.deepEqual(applyEvent(s, ev('a', 'exec_died', 4100), T, now, idle).kind, 'activity', "Podman's exec end");
    assert.deepEqual(applyEvent(s, ev('a', 'die', 6000), T, now, idle), { kind: 'scheduled', id: 'a', at: 9000 }, 'an exit replaces the idle check');
  });
});

describe('deadlineOfKept, other rules', () => {
  const asOfMs = 1_000_000;
  const idle = { idleAfterSeconds: 10 };
  it('never-started: Created + threshold, from its age as of the sweep', () => {
    assert.equal(
      deadlineOfKept({ reason: 'too-recent', finishedAt: '0001-01-01T00:00:00Z', rule: 'never-started', ageSeconds: 1.25 }, 3, { asOfMs }),
      asOfMs + 1750,
    );
    assert.equal(deadlineOfKept({ reason: 'too-recent', finishedAt: '0001-01-01T00:00:00Z', rule: 'never-started', ageSeconds: null }, 3, { asOfMs }), null);
  });
  it('running: since + idle threshold when there is a proof, else one idle threshold later; never within the settle time; none with the rule off', () => {
    const running = { reason: 'running', finishedAt: '0001-01-01T00:00:00Z', rule: 'idle' } as const;
    assert.equal(deadlineOfKept({ ...running, idleSeconds: 4, idleReason: 'idle-too-recent' }, 3, { asOfMs, idle }), asOfMs + 6000);
    assert.equal(deadlineOfKept({ ...running, idleSeconds: null, idleReason: 'observing' }, 3, { asOfMs, idle }), asOfMs + 10_000);
    assert.equal(deadlineOfKept({ ...running, idleSeconds: 30, idleReason: 'exec-in-flight' }, 3, { asOfMs, idle }), asOfMs + 10_000);
    assert.equal(deadlineOfKept({ ...running, idleSeconds: 30, idleReason: 'proof-failed' }, 3, { asOfMs, idle }), asOfMs + IDLE_SETTLE_MS);
    // Owned (a living hermes may serve its profile), past the usual threshold: one idle threshold later, not in a loop.
    assert.equal(deadlineOfKept({ ...running, idleSeconds: 30, idleReason: 'owner-alive' }, 3, { asOfMs, idle }), asOfMs + 10_000);
    assert.equal(deadlineOfKept({ ...running, idleSeconds: 4, idleReason: 'idle-too-recent' }, 3, { asOfMs, idle: null }), null);
    assert.equal(deadlineOfKept({ ...running, idleSeconds: 4, idleReason: 'stop-idle-off' }, 3, { asOfMs, idle }), null);
    assert.equal(deadlineOfKept({ reason: 'running', finishedAt: '', rule: null }, 3, { asOfMs, idle }), null, 'paused, restarting');
  });
});

describe('deadlineOfKept, a sandbox the janitor stopped', () => {
  const asOfMs = Date.UTC(2026, 0, 1, 0, 0, 10);
  const stopped = { reason: 'stopped-retained', finishedAt: '2026-01-01T00:00:07.25Z', rule: 'exited' } as const;
  it('is looked at again when its retention ends (then the exited rule removes it), never before the sweep', () => {
    assert.equal(deadlineOfKept({ ...stopped, retainedUntil: '2026-01-01T00:00:10.250Z' }, 1, { asOfMs }), asOfMs + 250);
    assert.equal(deadlineOfKept({ ...stopped, retainedUntil: '2026-01-01T00:00:10.250Z' }, 1), asOfMs + 250);
    assert.equal(deadlineOfKept({ ...stopped, retainedUntil: '2026-01-01T00:00:09.000Z' }, 1, { asOfMs }), asOfMs + 1, 'ended already: at once');
  });
  it('without the retention end (an older sweep), none', () => {
    assert.equal(deadlineOfKept(stopped, 1, { asOfMs }), null);
  });
});

describe('reconnect backoff', () => {
  it('1 s doubling to 30 s', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 50].map(backoffMs), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  });
});

describe('parseEngineEvent', () => {
  it('reads Docker and Podman event lines; drops anything else', () => {
    const docker =
      '{"status":"exec_start: sh -c true","id":"abc","from":"x","Type":"container","Action":"exec_start: sh -c true",' +
      '"Actor":{"ID":"abc","Attributes":{"hermes-agent":"1","name":"n"}},' +
      '"scope":"local","time":1795425857,"timeNano":1795425857460885490}';
    assert.deepEqual(parseEngineEvent(docker), { id: 'abc', action: 'exec_start', timeMs: 1795425857460.8855, attributes: { 'hermes-agent': '1', name: 'n' } });
    assert.equal(parseEngineEvent('{"Type":"network","Action":"connect","Actor":{"ID":"n"}}'), null);
    assert.equal(parseEngineEvent('{"status":"die","Type":"container","Act'), null, 'cut mid-event');
    assert.equal(parseEngineEvent(''), null);
    assert.ok(Number.isNaN(parseEngineEvent('{"Action":"die","Actor":{"ID":"x"}}')!.timeMs));
    assert.equal(parseEngineEvent('{"status":"die","id":"old","time":12}')!.timeMs, 12000, 'old engines: status, id, time');
  });
});
