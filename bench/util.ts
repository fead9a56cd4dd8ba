/** Helpers shared by the engine benchmarks. */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';

/** Runs `fn(0..n-1)` with at most `limit` in flight; results in order. */
export async function pool<T>(n: number, limit: number, fn: (i: number) => Promise<T>): Promise<T[]> {
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

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const docker = new Docker();
export const benchId = randomBytes(4).toString('hex');

/** `--count N --runs R --concurrency C --image I`, with per-benchmark defaults for count and runs. */
export function benchArgs(defaults: { count: number; runs: number }) {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: String(defaults.count) },
      runs: { type: 'string', default: String(defaults.runs) },
      concurrency: { type: 'string', default: '8' },
      image: { type: 'string', default: process.env.HERMES_JANITOR_TEST_IMAGE ?? 'hermes-janitor/busybox:test' },
    },
  });
  return { count: Number(values.count), runs: Number(values.runs), concurrency: values.concurrency!, image: values.image! };
}

/**
 * N containers of one profile, created the hermes way (labels, `--init`, no network), 6 at a time: `sleep`ers left
 * running, or (`exited`) run to completion. Returns their ids.
 */
export async function createSet(image: string, profile: string, count: number, kind: 'running' | 'exited'): Promise<string[]> {
  return pool(count, 6, async (i) => {
    const c = await docker.createContainer({
      Image: image,
      Cmd: kind === 'running' ? ['sleep', '3600'] : ['true'],
      name: `hermes-${profile}-${i.toString(16).padStart(4, '0')}`.slice(0, 60),
      Labels: { 'hermes-agent': '1', 'hermes-profile': profile, 'hermes-task-id': `bench-${i}` },
      HostConfig: {
        Init: true,
        NetworkMode: 'none',
        // Podman here cannot run a container without explicit limits ("error setting rlimit type 7").
        ...(process.env.HERMES_JANITOR_TEST_ENGINE === 'podman'
          ? {
              Ulimits: [
                { Name: 'nofile', Soft: 1024, Hard: 1024 },
                { Name: 'nproc', Soft: 1024, Hard: 1024 },
              ],
            }
          : {}),
      },
    });
    await c.start();
    if (kind === 'exited') await c.wait();
    return c.id;
  });
}

/** Containers of one profile, in any state. */
export async function ofProfile(profile: string): Promise<Array<{ Id: string; State: string }>> {
  return docker.listContainers({ all: true, filters: JSON.stringify({ label: [`hermes-profile=${profile}`] }) });
}

/** Removes every container of the profile (forced, with anonymous volumes). */
export async function removeAll(profile: string): Promise<void> {
  const rows = await ofProfile(profile);
  await pool(rows.length, 6, (i) =>
    docker
      .getContainer(rows[i]!.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined),
  );
}

/** Wall time of a whole process in ms; NODE_EXTRA_CA_CERTS (~40 ms per node start) unset for both sides alike. */
export function time(cmd: string, args: string[]): number {
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd: repo, env, stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 3).join(' ')} ... exited ${r.status}: ${r.stderr}`);
  return ms;
}

/** Blocks for `ms` (the timed sides are synchronous child processes). */
export const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Waits until the machine is quiet, at most `maxMs`: its CPUs at least `idle` idle over one second (`os.cpus()`), so
 * that a command is not timed while something else (the engine settling after the sets were made, another job) has
 * the cores. Returns how long it waited and the idle share it last saw, which the bench prints: the load average it
 * prints too is a one-minute mean, 10-12 after every round here because of the 900 containers made before it, while
 * the CPUs were 98-99% idle when the commands started.
 */
export function settle(idle = 0.8, maxMs = 20_000): { waitedMs: number; idle: number } {
  const start = Date.now();
  for (;;) {
    const before = os.cpus();
    pause(1000);
    const share = idleShare(before, os.cpus());
    const waitedMs = Date.now() - start;
    if (share >= idle || waitedMs >= maxMs) return { waitedMs, idle: share };
  }
}

function idleShare(before: os.CpuInfo[], after: os.CpuInfo[]): number {
  let idle = 0;
  let all = 0;
  after.forEach((cpu, i) => {
    const was = before[i]!.times;
    for (const k of Object.keys(cpu.times) as Array<keyof os.CpuInfo['times']>) all += cpu.times[k] - was[k];
    idle += cpu.times.idle - was.idle;
  });
  return all > 0 ? idle / all : 1;
}

/**
 * Times `a` and `b`, `a` first when `aFirst`; returns [a, b]. With `settleMs`, the engine gets that long before
 * each side, so neither inherits the other's (or the set-up's) aftermath.
 */
export function paired(
  aFirst: boolean,
  a: () => number,
  b: () => number,
  settleMs = 0,
  /** Runs (untimed) between the two sides, told which went first: e.g. undo what the first did to the engine. */
  between?: (aWentFirst: boolean) => void,
): [number, number] {
  const run = (f: () => number) => {
    if (settleMs > 0) pause(settleMs);
    return f();
  };
  if (aFirst) {
    const x = run(a);
    between?.(true);
    return [x, run(b)];
  }
  const y = run(b);
  between?.(false);
  return [run(a), y];
}

/** `docker start` of a set (untimed; fails the run if any does not start). */
export function startAgain(ids: string[]): void {
  const r = spawnSync('docker', ['start', ...ids], { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`docker start failed: ${r.stderr}`);
}

/** How many containers of the profile are in `status` right now (`docker ps`, after a timed pass). */
export function countIn(profile: string, status: 'running' | 'exited'): number {
  const r = spawnSync('docker', ['ps', '-aq', '--filter', `label=hermes-profile=${profile}`, '--filter', `status=${status}`], { encoding: 'utf8' });
  return r.stdout.split('\n').filter(Boolean).length;
}
