/**
 * `npm run bench:watch [-- --tracked 1000 --idle-seconds 60 --lag-containers 50 --no-engine | --private-dockerd | --host URL]`
 *
 * 1. Idle cost: the BUILT CLI's `watch` against the engine simulator, with `--tracked` containers waiting for
 *    deadlines an hour away (seeded through the event stream); CPU time it uses over `--idle-seconds` (from
 *    /proc/<pid>/stat) and its peak RSS (VmHWM). Goals: under 1 % of one core, under 80 MB.
 * 2. Lag on the real engine (skipped with --no-engine): `--lag-containers` containers exiting at staggered times
 *    under `watch --older-than 3s`; each removal's lag after its deadline (FinishedAt + 3 s), p50/p95/max.
 *    Goal: every one within 2 s. `--host URL` measures on that engine; `--private-dockerd` (root) starts a dockerd of
 *    its own for it (test/helpers/second-dockerd.ts) and removes it afterwards, leaving the shared engine alone.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs, promisify } from 'node:util';
import { tempDir } from '../test/helpers/cli.js';
import { EngineSimulator } from '../test/helpers/engine-simulator.js';
import { WatchProcess } from '../test/helpers/watch-process.js';
import { SecondDockerd } from '../test/helpers/second-dockerd.js';

const exec = promisify(execFile);
const { values } = parseArgs({
  options: {
    tracked: { type: 'string', default: '1000' },
    'idle-seconds': { type: 'string', default: '60' },
    'lag-containers': { type: 'string', default: '50' },
    'no-engine': { type: 'boolean', default: false },
    'private-dockerd': { type: 'boolean', default: false },
    host: { type: 'string' },
  },
});
const TRACKED = Number(values.tracked);
const IDLE_S = Number(values['idle-seconds']);
const LAG_N = Number(values['lag-containers']);
const CLK_TCK = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLK_TCK; // utime + stime
}
function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
}

async function idle(): Promise<boolean> {
  const home = tempDir('hj-bench-watch-');
  const sim = await EngineSimulator.start();
  const w = WatchProcess.start(['--host', sim.host, '--home', home.dir, '--label', 'ci-job=1', '--all-profiles', '--older-than', '1h']);
  try {
    await w.waitFor('connected', (ls) => ls.some((l) => l.event === 'engine' && l.state === 'connected'));
    for (let i = 0; i < TRACKED; i++) {
      const id = sim.add({ labels: { 'ci-job': '1' }, state: 'running' });
      sim.setState(id, 'exited');
    }
    await sleep(3000); // events applied, heap built
    const pid = w.child.pid!;
    const c0 = cpuSeconds(pid);
    await sleep(IDLE_S * 1000);
    const cpu = cpuSeconds(pid) - c0;
    const rss = peakRssMb(pid);
    const pct = (cpu / IDLE_S) * 100;
    const stop = await w.stop();
    console.log(
      `idle watch, ${TRACKED} tracked containers, ${IDLE_S} s: CPU ${cpu.toFixed(2)} s = ${pct.toFixed(3)} % of one core (goal < 1 %); ` +
        `peak RSS ${rss.toFixed(1)} MB (goal < 80 MB); SIGTERM exit ${stop.code} in ${stop.ms} ms`,
    );
    return pct < 1 && rss < 80 && stop.code === 0;
  } finally {
    w.kill();
    await sim.close();
    home.cleanup();
  }
}

async function lag(host: string | undefined): Promise<boolean> {
  const runId = randomBytes(5).toString('hex');
  const profile = `bw-${runId}`;
  const home = tempDir('hj-bench-watch-');
  const env = host ? { ...process.env, DOCKER_HOST: host } : process.env;
  const docker = (args: string[]) => exec('docker', args, { timeout: 60_000, env }).then((r) => r.stdout.trim());
  const w = WatchProcess.start(['--home', home.dir, '--profile', profile, '--older-than', '3s', '--force-threshold', ...(host ? ['--host', host] : [])]);
  const ids: string[] = [];
  try {
    await w.waitFor('connected', (ls) => ls.some((l) => l.event === 'engine' && l.state === 'connected'));
    // Started 6 at a time, each sleeping a little longer: they exit at staggered times.
    for (let i = 0; i < LAG_N; i += 6) {
      const batch = Array.from({ length: Math.min(6, LAG_N - i) }, (_, j) =>
        docker([
          'run',
          '-d',
          '--init',
          '--label',
          'hermes-agent=1',
          '--label',
          `hermes-profile=${profile}`,
          '--label',
          `hermes-janitor-test-run=${runId}`,
          '--network',
          'none',
          'hermes-janitor/busybox:test',
          'sleep',
          String(1 + ((i + j) % 10) * 0.4),
        ]),
      );
      ids.push(...(await Promise.all(batch)));
    }
    await w.waitFor('all removed', (ls) => ids.every((id) => ls.some((l) => l.event === 'removed' && l.id === id)), 120_000);
    const lags = w
      .events('removed')
      .filter((l) => ids.includes(l.id as string))
      .map((l) => (Date.parse(l.time) - (Date.parse((l.finishedAt as string).replace(/(\.\d{3})\d+/, '$1')) + 3000)) / 1000)
      .sort((a, b) => a - b);
    const p = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))]!.toFixed(3);
    console.log(
      `removal lag after the deadline, ${lags.length} containers on the real engine ${host ?? '(default)'}: ` +
        `p50 ${p(0.5)} s, p95 ${p(0.95)} s, max ${p(1)} s (goal: all < 2 s)`,
    );
    return lags.every((l) => l >= 0 && l < 2);
  } finally {
    await w.stop();
    const left = await docker(['ps', '-aq', '--filter', `label=hermes-janitor-test-run=${runId}`]).catch(() => '');
    if (left) await docker(['rm', '-f', ...left.split('\n')]).catch(() => undefined);
    home.cleanup();
  }
}

async function lagOnEngine(): Promise<boolean> {
  if (!values['private-dockerd']) return lag(values.host);
  const d = await SecondDockerd.start();
  if ('unavailable' in d) {
    console.log(`lag: cannot run on a private dockerd: ${d.unavailable}`);
    return false;
  }
  try {
    return await lag(d.host);
  } finally {
    await d.cleanup();
  }
}

const ok = [await idle(), ...(values['no-engine'] ? [] : [await lagOnEngine()])];
process.exitCode = ok.every(Boolean) ? 0 : 1;
