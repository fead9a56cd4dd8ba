/** `npm run shapes -- --help` answers with its usage; bad usage is one line and the usage, exit 2, no stack trace. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { REPO } from '../helpers/cli.js';

const shapes = (...args: string[]) => spawnSync(process.execPath, [path.join(REPO, 'scripts/function-shapes.mjs'), ...args], { cwd: REPO, encoding: 'utf8' });

describe('scripts/function-shapes.mjs', () => {
  it('--help prints its usage and exits 0', () => {
    const r = shapes('--help');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^usage: npm run shapes .*--max-lines/);
    assert.equal(r.stderr, '');
  });

  it('an unknown option, a bad number, a missing path: one line naming it, the usage, exit 2', () => {
    for (const [args, says] of [
      [['--bogus'], 'unknown option --bogus'],
      [['--max-lines', 'x'], '--max-lines needs a whole number'],
      [['no/such/dir'], 'no/such/dir: no such file'],
    ] as const) {
      const r = shapes(...args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.ok(r.stderr.startsWith(`shapes: ${says}`), r.stderr);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    }
  });

  it('counts the functions of src and names none over the limits', () => {
    const r = shapes();
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /\d+ functions in \d+ files: 0 over 80 lines, 0 with more than 5 parameters/);
  });
});
