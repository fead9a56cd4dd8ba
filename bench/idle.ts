/**
 * `npm run bench:idle [-- --count N --runs R --concurrency C]`
 *
 * The idle rule's cost on the real engine. Each run creates TWO identical sets of N running idle sandboxes the
 * hermes way (`--init`, `sleep`; default N = 100), then times, as whole processes:
 *  - the observation pass: `hermes-janitor reap` taking its first sample of every sandbox of set A, beside
 *    `docker stats --no-stream` on the same set A (neither changes anything);
 *  - the stop pass: `hermes-janitor reap --idle-after 2s` stopping every sandbox of set A (after the idle time;
 *    each stop re-proved with a fresh inspect and sample: from the container's cgroup on this host, or the
 *    engine's stats with `HERMES_JANITOR_CGROUP_SAMPLES=false` in the environment), beside `docker stop` of set B.
 * The order alternates between runs (default 4, so each side goes first equally often), the engine gets 3 s of quiet
 * before each timed pass, and the set stopped first is started again before the second stop pass, so both face
 * the same engine (200 running, 100 to stop); it prints every pair and the median of the per-pair ratios (goal <=
 * 1.0 each).
 * Everything created is removed at the end, and the run uses its own profile labels and hermes home. The janitor
 * runs with `--timeout 60s`: 100 stops on a loaded Podman took ~8 s, near the 10 s default.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchArgs, benchId, countIn, createSet, median, paired, removeAll, repo, startAgain, time } from './util.js';

// An even number of runs: each side goes first equally often.
const args = benchArgs({ count: 100, runs: 4 });
/** Quiet time for the engine before each timed pass (its after-work of the previous one: exits, cleanups). */
const SETTLE_MS = 3000;
const home = mkdtempSync(path.join(os.tmpdir(), 'hj-bench-idle-'));
const IDLE_AFTER_S = 2;

const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function main(): Promise<void> {
  const obs: Array<[number, number]> = [];
  const stops: Array<[number, number]> = [];
  const profiles: string[] = [];
  try {
    for (let r = 1; r <= args.runs; r++) {
      const a = `bidle-${benchId}-a${r}`;
      const b = `bidle-${benchId}-b${r}`;
      profiles.push(a, b);
      const idsA = await createSet(args.image, a, args.count, 'running');
      const idsB = await createSet(args.image, b, args.count, 'running');
      const janitor = (extra: string[]) =>
        time(process.execPath, [
          path.join(repo, 'bin/hermes-janitor.js'),
          'reap',
          '--quiet',
          '--home',
          home,
          '--profile',
          a,
          '--concurrency',
          args.concurrency,
          '--timeout',
          '60s',
          ...extra,
        ]);
      const stats = () => time('docker', ['stats', '--no-stream', ...idsA]);
      const observe = () => janitor(['--idle-after', `${IDLE_AFTER_S}s`]);
      const first = r % 2 === 1;
      const o = paired(first, observe, stats, SETTLE_MS);
      obs.push(o);
      // (The settle time before the stop pass also makes the sandboxes idle for longer than --idle-after.)
      let stoppedByJanitor = 0;
      const stopJ = () => {
        const ms = janitor(['--idle-after', `${IDLE_AFTER_S}s`]);
        stoppedByJanitor = countIn(a, 'exited'); // counted after the timing, before any restart
        return ms;
      };
      const stopD = () => time('docker', ['stop', ...idsB]);
      // Both stop passes face the same engine: 200 sandboxes running, 100 of them to stop. How many containers run
      // changes how fast the engine stops them (measured with docker stop alone: the second of two 100-container
      // stops ran 0.1-1.1 s faster once the first had halved the running count, and as fast as the first when that
      // set was started again in between). So the first pass's set is started again before the second is timed.
      const s = paired(first, stopJ, stopD, SETTLE_MS, (janitorFirst) => startAgain(janitorFirst ? idsA : idsB));
      stops.push(s);
      console.log(
        `run ${r}/${args.runs} (${first ? 'janitor' : 'docker'} first): observe ${fmt(o[0])} vs docker stats ${fmt(o[1])} (${(o[0] / o[1]).toFixed(2)}x); ` +
          `stop ${fmt(s[0])} vs docker stop ${fmt(s[1])} (${(s[0] / s[1]).toFixed(2)}x); the janitor stopped ${stoppedByJanitor} of ${args.count}`,
      );
      if (stoppedByJanitor !== args.count) console.log(`  warning: the stop pass did not stop every sandbox: its time is not comparable`);
      // Each run starts from the same engine: the engine stops containers more slowly the more it holds.
      await removeAll(a);
      await removeAll(b);
    }
  } finally {
    for (const p of profiles) await removeAll(p);
    rmSync(home, { recursive: true, force: true });
  }
  const ratio = (xs: Array<[number, number]>) => median(xs.map(([j, d]) => j / d));
  console.log(`${args.count} idle running sandboxes per set, ${args.runs} runs, reap --concurrency ${args.concurrency}`);
  console.log(
    `observation pass: janitor median ${fmt(median(obs.map((x) => x[0])))}, ` +
      `docker stats --no-stream median ${fmt(median(obs.map((x) => x[1])))}, median ratio ${ratio(obs).toFixed(2)} (goal <= 1.00)`,
  );
  console.log(
    `stop pass:        janitor median ${fmt(median(stops.map((x) => x[0])))}, ` +
      `docker stop median ${fmt(median(stops.map((x) => x[1])))}, median ratio ${ratio(stops).toFixed(2)} (goal <= 1.00)`,
  );
}

await main();
