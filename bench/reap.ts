/**
 * `npm run bench [-- --count N --runs R --concurrency C]`
 *
 * Paired comparison on identical engine state: each run creates TWO identical sets of N exited hermes-labelled
 * containers (default 300) before timing anything, then times `hermes-janitor reap` (whole process) on one set and
 * `docker container prune --force --filter label=...` on the other, alternating which goes first. It prints each
 * pair and the median of the per-pair ratios reap/prune (goal <= 0.75). Each set has its own profile label, so
 * neither command sees the other's set, and nothing else on the engine is touched.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import { median, pool } from './util.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '300' },
    runs: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '8' },
    image: { type: 'string', default: process.env.HERMES_JANITOR_TEST_IMAGE ?? 'hermes-janitor/busybox:test' },
  },
});
const count = Number(values.count);
const runs = Number(values.runs);
const docker = new Docker();
const benchId = randomBytes(4).toString('hex');
const GOAL = 0.75;
const benchHome = mkdtempSync(path.join(os.tmpdir(), 'hj-bench-'));

/** N containers created as hermes does (labels, --init), run to completion so they are exited. */
async function createSet(profile: string): Promise<void> {
  await pool(count, 6, async (i) => {
    const c = await docker.createContainer({
      Image: values.image,
      Cmd: ['true'],
      name: `hermes-${profile}-${i.toString(16).padStart(4, '0')}`.slice(0, 60),
      Labels: { 'hermes-agent': '1', 'hermes-profile': profile, 'hermes-task-id': `bench-${i}` },
      HostConfig: { Init: true, NetworkMode: 'none' },
    });
    await c.start();
    await c.wait();
  });
}

async function leftovers(profile: string): Promise<string[]> {
  const rows = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`hermes-profile=${profile}`] }) });
  return rows.map((r) => r.Id);
}

async function removeAll(profile: string): Promise<void> {
  const ids = await leftovers(profile);
  await pool(ids.length, 6, (i) => docker.getContainer(ids[i]!).remove({ force: true, v: true }).catch(() => undefined));
}

/** The same clean environment for both sides (NODE_EXTRA_CA_CERTS costs every node start ~40 ms). */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

function time(cmd: string, args: string[]): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd: repo, env: cleanEnv(), stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

async function main(): Promise<void> {
  const ratios: number[] = [];
  const reapMs: number[] = [];
  const pruneMs: number[] = [];
  const asOf = new Date(Date.now() + 86_400_000).toISOString();
  const profiles: string[] = [];
  try {
    for (let r = 1; r <= runs; r++) {
      const reapProfile = `bench-${benchId}-r${r}`;
      const pruneProfile = `bench-${benchId}-p${r}`;
      profiles.push(reapProfile, pruneProfile);
      // Both sets exist before either is timed: the engine holds the same containers during both commands.
      await createSet(reapProfile);
      await createSet(pruneProfile);
      const reap = () =>
        time(process.execPath, [
          path.join(repo, 'bin/hermes-janitor.js'), 'reap', '--quiet', '--profile', reapProfile, '--home', benchHome,
          '--as-of', asOf, '--concurrency', values.concurrency!, '--timeout', '0',
        ]);
      const prune = () =>
        time('docker', ['container', 'prune', '--force', '--filter', 'label=hermes-agent=1', '--filter', `label=hermes-profile=${pruneProfile}`]);
      let rm: number;
      let pm: number;
      if (r % 2 === 1) {
        rm = reap();
        pm = prune();
      } else {
        pm = prune();
        rm = reap();
      }
      const leftR = (await leftovers(reapProfile)).length;
      const leftP = (await leftovers(pruneProfile)).length;
      reapMs.push(rm);
      pruneMs.push(pm);
      ratios.push(rm / pm);
      console.log(
        `pair ${r}/${runs} (${r % 2 ? 'reap' : 'prune'} first): reap ${(rm / 1000).toFixed(2)} s (left ${leftR}), prune ${(pm / 1000).toFixed(2)} s (left ${leftP}), ratio ${(rm / pm).toFixed(2)}`,
      );
    }
  } finally {
    for (const p of profiles) await removeAll(p);
    rmSync(benchHome, { recursive: true, force: true });
  }
  console.log(`${count} exited containers per set, ${runs} pairs, reap --concurrency ${values.concurrency}`);
  console.log(`hermes-janitor reap (whole process): median ${(median(reapMs) / 1000).toFixed(2)} s`);
  console.log(`docker container prune:              median ${(median(pruneMs) / 1000).toFixed(2)} s`);
  console.log(`median of per-pair ratios reap/prune: ${median(ratios).toFixed(2)} (goal <= ${GOAL.toFixed(2)})`);
}

await main();
