/**
 * `npm run bench:startup [-- --runs N]`
 *
 * The shell start-up fast path: `hermes-janitor reap --once-per 1h` with a fresh stamp (pointed at an engine
 * address that does not exist, so any engine contact would show), timed as a whole process against bare
 * `node -e 0`. Prints medians and the ratio. Goal: ratio <= 1.5. Also the same with no engine named (the stamp of
 * a discovered engine: the fast path must not probe any socket).
 *
 * Then full runs, which load the CLI and the engine client and ask the engine: `reap --quiet` and `list --json` of
 * a profile with no containers on the real engine (`--full-runs N`, default 20), as whole processes: what a cron
 * job or a shell start-up whose stamp went stale pays.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(repo, 'bin', 'hermes-janitor.js');
const { values } = parseArgs({ options: { runs: { type: 'string', default: '40' }, 'full-runs': { type: 'string', default: '20' } } });
const runs = Number(values.runs);
const fullRuns = Number(values['full-runs']);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'hj-startup-'));
const env = { PATH: process.env.PATH ?? '', HOME: tmp, HERMES_HOME: path.join(tmp, 'hermes') };
const sock = path.join(tmp, 'engine.sock');
const engine = process.env.DOCKER_HOST?.replace(/^unix:\/\//, '') || '/var/run/docker.sock';

function timeOnce(args: string[]): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  // One real sweep through an alias of the engine's socket records the stamp; then the alias goes away.
  symlinkSync(engine, sock);
  timeOnce([bin, 'reap', '--quiet', '--host', `unix://${sock}`]);
  rmSync(sock);
  // The same with no engine named: discovery finds the engine once, and its stamp is what the fast path reads.
  timeOnce([bin, 'reap', '--quiet']);
  const fast = [bin, 'reap', '--once-per', '1h', '--quiet', '--host', `unix://${sock}`];
  const discovered = [bin, 'reap', '--once-per', '1h', '--quiet'];
  const bare: number[] = [];
  const hook: number[] = [];
  const disc: number[] = [];
  for (let i = 0; i < 3; i++) timeOnce(['-e', '0']), timeOnce(fast), timeOnce(discovered); // warm the file cache
  for (let i = 0; i < runs; i++) {
    bare.push(timeOnce(['-e', '0']));
    hook.push(timeOnce(fast));
    disc.push(timeOnce(discovered));
  }
  const b = median(bare);
  const f = median(hook);
  const d = median(disc);
  console.log(`node -e 0:                              median ${b.toFixed(1)} ms (${runs} runs)`);
  console.log(`reap --once-per 1h (fresh stamp):       median ${f.toFixed(1)} ms`);
  console.log(`  same, engine left to discovery:       median ${d.toFixed(1)} ms`);
  console.log(`ratio: ${(f / b).toFixed(2)}, discovered ${(d / b).toFixed(2)} (goal <= 1.50)`);
  // Full runs against the real engine, for a profile that has no containers (nothing is removed or stopped).
  const profile = `startup-${process.pid}`;
  const fullReap = [bin, 'reap', '--quiet', '--host', `unix://${engine}`, '--profile', profile];
  const fullList = [bin, 'list', '--json', '--host', `unix://${engine}`, '--profile', profile];
  const reapMs: number[] = [];
  const listMs: number[] = [];
  for (let i = 0; i < 2; i++) timeOnce(fullReap), timeOnce(fullList);
  for (let i = 0; i < fullRuns; i++) {
    reapMs.push(timeOnce(fullReap));
    listMs.push(timeOnce(fullList));
  }
  console.log(`full run: reap --quiet (engine asked):   median ${median(reapMs).toFixed(1)} ms (${fullRuns} runs, ${(median(reapMs) / b).toFixed(2)}x node)`);
  console.log(`full run: list --json (engine asked):    median ${median(listMs).toFixed(1)} ms (${(median(listMs) / b).toFixed(2)}x node)`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
