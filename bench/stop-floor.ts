/**
 * `npm run bench:stop-floor [-- --count N --runs R]`
 *
 * Where the idle stop pass stands against the floor of any Node client. One set of N running idle sandboxes (and an
 * identical idle set beside it, so the engine holds 2N), started again before each timed pass; each round times, in
 * a rotating order and each as its own process after 3 s of quiet:
 *  - `docker stop` of the set;
 *  - `bench/floor-client.mjs stop`: one list and the N stops, nothing else (plain `http`, keep-alive, 50 at a time);
 *  - the same with an inspect right before each stop (`--inspect`);
 *  - `hermes-janitor reap --idle-after 2s` stopping the set (its proof taken by an untimed observation pass first).
 * It prints each round, then each variant's median wall time and its ratio to `docker stop`'s. Default 4 rounds.
 * Heavy on the engine (4 x 100 stops and starts per round): Docker 20.10 here has wedged after about a thousand.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchArgs, benchId, countIn, createSet, median, pause, removeAll, repo, startAgain, time } from './util.js';

const args = benchArgs({ count: 100, runs: 4 });
const SETTLE_MS = 3000;
const home = mkdtempSync(path.join(os.tmpdir(), 'hj-bench-floor-'));

async function main(): Promise<void> {
  const profile = `bfloor-${benchId}`;
  const beside = `bfloor-${benchId}-beside`;
  try {
    const ids = await createSet(args.image, profile, args.count, 'running');
    await createSet(args.image, beside, args.count, 'running');
    const janitor = (extra: string[] = []) =>
      time(process.execPath, [
        path.join(repo, 'bin/hermes-janitor.js'),
        'reap',
        '--quiet',
        '--home',
        home,
        '--profile',
        profile,
        '--idle-after',
        '2s',
        '--timeout',
        '60s',
        ...extra,
      ]);
    const client = path.join(repo, 'bench/floor-client.mjs');
    const variants: Record<string, { prepare?: () => void; run: () => number }> = {
      'docker stop': { run: () => time('docker', ['stop', ...ids]) },
      'node: stops only': { run: () => time(process.execPath, [client, 'stop', profile]) },
      'node: inspect + stop': { run: () => time(process.execPath, [client, 'stop', profile, '--inspect']) },
      'hermes-janitor reap': { prepare: () => janitor(), run: () => janitor() },
    };
    const names = Object.keys(variants);
    const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r < args.runs; r++) {
      const order = names.map((_, k) => names[(k + r) % names.length]!);
      for (const name of order) {
        variants[name]!.prepare?.();
        pause(SETTLE_MS);
        times[name]!.push(variants[name]!.run());
        const left = countIn(profile, 'running');
        if (left) throw new Error(`${name} left ${left} sandboxes running: its time is not comparable`);
        startAgain(ids);
      }
      console.log(`round ${r + 1}/${args.runs}: ${order.map((n) => `${n} ${(times[n]![r]! / 1000).toFixed(2)} s`).join(', ')}`);
    }
    const base = median(times['docker stop']!);
    for (const n of names) {
      console.log(`${n.padEnd(22)} median ${(median(times[n]!) / 1000).toFixed(2)} s  ${(median(times[n]!) / base).toFixed(2)}x docker stop`);
    }
  } finally {
    await removeAll(profile);
    await removeAll(beside);
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
