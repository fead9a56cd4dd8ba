/** User names by uid, from this system's `/etc/passwd` (the first entry of a uid wins); empty when it cannot be read. */
import { readFileSync } from 'node:fs';

export function userNames(file = '/etc/passwd'): Map<number, string> {
  const out = new Map<number, string>();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const [name, , uid] = line.split(':');
    const n = Number(uid);
    if (name && uid !== undefined && /^\d+$/.test(uid) && !out.has(n)) out.set(n, name);
  }
  return out;
}
