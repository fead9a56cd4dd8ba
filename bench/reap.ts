/**
 * `npm run bench [-- --count N --runs R --concurrency C]`
 *
 * Comparison on identical engine state: each run creates THREE identical sets of N exited hermes-labelled
 * containers (default 300) before timing anything, then times, each on its own set and in an order that rotates
 * from run to run:
 *  - `hermes-janitor reap` (whole process);
 *  - `docker container prune --force --filter label=...`;
 *  - the floor: `bench/floor-client.mjs remove`, a bare Node client that does only the list and the removals (plain
 *    `http`, keep-alive, reap's concurrency): what any Node client pays, so the rest of reap's time is its own.
 * It prints each run (with the load average at its end: the machine may be shared) and the medians of the per-run
 * ratios reap/prune (goal <= 0.5) and reap/floor (goal <= 1.1, #44). Each set has its own profile label, so no command
 * sees another's set, and nothing else on the engine is touched. Each command starts once the machine is quiet (its CPUs
 * 80% idle over a second, waited for at most 20 s: `settle` in bench/util.ts), and each run's line says how idle they
 * were. `npm run bench:all` runs it with `--runs 3`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchArgs, benchId, createSet, median, ofProfile, removeAll, repo, settle, time } from './util.js';

const args = benchArgs({ count: 300, runs: 6 });
const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const GOAL = 0.5;
/** reap within this of the bare client (#44): what reap adds to the least any Node client pays. */
const FLOOR_GOAL = 1.1;
const benchHome = mkdtempSync(path.join(os.tmpdir(), 'hj-bench-'));
const VARIANTS = ['reap', 'prune', 'floor'] as const;
type Variant = (typeof VARIANTS)[number];

function timed(v: Variant, profile: string, asOf: string): number {
  if (v === 'reap') {
    return time(process.execPath, [
      path.join(repo, 'bin/hermes-janitor.js'),
      'reap',
      '--quiet',
      '--profile',
      profile,
      '--home',
      benchHome,
      '--as-of',
      asOf,
      '--concurrency',
      args.concurrency,
      '--timeout',
      '0',
    ]);
  }
  if (v === 'prune')
    return time('docker', ['container', 'prune', '--force', '--filter', 'label=hermes-agent=1', '--filter', `label=hermes-profile=${profile}`]);
  return time(process.execPath, [path.join(repo, 'bench/floor-client.mjs'), 'remove', profile, '--concurrency', args.concurrency]);
}

async function main(): Promise<void> {
  const ms: Record<Variant, number[]> = { reap: [], prune: [], floor: [] };
  const toPrune: number[] = [];
  const toFloor: number[] = [];
  const asOf = new Date(Date.now() + 86_400_000).toISOString();
  const profiles: string[] = [];
  try {
    for (let r = 1; r <= args.runs; r++) {
      const profileOf = Object.fromEntries(VARIANTS.map((v) => [v, `bench-${benchId}-${v[0]}${r}`])) as Record<Variant, string>;
      profiles.push(...Object.values(profileOf));
      // Every set exists before any is timed: the engine holds the same containers during each command.
      for (const v of VARIANTS) await createSet(args.image, profileOf[v], args.count, 'exited');
      const order = VARIANTS.map((_, k) => VARIANTS[(k + r - 1) % VARIANTS.length]!);
      const now: Partial<Record<Variant, number>> = {};
      const quiet: string[] = [];
      for (const v of order) {
        const s = settle();
        quiet.push(`${v} after ${(s.waitedMs / 1000).toFixed(0)} s at ${(s.idle * 100).toFixed(0)}%`);
        now[v] = timed(v, profileOf[v], asOf);
      }
      const left: string[] = [];
      for (const v of VARIANTS) {
        ms[v].push(now[v]!);
        const n = (await ofProfile(profileOf[v])).length;
        if (n) left.push(`${v} left ${n}`);
      }
      toPrune.push(now.reap! / now.prune!);
      toFloor.push(now.reap! / now.floor!);
      console.log(
        `run ${r}/${args.runs} (${order.join(', ')}): ` +
          VARIANTS.map((v) => `${v} ${(now[v]! / 1000).toFixed(2)} s`).join(', ') +
          `; reap/prune ${toPrune.at(-1)!.toFixed(2)}, reap/floor ${toFloor.at(-1)!.toFixed(2)}; load average ${loadAverage()}` +
          `; each started once the CPUs were idle (${quiet.join(', ')})` +
          `${left.length ? ` (NOT COMPARABLE: ${left.join(', ')})` : ''}`,
      );
    }
  } finally {
    for (const p of profiles) await removeAll(p);
    rmSync(benchHome, { recursive: true, force: true });
  }
  console.log(`${args.count} exited containers per set, ${args.runs} runs, concurrency ${args.concurrency}`);
  console.log(`hermes-janitor reap (whole process):      median ${(median(ms.reap) / 1000).toFixed(2)} s`);
  console.log(`docker container prune:                   median ${(median(ms.prune) / 1000).toFixed(2)} s`);
  console.log(`floor (bare Node: list + removals only):  median ${(median(ms.floor) / 1000).toFixed(2)} s`);
  console.log(
    `median of per-run ratios reap/prune: ${median(toPrune).toFixed(2)} (goal <= ${GOAL.toFixed(2)}), ` +
      `floor/prune: ${median(ms.floor.map((f, i) => f / ms.prune[i]!)).toFixed(2)}`,
  );
  const floor = median(toFloor);
  console.log(
    `median of per-run ratios reap/floor: ${floor.toFixed(2)} (goal <= ${FLOOR_GOAL.toFixed(2)}: ${floor <= FLOOR_GOAL ? 'met' : 'NOT met'}; ` +
      `what reap adds to the least any Node client pays)`,
  );
}

await main();
