/**
 * `npm run bench:all [-- --skip reap,hooks,scale --count 300 --runs 3 --hook-runs 100 --sizes 1000,10000,100000 --check]`
 *
 * The costs paid on every call, in one run and one table (#44), so that a regression shows in one place:
 *  - reap A/B (`bench/reap.ts --runs 3`): reap against the bare client (`bench/floor-client.mjs`) and `docker
 *    container prune` at 300 exited containers, rotating order; goal: reap/floor <= 1.1 by median of the per-run
 *    ratios (and reap/prune < 1: still ahead of prune);
 *  - hooks (`bench/hooks.ts`): each hook against bare `node -e 0`; goal: the worst hook <= 1.1x by median;
 *  - scale (`bench/scale.ts`): reap of 1k, 10k and 100k containers (in-memory engine, JSON output); goal: peak RSS at
 *    the largest size < 150 MB, and linear (the per-container cost of the largest within 2x of the smallest).
 * Each bench's own output is shown as it runs; the table follows, with the load average at the start and the end of
 * each bench (the machine may be shared: ratios within one run are what compare). `--check`: exit 1 when a goal is
 * not met. The engine benches need the Docker engine and the built CLI (`npm run build`).
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    skip: { type: 'string', default: '' },
    count: { type: 'string', default: '300' },
    runs: { type: 'string', default: '3' },
    'hook-runs': { type: 'string', default: '100' },
    sizes: { type: 'string', default: '1000,10000,100000' },
    check: { type: 'boolean', default: false },
  },
});
const skip = new Set(values.skip!.split(',').filter(Boolean));
for (const s of skip) if (!['reap', 'hooks', 'scale'].includes(s)) throw new Error(`--skip takes reap, hooks, scale; got '${s}'`);

interface Row {
  bench: string;
  measure: string;
  value: string;
  goal: string;
  met: boolean | null;
  load: string;
}

const load = () => os.loadavg()[0]!.toFixed(2);

/** Runs one bench as `node --import tsx bench/<file> ...`, its output shown and kept. */
function runBench(file: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(repo, 'bench', file), ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      process.stdout.write(d);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

const num = (re: RegExp, text: string): number | null => {
  const m = re.exec(text);
  return m ? Number(m[1]) : null;
};

async function reapRow(): Promise<Row[]> {
  const before = load();
  const { code, out } = await runBench('reap.ts', ['--count', values.count!, '--runs', values.runs!]);
  const floor = num(/median of per-run ratios reap\/floor: ([\d.]+)/, out);
  const prune = num(/median of per-run ratios reap\/prune: ([\d.]+)/, out);
  const bench = `reap A/B (${values.count} exited, ${values.runs} rounds)`;
  const loads = `${before} -> ${load()}`;
  if (code !== 0 || floor === null || prune === null)
    return [{ bench, measure: 'reap/floor', value: `failed (exit ${code})`, goal: '<= 1.10x', met: false, load: loads }];
  return [
    { bench, measure: 'reap/floor, median', value: `${floor.toFixed(2)}x`, goal: '<= 1.10x', met: floor <= 1.1, load: loads },
    { bench, measure: 'reap/prune, median', value: `${prune.toFixed(2)}x`, goal: '< 1.00x', met: prune < 1, load: loads },
  ];
}

async function hooksRow(): Promise<Row[]> {
  const before = load();
  const { code, out } = await runBench('hooks.ts', ['--runs', values['hook-runs']!]);
  // Its table: `case  median ms  min ms  ratio`; the first row is bare node.
  // (with `--cpu`, two more columns: cpu ms and cpu ratio)
  const rows = [...out.matchAll(/^(.+?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)(?:\s+[\d.]+\s+[\d.]+)?(?:\s+over the goal)?$/gm)].map((m) => ({
    name: m[1]!.trim(),
    ratio: Number(m[4]),
  }));
  const hooks = rows.slice(1);
  const bench = `hooks (${values['hook-runs']} runs each)`;
  const loads = `${before} -> ${load()}`;
  if (code !== 0 || hooks.length === 0)
    return [{ bench, measure: 'worst hook/bare node', value: `failed (exit ${code})`, goal: '<= 1.10x', met: false, load: loads }];
  const worst = hooks.reduce((a, b) => (b.ratio > a.ratio ? b : a));
  return [
    {
      bench,
      measure: `worst hook/bare node, median (${worst.name})`,
      value: `${worst.ratio.toFixed(2)}x`,
      goal: '<= 1.10x',
      met: worst.ratio <= 1.1,
      load: loads,
    },
  ];
}

async function scaleRow(): Promise<Row[]> {
  const before = load();
  const { code, out } = await runBench('scale.ts', ['--sizes', values.sizes!]);
  const lines = [...out.matchAll(/^(\d+) containers: ([\d.]+) s, \d+ requests, peak RSS (\d+) MB \((\d+) µs\/container/gm)].map((m) => ({
    n: Number(m[1]),
    mb: Number(m[3]),
    us: Number(m[4]),
  }));
  const loads = `${before} -> ${load()}`;
  if (code !== 0 || lines.length === 0)
    return [{ bench: 'scale', measure: 'peak RSS', value: `failed (exit ${code})`, goal: '< 150 MB', met: false, load: loads }];
  const largest = lines.at(-1)!;
  const smallest = lines[0]!;
  return [
    {
      bench: `scale (${lines.map((l) => l.n.toLocaleString('en')).join(', ')} containers)`,
      measure: `peak RSS at ${largest.n.toLocaleString('en')} (${lines.map((l) => `${l.mb} MB`).join(', ')})`,
      value: `${largest.mb} MB`,
      goal: '< 150 MB',
      met: largest.mb < 150,
      load: loads,
    },
    {
      bench: 'scale',
      measure: `µs/container, largest/smallest (${lines.map((l) => l.us).join(', ')})`,
      value: `${(largest.us / smallest.us).toFixed(2)}x`,
      goal: '<= 2.00x (linear)',
      met: largest.us / smallest.us <= 2,
      load: loads,
    },
  ];
}

const rows: Row[] = [];
if (!skip.has('reap')) rows.push(...(await reapRow()));
if (!skip.has('hooks')) rows.push(...(await hooksRow()));
if (!skip.has('scale')) rows.push(...(await scaleRow()));

const header: Row = { bench: 'bench', measure: 'measure', value: 'value', goal: 'goal', met: null, load: 'load average (1 min)' };
const cols: Array<(r: Row) => string> = [
  (r) => r.bench,
  (r) => r.measure,
  (r) => r.value,
  (r) => r.goal,
  (r) => (r === header ? 'met' : r.met ? 'yes' : 'NO'),
  (r) => r.load,
];
const widths = cols.map((c) => Math.max(...[header, ...rows].map((r) => c(r).length)));
const line = (r: Row) =>
  cols
    .map((c, i) => c(r).padEnd(widths[i]!))
    .join('  ')
    .trimEnd();
process.stdout.write(`\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.map(line).join('\n')}\n`);
process.stdout.write(`${os.cpus().length} cores, Node.js ${process.version}\n`);
if (values.check && rows.some((r) => !r.met)) process.exitCode = 1;
