import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judge, thresholdSeconds } from '../../src/core/policy.js';

const FIN = '2026-11-22T10:00:00.000000000Z';
const at = (iso: string) => new Date(iso);

describe('thresholdSeconds', () => {
  it('is 2 x max(lifetime, 60)', () => {
    assert.equal(thresholdSeconds(300), 600);
    assert.equal(thresholdSeconds(0), 120);
    assert.equal(thresholdSeconds(59), 120);
    assert.equal(thresholdSeconds(60), 120);
    assert.equal(thresholdSeconds(61), 122);
  });
});

describe('judge', () => {
  it('reaps at exactly the threshold and keeps one nanosecond before it', () => {
    assert.deepEqual(judge({ running: false, finishedAt: FIN }, at('2026-11-22T10:10:00Z'), 600), { verdict: 'reap', ageSeconds: 600, rule: 'exited' });
    const v = judge({ running: false, finishedAt: '2026-11-22T10:00:00.000000001Z' }, at('2026-11-22T10:10:00Z'), 600);
    assert.equal(v.verdict, 'keep');
    assert.equal(v.verdict === 'keep' && v.reason, 'too-recent');
  });

  it('never reaps running, zero, unparseable or future containers', () => {
    const late = at('2099-01-01T00:00:00Z');
    assert.deepEqual(judge({ running: true, finishedAt: FIN }, late, 120), {
      verdict: 'keep',
      reason: 'running',
      ageSeconds: (late.getTime() - Date.parse(FIN)) / 1000,
      rule: null,
    });
    assert.deepEqual(judge({ running: false, finishedAt: '0001-01-01T00:00:00Z' }, late, 120), {
      verdict: 'keep',
      reason: 'zero-finished-at',
      ageSeconds: null,
      rule: 'exited',
    });
    assert.deepEqual(judge({ running: false, finishedAt: 'soon' }, late, 120), {
      verdict: 'keep',
      reason: 'unparseable-finished-at',
      ageSeconds: null,
      rule: 'exited',
    });
    const future = judge({ running: false, finishedAt: FIN }, at('2026-11-22T09:59:59Z'), 120);
    assert.deepEqual(future, { verdict: 'keep', reason: 'future-finished-at', ageSeconds: -1, rule: 'exited' });
  });

  it('excluded wins over every other reason', () => {
    const late = at('2099-01-01T00:00:00Z');
    for (const input of [
      { running: true, finishedAt: FIN },
      { running: false, finishedAt: FIN },
      { running: false, finishedAt: '0001-01-01T00:00:00Z' },
    ]) {
      const v = judge({ ...input, excluded: true }, late, 120);
      assert.equal(v.verdict === 'keep' && v.reason, 'excluded');
    }
  });

  it('never-started: a created container with a zero StartedAt is aged by its Created time', () => {
    const created = '2026-11-22T10:00:00.000000001Z';
    const base = { running: false, finishedAt: '0001-01-01T00:00:00Z', status: 'created', startedAt: '0001-01-01T00:00:00Z', created };
    const young = judge(base, at('2026-11-22T10:01:59Z'), 120);
    assert.deepEqual(young, { verdict: 'keep', reason: 'too-recent', ageSeconds: 118.999999999, rule: 'never-started' });
    const old = judge(base, at('2026-11-22T10:02:00.001Z'), 120);
    assert.equal(old.verdict, 'reap');
    assert.equal(old.rule, 'never-started');
    // One nanosecond short of the threshold: kept.
    assert.equal(judge(base, at('2026-11-22T10:02:00Z'), 120).verdict, 'keep');
    // A created container that did start once is not the never-started rule (FinishedAt zero: kept).
    const started = judge({ ...base, startedAt: '2026-11-22T10:00:05Z' }, at('2099-01-01T00:00:00Z'), 120);
    assert.deepEqual([started.verdict, started.rule], ['keep', 'exited']);
    // Excluded still wins.
    assert.equal(judge({ ...base, excluded: true }, at('2099-01-01T00:00:00Z'), 120).verdict, 'keep');
    // A bad Created time is never reaped.
    const bad = judge({ ...base, created: 'garbage' }, at('2099-01-01T00:00:00Z'), 120);
    assert.deepEqual([bad.verdict, bad.verdict === 'keep' && bad.reason], ['keep', 'unparseable-finished-at']);
  });

  it('a running container falls under the idle rule', () => {
    const v = judge({ running: true, finishedAt: '0001-01-01T00:00:00Z', status: 'running', startedAt: FIN }, at('2099-01-01T00:00:00Z'), 120);
    assert.deepEqual([v.verdict, v.rule], ['keep', 'idle']);
  });

  it('reports the age in seconds with sub-second precision', () => {
    const v = judge({ running: false, finishedAt: '2026-11-22T10:00:00.250Z' }, at('2026-11-22T10:00:10Z'), 600);
    assert.equal(v.ageSeconds, 9.75);
  });
});

describe('finishedAgo (reap lines)', async () => {
  const asOf = new Date('2026-11-22T10:00:00Z');
  const { finishedAgo } = await import('../../src/cli/render-containers.js');
  const e = (ageSeconds: number | null, finishedAt = '2026-11-22T10:00:00Z') => ({
    id: 'x',
    name: 'n',
    profile: 'p',
    state: 'exited',
    finishedAt,
    ageSeconds,
    host: 'h',
    rule: 'exited' as const,
  });
  it('says how long ago, in the largest whole unit', () => {
    assert.equal(finishedAgo(e(0.4), asOf), '0 seconds ago');
    assert.equal(finishedAgo(e(59), asOf), '59 seconds ago');
    assert.equal(finishedAgo(e(600), asOf), '10 minutes ago');
    assert.equal(finishedAgo(e(3 * 3600 + 59), asOf), '3 hours ago');
    assert.equal(finishedAgo(e(2 * 86_400), asOf), '2 days ago');
    assert.equal(finishedAgo(e(400 * 86_400), asOf), '1 year ago');
    assert.equal(finishedAgo(e(-120), asOf), 'in 2 minutes');
    assert.equal(finishedAgo(e(null, '0001-01-01T00:00:00Z'), asOf), 'never');
    assert.equal(finishedAgo(e(null, 'garbage'), asOf), '-');
  });
});
