/**
 * `npm run stress:lock [-- --seconds N --procs N --stale-ms N]` (after `npm run build`)
 *
 * The lock under contention with holders that die: `--procs` processes (default 6) take, use and release one lock
 * for `--seconds` (default 10), while short-lived processes take it and exit without releasing, and about half of
 * them are SIGKILLed at a random moment (before, inside or after taking it). Inside the critical section each holder
 * creates an exclusive marker file: finding it there, made by a live process, is an overlap. At the end one more
 * acquisition and release must leave the directory empty (temporary files of killed processes count once a minute
 * has passed, as for the next write). Prints the figures, then one JSON line; exits 1 if anything failed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const worker = path.join(repo, 'bench', 'lock-worker.mjs');
const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    procs: { type: 'string', default: '6' },
    'stale-ms': { type: 'string', default: '30000' },
  },
});
const seconds = Number(values.seconds);
const procs = Number(values.procs);
const staleMs = Number(values['stale-ms']);
if (!(seconds > 0) || !(procs > 0) || !(staleMs > 0)) {
  console.error('stress:lock: --seconds, --procs and --stale-ms take positive numbers');
  process.exit(2);
}
const { acquireLock, removeLeftovers, LEFTOVER_AGE_MS } = (await import(
  path.join(repo, 'dist', 'adapters', 'file-lock.js')
)) as typeof import('../src/adapters/file-lock.js');
const { liveness } = (await import(path.join(repo, 'dist', 'adapters', 'process-identity.js'))) as typeof import('../src/adapters/process-identity.js');

const dir = mkdtempSync(path.join(os.tmpdir(), 'hj-lock-stress-'));
const deadline = Date.now() + seconds * 1000;
const env = { ...process.env };
delete env.NODE_EXTRA_CA_CERTS; // adds ~40 ms to every node start here

const waits: number[] = [];
let overlaps = 0;
let timeouts = 0;
let killedInside = 0;
let died = 0;
let killed = 0;
let crashed = 0;

function run(mode: 'loop' | 'die'): ChildProcess {
  const child = spawn(process.execPath, [worker, mode, dir, String(deadline), String(staleMs)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let buf = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const o = JSON.parse(line) as { wait?: number; overlap?: boolean; timeout?: boolean; killedInside?: number };
      if (o.overlap) overlaps++;
      if (o.timeout) timeouts++;
      if (o.killedInside) killedInside++;
      if (typeof o.wait === 'number') waits.push(o.wait);
    }
  });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  child.on('exit', (code, signal) => {
    if (signal === 'SIGKILL') return;
    if (code !== 0) {
      crashed++;
      process.stderr.write(`stress:lock: a ${mode} worker exited ${code}: ${err.trim().split('\n').slice(-3).join(' | ')}\n`);
    }
  });
  return child;
}

const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));
const loops = Array.from({ length: procs }, () => run('loop'));
const diers: Promise<void>[] = [];
while (Date.now() < deadline) {
  const c = run('die');
  died++;
  if (Math.random() < 0.5) {
    const t = setTimeout(
      () => {
        if (c.exitCode === null && c.signalCode === null) {
          c.kill('SIGKILL');
          killed++;
        }
      },
      30 + Math.random() * 60,
    );
    c.once('exit', () => clearTimeout(t));
  }
  diers.push(exited(c));
  // At most two dying processes at a time, so the contenders keep the machine.
  await Promise.race([exited(c), new Promise((r) => setTimeout(r, 150))]);
}
await Promise.all([...loops.map(exited), ...diers]);

// One more taker finds the last dead holder's lock, takes it over, and releases it: nothing may remain.
const last = await acquireLock(path.join(dir, 'stress.lock'), { waitMs: 5000, staleMs });
if (!last) timeouts++;
// The critical-section marker is the workers' file, not the lock's: a dying process SIGKILLed inside its critical
// section after the others stopped leaves it, and the last taker clears it as a worker would (bench/lock-worker.mjs).
const marker = path.join(dir, 'critical');
if (last && existsSync(marker)) {
  let owner: { pid?: number } = { pid: 0 }; // empty: killed between creating and writing it
  try {
    owner = JSON.parse(readFileSync(marker, 'utf8')) as { pid?: number };
  } catch {
    /* empty or torn */
  }
  if (owner.pid === 0 || liveness(owner) === 'dead') {
    killedInside++;
    rmSync(marker, { force: true });
  } else overlaps++;
}
await last?.release();
const tempsOfKilled = readdirSync(dir).filter((n) => n.endsWith('.tmp')).length;
removeLeftovers(dir, Date.now() + LEFTOVER_AGE_MS + 1000); // as the next write a minute later would
const left = readdirSync(dir);
rmSync(dir, { recursive: true, force: true });

const sorted = [...waits].sort((a, b) => a - b);
const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
const result = {
  seconds,
  procs,
  acquisitions: waits.length,
  dyingProcesses: died,
  killed,
  killedInsideCriticalSection: killedInside,
  overlaps,
  timeouts,
  crashed,
  waitMs: { p50: q(0.5), p99: q(0.99), max: sorted.at(-1) ?? 0 },
  tempsOfKilledProcesses: tempsOfKilled,
  left,
};
console.log(
  `acquisitions ${result.acquisitions} by ${procs} contenders and ${died} dying processes (${killed} SIGKILLed, ${killedInside} inside the critical section)`,
);
console.log(`overlaps ${overlaps}, timeouts ${timeouts}, crashed workers ${crashed}`);
console.log(`wait p50 ${result.waitMs.p50} ms, p99 ${result.waitMs.p99} ms, max ${result.waitMs.max} ms`);
console.log(
  `left in the directory: ${left.length ? left.join(', ') : 'nothing'} (temporary files of killed processes before the one-minute sweep: ${tempsOfKilled})`,
);
console.log(JSON.stringify(result));
process.exit(overlaps || timeouts || crashed || left.length || result.waitMs.max > 5000 ? 1 : 0);
