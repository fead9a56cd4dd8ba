/**
 * `npm run bench:list [-- --count 10 --runs 21]`
 *
 * `list` against the speed of `docker ps` (#39): with `--count` running sandboxes of a fresh profile on the real
 * engine (left to discovery, as a user runs both), each round runs `docker ps`, a bare `node -e 0` and
 * `hermes-janitor list --profile P` (its table piped, as `docker ps`'s is), in a random order, as whole processes.
 * Prints the medians and the ratio median(list) / (median(docker ps) + median(node -e 0)). Goal: at most 5.
 *
 * NODE_EXTRA_CA_CERTS (set in some environments, about 40 ms on every node start) is left out on both sides; the
 * machine's load moves every figure, so the three are interleaved and the ratio is of medians.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchArgs, benchId, createSet, median, removeAll, repo } from './util.js';

const { count, runs, image } = benchArgs({ count: 10, runs: 21 });
const bin = path.join(repo, 'bin', 'hermes-janitor.js');
const profile = `bench-list-${benchId}`;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'hj-bench-list-'));
const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, HERMES_HOME: path.join(tmp, 'hermes'), LANG: 'C.UTF-8' };
if (process.env.DOCKER_HOST) env.DOCKER_HOST = process.env.DOCKER_HOST;

const COMMANDS: Record<string, [string, string[]]> = {
  'docker ps': ['docker', ['ps']],
  'node -e 0': [process.execPath, ['-e', '0']],
  list: [process.execPath, [bin, 'list', '--profile', profile]],
};

function timeOnce(name: string): number {
  const [cmd, args] = COMMANDS[name]!;
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${name} exited ${r.status}: ${r.stderr}`);
  return ms;
}

try {
  await createSet(image, profile, count, 'running');
  const rows = spawnSync(process.execPath, [bin, 'list', '--json', '--profile', profile], { env, encoding: 'utf8' });
  const shown = (JSON.parse(rows.stdout || '{}') as { containers?: unknown[] }).containers?.length;
  if (shown !== count) throw new Error(`list did not show ${count} sandboxes:\n${rows.stdout}${rows.stderr}`);
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(COMMANDS).map((k) => [k, []]));
  for (let i = 0; i < 3; i++) for (const name of Object.keys(COMMANDS)) timeOnce(name); // warm the file cache
  for (let i = 0; i < runs; i++) {
    const order = Object.keys(COMMANDS).sort(() => Math.random() - 0.5);
    for (const name of order) times[name]!.push(timeOnce(name));
  }
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) as Record<string, number>;
  for (const [k, v] of Object.entries(m)) console.log(`${k.padEnd(36)} median ${v.toFixed(1)} ms (min ${Math.min(...times[k]!).toFixed(1)}, ${runs} runs)`);
  const ratio = m.list! / (m['docker ps']! + m['node -e 0']!);
  console.log(`list with ${count} running sandboxes / (docker ps + node -e 0): ${ratio.toFixed(2)} (goal <= 5)`);
} finally {
  await removeAll(profile);
  rmSync(tmp, { recursive: true, force: true });
}
