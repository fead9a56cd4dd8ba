import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DIR_SLICE, forEachSlice, readDirCapped, readDirSliced } from '../../src/adapters/dir-slices.js';

describe('dir-slices: the bounded directory reader', () => {
  let dir = '';
  const N = 1000;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'hj-dir-slices-'));
    for (let i = 0; i < N; i++) writeFileSync(path.join(dir, `${i % 10 === 0 ? 'keep' : 'other'}-${i}`), '');
    mkdirSync(path.join(dir, 'keep-dir'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps only what keep accepts, reads every entry without a cap, and says nothing more', () => {
    const r = readDirCapped(dir, { max: Infinity, keep: (e) => (e.name.startsWith('keep') ? e.name : null) });
    assert.equal(r.kept.length, N / 10 + 1);
    assert.equal(r.more, undefined);
  });

  it('reads at most max entries and says there were more (exactly max: not more)', () => {
    const r = readDirCapped(dir, { max: 100, keep: (e) => e.name });
    assert.equal(r.kept.length, 100);
    assert.equal(r.more, true);
    const all = readDirCapped(dir, { max: N + 1, keep: (e) => e.name });
    assert.equal(all.kept.length, N + 1);
    assert.equal(all.more, undefined);
  });

  it('the sliced form gives the loop a turn every slice, and stops when pause answers true', async () => {
    let turns = 0;
    const r = await readDirSliced(dir, { max: Infinity, keep: (e) => e.name, pause: async () => ++turns >= 2 });
    assert.equal(turns, 2);
    assert.equal(r.cutShort, true);
    assert.equal(r.kept.length, 2 * DIR_SLICE - 1);
    const capped = await readDirSliced(dir, { max: 300, keep: (e) => (e.isDirectory() ? e.name : null) });
    assert.equal(capped.more, true);
  });

  it('forEachSlice hands every name over a slice at a time, also while they are removed', async () => {
    const sub = mkdtempSync(path.join(os.tmpdir(), 'hj-dir-slices-rm-'));
    try {
      for (let i = 0; i < 3 * DIR_SLICE + 5; i++) writeFileSync(path.join(sub, `f${i}`), '');
      const sizes: number[] = [];
      await forEachSlice(sub, async (names) => {
        sizes.push(names.length);
        for (const n of names) unlinkSync(path.join(sub, n));
        return true;
      });
      assert.ok(sizes.every((n) => n <= DIR_SLICE));
      assert.equal(
        sizes.reduce((a, b) => a + b, 0),
        3 * DIR_SLICE + 5,
      );
      assert.equal(readDirCapped(sub, { max: Infinity, keep: (e) => e.name }).kept.length, 0);
    } finally {
      rmSync(sub, { recursive: true, force: true });
    }
  });
});
