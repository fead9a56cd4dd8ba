import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { sha256Hex } from '../../src/util/sha256.js';
import { writeAllSync } from '../../src/util/write-all.js';
import { tempDir } from '../helpers/cli.js';

describe('sha256Hex', () => {
  const ref = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

  it("is node:crypto's SHA-256 of the text's UTF-8 bytes, in lower-case hex, at every length from 0 to 300 bytes", () => {
    for (let n = 0; n <= 300; n++) assert.equal(sha256Hex('x'.repeat(n)), ref('x'.repeat(n)), `${n} bytes`);
    for (const text of ['é🙂 naïve', 'lone \ud800 surrogate', 'trailing \udfff', 'a\u0000b', 'x'.repeat(1_000_000)]) {
      assert.equal(sha256Hex(text), ref(text), JSON.stringify(text.slice(0, 20)));
    }
  });

  it('matches node:crypto on random text (every code point class, lone surrogates included)', () => {
    let seed = 20;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const pools = [
      [0x20, 0x7f],
      [0x80, 0x800],
      [0x800, 0xd800],
      [0xd800, 0xe000],
      [0xe000, 0x10000],
      [0x10000, 0x110000],
    ];
    for (let i = 0; i < 500; i++) {
      let text = '';
      for (let j = next() % 90; j > 0; j--) {
        const [lo, hi] = pools[next() % pools.length]!;
        text += String.fromCodePoint(lo! + (next() % (hi! - lo!)));
      }
      assert.equal(sha256Hex(text), ref(text), JSON.stringify(text));
    }
  });

  it('gives the FIPS 180-2 test vectors', () => {
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.equal(sha256Hex(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    assert.equal(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'), '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
    assert.equal(sha256Hex('a'.repeat(1_000_000)), 'cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0');
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
