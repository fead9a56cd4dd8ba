/**
 * The janitor's own keys in config.yaml through the built CLI: a value that does not read is exit 2 with one line
 * naming the key and the file, before any engine is contacted (the engine named here does not exist).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { assertUsageError, runCli, tempDir } from '../helpers/cli.js';

const t = tempDir('hj-janitor-keys-');
after(() => t.cleanup());
const NOWHERE = ['--host', `unix://${path.join(t.dir, 'no-engine.sock')}`];

function homeWith(name: string, yaml: string): string {
  const home = path.join(t.dir, name);
  mkdirSync(home, { recursive: true });
  writeFileSync(path.join(home, 'config.yaml'), yaml);
  return home;
}

describe('janitor.* keys that do not read', () => {
  for (const key of ['stop_idle', 'keep_exec_trees', 'keep_shell_snapshots']) {
    it(`janitor.${key}: maybe is exit 2 naming the key and the file (reap, watch, status)`, async () => {
      const home = homeWith(key, `janitor:\n  ${key}: maybe\n`);
      for (const cmd of [['reap'], ['reap', '--dry-run'], ['watch'], ['status']]) {
        const r = await runCli([...cmd, '--home', home, ...NOWHERE], { killAfterMs: 20_000 });
        assertUsageError(r, [`janitor.${key}`, path.join(home, 'config.yaml'), 'true or false', "'maybe'"], cmd.join(' '));
      }
    });
  }
  it('a duration of YAML .inf is not one', async () => {
    const home = homeWith('inf', 'janitor:\n  stopped_retention: .inf\n');
    assertUsageError(await runCli(['reap', '--home', home, ...NOWHERE]), ['janitor.stopped_retention', path.join(home, 'config.yaml'), 'a duration']);
  });
});
