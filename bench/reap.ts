/**
 * `npm run bench [-- --count N --runs R --concurrency C]`
 *
 * Paired comparison on identical engine state: each run creates TWO identical sets of N exited hermes-labelled
 * containers (default 300) before timing anything, then times `hermes-janitor reap` (whole process) on one set and
 * `docker container prune --force --filter label=...` on the other, alternating which goes first. It prints each
 * pair and the median of the per-pair ratios reap/prune (goal <= 0.75). Each set has its own profile label, so
 * neither command sees the other's set, and nothing else on the engine is touched.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchArgs, benchId, createSet, median, ofProfile, paired, removeAll, repo, time } from './util.js';

const args = benchArgs({ count: 300, runs: 5 });
const GOAL = 0.75;
const benchHome = mkdtempSync(path.join(os.tmpdir(), 'hj-bench-'));

async function main(): Promise<void> {
  const ratios: number[] = [];
  const reapMs: number[] = [];
  const pruneMs: number[] = [];
  const asOf = new Date(Date.now() + 86_400_000).toISOString();
  const profiles: string[] = [];
  try {
    for (let r = 1; r <= args.runs; r++) {
      const reapProfile = `bench-${benchId}-r${r}`;
      const pruneProfile = `bench-${benchId}-p${r}`;
      profiles.push(reapProfile, pruneProfile);
      // Both sets exist before either is timed: the engine holds the same containers during both commands.
      await createSet(args.image, reapProfile, args.count, 'exited');
      await createSet(args.image, pruneProfile, args.count, 'exited');
      const reap = () =>
        time(process.execPath, [
          path.join(repo, 'bin/hermes-janitor.js'), 'reap', '--quiet', '--profile', reapProfile, '--home', benchHome,
          '--as-of', asOf, '--concurrency', args.concurrency, '--timeout', '0',
        ]);
      const prune = () =>
        time('docker', ['container', 'prune', '--force', '--filter', 'label=hermes-agent=1', '--filter', `label=hermes-profile=${pruneProfile}`]);
      const reapFirst = r % 2 === 1;
      const [rm, pm] = paired(reapFirst, reap, prune);
      const leftR = (await ofProfile(reapProfile)).length;
      const leftP = (await ofProfile(pruneProfile)).length;
      reapMs.push(rm);
      pruneMs.push(pm);
      ratios.push(rm / pm);
      console.log(
        `pair ${r}/${args.runs} (${reapFirst ? 'reap' : 'prune'} first): reap ${(rm / 1000).toFixed(2)} s (left ${leftR}), prune ${(pm / 1000).toFixed(2)} s (left ${leftP}), ratio ${(rm / pm).toFixed(2)}`,
      );
    }
  } finally {
    for (const p of profiles) await removeAll(p);
    rmSync(benchHome, { recursive: true, force: true });
  }
  console.log(`${args.count} exited containers per set, ${args.runs} pairs, reap --concurrency ${args.concurrency}`);
  console.log(`hermes-janitor reap (whole process): median ${(median(reapMs) / 1000).toFixed(2)} s`);
  console.log(`docker container prune:              median ${(median(pruneMs) / 1000).toFixed(2)} s`);
  console.log(`median of per-pair ratios reap/prune: ${median(ratios).toFixed(2)} (goal <= ${GOAL.toFixed(2)})`);
}

await main();
