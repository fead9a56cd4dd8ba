import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type IdleRecord,
  type IdleSample,
  decideStop,
  idleSeconds,
  mergeIdleState,
  observe,
  occupancy,
  parseIdleState,
  processLimit,
  reproved,
  showsActivity,
} from '../../src/core/idle.js';

const START = '2026-11-22T09:00:00.123456789Z';
const t = (s: number) => new Date(Date.parse('2026-11-22T10:00:00Z') + s * 1000);
/** A sample of a quiet `--init` sandbox (tini and `sleep infinity`: 2 processes) unless `pids` says otherwise. */
const sample = (s: number, cpuNs: number, pgfault: number | null = 1000, startedAt = START, pids: number | undefined = 2): IdleSample => ({
  startedAt,
  cpuNs,
  pgfault,
  at: t(s).toISOString(),
  ...(pids !== undefined ? { pids } : {}),
});
/** The same sample holding `pids` processes (undefined: no count). */
const withPids = (x: IdleSample, pids: number | undefined): IdleSample => {
  const { pids: _, ...rest } = x;
  return pids === undefined ? rest : { ...rest, pids };
};

describe('showsActivity (measured: tini ~0.06 ms CPU/s, no faults; one exec ~19 ms CPU, ~470 faults)', () => {
  it('an idle init process over 10 s is not activity', () => {
    assert.equal(showsActivity(sample(0, 50e6), sample(10, 50e6 + 600_000)), false);
  });
  it('page faults, a busy process, or a restart are activity', () => {
    assert.equal(showsActivity(sample(0, 50e6), sample(10, 50e6, 1001)), true);
    assert.equal(showsActivity(sample(0, 50e6), sample(10, 50e6 + 10_000_001)), true); // > 1 ms per second
    assert.equal(showsActivity(sample(0, 50e6), sample(10, 50e6 + 9_999_999)), false);
    assert.equal(showsActivity(sample(0, 50e6), sample(10, 50e6, 1000, '2026-11-22T09:59:00Z')), true);
    assert.equal(showsActivity(sample(0, 50e6), sample(10, 40e6)), true); // counter went back
  });
  it('without a page-fault count (Podman), any CPU growth is activity', () => {
    assert.equal(showsActivity(sample(0, 50e6, null), sample(10, 50e6, null)), false);
    assert.equal(showsActivity(sample(0, 50e6, null), sample(10, 50e6 + 1, null)), true);
  });
  it('two samples milliseconds apart tolerate one init wake but never an exec', () => {
    const a = sample(0, 50e6);
    const b = { ...sample(0, 50e6 + 60_000), at: new Date(t(0).getTime() + 20).toISOString() };
    assert.equal(showsActivity(a, b), false);
    assert.equal(showsActivity(a, { ...b, cpuNs: 50e6 + 19e6 }), true);
  });
  it('samples a second or two apart allow 2 ms: a busy host once charged an idle tini 1.18 ms in one second', () => {
    const a = sample(0, 50e6);
    assert.equal(showsActivity(a, sample(1, 50e6 + 1_180_000)), false);
    assert.equal(showsActivity(a, sample(1.5, 50e6 + 2_000_000)), false);
    assert.equal(showsActivity(a, sample(1.5, 50e6 + 2_000_001)), true);
    assert.equal(showsActivity(a, sample(3, 50e6 + 3_000_001)), true); // from 2 s on, 1 ms per second
  });
});

describe('observe and idleSeconds', () => {
  it('needs two samples; since stays at the first while idle and moves on activity', () => {
    let r = observe(undefined, sample(0, 50e6));
    assert.equal(idleSeconds(r, t(5)), null);
    r = observe(r, sample(5, 50e6));
    assert.equal(idleSeconds(r, t(5)), 5);
    assert.equal(idleSeconds(r, t(65)), 65);
    r = observe(r, sample(70, 90e6, 1470)); // an exec
    assert.equal(r.since, t(70).toISOString());
    assert.equal(idleSeconds(r, t(80)), null); // activity resets the proof
    r = observe(r, sample(80, 90e6, 1470));
    assert.equal(idleSeconds(r, t(80)), 10);
  });
  it('a restart resets since', () => {
    let r = observe(observe(undefined, sample(0, 50e6)), sample(5, 50e6));
    r = observe(r, sample(9, 1e6, 10, '2026-11-22T10:00:08Z'));
    assert.equal(r.samples, 1);
    assert.equal(r.since, t(9).toISOString());
  });
  it('never negative (an as-of before since)', () => {
    const r = observe(observe(undefined, sample(0, 50e6)), sample(5, 50e6));
    assert.equal(idleSeconds(r, t(-100)), 0);
  });
});

