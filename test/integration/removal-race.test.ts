/**
 * The removal of a task directory raced by its own writer: as root, a tree of directories full of files is
 * removed while another process (unprivileged, as the user hermes runs as) swaps its subdirectories for symlinks to
 * an outside directory holding files of the same names, as fast as it can. Removal by path would then unlink the
 * outside files (the tmpwatch hole); removal relative to directory descriptors never leaves the tree. Many rounds:
 * nothing outside is ever removed or changed, and the swapped entries are reported.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { removeTaskDir } from '../../src/passes/dir-trees/files.js';
import { listTaskDirs } from '../../src/passes/sandbox-dirs/files.js';
import { NOBODY, REPO, hasSetpriv, tempDir } from '../helpers/cli.js';
import { unmet } from '../helpers/preconditions.js';

const SUBDIRS = 40;
const FILES = 400;
const ROUNDS = Number(process.env.RACE_ROUNDS ?? 5);

/** `<root>/docker/task/d<i>/f<k>`, the subdirectories writable by nobody (the attacker), the files root's. */
function makeTree(dockerDir: string): string {
  const top = path.join(dockerDir, 'task');
  mkdirSync(top, { recursive: true });
  chownSync(top, NOBODY, NOBODY);
  for (let i = 0; i < SUBDIRS; i++) {
    const d = path.join(top, `d${i}`);
    mkdirSync(d);
    for (let k = 0; k < FILES; k++) writeFileSync(path.join(d, `f${k}`), 'x');
    chownSync(d, NOBODY, NOBODY);
  }
  return top;
}

/** The swapper, as nobody; resolves once it runs, and its stop resolves to the number of swaps it made. */
async function startSwapper(dockerDir: string, outside: string): Promise<{ stop: () => Promise<number> }> {
  const child = spawn(
    'setpriv',
    [
      `--reuid=${NOBODY}`,
      `--regid=${NOBODY}`,
      '--clear-groups',
      '--',
      process.execPath,
      path.join(REPO, 'test/helpers/symlink-swapper.mjs'),
      dockerDir,
      outside,
      String(FILES),
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.stdout.on('data', (d: string) => {
      out += d;
      if (out.includes('ready\n')) resolve();
    });
  });
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return {
    stop: async () => {
      child.kill('SIGTERM');
      await closed;
      const last = out.trim().split('\n').at(-1)!;
      return (JSON.parse(last) as { swaps: number }).swaps;
    },
  };
}

describe('removing a task directory while its writer swaps directories for symlinks (root)', () => {
  it(`${ROUNDS} rounds of ${SUBDIRS} directories of ${FILES} files: nothing outside the tree is removed or changed; swaps are reported`, async (t) => {
    if (unmet(t, process.geteuid?.() !== 0 && 'needs root (the removal runs as root, the swapper as nobody)')) return;
    if (unmet(t, !hasSetpriv() && 'needs setpriv (util-linux) to run the swapper as nobody')) return;
    const tmp = tempDir('hj-race-');
    t.after(tmp.cleanup);
    chmodSync(tmp.dir, 0o755); // the swapper (nobody) reaches the tree; the outside directory stays root's
    const outside = path.join(tmp.dir, 'outside');
    mkdirSync(outside);
    for (let k = 0; k < FILES; k++) writeFileSync(path.join(outside, `f${k}`), `precious ${k}`);
    const outsideBefore = statSync(outside);
    const root = path.join(tmp.dir, 'sandboxes');
    const dockerDir = path.join(root, 'docker');
    let reported = 0;
    let swapsMade = 0;
    for (let round = 0; round < ROUNDS; round++) {
      rmSync(dockerDir, { recursive: true, force: true });
      mkdirSync(dockerDir, { recursive: true });
      chownSync(dockerDir, NOBODY, NOBODY);
      const top = makeTree(dockerDir);
      const listing = await listTaskDirs({ root, from: 'home' });
      const swapper = await startSwapper(dockerDir, outside);
      const outcome = await removeTaskDir(top, listing.parentDev!, { parentIno: listing.parentIno! });
      swapsMade += await swapper.stop();
      assert.deepEqual(readdirSync(outside).length, FILES, `round ${round}: files outside were removed (${JSON.stringify(outcome)})`);
      for (let k = 0; k < FILES; k++) assert.equal(readFileSync(path.join(outside, `f${k}`), 'utf8'), `precious ${k}`);
      if (outcome.status === 'failed') {
        for (const s of outcome.swapped) assert.ok(s.startsWith(`${dockerDir}/`), `a swapped entry inside the tree: ${s}`);
        // The writer also adds entries (its links, the directories it moved aside) after they were listed.
        assert.ok(
          outcome.swapped.length > 0 || /^(ECHANGED|ENOTEMPTY)/.test(outcome.refusal.code),
          `a failure is a swap or an entry added meanwhile: ${JSON.stringify(outcome.refusal)}`,
        );
        reported += outcome.swapped.length;
      }
    }
    const outsideAfter = statSync(outside);
    assert.equal(outsideAfter.mtimeMs, outsideBefore.mtimeMs, 'the outside directory was not changed');
    t.diagnostic(`swaps made: ${swapsMade}, swapped entries reported: ${reported}`);
    assert.ok(swapsMade > 0, 'the swapper swapped something (else the test proved nothing)');
    assert.ok(reported > 0, 'at least one swap landed mid-removal and was reported (else the race was not exercised)');
  });
});
