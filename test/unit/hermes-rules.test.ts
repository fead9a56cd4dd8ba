/**
 * What the janitor knows of hermes (src/hermes/): container identities (checked against Python's own answers for
 * `_container_identity`), a profile .env as a routed turn reads it, the scope reading and the reading acted on, the
 * labels each profile's settings judge, the hermes installs of a fixture checkout and venv, and version comparison.
 */
import assert from 'node:assert/strict';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { type HermesSettings, resolveHermesSettings } from '../../src/hermes/settings.js';
import { readEnvFile } from '../../src/hermes/env-file.js';
import { identitiesOf, sharedIdentity } from '../../src/hermes/identity.js';
import { INSTALL_DIR_ENTRIES_CAP, checkoutCommit, createPlaceProbe, describeInstall, installOnPath, pyprojectVersion } from '../../src/hermes/installs.js';
import { labelRules } from '../../src/hermes/judgement.js';
import { KNOWN_HERMES, compareReleases, newerThanKnown } from '../../src/hermes/known.js';
import { combineReadings, profileIdentities } from '../../src/hermes/readings.js';
import { resolveScopeSettings } from '../../src/hermes/scope-settings.js';

describe('container identities (tools/environments/docker.py _container_identity)', () => {
  it("the shared key's: sanitised, cut to 50, then the first 12 hex of its SHA-256 (as Python computes them)", () => {
    // python3 -c "import hashlib,re; k=...; print(re.sub(r'[^A-Za-z0-9_.-]','_',k)[:63][:50]+'-'+hashlib.sha256(k.encode()).hexdigest()[:12])"
    assert.equal(sharedIdentity('team'), 'team-ca8b22d0db83');
    assert.equal(sharedIdentity('team/x'), 'team_x-b5a9e66419d5');
    assert.equal(sharedIdentity('x'.repeat(80)), `${'x'.repeat(50)}-d929cdeea7e6`);
    assert.equal(sharedIdentity('é→k'), '__k-9f31cd6d3f6a');
  });
  it("no key: the profile's own name; a key with surrounding whitespace: both versions' (stripped and not)", () => {
    assert.deepEqual(identitiesOf('work', ''), ['work']);
    assert.deepEqual(identitiesOf('work', 'team'), ['team-ca8b22d0db83']);
    assert.deepEqual(identitiesOf('work', ' team'), ['team-ca8b22d0db83', '_team-143b1f05d939']);
    assert.deepEqual(identitiesOf('work', '  '), ['work', '__-6c179f21e6f6'], 'blank: none where stripped, the blank key where not');
  });
});

describe('a profile .env as a routed turn reads it (agent/secret_scope.py load_env_file, terminal_scope _validate_dotenv)', () => {
  it('bindings: export, comments, quotes with the writer escapes; no interpolation', () => {
    const r = readEnvFile('\uFEFF# c\nexport TERMINAL_LIFETIME_SECONDS=900 # note\nA="x \\" y" # t\nB=\'q\'\nC=${HOME}/x\nD=a#b\n', '/p/.env');
    assert.ok('values' in r);
    assert.deepEqual(Object.fromEntries(r.values), { TERMINAL_LIFETIME_SECONDS: '900', A: 'x " y', B: 'q', C: '${HOME}/x', D: 'a#b' });
  });
  it('a 1 MiB line (the most a settings file may be) is read in one pass: a run of spaces, an inline comment after it', () => {
    const spaces = ' '.repeat(1024 * 1024 - 40);
    const r = readEnvFile(`TERMINAL_LIFETIME_SECONDS=4242\nJUNK=x${spaces}y\nA=b${spaces}# c\n`, '/p/.env');
    assert.ok('values' in r);
    assert.equal(r.values.get('TERMINAL_LIFETIME_SECONDS'), '4242');
    assert.equal(r.values.get('JUNK'), `x${spaces}y`);
    assert.equal(r.values.get('A'), 'b');
  });
  it('a line that does not parse refuses the whole file, naming the line', () => {
    assert.deepEqual(readEnvFile('A=1\nnot a binding\n', '/p/.env'), { refused: 'cannot parse /p/.env: invalid line 2' });
    assert.deepEqual(readEnvFile('A="open\n', '/p/.env'), { refused: 'cannot parse /p/.env: unterminated quote on line 1' });
    assert.deepEqual(readEnvFile('A="x" y\n', '/p/.env'), { refused: 'cannot parse /p/.env: invalid line 1' });
    assert.deepEqual(readEnvFile('1A=x\n', '/p/.env'), { refused: 'cannot parse /p/.env: invalid line 1' });
  });
});

