/**
 * What `npm pack` ships is what a user needs: the bin, the built CLI and library, the README and every docs page,
 * and in particular the page each command's --help names (the built CLI, as installed, points at its own docs/).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { REPO, runCli } from '../helpers/cli.js';

/** The files `npm pack` would put in the tarball (no scripts run: the build is the suite's own). */
function packed(): Set<string> {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPO, encoding: 'utf8' });
  assert.equal(r.status, 0, `npm pack --dry-run: ${r.stderr}`);
  const [pack] = JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>;
  return new Set(pack!.files.map((f) => f.path));
}

describe('npm pack', () => {
  const files = packed();

  it('ships the bin, the built CLI and library with its types, the README, the license and every docs page', () => {
    for (const f of [
      'package.json',
      'README.md',
      'LICENSE',
      'bin/hermes-janitor.js',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/cli/main.js',
      'dist/cli/main.bundle.cjs',
      'dist/cli/main.bundle.cjs.cache',
      'dist/fast-path.cjs',
    ]) {
      assert.ok(files.has(f), `${f} is in the package`);
    }
    const pages = readdirSync(path.join(REPO, 'docs')).filter((n) => n.endsWith('.md'));
    assert.ok(pages.length >= 7);
    for (const page of pages) assert.ok(files.has(`docs/${page}`), `docs/${page} is in the package`);
    assert.deepEqual(
      [...files].filter((f) => /^(src|test|bench|scripts|node_modules)\//.test(f)),
      [],
      'no sources, tests or benches',
    );
  });

  it("ships the page each command's --help ends with (the built CLI)", async () => {
    for (const command of ['list', 'reap', 'status', 'watch', 'shell-init', 'restart-guard', 'lifecycle-scan', 'stuck-sessions', 'stop-hook', 'tool-loop']) {
      const r = await runCli([command, '--help']);
      assert.equal(r.code, 0, `${command} --help: ${r.stderr}`);
      const m = /\nDocs: (.+)\n$/.exec(r.stdout);
      assert.ok(m, `${command} --help ends with a Docs: line`);
      const page = path.relative(REPO, m[1]!);
      assert.match(page, /^docs\/[a-z-]+\.md$/, `${command}: a page of the package's docs/, not ${m[1]}`);
      assert.ok(files.has(page), `${command}: ${page} is in the package`);
    }
  });
});
