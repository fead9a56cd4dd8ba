/** The test suite's own CI switch: `CI=true` and `CI=1` both make an unmet precondition fail instead of skipping. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const HELPER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../helpers/preconditions.ts');

function inCi(ci: string | undefined): boolean {
  const script = `import { IN_CI } from ${JSON.stringify(HELPER)}; process.stdout.write(String(IN_CI));`;
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  if (ci !== undefined) env.CI = ci;
  const res = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', env });
  assert.equal(res.status, 0, res.stderr);
  return res.stdout === 'true';
}

describe('preconditions: what counts as CI', () => {
  it('CI=true and CI=1 are CI; unset, empty, 0 and false are not', () => {
    assert.deepEqual(['true', '1', undefined, '', '0', 'false'].map(inCi), [true, true, false, false, false, false]);
  });
});