const where = { home: '/r/profiles/work', cwd: '/' };
const launch = (env: Record<string, string> = {}, config: unknown = null): HermesSettings =>
  resolveHermesSettings({
    ...where,
    env,
    dotenv: null,
    managedDotenv: null,
    config: config ? { path: '/r/profiles/work/config.yaml', data: config } : null,
    managedConfig: null,
  });

describe('the scope reading (tools/terminal_scope.py build_profile_terminal_scope) and the reading acted on', () => {
  it('defaults, then the profile .env TERMINAL_* keys, then config.yaml terminal:; never the process environment', () => {
    const none = resolveScopeSettings({ ...where, dotenv: null, config: null });
    assert.ok('settings' in none);
    assert.deepEqual(none.settings.lifetimeSeconds, { value: 300, source: 'default' });
    const env = readEnvFile('TERMINAL_LIFETIME_SECONDS=900\nTERMINAL_TIMEOUT=400\nTMPDIR=/x\n', '/r/profiles/work/.env');
    const r = resolveScopeSettings({
      ...where,
      dotenv: { path: '/r/profiles/work/.env', reading: env },
      config: { path: 'c', data: { terminal: { timeout: 500 } } },
    });
    assert.ok('settings' in r);
    assert.deepEqual(r.settings.lifetimeSeconds, { value: 900, source: '/r/profiles/work/.env' });
    assert.deepEqual(r.settings.terminalTimeoutSeconds, { value: 500, source: 'config.yaml terminal.timeout' });
    assert.equal(r.settings.tmpDir, undefined, 'TMPDIR is not part of the scope');
  });
  it('refused: a config.yaml that does not parse, is not a mapping, or whose terminal: is not one; a refused .env', () => {
    const refused = (config: NonNullable<Parameters<typeof resolveScopeSettings>[0]['config']>) => resolveScopeSettings({ ...where, dotenv: null, config });
    assert.deepEqual(refused({ path: 'c', problem: 'c is not valid YAML (x)' }), { refused: 'c is not valid YAML (x)' });
    assert.deepEqual(refused({ path: 'c', data: ['a'] }), { refused: 'c must contain a mapping' });
    assert.deepEqual(refused({ path: 'c', data: { terminal: 'docker' } }), { refused: 'terminal in c must be a mapping' });
    assert.deepEqual(resolveScopeSettings({ ...where, dotenv: { path: 'e', reading: { refused: 'cannot parse e: invalid line 1' } }, config: null }), {
      refused: 'cannot parse e: invalid line 1',
    });
  });
  it("the janitor's own TERMINAL_LIFETIME_SECONDS=30 shortens only the launch reading: the scope's 300 is acted on", () => {
    const scope = resolveScopeSettings({ ...where, dotenv: null, config: null });
    const c = combineReadings(launch({ TERMINAL_LIFETIME_SECONDS: '30' }), scope);
    assert.equal(c.refused, null);
    assert.deepEqual(c.settings.lifetimeSeconds, {
      value: 300,
      source: 'default',
      used: 'scope',
      readings: [
        { reading: 'scope', value: 300, source: 'default' },
        { reading: 'launch', value: 30, source: 'env TERMINAL_LIFETIME_SECONDS' },
      ],
    });
  });
  it('the longer timeouts, the reaper off if either says off, paths as launched; a refused scope keeps the launch values', () => {
    const scope = resolveScopeSettings({
      ...where,
      dotenv: { path: 'e', reading: readEnvFile('TERMINAL_TIMEOUT=900\nTERMINAL_DOCKER_ORPHAN_REAPER=false\nTERMINAL_SANDBOX_DIR=/s\n', 'e') },
      config: null,
    });
    const c = combineReadings(launch({ TERMINAL_TIMEOUT: '100', TERMINAL_SANDBOX_DIR: '/l' }), scope);
    assert.equal(c.settings.terminalTimeoutSeconds.value, 900);
    assert.equal(c.settings.dockerOrphanReaper.value, false);
    assert.equal(c.settings.dockerOrphanReaper.used, 'scope');
    assert.equal(c.settings.sandboxRoot.value, '/l');
    assert.equal(c.settings.sandboxRoot.used, 'launch');
    const r = combineReadings(launch({ TERMINAL_LIFETIME_SECONDS: '30' }), { refused: 'why' });
    assert.equal(r.refused, 'why');
    assert.equal(r.settings.lifetimeSeconds.value, 30);
  });
  it("a profile's identities: its shared key's in either reading", () => {
    const scope = resolveScopeSettings({ ...where, dotenv: null, config: { path: 'c', data: { terminal: { docker_shared_container_key: 'team' } } } });
    assert.deepEqual(profileIdentities('work', combineReadings(launch({}, { terminal: { docker_shared_container_key: 'team' } }), scope).settings), [
      'team-ca8b22d0db83',
    ]);
    assert.deepEqual(
      profileIdentities(
        'work',
        combineReadings(launch({ TERMINAL_DOCKER_SHARED_CONTAINER_KEY: 'x' }), resolveScopeSettings({ ...where, dotenv: null, config: null })).settings,
      ),
      ['work', sharedIdentity('x')],
    );
  });
});

