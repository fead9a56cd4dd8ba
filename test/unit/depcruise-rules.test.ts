/**
 * The layers of a pass, as `npm run lint` holds them (.dependency-cruiser.cjs): depcruise, with the project's config,
 * over one tree per rule that breaks it (test/fixtures/depcruise/<rule>/src, laid out as src/ is), finds exactly the
 * imports that break it, and none of those the rule allows.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURES = path.join(REPO, 'test', 'fixtures', 'depcruise');

/** Each violation depcruise reports over a fixture's src/: `<rule>: <from> -> <to>`, sorted. */
function violations(rule: string): string[] {
  const r = spawnSync(
    process.execPath,
    [
      path.join(REPO, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs'),
      'src',
      '--config',
      path.join(REPO, '.dependency-cruiser.cjs'),
      '--output-type',
      'json',
    ],
    { cwd: path.join(FIXTURES, rule), encoding: 'utf8' },
  );
  assert.notEqual(r.stdout, '', `depcruise gave no report: ${r.stderr}`);
  const report = JSON.parse(r.stdout) as { summary: { violations: Array<{ from: string; to: string; rule: { name: string } }> } };
  return report.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
}

describe('the import rules of a pass (.dependency-cruiser.cjs), each shown on a tree that breaks it', () => {
  it("pass-rule-no-io: a pass's rule files import no node:fs, node:child_process, src/adapters/ nor the pass's I/O", () => {
    assert.deepEqual(violations('pass-rule-no-io'), [
      'pass-rule-no-io: src/passes/demo/rule-budget.ts -> child_process',
      'pass-rule-no-io: src/passes/demo/rule.ts -> fs',
      'pass-rule-no-io: src/passes/demo/rule.ts -> src/adapters/disk.ts',
      'pass-rule-no-io: src/passes/demo/rule.ts -> src/passes/demo/files.ts',
    ]);
  });

  it("pass-not-another-pass: no pass imports another pass's folder, and a shared folder imports no pass", () => {
    assert.deepEqual(violations('pass-not-another-pass'), [
      'pass-not-another-pass: src/passes/one/run.ts -> src/passes/two/rule.ts',
      'pass-not-another-pass: src/passes/temp-dirs/files.ts -> src/passes/two/rule.ts',
    ]);
  });

  it('pass-only-through-the-list: nothing outside the pass folders imports one but the list (the container sweep neither, its sweep pass included)', () => {
    assert.deepEqual(violations('pass-only-through-the-list'), [
      'pass-only-through-the-list: src/cli/report.ts -> src/passes/one/pass.ts',
      'pass-only-through-the-list: src/passes/runner.ts -> src/passes/one/run.ts',
      'pass-only-through-the-list: src/reaper/sweep.ts -> src/passes/exec-trees/run.ts',
      'pass-only-through-the-list: src/reaper/sweep.ts -> src/passes/one/run.ts',
    ]);
  });
});
