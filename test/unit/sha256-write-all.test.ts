import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { sha256Hex } from '../../src/util/sha256.js';
import { writeAllSync } from '../../src/util/write-all.js';
import { tempDir } from '../helpers/cli.js';

describe('sha256Hex', () => {
  it("is node:crypto's SHA-256 of the text's UTF-8 bytes, in lower-case hex", () => {
    for (const text of ['', 'abc', 'é🙂 naïve', 'x'.repeat(1000), 'lone \ud800 surrogate', 'trailing \udfff']) {
      assert.equal(sha256Hex(text), createHash('sha256').update(text, 'utf8').digest('hex'), JSON.stringify(text));
    }
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'); // FIPS 180-2 test vector
  });
});

describe('writeAllSync', () => {
  const tmp = tempDir('hj-write-all-');
  after(tmp.cleanup);

  it('writes every byte of the text as UTF-8, at the descriptor offset', () => {
    const file = path.join(tmp.dir, 'out.txt');
    const text = `${'é🙂'.repeat(400_000)}end`; // 2.4 MB
    const fd = fs.openSync(file, 'w');
    try {
      fs.writeSync(fd, 'head:');
      writeAllSync(fd, text);
    } finally {
      fs.closeSync(fd);
    }
    assert.equal(fs.readFileSync(file, 'utf8'), `head:${text}`);
  });

  it('goes on after a short write', (t) => {
    const calls: number[] = [];
    const real = fs.writeSync;
    const file = path.join(tmp.dir, 'short.txt');
    const fd = fs.openSync(file, 'w');
    // A descriptor that takes at most 1000 bytes a call, as a nearly full disk or an interrupted write does.
    t.mock.method(fs, 'writeSync', (f: number, b: Buffer, off: number) => {
      const n = Math.min(1000, b.length - off);
      calls.push(n);
      return real(f, b, off, n);
    });
    try {
      writeAllSync(fd, 'ab€'.repeat(1500));
    } finally {
      t.mock.restoreAll();
      fs.closeSync(fd);
    }
    assert.equal(fs.readFileSync(file, 'utf8'), 'ab€'.repeat(1500));
    assert.deepEqual(calls, [1000, 1000, 1000, 1000, 1000, 1000, 1000, 500]);
  });
});