describe('which profiles judge which labels (hermes/judgement.ts)', () => {
  const read = (profile: string, lifetime: number, key = '', extra: Partial<{ refused: string; reaperOff: boolean }> = {}) => {
    const cfg = { terminal: { lifetime_seconds: lifetime, docker_shared_container_key: key, ...(extra.reaperOff ? { docker_orphan_reaper: false } : {}) } };
    const settings = combineReadings(launch({}, cfg), resolveScopeSettings({ ...where, dotenv: null, config: { path: 'c', data: cfg } })).settings;
    return { profile, home: `/r/profiles/${profile}`, settings, refused: extra.refused ?? null };
  };
  it('profiles sharing a key: the longest lifetime gives the threshold (60 and 900: 1800 s)', () => {
    const rules = labelRules([read('a', 60, 'team'), read('b', 900, 'team'), read('c', 100)], { janitorReaps: false });
    assert.equal(rules.thresholdByLabel['team-ca8b22d0db83'], 1800);
    assert.deepEqual(rules.profilesByLabel['team-ca8b22d0db83'], ['a', 'b']);
    assert.equal(rules.thresholdByLabel.a, 120, "a's own name (its sandboxes from before the key)");
    assert.equal(rules.thresholdByLabel.c, 200);
    assert.deepEqual(rules.held, {});
  });
  it('held: a profile refused, or with the reaper off, holds every label it shares (HERMES_JANITOR_REAPER lifts the reaper one)', () => {
    const rules = labelRules([read('a', 60, 'team', { refused: 'cannot parse x' }), read('b', 900, 'team'), read('c', 100, '', { reaperOff: true })], {
      janitorReaps: false,
    });
    assert.equal(rules.held['team-ca8b22d0db83']?.reason, 'settings-refused');
    assert.match(rules.held['team-ca8b22d0db83']!.why, /profile a: cannot parse x/);
    assert.equal(rules.held.c?.reason, 'reaper-off');
    assert.equal(rules.held.b, undefined);
    assert.equal(labelRules([read('c', 100, '', { reaperOff: true })], { janitorReaps: true }).held.c, undefined);
  });
});

