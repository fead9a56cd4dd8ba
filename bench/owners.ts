/**
 * `npm run bench:owners [-- --profiles N] [--runs N]`
 *
 * What finding the owners of sandboxes costs (#37): reading this host's process table for hermes processes, and
 * resolving what each owns from the files of what it serves (a stand-in gateway `<dir>/hermes gateway run` on a
 * root of N profiles, each with a config.yaml and a .env): the first resolution of a run, and a refresh with the
 * run's cache (what each stop pays right before it acts). Prints medians. Goal: a refresh costs no more than the
 * process table read itself.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { listHermesProcesses } from '../src/adapters/hermes-processes.js';
import { newOwnershipCache, resolveOwnership } from '../src/hermes/owned-profiles.js';

const { values } = parseArgs({ options: { profiles: { type: 'string', default: '50' }, runs: { type: 'string', default: '15' } } });
const profiles = Number(values.profiles);
const runs = Number(values.runs);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;
const dir = mkdtempSync(path.join(os.tmpdir(), 'hj-owners-bench-'));
let gateway: ChildProcess | undefined;

try {
  const root = path.join(dir, 'root');
  for (let i = 0; i < profiles; i++) {
    const home = path.join(root, 'profiles', `p${i}`);
    mkdirSync(home, { recursive: true });
    writeFileSync(path.join(home, 'config.yaml'), `terminal:\n  lifetime_seconds: ${300 + i}\n`);
    writeFileSync(path.join(home, '.env'), `TERMINAL_TIMEOUT=${180 + i}\n`);
  }
  writeFileSync(path.join(dir, 'hermes'), '#!/bin/sh\nsleep 3600\n', { mode: 0o755 });
  gateway = spawn('sh', [path.join(dir, 'hermes'), 'gateway', 'run'], { env: { HOME: dir, HERMES_HOME: root, PATH: process.env.PATH ?? '' }, stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 300));
  const where = { env: {}, cwd: '/' };
  const table: number[] = [];
  const first: number[] = [];
  const refresh: number[] = [];
  let owns = 0;
  for (let i = 0; i < runs; i++) {
    let t = process.hrtime.bigint();
    const procs = listHermesProcesses();
    table.push(ms(t));
    const cache = newOwnershipCache();
    t = process.hrtime.bigint();
    const r = await resolveOwnership(procs, { ...where, cache });
    first.push(ms(t));
    t = process.hrtime.bigint();
    await resolveOwnership(listHermesProcesses(), { ...where, cache });
    refresh.push(ms(t));
    owns = r.processes.find((p) => p.pid === gateway!.pid)?.owns?.length ?? -1;
  }
  console.log(`gateway on a root of ${profiles} profiles (it owns ${owns} labels), medians of ${runs}:`);
  console.log(`  process table read:              ${median(table).toFixed(1)} ms`);
  console.log(`  ownership, first of a run:       ${median(first).toFixed(1)} ms`);
  console.log(`  table + ownership, a refresh:    ${median(refresh).toFixed(1)} ms`);
} finally {
  gateway?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
