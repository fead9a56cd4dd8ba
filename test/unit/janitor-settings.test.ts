import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configOf } from '../../src/adapters/config.js';
import { type JanitorSetting, SWEEP_SETTINGS, readJanitorSetting } from '../../src/reaper/janitor-settings.js';
import { IMAGES_OVER, KEEP_IMAGES } from '../../src/passes/images/settings.js';
import { SANDBOX_DIRS_OLDER_THAN } from '../../src/passes/sandbox-dirs/pass.js';
import { KEEP_SHELL_SNAPSHOTS } from '../../src/passes/shell-snapshots/settings.js';

const ALL: readonly JanitorSetting[] = [...SWEEP_SETTINGS, SANDBOX_DIRS_OLDER_THAN, IMAGES_OVER, KEEP_IMAGES, KEEP_SHELL_SNAPSHOTS];
const cfg = (key: string, value: unknown) => configOf('/h/config.yaml', { janitor: { [key.replace(/^janitor\./, '')]: value } });
const read = (s: JanitorSetting, value: unknown) => readJanitorSetting(cfg(s.key, value), s);

describe('the one reader of janitor.* keys', () => {
  it('every switch reads true/false, yes/no, on/off, 1/0 (any case, YAML booleans too) and nothing else', () => {
    const switches = ALL.filter((s) => s.kind === 'switch');
    assert.deepEqual(switches.map((s) => s.key).sort(), ['janitor.keep_exec_trees', 'janitor.keep_shell_snapshots', 'janitor.stop_idle']);
    for (const s of switches) {
      for (const on of [true, 'true', 'Yes', ' on ', '1', 1]) assert.equal(read(s, on), true, `${s.key}: ${String(on)}`);
      for (const off of [false, 'false', 'NO', 'off', '0', 0]) assert.equal(read(s, off), false, `${s.key}: ${String(off)}`);
      assert.equal(read(s, null), undefined, `${s.key}: empty`);
    }
  });

  it('junk in any key is exit 2 naming the key, the file and an accepted value', () => {
    const junk: Record<string, unknown[]> = {
      switch: ['maybe', 'enabled', 2, ['true'], { on: true }],
      duration: ['soon', '-1h', 0, -5, Infinity, '1 day', true],
      number: ['lots', 0, -1, '2.5', 2.5],
      size: ['big', '0GB', '101%', true],
      list: [['(a'], '(a', [1], { a: 1 }],
    };
    for (const s of ALL) {
      for (const value of junk[s.kind]!) {
        assert.throws(
          () => read(s, value),
          (err: Error) => {
            assert.equal(err.name, 'UsageError', `${s.key}: ${String(value)}`);
            assert.ok(err.message.startsWith(`${s.key} in /h/config.yaml must be ${s.accepts}, got '`), err.message);
            if (s.flag) assert.ok(err.message.endsWith(`: fix the file or pass ${s.flag}`), err.message);
            assert.doesNotMatch(err.message, /\n/);
            return true;
          },
          `${s.key}: ${JSON.stringify(value)}`,
        );
      }
    }
  });

  it('durations: a duration or a number of seconds (YAML .inf is not one); never where allowed; false turns a pass off', () => {
    assert.equal(read(SANDBOX_DIRS_OLDER_THAN, '30d'), 30 * 86_400_000);
    assert.equal(read(SANDBOX_DIRS_OLDER_THAN, 90), 90_000);
    assert.equal(read(SANDBOX_DIRS_OLDER_THAN, false), undefined);
    const owned = SWEEP_SETTINGS.find((s) => s.key === 'janitor.idle_after_owned')!;
    assert.equal(read(owned, 'never'), null);
    assert.throws(() => read(SWEEP_SETTINGS.find((s) => s.key === 'janitor.stopped_retention')!, 'never'), /must be a duration/);
    assert.throws(() => read(owned, Infinity), /janitor\.idle_after_owned in \/h\/config\.yaml/);
  });

  it('a config.yaml that does not parse is refused one way, whichever key is read', () => {
    const bad = configOf('/h/config.yaml', undefined, '/h/config.yaml is not valid YAML (bad indentation)');
    for (const s of ALL) assert.throws(() => readJanitorSetting(bad, s), /^UsageError: \/h\/config\.yaml is not valid YAML \(bad indentation\): fix the file$/);
  });
});
