import fs from 'node:fs';

/**
 * Writes all of `text` (as UTF-8) to `fd` at its current offset, going on after a short write. What
 * `fs.writeFileSync(fd, text)` does, without its layers: a hook that writes no other way than `fs.writeSync` (its
 * answer goes out through it) does not pay for compiling them on every call.
 */
export function writeAllSync(fd: number, text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  for (let off = 0; off < bytes.length; ) off += fs.writeSync(fd, bytes, off);
}