describe('the process rule (hermes background jobs: a quiet job holds processes, not CPU)', () => {
  it('the limit is the init and the command: 2 with HostConfig.Init, 1 without, or --idle-max-processes', () => {
    assert.equal(processLimit(true), 2);
    assert.equal(processLimit(false), 1);
    assert.equal(processLimit(true, 5), 5);
    assert.equal(processLimit(false, 5), 5);
  });
  it('more processes than the limit is in use (zombies count: the cgroup counts them); no count is unknown', () => {
    assert.equal(occupancy({ pids: 2 }, 2), 'quiet');
    assert.equal(occupancy({ pids: 4 }, 2), 'in-use'); // measured: a bare --init sandbox 2, with a job left behind 4
    assert.equal(occupancy({ pids: 2 }, 1), 'in-use'); // no init: sleep plus a job
    assert.equal(occupancy({ pids: 1 }, 1), 'quiet');
    assert.equal(occupancy({}, 2), 'unknown');
  });
  it('no proof starts while it is in use or the count is unknown; it starts at the first quiet sample', () => {
    let r = observe(undefined, withPids(sample(0, 50e6), 4), 2);
    assert.deepEqual([r.samples, r.since], [0, t(0).toISOString()]);
    r = observe(r, withPids(sample(600, 50e6), 4), 2); // flat counters for 10 minutes: still in use
    assert.deepEqual([r.samples, r.since, idleSeconds(r, t(600))], [0, t(600).toISOString(), null]);
    r = observe(r, sample(700, 50e6), 2); // the job ended; its counters did not move
    assert.deepEqual([r.samples, r.since, idleSeconds(r, t(700))], [1, t(700).toISOString(), null]);
    r = observe(r, sample(800, 50e6), 2);
    assert.equal(idleSeconds(r, t(800)), 100); // measured from the first sample that was not in use
    const unknown = observe(r, withPids(sample(900, 50e6), undefined), 2);
    assert.deepEqual([unknown.samples, idleSeconds(unknown, t(900))], [0, null]);
  });
  it('the default limit is that of hermes sandboxes (2); a container without init passes its own', () => {
    assert.equal(observe(undefined, withPids(sample(0, 50e6), 3)).samples, 0);
    assert.equal(observe(undefined, withPids(sample(0, 50e6), 2), processLimit(false)).samples, 0);
    assert.equal(observe(undefined, withPids(sample(0, 50e6), 1), processLimit(false)).samples, 1);
  });
  it('records written before the count was kept stay valid: the proof goes on with a counted sample', () => {
    const old: IdleRecord = { last: withPids(sample(0, 50e6), undefined), since: t(0).toISOString(), samples: 3 };
    const r = observe(old, sample(600, 50e6), 2);
    assert.deepEqual([r.samples, r.since], [4, t(0).toISOString()]);
    // But it is never stopped on the old record alone: its own sample has no count.
    const d = decideStop({ enabled: true, startedAt: START, execIds: [], record: old, processLimit: 2 }, t(7200), 600);
    assert.deepEqual(d, { stop: false, why: 'processes-unknown', idleSeconds: 7200 });
  });
});

describe('decideStop', () => {
  const idleRec = (since: number, at: number): IdleRecord => ({ last: sample(at, 50e6), since: t(since).toISOString(), samples: 2 });
  const base = { enabled: true, startedAt: START, execIds: [] as string[] };
  it('stops at exactly the idle threshold', () => {
    assert.deepEqual(decideStop({ ...base, record: idleRec(0, 100) }, t(600), 600), { stop: true, idleSeconds: 600 });
    assert.deepEqual(decideStop({ ...base, record: idleRec(0, 100) }, t(599.999), 600).stop, false);
  });
  it('each condition alone keeps it running', () => {
    const rec = idleRec(0, 100);
    const why = (input: Parameters<typeof decideStop>[0], at = t(7200)) => {
      const d = decideStop(input, at, 600);
      return d.stop ? 'stop' : d.why;
    };
    assert.equal(why({ ...base, record: rec }), 'stop');
    assert.equal(why({ ...base, record: rec, enabled: false }), 'stop-idle-off');
    assert.equal(why({ ...base, record: undefined }), 'stats-unavailable');
    assert.equal(why({ ...base, record: { ...rec, samples: 1 } }), 'observing');
    assert.equal(why({ ...base, record: rec }, t(300)), 'idle-too-recent');
    assert.equal(why({ ...base, record: rec, startedAt: t(7000).toISOString() }), 'started-recently');
    assert.equal(why({ ...base, record: rec, startedAt: 'garbage' }), 'started-recently');
    assert.equal(why({ ...base, record: rec, execIds: ['abc'] }), 'exec-in-flight');
    assert.equal(why({ ...base, record: { ...rec, last: withPids(rec.last, 4) } }), 'in-use');
    assert.equal(why({ ...base, record: { ...rec, last: withPids(rec.last, undefined) } }), 'processes-unknown');
    assert.equal(why({ ...base, record: { ...rec, last: withPids(rec.last, 4) }, processLimit: 4 }), 'stop');
    assert.equal(why({ ...base, record: rec, processLimit: 1 }), 'in-use'); // no init: sleep + one more
    // The extra processes of a sandbox with an exec in flight are (at least) that exec's: it says so.
    assert.equal(why({ ...base, record: { ...rec, last: withPids(rec.last, 3) }, execIds: ['e1'] }), 'exec-in-flight');
  });
  it('in use and unknown counts win over the switch being off (the entry says what the sandbox is doing)', () => {
    const rec = { ...idleRec(0, 100), last: withPids(sample(100, 50e6), 4) };
    const d = decideStop({ ...base, enabled: false, record: rec }, t(7200), 600);
    assert.equal(d.stop ? 'stop' : d.why, 'in-use');
  });
});

