/**
 * The CLI's V8 heap-growth flag: set only on a V8 known to have it (test/integration/heap-growth.test.ts shows its
 * effect and that a V8 without it prints nothing), and never by the library.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { knowsHeapGrowingPercent } from '../../src/cli/heap.js';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

describe('--heap-growing-percent: which V8 has it', () => {
  it('the known range: Node 20 (11.3) through V8 13.x; before or after it, or unreadable: not set', () => {
    for (const v of ['11.3.244.8-node.38', '11.8.172.17-node.21', '12.4.254.21-node.33', '13.6.233.10-node.18'])
      assert.equal(knowsHeapGrowingPercent(v), true, v);
    for (const v of ['11.2.999.0', '10.2.154.26-node.40', '14.0.0.0', '', 'abc', '13']) assert.equal(knowsHeapGrowingPercent(v), false, v);
  });

  it('the running V8 agrees: its own flag list (node --v8-options) has the flag exactly when the range says so', () => {
    const res = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8', maxBuffer: 16 << 20 });
    assert.equal(res.status, 0, res.stderr);
    const listed = /^\s*--heap-growing-percent\b/m.test(res.stdout);
    assert.equal(knowsHeapGrowingPercent(process.versions.v8), listed, `V8 ${process.versions.v8}: update HEAP_GROWING_PERCENT_V8 in src/cli/heap.ts`);
    // The young generation's growth factor is set with it (limitHeapGrowth): it must be there too.
    const factor = /^\s*--semi-space-growth-factor\b/m.test(res.stdout);
    assert.equal(!knowsHeapGrowingPercent(process.versions.v8) || factor, true, `V8 ${process.versions.v8} has no --semi-space-growth-factor`);
  });
});

describe('--heap-growing-percent: the CLI only', () => {
  /** Every src module the library's entry reaches through static and dynamic imports. */
  function reachable(entry: string): Set<string> {
    const seen = new Set<string>();
    const todo = [entry];
    while (todo.length) {
      const file = todo.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g)) {
        todo.push(path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')));
      }
    }
    return seen;
  }

  it("the library's entry (src/index.ts) never reaches cli/heap.ts nor calls setFlagsFromString", () => {
    const files = reachable(path.join(SRC, 'index.ts'));
    assert.ok(files.size > 20, `the import walk found ${files.size} modules`);
    assert.ok(files.has(path.join(SRC, 'reaper/api.ts')), 'the walk reaches createReaper');
    assert.equal(files.has(path.join(SRC, 'cli/heap.ts')), false);
    for (const f of files) assert.doesNotMatch(readFileSync(f, 'utf8'), /setFlagsFromString/, path.relative(SRC, f));
  });
});
