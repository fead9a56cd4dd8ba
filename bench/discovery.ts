/**
 * `npm run bench:discovery [-- --runs N]`
 *
 * What engine discovery costs when the first socket answers: the probe alone (in process: stat + GET /_ping on
 * /var/run/docker.sock), and a whole `list --json` process with the engine left to discovery against the same
 * run with DOCKER_HOST naming it. Prints medians. Goal: no visible delay (a few ms).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { discoverEngine } from '../src/adapters/engine-discovery.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(repo, 'bin', 'hermes-janitor.js');
const { values } = parseArgs({ options: { runs: { type: 'string', default: '30' } } });
const runs = Number(values.runs);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'hj-disc-bench-'));
const env = { PATH: process.env.PATH ?? '', HOME: tmp, HERMES_HOME: path.join(tmp, 'hermes') };

try {
  const probe: number[] = [];
  let chosen = '';
  for (let i = 0; i < runs + 3; i++) {
    const t = process.hrtime.bigint();
    chosen = (await discoverEngine({ env, homedir: tmp })).endpoint.host;
    if (i >= 3) probe.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  const timeCli = (extra: Record<string, string>) => {
    const t = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [bin, 'list', '--json', '--label', 'hermes-janitor-bench=none'], {
      env: { ...env, ...extra },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    if (r.status !== 0) throw new Error(`list exited ${r.status}: ${r.stderr}`);
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  const named: number[] = [];
  const found: number[] = [];
  for (let i = 0; i < 3; i++) timeCli({ DOCKER_HOST: chosen }), timeCli({});
  for (let i = 0; i < runs; i++) {
    named.push(timeCli({ DOCKER_HOST: chosen }));
    found.push(timeCli({}));
  }
  console.log(`discovery probe (${chosen} answers first):  median ${median(probe).toFixed(2)} ms (${runs} runs)`);
  console.log(`list --json, DOCKER_HOST=${chosen}:      median ${median(named).toFixed(1)} ms`);
  console.log(`list --json, engine left to discovery:       median ${median(found).toFixed(1)} ms (+${(median(found) - median(named)).toFixed(1)} ms)`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
