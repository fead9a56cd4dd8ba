import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValueError, parseDuration, parseInstant, parseWholeNumber } from '../../src/core/parse-args.js';
import { parseLabelMatcher, engineLabelFilters, isSelected, isExcluded, defaultSelection } from '../../src/core/selection.js';

describe('flag parsers', () => {
  it('whole numbers', () => {
    assert.equal(parseWholeNumber('0', '--lifetime'), 0);
    assert.equal(parseWholeNumber(' 300 ', '--lifetime'), 300);
    for (const bad of ['abc', '-1', '1.5', '1e3', '', '0x10', '99999999999999999999']) {
      assert.throws(
        () => parseWholeNumber(bad, '--lifetime'),
        (e: Error) => e instanceof ValueError && e.message.includes('--lifetime'),
      );
    }
    assert.throws(() => parseWholeNumber('0', '--concurrency', 1), /--concurrency must be a whole number >= 1, got '0'/);
  });
  it('ISO-8601 instants', () => {
    assert.equal(parseInstant('2026-11-22T10:00:00Z', 'x').toISOString(), '2026-11-22T10:00:00.000Z');
    assert.equal(parseInstant('2026-11-22T12:00:00+02:00', 'x').toISOString(), '2026-11-22T10:00:00.000Z');
    assert.equal(parseInstant('2026-11-22T12:00:00.123456789+0200', 'x').toISOString(), '2026-11-22T10:00:00.123Z');
    assert.equal(parseInstant('2026-11-22', 'x').toISOString(), '2026-11-22T00:00:00.000Z');
    assert.equal(parseInstant('2026-11-22T10:00', 'x').toISOString(), '2026-11-22T10:00:00.000Z');
    for (const bad of ['tomorrow', '2026-02-30', '2026-11-22T25:00:00Z', '22/11/2026', '', '1700000000']) {
      assert.throws(() => parseInstant(bad, '--as-of'), /--as-of must be an ISO-8601 instant/);
    }
  });
  it('durations', () => {
    assert.equal(parseDuration('90s', 'x'), 90_000);
    assert.equal(parseDuration('30m', 'x'), 1_800_000);
    assert.equal(parseDuration('1h', 'x'), 3_600_000);
    assert.equal(parseDuration('1d', 'x'), 86_400_000);
    assert.equal(parseDuration('15', 'x'), 15_000);
    assert.equal(parseDuration('0', 'x', true), 0);
    assert.throws(() => parseDuration('0', '--once-per'), /--once-per must be a duration/);
    assert.throws(() => parseDuration('soon', 'x'), ValueError);
  });
});

describe('selection', () => {
  it('parses KEY and KEY=VALUE', () => {
    assert.deepEqual(parseLabelMatcher('keep'), { key: 'keep' });
    assert.deepEqual(parseLabelMatcher('a=b=c'), { key: 'a', value: 'b=c' });
    assert.deepEqual(parseLabelMatcher('a='), { key: 'a', value: '' });
    assert.throws(() => parseLabelMatcher('=x'), ValueError);
  });
  it('builds engine filters and re-checks labels client-side', () => {
    const sel = defaultSelection('work');
    assert.deepEqual(engineLabelFilters(sel), ['hermes-agent=1', 'hermes-profile=work']);
    assert.ok(isSelected(sel, { 'hermes-agent': '1', 'hermes-profile': 'work' }));
    assert.ok(!isSelected(sel, { 'hermes-agent': '0', 'hermes-profile': 'work' }));
    assert.ok(!isSelected(sel, { 'hermes-agent': '1', 'hermes-profile': 'other' }));
    assert.ok(!isSelected(sel, { 'hermes-profile': 'work' }));
    const all = defaultSelection(null);
    assert.deepEqual(engineLabelFilters(all), ['hermes-agent=1']);
    assert.ok(isSelected(all, { 'hermes-agent': '1' }));
    sel.exclude = [{ key: 'keep' }, { key: 'tier', value: 'gold' }];
    assert.ok(isExcluded(sel, { keep: '' }));
    assert.ok(isExcluded(sel, { tier: 'gold' }));
    assert.ok(!isExcluded(sel, { tier: 'silver' }));
  });
});
