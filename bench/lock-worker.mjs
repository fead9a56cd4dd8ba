// One contender in `npm run stress:lock` (bench/stress-lock.ts): takes the lock from the built library
// (dist/adapters/file-lock.js), proves exclusivity with an O_EXCL marker file inside the critical section, and
// prints one JSON line per acquisition. Modes: `loop` (take, work, release until the deadline) and `die` (take,
// work, exit without releasing). Arguments: mode, lock directory, deadline (epoch ms), staleMs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { acquireLock } = await import(path.join(repo, 'dist', 'adapters', 'file-lock.js'));
// The marker names its owner as the lock does (pid + start time + boot): pids wrap (32,768 here), and a killed
// owner's pid may already belong to another process.
const { liveness, selfIdentity } = await import(path.join(repo, 'dist', 'adapters', 'process-identity.js'));
const [mode, dir, deadlineArg, staleArg] = process.argv.slice(2);
const deadline = Number(deadlineArg);
const staleMs = Number(staleArg);
const lockPath = path.join(dir, 'stress.lock');
const marker = path.join(dir, 'critical');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

/** Enters the critical section: returns false (and reports) if someone else is in it. */
function enter() {
  for (;;) {
    try {
      const fd = fs.openSync(marker, 'wx');
      fs.writeSync(fd, JSON.stringify(selfIdentity()));
      fs.closeSync(fd);
      return true;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    let owner = null;
    let age = 0;
    try {
      age = Date.now() - fs.statSync(marker).mtimeMs;
      owner = JSON.parse(fs.readFileSync(marker, 'utf8'));
    } catch (e) {
      if (e.code === 'ENOENT') continue; // it just left
      if (age < 1000) continue; // being written
      owner = { pid: 0 }; // empty for a second: its writer was killed between creating and writing it
    }
    if (owner.pid === 0 || liveness(owner) === 'dead') {
      // A holder killed inside its critical section: its lock was rightly taken over.
      out({ killedInside: owner.pid });
      try {
        fs.unlinkSync(marker);
      } catch {
        /* gone */
      }
      continue;
    }
    out({ overlap: true, with: owner?.pid });
    return false;
  }
}

async function once() {
  const start = Date.now();
  const lock = await acquireLock(lockPath, { waitMs: 30_000, staleMs });
  const wait = Date.now() - start;
  if (!lock) {
    out({ timeout: true, wait });
    return false;
  }
  const ok = enter();
  out({ wait });
  await sleep(Math.random() * 3);
  if (ok) fs.unlinkSync(marker);
  if (mode === 'die') process.exit(0);
  await lock.release();
  return true;
}

if (mode === 'die') {
  await once();
} else {
  while (Date.now() < deadline) {
    await once();
    await sleep(Math.random() * 15);
  }
}