describe('hermes installs (a fixture checkout and venv) and the version this janitor knows', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hj-installs-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  const write = (rel: string, text = '') => {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  };
  write('checkout/hermes_cli/main.py');
  write('checkout/tools/terminal_tool.py');
  write('checkout/pyproject.toml', '[build-system]\nrequires = []\n\n[project]\nname = "hermes-agent"\nversion = "0.21.3"\n\n[tool.x]\nversion = "9"\n');
  write('checkout/.git/HEAD', 'ref: refs/heads/main\n');
  write('checkout/.git/packed-refs', '# pack-refs\n00067189dfecf833d4d009c2dd977ae85cf800e0 refs/heads/main\n');
  write('venv/pyvenv.cfg', 'home = /usr/bin\n');
  write('venv/lib/python3.12/site-packages/hermes_cli/main.py');
  write('venv/lib/python3.12/site-packages/hermes_agent-0.23.0.dist-info/METADATA', 'Metadata-Version: 2.4\nName: hermes-agent\nVersion: 0.23.0\n');
  write('venv/bin/hermes', `#!${root}/venv/bin/python3\nimport sys\n`);
  symlinkSync('/usr/bin/python3', path.join(root, 'venv/bin/python3'));

  it('a checkout: its pyproject version and the commit its HEAD names (a packed ref)', () => {
    const probe = createPlaceProbe();
    const place = probe(path.join(root, 'checkout/batch_runner.py'), 'file');
    assert.deepEqual(place, { kind: 'checkout', dir: path.join(root, 'checkout') });
    assert.deepEqual(describeInstall(place!), {
      kind: 'checkout',
      dir: path.join(root, 'checkout'),
      version: '0.21.3',
      commit: '00067189dfecf833d4d009c2dd977ae85cf800e0',
    });
    write('checkout/.git/refs/heads/main', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n');
    assert.equal(checkoutCommit(path.join(root, 'checkout')), 'a'.repeat(40), 'a loose ref wins over the packed one');
    assert.equal(pyprojectVersion('[project]\nname="x"\n'), null);
  });
  it('a venv: found by its interpreter and by the hermes on PATH; its version from the package metadata, newer than known', () => {
    const probe = createPlaceProbe();
    assert.deepEqual(probe(path.join(root, 'venv/bin/python3'), 'interpreter'), { kind: 'venv', dir: path.join(root, 'venv') });
    const onPath = installOnPath(`/nonexistent:${root}/venv/bin`, probe);
    assert.equal(onPath?.place.dir, path.join(root, 'venv'));
    const d = describeInstall(onPath!.place);
    assert.equal(d.version, '0.23.0');
    assert.equal(newerThanKnown(d.version), true);
    assert.equal(newerThanKnown(KNOWN_HERMES.version), false);
    assert.equal(newerThanKnown('0.21.2'), false);
    assert.equal(newerThanKnown('not a version'), null);
    assert.equal(compareReleases('v0.21.10', '0.21.9'), 1);
    assert.equal(compareReleases('0.21', '0.21.0'), 0);
  });
  it("a venv's site-packages its owner filled past INSTALL_DIR_ENTRIES_CAP: read that far, and the install names the directory (status says it)", () => {
    const site = path.join(root, 'full-venv/lib/python3.12/site-packages');
    mkdirSync(site, { recursive: true });
    writeFileSync(path.join(root, 'full-venv/pyvenv.cfg'), 'home = /usr/bin\n');
    for (let i = 0; i < INSTALL_DIR_ENTRIES_CAP + 20; i++) closeSync(openSync(path.join(site, `m${i}.py`), 'w'));
    const d = describeInstall({ kind: 'venv', dir: path.join(root, 'full-venv') });
    assert.equal(d.version, null);
    assert.deepEqual(d.capped, [site]);
    const few = path.join(root, 'small-venv/lib/python3.12/site-packages');
    mkdirSync(few, { recursive: true });
    const small = describeInstall({ kind: 'venv', dir: path.join(root, 'small-venv') });
    assert.equal(small.version, null);
    assert.equal(small.capped, undefined, 'under the cap: nothing to say');
  });
  it('not hermes: a directory that only looks like it by name', () => {
    write('hermes-notes/backup.sh');
    assert.equal(createPlaceProbe()(path.join(root, 'hermes-notes/backup.sh'), 'file'), null);
  });
});
