/**
 * `npm run bench [-- --count N --runs R --concurrency C]`
 *
 * Creates N exited hermes-labelled containers (default 300) on the local engine, times `hermes-janitor reap` as a
 * whole process, then recreates an identical set and times `docker container prune --force --filter
 * label=hermes-agent=1` on it; repeats R times (default 3) and prints both medians and the ratio.
 * Both are confined to this run's own profile label, so nothing else on the engine is touched.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '300' },
    runs: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8' },
    image: { type: 'string', default: process.env.HERMES_JANITOR_TEST_IMAGE ?? 'hermes-janitor/busybox:test' },
  },
});
const count = Number(values.count);
const runs = Number(values.runs);
const docker = new Docker();
const benchId = randomBytes(4).toString('hex');
const profile = `bench-${benchId}`;

async function pool<T>(n: number, limit: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

/** N containers created as hermes does (labels, --init), run to completion so they are exited. */
async function createSet(): Promise<void> {
  await pool(count, 12, async (i) => {
    const c = await docker.createContainer({
      Image: values.image,
      Cmd: ['true'],
      name: `hermes-${benchId}${i.toString(16).padStart(4, '0')}`.slice(0, 40),
      Labels: { 'hermes-agent': '1', 'hermes-profile': profile, 'hermes-task-id': `bench-${i}` },
      HostConfig: { Init: true, NetworkMode: 'none' },
    });
    await c.start();
    await c.wait();
  });
}

async function leftovers(): Promise<string[]> {
  const rows = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`hermes-profile=${profile}`] }) });
  return rows.map((r) => r.Id);
}

function time(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd: repo, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main(): Promise<void> {
  const reapMs: number[] = [];
  const pruneMs: number[] = [];
  const asOf = new Date(Date.now() + 86_400_000).toISOString();
  try {
    for (let r = 1; r <= runs; r++) {
      await createSet();
      reapMs.push(
        time(process.execPath, [path.join(repo, 'bin/hermes-janitor.js'), 'reap', '--quiet', '--profile', profile, '--as-of', asOf, '--concurrency', values.concurrency!, '--timeout', '0']),
      );
      const afterReap = (await leftovers()).length;
      await createSet();
      pruneMs.push(time('docker', ['container', 'prune', '--force', '--filter', 'label=hermes-agent=1', '--filter', `label=hermes-profile=${profile}`]));
      const afterPrune = (await leftovers()).length;
      console.log(`run ${r}/${runs}: reap ${(reapMs.at(-1)! / 1000).toFixed(2)} s (left ${afterReap}), prune ${(pruneMs.at(-1)! / 1000).toFixed(2)} s (left ${afterPrune})`);
    }
  } finally {
    const ids = await leftovers();
    await pool(ids.length, 8, (i) => docker.getContainer(ids[i]!).remove({ force: true }).catch(() => undefined));
  }
  const mr = median(reapMs);
  const mp = median(pruneMs);
  console.log(`${count} exited containers, ${runs} runs, reap --concurrency ${values.concurrency}`);
  console.log(`hermes-janitor reap (whole process): median ${(mr / 1000).toFixed(2)} s`);
  console.log(`docker container prune:              median ${(mp / 1000).toFixed(2)} s`);
  console.log(`ratio reap/prune: ${(mr / mp).toFixed(2)} (goal <= 1.00)`);
}

await main();
