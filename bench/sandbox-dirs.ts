/**
 * `npm run bench:sandbox-dirs [-- --files 50000 --runs 3]`
 *
 * Measuring and removing one big task directory (a package cache: `--files` small files in 100 directories, plus
 * hard links and symlinks): `scanTaskDir` (with the permission check the removal pass makes) against
 * `du -sxB1`, and `removeTaskDir` against `rm -rf --one-file-system`, each on a fresh identical tree (built
 * before either is timed, the order alternating). Prints medians and their ratios; the sizes must agree.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, linkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readMountPoints, removeTaskDir, scanTaskDir } from '../src/passes/dir-trees/files.js';
import { listTaskDirs } from '../src/passes/sandbox-dirs/files.js';

const { values } = parseArgs({ options: { files: { type: 'string', default: '50000' }, runs: { type: 'string', default: '3' } } });
const files = Number(values.files);
const runs = Number(values.runs);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'hj-sbx-bench-'));
const root = { root: path.join(tmp, 'sandboxes'), from: 'home' as const };

function build(name: string): string {
  const dir = path.join(root.root, 'docker', name);
  for (let d = 0; d < 100; d++) mkdirSync(path.join(dir, 'home', '.cache', `d${d}`), { recursive: true });
  for (let i = 0; i < files; i++) writeFileSync(path.join(dir, 'home', '.cache', `d${i % 100}`, `f${i}`), 'x'.repeat(i % 5000));
  for (let i = 0; i < 100; i++) linkSync(path.join(dir, 'home', '.cache', `d${i}`, `f${i}`), path.join(dir, `hl${i}`));
  for (let i = 0; i < 100; i++) symlinkSync('/usr', path.join(dir, `sl${i}`));
  return dir;
}

try {
  const t = { scan: [] as number[], du: [] as number[], remove: [] as number[], rm: [] as number[] };
  for (let r = 0; r < runs; r++) {
    const a = build(`a${r}`);
    const b = build(`b${r}`);
    execFileSync('sync');
    const place = { parentDev: (await listTaskDirs(root)).parentDev!, mountPoints: await readMountPoints() };
    const order = r % 2 === 0 ? ['scan', 'du'] : ['du', 'scan'];
    let scanned = 0;
    let counted = 0;
    for (const which of order) {
      const s = process.hrtime.bigint();
      if (which === 'scan') scanned = (await scanTaskDir(a, place, { checkRemovable: true })).bytes;
      else counted = Number(execFileSync('du', ['-sxB1', b], { encoding: 'utf8' }).split('\t')[0]);
      t[which as 'scan' | 'du'].push(ms(s));
    }
    if (scanned !== counted) throw new Error(`sizes disagree: scan ${scanned}, du ${counted}`);
    for (const which of r % 2 === 0 ? ['remove', 'rm'] : ['rm', 'remove']) {
      const s = process.hrtime.bigint();
      if (which === 'remove') {
        const o = await removeTaskDir(a, place.parentDev);
        if (o.status !== 'removed') throw new Error(`removal: ${JSON.stringify(o)}`);
      } else execFileSync('rm', ['-rf', '--one-file-system', b]);
      t[which as 'remove' | 'rm'].push(ms(s));
    }
  }
  const line = (what: string, ours: number[], theirs: number[], tool: string) =>
    `${what}: ${median(ours).toFixed(0)} ms vs ${tool} ${median(theirs).toFixed(0)} ms (${(median(ours) / median(theirs)).toFixed(2)}x)`;
  console.log(`one task directory of ${files} files in 100 directories, ${runs} runs (medians):`);
  console.log(line('scanTaskDir (with the permission check)', t.scan, t.du, 'du -sxB1'));
  console.log(line('removeTaskDir', t.remove, t.rm, 'rm -rf --one-file-system'));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
