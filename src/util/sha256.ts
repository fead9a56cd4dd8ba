// SHA-256 (FIPS 180-4), written out here rather than taken from a library: the hooks hash every tool call and run as a
// fresh process each time, so what counts is the cost of a first call. node:crypto takes about 2.5 ms to load;
// @noble/hashes, used before, cost a hook about 0.25 ms more than this (its classes, checks and set-up run at every
// start-up), as did sha256-uint8array (both measured in the hook's bundle, in turn, 80 runs each). Checked against
// node:crypto on every length from 0 to 300 bytes, multi-byte text and lone surrogates (test/unit/sha256-write-all).

/** The first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
  0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d,
  0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e,
  0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
  0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** The first 32 bits of the fractional parts of the square roots of the first 8 primes. */
const H0 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/**
 * Mixes the 64-byte block of `m` at `at` into the state `h` (`w`: the message schedule, reused). The rotations are
 * written out (`(x >>> n) | (x << (32 - n))`): a hook runs this once or twice, in V8's interpreter, where a call per
 * rotation costs more than the rotation.
 */
function compress(h: Uint32Array, w: Uint32Array, m: Uint8Array, at: number): void {
  for (let i = 0; i < 16; i++, at += 4) w[i] = (m[at]! << 24) | (m[at + 1]! << 16) | (m[at + 2]! << 8) | m[at + 3]!;
  for (let i = 16; i < 64; i++) {
    const x = w[i - 15]!;
    const y = w[i - 2]!;
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    w[i] = w[i - 16]! + s0 + w[i - 7]! + s1;
  }
  let a = h[0]!;
  let b = h[1]!;
  let c = h[2]!;
  let d = h[3]!;
  let e = h[4]!;
  let f = h[5]!;
  let g = h[6]!;
  let k = h[7]!;
  for (let i = 0; i < 64; i++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (k + s1 + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    k = g;
    g = f;
    f = e;
    e = (d! + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  h[0] = h[0]! + a;
  h[1] = h[1]! + b;
  h[2] = h[2]! + c;
  h[3] = h[3]! + d;
  h[4] = h[4]! + e;
  h[5] = h[5]! + f;
  h[6] = h[6]! + g;
  h[7] = h[7]! + k;
}

/** SHA-256 (lower-case hex) of a string's UTF-8 bytes (a lone surrogate counts as U+FFFD, as in Buffer.from). */
export function sha256Hex(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  const n = bytes.length;
  // The message, a 1 bit, zeros, and its length in bits (64 bits, big-endian), in whole 64-byte blocks.
  const m = new Uint8Array((((n + 8) >> 6) + 1) * 64);
  m.set(bytes);
  m[n] = 0x80;
  const bits = n * 8;
  const end = m.length;
  for (let i = 1, v = bits; i <= 4; i++, v = Math.floor(v / 256)) m[end - i] = v & 0xff;
  for (let i = 5, v = Math.floor(bits / 0x100000000); i <= 8; i++, v = Math.floor(v / 256)) m[end - i] = v & 0xff;
  const h = new Uint32Array(H0);
  const w = new Uint32Array(64);
  for (let at = 0; at < end; at += 64) compress(h, w, m, at);
  let hex = '';
  for (let i = 0; i < 8; i++) hex += h[i]!.toString(16).padStart(8, '0');
  return hex;
}
