import { sha256 } from '@noble/hashes/sha2.js';

// SHA-256 from @noble/hashes (the sha2 subpath only): pure JavaScript, so the start-up fast paths (hooks, shell
// start-up) do not pay for loading node:crypto, and esbuild bundles it into dist/fast-path.cjs. Text goes in and hex
// comes out through Buffer, which Node.js has loaded already: noble's own helpers would build a TextEncoder and a
// table of 256 hex strings on every start-up.

/** SHA-256 (lower-case hex) of a string's UTF-8 bytes (a lone surrogate counts as U+FFFD, as in Buffer.from). */
export function sha256Hex(text: string): string {
  const digest = sha256(Buffer.from(text, 'utf8'));
  return Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).toString('hex');
}
