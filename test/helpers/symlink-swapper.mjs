// The attacker of the removal race test, as the tmpwatch exploits did it: it watches the subdirectories (`d<n>`) of
// whatever task directory is under <docker dir> (claimed or not), and the moment one has fewer than <files> entries
// (the remover is inside it, past its checks), moves it aside and puts a symlink to <outside> in its place. Each
// subdirectory once. Runs until SIGTERM, then prints `{"swaps": N}` on stdout.
// Usage: node symlink-swapper.mjs <docker dir> <outside> <files>
import { readdirSync, renameSync, symlinkSync } from 'node:fs';
import path from 'node:path';

const [dockerDir, outside, filesArg] = process.argv.slice(2);
const files = Number(filesArg);
const swapped = new Set();
let stop = false;
process.on('SIGTERM', () => (stop = true));
process.stdout.write('ready\n');

const list = (p) => {
  try {
    return readdirSync(p);
  } catch {
    return null;
  }
};

function round() {
  for (const t of list(dockerDir) ?? []) {
    const top = path.join(dockerDir, t);
    for (const n of list(top) ?? []) {
      if (!/^d\d+$/.test(n) || swapped.has(n)) continue;
      const p = path.join(top, n);
      const inside = list(p);
      if (inside === null || inside.length >= files) continue;
      try {
        renameSync(p, `${p}.aside`);
        symlinkSync(outside, p);
        swapped.add(n);
      } catch {
        // gone meanwhile: next
      }
    }
  }
}

// Synchronous bursts, with a turn of the event loop between them to see SIGTERM.
const loop = () => {
  if (stop) {
    process.stdout.write(`${JSON.stringify({ swaps: swapped.size })}\n`);
    return;
  }
  for (let i = 0; i < 5; i++) round();
  setImmediate(loop);
};
loop();
