/** `--json` is written in pieces (a 100k-entry report is never one string): the same bytes as JSON.stringify. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { jsonPieces } from '../../src/cli/shared.js';

const whole = (v: unknown) => [...jsonPieces(v)].join('');
const expected = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

describe('jsonPieces', () => {
  it('writes what JSON.stringify(value, null, 2) writes, for any JSON-like document', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (doc) => whole(doc) === expected(doc)),
      { numRuns: 500 },
    );
  });

  it('leaves out what JSON.stringify leaves out (undefined, functions, symbols) and calls toJSON', () => {
    const doc = {
      a: undefined,
      b: () => 1,
      c: Symbol('x'),
      d: null,
      e: [new Date(0), undefined, () => 2],
      f: { g: undefined, h: 1 },
      removed: Array.from({ length: 3000 }, (_, i) => ({ id: `c${i}`, ageSeconds: i / 3, profile: i % 2 ? null : 'p' })),
    };
    assert.equal(whole(doc), expected(doc));
    assert.ok([...jsonPieces(doc)].length > 1, 'a large array is written in several pieces');
    assert.equal(whole({ a: undefined }), '{}\n');
    assert.equal(whole(new Date(0)), expected(new Date(0)));
  });
});
