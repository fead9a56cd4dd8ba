/**
 * A user's settings are worth that user's rights (#47): the declared direction of every setting (data), the one
 * reader of `janitor.*` keys refusing what would not keep more, and hermes' own settings clamped on top of the
 * readings as read.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configOf, withWorth } from '../../src/adapters/config.js';
import { untrustedSettings } from '../../src/adapters/settings-worth.js';
import { type KeepsMore, type SettingsWorth, keepsMore } from '../../src/core/setting-worth.js';
import { HERMES_SETTINGS, type HermesSettings, type Sourced } from '../../src/hermes/settings.js';
import { settingsWorthActing } from '../../src/hermes/settings-worth.js';
import { janitorSettings } from '../../src/passes/index.js';
import { readJanitorSetting } from '../../src/reaper/janitor-settings.js';

const KEEP_MORE: SettingsWorth = { worth: 'keep-more', who: 'uid 1001 (agent)', why: 'no access to /var/run/docker.sock' };
const AS_WRITTEN: SettingsWorth = { worth: 'as-written', why: 'test' };

describe('which values keep more (core/setting-worth.ts)', () => {
  it('longer, fewer, switch, nothing, empty, owner-rule', () => {
    const longer: KeepsMore = { more: 'longer', than: 300 };
    assert.deepEqual([keepsMore(longer, 299), keepsMore(longer, 300), keepsMore(longer, 301), keepsMore(longer, null)], [false, true, true, true]);
    const fewer: KeepsMore = { more: 'fewer', than: 1 };
    assert.deepEqual([keepsMore(fewer, 1), keepsMore(fewer, 2), keepsMore(fewer, 1000)], [true, false, false]);
    const sw: KeepsMore = { more: 'switch', keeps: false, default: true };
    assert.deepEqual([keepsMore(sw, false), keepsMore(sw, true)], [true, true]);
    const risky: KeepsMore = { more: 'switch', keeps: false, default: false };
    assert.deepEqual([keepsMore(risky, false), keepsMore(risky, true)], [true, false], 'a switch whose other value is not the default removes more');
    assert.equal(keepsMore({ more: 'nothing' }, '50GB'), false);
    assert.deepEqual([keepsMore({ more: 'empty' }, ''), keepsMore({ more: 'empty' }, 'team')], [true, false]);
    assert.equal(keepsMore({ more: 'owner-rule' }, '/anywhere'), true);
  });

  it('every janitor.* key (the sweep and every pass) and every hermes setting declares its direction', () => {
    for (const s of janitorSettings()) assert.ok(s.keepsMore, s.key);
    for (const [name, spec] of Object.entries(HERMES_SETTINGS)) assert.ok((spec as { keepsMore?: unknown }).keepsMore, name);
  });
});

describe('janitor.* keys of a user without engine rights (the one reader)', () => {
  const file = '/home/agent/.hermes/config.yaml';
  const keys = Object.fromEntries(janitorSettings().map((s) => [s.key, s]));
  const read = (worth: SettingsWorth, janitor: Record<string, unknown>, key: string) =>
    readJanitorSetting(withWorth(configOf(file, { janitor }), worth), keys[`janitor.${key}`]!);

  it('as written: every value as read', () => {
    assert.equal(read(AS_WRITTEN, { idle_max_processes: 1000 }, 'idle_max_processes'), 1000);
    assert.equal(read(AS_WRITTEN, { stopped_retention: '1h' }, 'stopped_retention'), 3_600_000);
  });

  it('only values that keep more: the rest refused (the default used), each refusal recorded once', () => {
    assert.equal(read(KEEP_MORE, { idle_max_processes: 1000 }, 'idle_max_processes'), undefined);
    assert.equal(read(KEEP_MORE, { idle_max_processes: 1 }, 'idle_max_processes'), 1);
    assert.equal(read(KEEP_MORE, { stopped_retention: '1h' }, 'stopped_retention'), undefined);
    assert.equal(read(KEEP_MORE, { stopped_retention: '30d' }, 'stopped_retention'), 30 * 86_400_000);
    assert.equal(read(KEEP_MORE, { idle_after_owned: 'never' }, 'idle_after_owned'), null);
    assert.equal(read(KEEP_MORE, { idle_after_owned: '1h' }, 'idle_after_owned'), undefined);
    assert.equal(read(KEEP_MORE, { exec_max_age: '5m' }, 'exec_max_age'), undefined);
    assert.equal(read(KEEP_MORE, { exec_max_age: '2h' }, 'exec_max_age'), 7_200_000);
    assert.equal(read(KEEP_MORE, { stop_idle: false }, 'stop_idle'), false);
    assert.equal(read(KEEP_MORE, { keep_exec_trees: true }, 'keep_exec_trees'), true);
    assert.equal(read(KEEP_MORE, { keep_session_files: true }, 'keep_session_files'), true);
    // Passes that remove what the defaults keep, and patterns root would run: refused whatever the value.
    assert.equal(read(KEEP_MORE, { sandbox_dirs_older_than: '30d' }, 'sandbox_dirs_older_than'), undefined);
    assert.equal(read(KEEP_MORE, { images_over: '1B' }, 'images_over'), undefined);
    assert.equal(read(KEEP_MORE, { keep_images: ['^x'] }, 'keep_images'), undefined);
    read(KEEP_MORE, { idle_max_processes: 1000 }, 'idle_max_processes'); // again: recorded once
    const mine = untrustedSettings().filter((u) => u.file === file);
    assert.deepEqual(
      mine.map((u) => [u.setting, u.value]),
      [
        ['janitor.idle_max_processes', '1000'],
        ['janitor.stopped_retention', '1h'],
        ['janitor.idle_after_owned', '1h'],
        ['janitor.exec_max_age', '5m'],
        ['janitor.sandbox_dirs_older_than', '30d'],
        ['janitor.images_over', '1B'],
        ['janitor.keep_images', '["^x"]'],
      ],
    );
    assert.match(
      mine[0]!.detail,
      /^janitor\.idle_max_processes 1000 in \/home\/agent\/\.hermes\/config\.yaml refused \(untrusted-setting\): uid 1001 \(agent\) cannot act/,
    );
    assert.equal(mine[0]!.reason, 'untrusted-setting');
  });
});

describe("hermes' settings of a user without engine rights (clamped on top of the readings)", () => {
  const home = '/home/agent/.hermes';
  const base = Object.fromEntries(
    Object.entries(HERMES_SETTINGS).map(([k, spec]) => [k, { value: spec.interpret(undefined, { home, cwd: '/' }), source: 'default' }]),
  ) as unknown as HermesSettings;
  const withLifetime = (l: Sourced<number>): HermesSettings => ({ ...base, lifetimeSeconds: l });

  it("a lifetime of 0 from their config.yaml (both readings) becomes hermes' 300; the operator's environment stands", () => {
    const noted: string[] = [];
    const theirs = withLifetime({
      value: 0,
      source: 'config.yaml terminal.lifetime_seconds',
      readings: [
        { reading: 'scope', value: 0, source: 'config.yaml terminal.lifetime_seconds' },
        { reading: 'launch', value: 0, source: 'config.yaml terminal.lifetime_seconds' },
      ],
      used: 'launch',
    });
    const acted = settingsWorthActing(theirs, KEEP_MORE, { home, cwd: '/' }, (u) => noted.push(u.detail));
    assert.deepEqual([acted.lifetimeSeconds.value, acted.lifetimeSeconds.source], [300, 'default']);
    assert.equal(noted.length, 2, 'each reading that said it');
    assert.match(
      noted[0]!,
      /^terminal\.lifetime_seconds 0 in \/home\/agent\/\.hermes\/config\.yaml refused \(untrusted-setting\).*300 \(hermes' default\) is used$/,
    );
    assert.equal(settingsWorthActing(theirs, AS_WRITTEN, { home, cwd: '/' }, () => assert.fail('as written')).lifetimeSeconds.value, 0);
    const operators = withLifetime({ value: 60, source: 'env TERMINAL_LIFETIME_SECONDS' });
    assert.equal(settingsWorthActing(operators, KEEP_MORE, { home, cwd: '/' }, () => assert.fail('the operator')).lifetimeSeconds.value, 60);
    const longer = withLifetime({ value: 1800, source: `${home}/.env` });
    assert.equal(settingsWorthActing(longer, KEEP_MORE, { home, cwd: '/' }, () => assert.fail('keeps more')).lifetimeSeconds.value, 1800);
  });

  it("a shared container key of theirs is refused (another's identity is not theirs to claim); the reaper switch off stands", () => {
    const s: HermesSettings = {
      ...base,
      dockerSharedContainerKey: { value: 'team', source: 'config.yaml terminal.docker_shared_container_key' },
      dockerOrphanReaper: { value: false, source: 'config.yaml terminal.docker_orphan_reaper' },
    };
    const acted = settingsWorthActing(s, KEEP_MORE, { home, cwd: '/' }, () => undefined);
    assert.equal(acted.dockerSharedContainerKey.value, '');
    assert.equal(acted.dockerOrphanReaper.value, false);
  });
});
