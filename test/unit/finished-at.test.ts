import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseFinishedAt } from '../../src/core/finished-at.js';

const ms = (iso: string) => Date.parse(iso);

describe('parseFinishedAt', () => {
  it('parses nanosecond fractions without losing the sub-millisecond part', () => {
    assert.deepEqual(parseFinishedAt('2026-11-22T13:42:57.388521162Z'), {
      kind: 'time',
      epochMs: ms('2026-11-22T13:42:57.388Z'),
      subMsNanos: 521162,
    });
  });

  it('accepts 0 to 9 fraction digits', () => {
    assert.deepEqual(parseFinishedAt('2026-11-22T13:42:57Z'), { kind: 'time', epochMs: ms('2026-11-22T13:42:57Z'), subMsNanos: 0 });
    assert.deepEqual(parseFinishedAt('2026-11-22T13:42:57.5Z'), { kind: 'time', epochMs: ms('2026-11-22T13:42:57.500Z'), subMsNanos: 0 });
    assert.deepEqual(parseFinishedAt('2026-11-22T13:42:57.0000001Z'), { kind: 'time', epochMs: ms('2026-11-22T13:42:57Z'), subMsNanos: 100 });
  });

  it('applies offsets', () => {
    const utc = parseFinishedAt('2026-11-22T13:42:57.1Z');
    assert.deepEqual(parseFinishedAt('2026-11-22T15:42:57.1+02:00'), utc);
    assert.deepEqual(parseFinishedAt('2026-11-22T08:12:57.1-05:30'), utc);
    assert.deepEqual(parseFinishedAt('2026-11-23T00:12:57.1+10:30'), utc);
  });

  it('recognises the zero value', () => {
    assert.deepEqual(parseFinishedAt('0001-01-01T00:00:00Z'), { kind: 'zero' });
    assert.equal(parseFinishedAt('0001-01-01T00:00:00.000000001Z').kind, 'time');
  });

  it('rejects garbage and impossible dates without throwing', () => {
    for (const bad of [
      '',
      'yesterday',
      '2026-11-22',
      '2026-11-22 13:42:57Z',
      '2026-11-22T13:42:57',
      '2026-13-01T00:00:00Z',
      '2026-02-29T00:00:00Z',
      '2026-04-31T00:00:00Z',
      '2026-11-22T24:00:00Z',
      '2026-11-22T13:60:00Z',
      '2026-11-22T13:42:60Z',
      '2026-11-22T13:42:57.1234567890Z',
      '2026-11-22T13:42:57+2:00',
      '2026-11-22T13:42:57+24:00',
      ' 2026-11-22T13:42:57Z',
      '2026-11-22T13:42:57Z\n',
      '２０２６-11-22T13:42:57Z',
    ]) {
      assert.deepEqual(parseFinishedAt(bad), { kind: 'invalid' }, bad);
    }
    for (const notString of [null, undefined, 0, {}, []]) assert.deepEqual(parseFinishedAt(notString), { kind: 'invalid' });
  });

  it('accepts leap days and lower-case separators', () => {
    assert.equal(parseFinishedAt('2024-02-29T00:00:00Z').kind, 'time');
    assert.deepEqual(parseFinishedAt('2026-11-22t13:42:57z'), parseFinishedAt('2026-11-22T13:42:57Z'));
  });
});
