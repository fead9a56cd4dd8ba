/**
 * hermes' settings as hermes resolves them (pure): the `.env` parser against python-dotenv's own answers, and the
 * order of the sources (default, environment, <home>/.env, managed .env, config.yaml with the managed overlay).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { dotenvValues, parseDotenv } from '../../src/hermes/dotenv.js';
import { type SettingsInputs, pythonEnvText, resolveHermesSettings } from '../../src/hermes/settings.js';
import { stopGrace } from '../../src/core/policy.js';
import { REPO } from '../helpers/cli.js';

const FIXTURES = path.join(REPO, 'test', 'fixtures', 'dotenv');

const inputs = (over: Partial<SettingsInputs> = {}): SettingsInputs => ({
  home: '/h/.hermes',
  cwd: '/w',
  env: {},
  dotenv: null,
  managedDotenv: null,
  config: null,
  managedConfig: null,
  ...over,
});
const dotenv = (file: string, text: string) => ({ path: file, data: parseDotenv(text) });

describe('.env files, parsed as python-dotenv parses them', () => {
  it('gives the values python-dotenv 1.2.2 gives for the same file (quotes, export, comments, escapes, ${VAR}, bad lines)', () => {
    const text = readFileSync(path.join(FIXTURES, 'cases.env'), 'utf8');
    // Recorded with: python3 -c "from dotenv import dotenv_values; print(json.dumps(dotenv_values('cases.env')))"
    const expected = JSON.parse(readFileSync(path.join(FIXTURES, 'cases.python-dotenv-1.2.2.json'), 'utf8')) as Record<string, string | null>;
    const got = Object.fromEntries(dotenvValues(parseDotenv(text), {}));
    const set = Object.fromEntries(Object.entries(expected).filter(([, v]) => v !== null));
    assert.deepEqual(got, set);
  });

  it("interpolates against the environment as it stands, the file's earlier values first; a BOM is dropped", () => {
    const values = dotenvValues(parseDotenv('\uFEFFROOT=/srv\nexport TERMINAL_SANDBOX_DIR=${ROOT}/sbx\nX=${HOME}\n'), { HOME: '/home/u', ROOT: '/ignored' });
    assert.deepEqual(Object.fromEntries(values), { ROOT: '/srv', TERMINAL_SANDBOX_DIR: '/srv/sbx', X: '/home/u' });
  });
});

describe('the order hermes resolves its settings in', () => {
  it('default, then the environment, then <home>/.env, then the managed .env', () => {
    assert.deepEqual(resolveHermesSettings(inputs()).lifetimeSeconds, { value: 300, source: 'default' });
    assert.deepEqual(resolveHermesSettings(inputs()).sandboxRoot, { value: '/h/.hermes/sandboxes', source: 'default' });
    const env = { TERMINAL_LIFETIME_SECONDS: '100', TERMINAL_SANDBOX_DIR: '/env' };
    assert.deepEqual(resolveHermesSettings(inputs({ env })).lifetimeSeconds, { value: 100, source: 'env TERMINAL_LIFETIME_SECONDS' });
    const home = dotenv('/h/.hermes/.env', 'TERMINAL_LIFETIME_SECONDS=200\nTERMINAL_SANDBOX_DIR=/home-env\n');
    const s = resolveHermesSettings(inputs({ env, dotenv: home }));
    assert.deepEqual(s.lifetimeSeconds, { value: 200, source: '/h/.hermes/.env' });
    assert.deepEqual(s.sandboxRoot, { value: '/home-env', source: '/h/.hermes/.env' });
    const managed = dotenv('/m/.env', 'TERMINAL_LIFETIME_SECONDS=250\n');
    const m = resolveHermesSettings(inputs({ env, dotenv: home, managedDotenv: managed }));
    assert.deepEqual(m.lifetimeSeconds, { value: 250, source: '/m/.env' });
    assert.deepEqual(m.sandboxRoot, { value: '/home-env', source: '/h/.hermes/.env' }, 'a key the managed .env does not set stays');
  });

  it('an explicit terminal key in <home>/config.yaml beats every .env; the managed config.yaml beats it leaf by leaf', () => {
    const over = {
      env: { TERMINAL_LIFETIME_SECONDS: '100' },
      dotenv: dotenv('/h/.hermes/.env', 'TERMINAL_LIFETIME_SECONDS=200\n'),
      managedDotenv: dotenv('/m/.env', 'TERMINAL_LIFETIME_SECONDS=250\n'),
      config: { path: '/h/.hermes/config.yaml', data: { terminal: { lifetime_seconds: 600, sandbox_dir: '/cfg' } } },
    };
    const s = resolveHermesSettings(inputs(over));
    assert.deepEqual(s.lifetimeSeconds, { value: 600, source: 'config.yaml terminal.lifetime_seconds' });
    assert.deepEqual(s.sandboxRoot, { value: '/cfg', source: 'config.yaml terminal.sandbox_dir' });
    const managedConfig = { path: '/m/config.yaml', data: { terminal: { lifetime_seconds: 900 } } };
    const m = resolveHermesSettings(inputs({ ...over, managedConfig }));
    assert.deepEqual(m.lifetimeSeconds, { value: 900, source: '/m/config.yaml terminal.lifetime_seconds' });
    assert.deepEqual(m.sandboxRoot, { value: '/cfg', source: 'config.yaml terminal.sandbox_dir' }, "sibling keys stay the user's");
  });

  it("a key only the managed config.yaml sets fills in an unset variable only (apply_terminal_config_to_env: explicit keys are the user file's)", () => {
    const managedConfig = { path: '/m/config.yaml', data: { terminal: { sandbox_dir: '/managed' } } };
    assert.deepEqual(resolveHermesSettings(inputs({ managedConfig })).sandboxRoot, { value: '/managed', source: '/m/config.yaml terminal.sandbox_dir' });
    const withEnv = resolveHermesSettings(inputs({ managedConfig, env: { TERMINAL_SANDBOX_DIR: '/env' } }));
    assert.deepEqual(withEnv.sandboxRoot, { value: '/env', source: 'env TERMINAL_SANDBOX_DIR' });
    const noTerminal = resolveHermesSettings(
      inputs({ config: { path: '/h/.hermes/config.yaml', data: { terminal: 'x' } }, env: { TERMINAL_LIFETIME_SECONDS: '5' } }),
    );
    assert.equal(noTerminal.lifetimeSeconds.value, 5, 'a terminal: that is not a map overrides nothing');
  });

  it('YAML values become the text Python writes (True, 300, JSON); a bad value names its source and the fix', () => {
    assert.deepEqual([true, false, null, 300, [1], { a: 1 }].map(pythonEnvText), ['True', 'False', 'None', '300', '[1]', '{"a":1}']);
    const off = resolveHermesSettings(inputs({ config: { path: '/h/.hermes/config.yaml', data: { terminal: { docker_orphan_reaper: false } } } }));
    assert.deepEqual(off.dockerOrphanReaper, { value: false, source: 'config.yaml terminal.docker_orphan_reaper' });
    assert.throws(
      () => resolveHermesSettings(inputs({ config: { path: '/h/.hermes/config.yaml', data: { terminal: { lifetime_seconds: 'soon' } } } })),
      new RegExp(
        /^Error: TERMINAL_LIFETIME_SECONDS from config.yaml terminal.lifetime_seconds/.source +
          / must be a whole number of seconds >= 0, got 'soon': fix \/h\/.hermes\/config.yaml$/.source,
      ),
    );
    assert.throws(() => resolveHermesSettings(inputs({ env: { TERMINAL_LIFETIME_SECONDS: '-1' } })), /fix or unset TERMINAL_LIFETIME_SECONDS$/);
  });

  it('a relative TERMINAL_SANDBOX_DIR is relative to the working directory; an empty one is the default root', () => {
    assert.equal(resolveHermesSettings(inputs({ env: { TERMINAL_SANDBOX_DIR: 'sb' } })).sandboxRoot.value, '/w/sb');
    assert.equal(
      resolveHermesSettings(inputs({ dotenv: dotenv('/h/.hermes/.env', 'TERMINAL_SANDBOX_DIR=\n'), env: { TERMINAL_SANDBOX_DIR: '/x' } })).sandboxRoot.value,
      '/h/.hermes/sandboxes',
    );
  });
});

describe("a stop's grace within the run", () => {
  it('is the stop timeout, cut to the whole seconds left minus the kill margin, never below 0', () => {
    assert.equal(stopGrace(10, undefined, 0), 10);
    assert.equal(stopGrace(10, 10_000, 0), 8);
    assert.equal(stopGrace(10, 10_000, 2_500), 5);
    assert.equal(stopGrace(3, 60_000, 0), 3);
    assert.equal(stopGrace(10, 10_000, 9_000), 0);
  });
});
