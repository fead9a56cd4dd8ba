import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

// SHA-256 from @noble/hashes (the sha2 subpath only): pure JavaScript, so the start-up fast paths (hooks, shell
// start-up) do not pay for loading node:crypto, and esbuild bundles it into dist/fast-path.cjs.

/** SHA-256 (lower-case hex) of a string's UTF-8 bytes (a lone surrogate counts as U+FFFD, as in Buffer.from). */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}
