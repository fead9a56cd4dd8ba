/**
 * `npm run bench:idle [-- --count N --runs R --concurrency C]`
 *
 * The idle rule's cost on the real engine. Each run creates TWO identical sets of N running idle sandboxes the
 * hermes way (`--init`, `sleep`; default N = 100), then times, as whole processes:
 *  - the observation pass: `hermes-janitor reap` taking its first sample of every sandbox of set A, beside
 *    `docker stats --no-stream` on the same set A (neither changes anything);
 *  - the stop pass: `hermes-janitor reap --idle-after 2s` stopping every sandbox of set A (after the idle time;
 *    each stop re-proved with a fresh inspect and sample), beside `docker stop` of set B.
 * The order alternates between runs; it prints every pair and the median of the per-pair ratios (goal <= 1.0 each).
 * Everything created is removed at the end, and the run uses its own profile labels and hermes home.
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
    count: { type: 'string', default: '100' },
    runs: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8' },
    image: { type: 'string', default: process.env.HERMES_JANITOR_TEST_IMAGE ?? 'hermes-janitor/busybox:test' },
  },
});
const count = Number(values.count);
const runs = Number(values.runs);
const docker = new Docker();
const benchId = randomBytes(4).toString('hex');
const home = mkdtempSync(path.join(os.tmpdir(), 'hj-bench-idle-'));
const IDLE_AFTER_S = 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function createSet(profile: string): Promise<string[]> {
  return pool(count, 6, async (i) => {
    const c = await docker.createContainer({
      Image: values.image,
      Cmd: ['sleep', '3600'],
      name: `hermes-${profile}-${i.toString(16).padStart(4, '0')}`.slice(0, 60),
      Labels: { 'hermes-agent': '1', 'hermes-profile': profile, 'hermes-task-id': `bench-${i}` },
      HostConfig: { Init: true, NetworkMode: 'none' },
    });
    await c.start();
    return c.id;
  });
}

async function states(profile: string): Promise<Record<string, number>> {
  const rows = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`hermes-profile=${profile}`] }) });
  const out: Record<string, number> = {};
  for (const r of rows) out[r.State] = (out[r.State] ?? 0) + 1;
  return out;
}

async function removeAll(profile: string): Promise<void> {
  const rows = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`hermes-profile=${profile}`] }) });
  await pool(rows.length, 6, (i) => docker.getContainer(rows[i]!.Id).remove({ force: true, v: true }).catch(() => undefined));
}

function time(cmd: string, args: string[]): number {
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS; // the same clean start for both sides
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd: repo, env, stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 3).join(' ')} ... exited ${r.status}: ${r.stderr}`);
  return ms;
}

const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function main(): Promise<void> {
  const obs: Array<[number, number]> = [];
  const stops: Array<[number, number]> = [];
  const profiles: string[] = [];
  try {
    for (let r = 1; r <= runs; r++) {
      const a = `bidle-${benchId}-a${r}`;
      const b = `bidle-${benchId}-b${r}`;
      profiles.push(a, b);
      await createSet(a);
      const idsB = await createSet(b);
      const janitor = (extra: string[]) =>
        time(process.execPath, [
          path.join(repo, 'bin/hermes-janitor.js'), 'reap', '--quiet', '--home', home, '--profile', a,
          '--concurrency', values.concurrency!, ...extra,
        ]);
      const idsA = (await docker.listContainers({ filters: JSON.stringify({ label: [`hermes-profile=${a}`] }) })).map((x) => x.Id);
      const stats = () => time('docker', ['stats', '--no-stream', ...idsA]);
      const observe = () => janitor(['--idle-after', `${IDLE_AFTER_S}s`]);
      const first = r % 2 === 1;
      const o: [number, number] = first ? [observe(), stats()] : (() => {
        const s = stats();
        return [observe(), s] as [number, number];
      })();
      obs.push(o);
      await sleep(IDLE_AFTER_S * 1000 + 500);
      const stopJ = () => janitor(['--idle-after', `${IDLE_AFTER_S}s`]);
      const stopD = () => time('docker', ['stop', ...idsB]);
      const s: [number, number] = first ? [stopJ(), stopD()] : (() => {
        const d = stopD();
        return [stopJ(), d] as [number, number];
      })();
      stops.push(s);
      const sa = await states(a);
      const sb = await states(b);
      console.log(
        `run ${r}/${runs} (${first ? 'janitor' : 'docker'} first): observe ${fmt(o[0])} vs docker stats ${fmt(o[1])} (${(o[0] / o[1]).toFixed(2)}x); ` +
          `stop ${fmt(s[0])} vs docker stop ${fmt(s[1])} (${(s[0] / s[1]).toFixed(2)}x); set A ${JSON.stringify(sa)}, set B ${JSON.stringify(sb)}`,
      );
      if ((sa.exited ?? 0) !== count) console.log(`  warning: the janitor stopped ${sa.exited ?? 0} of ${count}`);
    }
  } finally {
    for (const p of profiles) await removeAll(p);
    rmSync(home, { recursive: true, force: true });
  }
  const ratio = (xs: Array<[number, number]>) => median(xs.map(([j, d]) => j / d));
  console.log(`${count} idle running sandboxes per set, ${runs} runs, reap --concurrency ${values.concurrency}`);
  console.log(`observation pass: janitor median ${fmt(median(obs.map((x) => x[0])))}, docker stats --no-stream median ${fmt(median(obs.map((x) => x[1])))}, median ratio ${ratio(obs).toFixed(2)} (goal <= 1.00)`);
  console.log(`stop pass:        janitor median ${fmt(median(stops.map((x) => x[0])))}, docker stop median ${fmt(median(stops.map((x) => x[1])))}, median ratio ${ratio(stops).toFixed(2)} (goal <= 1.00)`);
}

await main();