describe('reproved (the re-check right before a stop)', () => {
  const last = sample(100, 50e6);
  const ok = { running: true, startedAt: START, execIds: [] as string[], sample: sample(100.05, 50e6) };
  it('holds only when it still runs, same start, no exec, no activity', () => {
    assert.equal(reproved(last, ok), true);
    assert.equal(reproved(last, { ...ok, running: false }), false);
    assert.equal(reproved(last, { ...ok, startedAt: '2026-11-22T10:01:00Z' }), false);
    assert.equal(reproved(last, { ...ok, execIds: ['e1'] }), false);
    assert.equal(reproved(last, { ...ok, sample: null }), false);
    assert.equal(reproved(last, { ...ok, sample: sample(100.05, 50e6, 1470) }), false);
  });
  it('a background job started since the last sample (more processes, counters flat) prevents the stop', () => {
    assert.equal(reproved(last, { ...ok, sample: withPids(ok.sample, 3) }), false);
    assert.equal(reproved(last, { ...ok, sample: withPids(ok.sample, undefined) }), false);
    assert.equal(reproved(last, { ...ok, sample: withPids(ok.sample, 3), processLimit: 3 }), true);
    assert.equal(reproved(withPids(last, 1), { ...ok, sample: withPids(ok.sample, 2), processLimit: 1 }), false);
  });
});

describe('idle state document', () => {
  it('drops malformed records and whole malformed files', () => {
    assert.deepEqual(parseIdleState('garbage'), { version: 1, engines: {} });
    assert.deepEqual(parseIdleState({ version: 2, engines: {} }), { version: 1, engines: {} });
    const good: IdleRecord = { last: sample(0, 1), since: t(0).toISOString(), samples: 1 };
    const doc = parseIdleState({ version: 1, engines: { h: { a: good, b: { last: { cpuNs: 'x' } }, c: null } } });
    assert.deepEqual(doc, { version: 1, engines: { h: { a: good } } });
  });
  it("keeps a sample's init pid when it is one, and the record without it when it is not", () => {
    const withPid: IdleRecord = { last: { ...sample(0, 1), pid: 4242 }, since: t(0).toISOString(), samples: 2 };
    const bad = (pid: unknown) => ({ ...withPid, last: { ...withPid.last, pid } });
    const doc = parseIdleState({ version: 1, engines: { h: { a: withPid, b: bad(-1), c: bad('4242'), d: bad(1.5), e: bad(0) } } });
    const without = { ...withPid, last: sample(0, 1) };
    assert.deepEqual(doc.engines.h, { a: withPid, b: without, c: without, d: without, e: without });
  });
  it("keeps a sample's process count when it is one, drops it when not; keeps records of a proof not started", () => {
    const counted: IdleRecord = { last: withPids(sample(0, 1), 4), since: t(0).toISOString(), samples: 0 };
    const bad = (pids: unknown) => ({ ...counted, last: { ...counted.last, pids } });
    const doc = parseIdleState({ version: 1, engines: { h: { a: counted, b: bad(0), c: bad('4'), d: bad(2.5), e: { ...counted, samples: -1 } } } });
    const without = { ...counted, last: withPids(counted.last, undefined) };
    assert.deepEqual(doc.engines.h, { a: counted, b: without, c: without, d: without });
  });
  it('merges one engine, forgetting ids and leaving other engines alone', () => {
    const r: IdleRecord = { last: sample(0, 1), since: t(0).toISOString(), samples: 1 };
    const cur = { version: 1 as const, engines: { h1: { a: r, b: r }, h2: { x: r } } };
    const next = mergeIdleState(cur, 'h1', new Map([['c', r]]), ['a', 'b']);
    assert.deepEqual(next, { version: 1, engines: { h1: { c: r }, h2: { x: r } } });
    assert.deepEqual(mergeIdleState(next, 'h1', new Map(), ['c']).engines, { h2: { x: r } });
  });
});
