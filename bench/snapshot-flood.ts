/**
 * `npm run bench:snapshot-flood [-- --files 10000 --processes 2000 --runs 3]` (as root: the files and processes are
 * another user's, as a hostile local user would leave them)
 *
 * The shell-snapshot pass under a flood anyone can make: `--files` snapshot-named files in a sticky temp directory
 * (half old and abandoned, a quarter sparse with a future mtime, a quarter fresh) and `--processes` processes of their
 * owner that the pass must look at (Python interpreters by name, half with a 40 KB command line). `reap --timeout 5s`
 * of the built CLI is timed (the goal: it returns within 6 s, exit 0, or 3 with `timedOut` when the timeout cut it),
 * and the abandoned files put back between runs. Prints each run and the median. Then `watch --metrics-listen` runs
 * the same pass (its first check, once the engine is connected) while /healthz is asked every 50 ms: the longest
 * answer and any failure are printed (the pass reads in slices, off the event loop's critical path).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, closeSync, mkdtempSync, openSync, rmSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, repo } from './util.js';

const { values } = parseArgs({
  options: { files: { type: 'string', default: '10000' }, processes: { type: 'string', default: '2000' }, runs: { type: 'string', default: '3' } },
});
const files = Number(values.files);
const processes = Number(values.processes);
const runs = Number(values.runs);
const root = process.geteuid?.() === 0;
// Another user's (nobody's) as root; this user's otherwise.
const owner = root ? { uid: 65534, gid: 65534 } : { uid: process.geteuid!(), gid: process.getegid!() };
const tmp = mkdtempSync(path.join(os.tmpdir(), 'hj-flood-bench-'));
chmodSync(tmp, 0o1777);
const home = mkdtempSync(path.join(os.tmpdir(), 'hj-flood-home-'));
const hex = () => randomBytes(6).toString('hex');
const DAY = 86_400_000;

function file(name: string, at: number, sparse = false): void {
  const p = path.join(tmp, name);
  if (sparse) {
    writeFileSync(p, '');
    const fd = openSync(p, 'r+');
    writeSync(fd, 'declare -x X_KEY="1"\n', 64 * 1024 * 1024);
    closeSync(fd);
  } else writeFileSync(p, 'declare -x HOME="/"\ndeclare -x OPENAI_API_KEY="sk-bench"\n', { mode: 0o600 });
  if (root) chownSync(p, owner.uid, owner.gid);
  utimesSync(p, new Date(at), new Date(at));
}

/** The abandoned quarter-halves: put back before each run (the previous one removed them). */
function abandoned(): void {
  for (let i = 0; i < files / 2; i++) file(`hermes-snap-${hex()}.sh`, Date.now() - 30 * DAY);
}

function flood(): ChildProcess {
  const big = '0 '.repeat(20_000);
  const script =
    `for i in $(seq ${processes}); do if [ $((i % 2)) = 0 ]; then (exec -a python3 sleep 600 ${big}) & ` +
    `else (exec -a python3 sleep 600) & fi; done; echo up; wait`;
  const argv = root ? ['setpriv', `--reuid=${owner.uid}`, `--regid=${owner.gid}`, '--clear-groups', '--', 'bash', '-c', script] : ['bash', '-c', script];
  return spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
}

/** GET /healthz: how long it took (ms), or the error. */
function healthz(url: string): Promise<number | string> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = http.get(`${url}/healthz`, { agent: false, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - t0 : `HTTP ${res.statusCode}`));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve(err.message));
  });
}

/** watch's first pass over the flood, /healthz asked every 50 ms meanwhile. */
async function watchHealth(env: NodeJS.ProcessEnv): Promise<void> {
  const w = spawn(
    process.execPath,
    [path.join(repo, 'bin/hermes-janitor.js'), 'watch', '--log-format', 'json', '--metrics-listen', '127.0.0.1:0', '--label', `hj-bench=${hex()}`],
    {
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  let url = '';
  let passDone = false;
  let buf = '';
  w.stdout!.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = JSON.parse(buf.slice(0, nl)) as { event: string; url?: string };
      buf = buf.slice(nl + 1);
      if (line.event === 'metrics') url = line.url!;
      if (line.event === 'shell-snapshots') passDone = true;
    }
  });
  try {
    while (!url) await new Promise((r) => setTimeout(r, 50));
    const answers: Array<number | string> = [];
    const started = Date.now();
    while (!passDone && Date.now() - started < 60_000) {
      answers.push(await healthz(url));
      await new Promise((r) => setTimeout(r, 50));
    }
    const times = answers.filter((a): a is number => typeof a === 'number');
    const failed = answers.filter((a) => typeof a === 'string');
    console.log(
      `watch's pass over the same flood: ${((Date.now() - started) / 1000).toFixed(1)} s; /healthz asked ${answers.length} times meanwhile: ` +
        `longest ${Math.max(0, ...times).toFixed(0)} ms, ` +
        `median ${median(times).toFixed(0)} ms, ${failed.length} failed${failed.length ? ` (${failed[0]})` : ''}`,
    );
  } finally {
    w.kill('SIGKILL');
  }
}

const procs = flood();
try {
  await new Promise<void>((resolve) => procs.stdout!.once('data', () => resolve()));
  for (let i = 0; i < files / 4; i++) file(`hermes-snap-${hex()}.sh`, Date.now() + 365 * DAY, true);
  for (let i = 0; i < files / 4; i++) file(`hermes-cwd-${hex()}.txt`, Date.now());
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, TMPDIR: tmp, LANG: 'C.UTF-8' };
  if (process.env.DOCKER_HOST) env.DOCKER_HOST = process.env.DOCKER_HOST;
  const times: number[] = [];
  console.log(`${files} snapshot-named files and ${processes} processes of uid ${owner.uid}; reap --timeout 5s (${runs} runs):`);
  for (let r = 0; r < runs; r++) {
    abandoned();
    const started = process.hrtime.bigint();
    const out = spawnSync(process.execPath, [path.join(repo, 'bin/hermes-janitor.js'), 'reap', '--json', '--timeout', '5s', '--label', `hj-bench=${hex()}`], {
      env,
      encoding: 'utf8',
      maxBuffer: 512 * 1024 * 1024,
    });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    times.push(ms);
    let summary = out.stderr.trim().split('\n')[0] ?? '';
    try {
      const rep = JSON.parse(out.stdout) as { timedOut: boolean; shellSnapshots?: { removed: unknown[]; kept: Array<{ reason: string }> } };
      const s = rep.shellSnapshots;
      summary =
        `timedOut ${rep.timedOut}, removed ${s?.removed.length}, ` +
        `kept ${s?.kept.length} (cut short ${s?.kept.filter((k) => k.reason === 'cut-short').length})`;
    } catch {
      /* the first stderr line says why */
    }
    console.log(`  run ${r + 1}: ${(ms / 1000).toFixed(2)} s, exit ${out.status}: ${summary}`);
  }
  console.log(`median ${(median(times) / 1000).toFixed(2)} s (goal: within 6 s)`);
  abandoned();
  await watchHealth(env);
} finally {
  try {
    process.kill(-procs.pid!, 'SIGKILL');
  } catch {
    /* gone */
  }
  rmSync(tmp, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
}
