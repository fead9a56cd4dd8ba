/**
 * `npm run bench:scale [-- --sizes 1000,10000,100000 --latency 1-5 --concurrency 8 --output json|quiet|text --transport unix|tcp]`
 *
 * Sweeps 1k, 10k and 100k simulated exited orphans (test/helpers/engine-simulator.ts, 1-5 ms latency per call) with
 * the BUILT CLI as a child process (`hermes-janitor reap --host <simulator> --as-of 2100-01-01T00:00:00Z
 * --timeout 0 --json > file`), and prints one line per size: wall time of the whole process, requests the
 * simulator answered, and the child's peak RSS (from /usr/bin/time -v when present, else /proc/<pid>/status VmHWM).
 * Each run is checked: exit 0, every container removed and reported, nothing failed, no forced removal.
 * Goal: cost grows linearly; 100k containers stay under 150 MB peak RSS (#44; it was 256 MB).
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { EngineSimulator, rfc3339Nano } from '../test/helpers/engine-simulator.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(repo, 'bin', 'hermes-janitor.js');
const RSS_GOAL_MB = 150;

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000,100000' },
    latency: { type: 'string', default: '1-5' },
    concurrency: { type: 'string' },
    output: { type: 'string', default: 'json' },
    transport: { type: 'string', default: 'unix' },
  },
});
const sizes = values.sizes!.split(',').map((s) => Number(s.trim()));
if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--sizes must be positive integers, got '${values.sizes}'`);
const [lo, hi] = values.latency!.split('-').map(Number) as [number, number | undefined];
const latency: number | [number, number] = hi === undefined ? lo : [lo, hi];
if (!['json', 'quiet', 'text'].includes(values.output!)) throw new Error(`--output must be json, quiet or text`);
if (!existsSync(path.join(repo, 'dist', 'cli', 'main.js'))) throw new Error("the CLI is not built: run 'npm run build' first");
const TIME = '/usr/bin/time';
const haveTime = existsSync(TIME);

interface Run {
  code: number | null;
  wallMs: number;
  peakKb: number;
  stderr: string;
}

/** Runs the CLI with stdout to a file; peak RSS from /usr/bin/time -v, else by polling VmHWM. */
function runChild(args: string[], stdoutFile: string, env: NodeJS.ProcessEnv): Promise<Run> {
  const argv = haveTime ? [TIME, '-v', process.execPath, BIN, ...args] : [process.execPath, BIN, ...args];
  return new Promise((resolve, reject) => {
    const out = createWriteStream(stdoutFile);
    out.on('open', () => {
      const t0 = process.hrtime.bigint();
      const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', out, 'pipe'] });
      let stderr = '';
      let polledKb = 0;
      child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const poll = haveTime
        ? undefined
        : setInterval(() => {
            try {
              const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
              if (m) polledKb = Math.max(polledKb, Number(m[1]));
            } catch {
              /* exited */
            }
          }, 20);
      child.on('error', reject);
      child.on('close', (code) => {
        const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
        if (poll) clearInterval(poll);
        out.close();
        const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
        const peakKb = m ? Number(m[1]) : polledKb;
        const own = haveTime ? stderr.slice(0, stderr.lastIndexOf('\tCommand being timed')) : stderr;
        resolve({ code, wallMs, peakKb, stderr: own.trim() });
      });
    });
  });
}

async function sweep(n: number, tmp: string): Promise<string> {
  const profile = 'bench';
  const sim = await EngineSimulator.start({
    ...(values.transport === 'tcp' ? { port: 0 } : { socketPath: path.join(tmp, 'engine.sock') }),
    faults: { latencyMs: latency },
    // Like hermes' own containers: a distinct task id and exit time each (nothing shared that a real engine would not share).
    bulk: [
      {
        count: n,
        labelsFor: (i) => ({ 'hermes-agent': '1', 'hermes-profile': profile, 'hermes-task-id': `task-${i.toString(16).padStart(8, '0')}` }),
        finishedAtFor: (i) => rfc3339Nano(new Date(Date.UTC(2026, 0, 1) + i * 1000)),
      },
    ],
  });
  const outFile = path.join(tmp, `reap-${n}.out`);
  try {
    const args = [
      'reap',
      '--host',
      sim.host,
      '--profile',
      profile,
      '--as-of',
      '2100-01-01T00:00:00Z',
      '--timeout',
      '0',
      ...(values.output === 'json' ? ['--json'] : values.output === 'quiet' ? ['--quiet'] : []),
      ...(values.concurrency ? ['--concurrency', values.concurrency] : []),
    ];
    const home = path.join(tmp, 'home');
    const run = await runChild(args, outFile, { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8' });
    const problems: string[] = [];
    if (run.code !== 0) problems.push(`exit ${run.code}: ${run.stderr.split('\n')[0]}`);
    if (sim.size !== 0) problems.push(`${sim.size} containers left on the simulator`);
    if (sim.stats.forcedRemovals) problems.push(`${sim.stats.forcedRemovals} forced removals`);
    if (values.output === 'json') {
      const doc = JSON.parse(readFileSync(outFile, 'utf8')) as { removed: unknown[]; failed: unknown[] };
      if (doc.removed.length !== n) problems.push(`${doc.removed.length} reported removed, expected ${n}`);
      if (doc.failed.length) problems.push(`${doc.failed.length} reported failed`);
    }
    const mb = run.peakKb / 1024;
    const secs = run.wallMs / 1000;
    const line =
      `${n} containers: ${secs.toFixed(1)} s, ${sim.stats.requests} requests, peak RSS ${mb.toFixed(0)} MB` +
      ` (${((run.wallMs * 1000) / n).toFixed(0)} µs/container, max ${sim.stats.maxInFlight} in flight` +
      `${mb > RSS_GOAL_MB ? `, OVER the ${RSS_GOAL_MB} MB goal` : ''})` +
      (problems.length ? ` FAILED: ${problems.join('; ')}` : '');
    return line;
  } finally {
    await sim.close();
    rmSync(outFile, { force: true });
  }
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'hj-scale-'));
process.stdout.write(
  `hermes-janitor reap against the engine simulator: ${values.latency} ms per call, output ${values.output}, ` +
    `${values.transport} socket, peak RSS via ${haveTime ? '/usr/bin/time -v' : '/proc/<pid>/status VmHWM'}\n`,
);
let failed = false;
try {
  for (const n of sizes) {
    const line = await sweep(n, tmp);
    if (line.includes('FAILED') || line.includes('OVER')) failed = true;
    process.stdout.write(`${line}\n`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
