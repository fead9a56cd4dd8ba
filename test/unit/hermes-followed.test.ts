/**
 * hermes followed to 0.23 (#43), the pure rules and the readers of hermes' files:
 * - versions in every form hermes writes (`vX.Y.Z`, `v2026.M.D`, `rc.N-vX.Y.Z`, `+N.g<sha>`, `git.<sha>`, the display
 *   form), with their commits, compared; which of them predate the routed-profile scope reading;
 * - the readings of the hermes installed: where every install found predates the scope, the scope reading is shown
 *   and not acted on (nor its refusal); otherwise the reading that removes later stays;
 * - named execution targets: static, inherited flat keys, backends, the registry overlay; the profile's lifetime is
 *   the longest of the flat readings and every docker target, hermes' reaper off when any docker target says off;
 *   non-docker targets listed and not counted; a home without targets unchanged;
 * - task ids in every form, their labels and directory names, as hermes computes them (values from Python's hashlib);
 * - the install stamp of a checkout or Desktop payload;
 * - one table of rules: docs/hermes.md holds it, every janitor file it names exists, every file of src/hermes/ is named.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { compareHermesVersions, parseHermesVersion } from '../../src/hermes/versions.js';
import { predatesScope, scopeNotTaken } from '../../src/hermes/host-readings.js';
import { combineReadings, scopeDecides } from '../../src/hermes/readings.js';
import type { HermesSettings, Sourced } from '../../src/hermes/settings.js';
import { flatTerminal, resolveTarget, staticTargets, withTargets } from '../../src/hermes/targets.js';
import { readExecutionTargets, registryDir } from '../../src/adapters/execution-targets.js';
import { loadHermesSettings } from '../../src/adapters/hermes-settings.js';
import { legacyTargetTaskId, parseTaskId, profileScopeOf, targetTaskId, taskDirName, taskLabel } from '../../src/hermes/task-ids.js';
import { describeInstall, installStamp } from '../../src/hermes/installs.js';
import { KNOWN_HERMES, newerThanKnown } from '../../src/hermes/known.js';
import { HERMES_RULES, driftReport, rulesTable, staleFor } from '../../src/hermes/rules.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'hj-followed-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const dir = () => {
  const d = path.join(tmp, String(n++));
  mkdirSync(d, { recursive: true });
  return d;
};

describe('hermes versions in every form', () => {
  it('parses each form with its release, candidate, distance and commit', () => {
    const p = (s: string) => {
      const v = parseHermesVersion(s);
      return [v.scheme, v.parts.join('.'), v.rc, v.distance, v.dirty, v.commit];
    };
    assert.deepEqual(p('0.23.6'), ['semver', '0.23.6', null, 0, false, null]);
    assert.deepEqual(p('v0.23.6'), ['semver', '0.23.6', null, 0, false, null]);
    assert.deepEqual(p('v2026.9.21'), ['calver', '2026.9.21', null, 0, false, null]);
    assert.deepEqual(p('v2026.8.16.2'), ['calver', '2026.8.16.2', null, 0, false, null]);
    assert.deepEqual(p('rc.5-v0.22.1'), ['semver', '0.22.1', 5, 0, false, null]);
    assert.deepEqual(p('0.22.0rc1'), ['semver', '0.22.0', 1, 0, false, null]);
    assert.deepEqual(p('v0.21.6+122.gcbe5e53'), ['semver', '0.21.6', null, 122, false, 'cbe5e53']);
    assert.deepEqual(p('0.21.6+3.gABCDEF0.dirty'), ['semver', '0.21.6', null, 3, true, 'abcdef0']);
    assert.deepEqual(p('0.21.6+?'), ['semver', '0.21.6', null, null, true, null]);
    assert.deepEqual(p('v0.21.6+122.gcbe5e53 (2026.9.24) · upstream cbe5e53e'), ['semver', '0.21.6', null, 122, false, 'cbe5e53e']);
    assert.deepEqual(p('git.cbe5e53.dirty'), ['unknown', '', null, null, true, 'cbe5e53']);
    for (const s of ['unknown', '0.0.0', '', 'latest']) assert.equal(parseHermesVersion(s).scheme, 'unknown', s);
  });

  it('compares across forms: releases, candidates before their release, commits past a release, CalVer placed among releases', () => {
    const older: Array<[string, string]> = [
      ['0.21.3', '0.21.4'],
      ['v0.21.10', 'v0.22.0'],
      ['rc.5-v0.22.1', '0.22.1'],
      ['rc.4-v0.22.1', 'rc.5-v0.22.1'],
      ['0.21.5', 'rc.1-v0.22.1'],
      ['0.21.6', 'v0.21.6+122.gcbe5e53'],
      ['v0.21.6+3.gaaaaaaa', 'v0.21.6+122.gcbe5e53'],
      ['v2026.9.21', 'v0.23.6'],
      ['v2026.8.16', 'v2026.8.16.2'],
      ['v0.20.6', 'v2026.9.14'],
      ['v2026.8.27', '0.21.0'],
    ];
    for (const [a, b] of older) {
      assert.equal(compareHermesVersions(a, b), -1, `${a} < ${b}`);
      assert.equal(compareHermesVersions(b, a), 1, `${b} > ${a}`);
    }
    assert.equal(compareHermesVersions('v2026.9.21', '0.21.4'), 0, 'a CalVer tag is its release');
    assert.equal(compareHermesVersions('v0.21.10', '0.21.10'), 0);
    // A CalVer date past a release by days cannot be placed against the next release not in the table.
    assert.equal(compareHermesVersions('v2026.9.1', '0.21.0'), null);
    assert.equal(compareHermesVersions('git.cbe5e53', '0.21.3'), null);
    assert.equal(compareHermesVersions('v2025.1.1', '0.21.3'), null, 'older than every known release');
  });

  it('newer than the janitor knows, for 0.23.6 in each of its forms', () => {
    for (const s of ['0.23.6', 'v0.23.6', 'v0.23.6+4.g1234567', 'rc.2-v0.23.6', 'v2026.9.21']) assert.equal(newerThanKnown(s), true, s);
    assert.equal(newerThanKnown(KNOWN_HERMES.version), false);
    assert.equal(newerThanKnown('v2026.9.14'), false);
    assert.equal(newerThanKnown('git.abcdef0'), null);
  });
});

describe('the readings of the hermes on the host', () => {
  it('a version predates the routed-profile scope when it is a release before 0.21.0 (or before 0.20.6 plus commits)', () => {
    for (const v of ['0.20.6', 'v2026.8.27', 'v2026.8.16.2', '0.19.1', '0.20.5+10.gabcdef0', 'v2026.8.20']) assert.equal(predatesScope(v), true, v);
    for (const v of ['0.21.0', '0.21.3', 'v2026.9.14', '0.20.6+5.gabcdef0', 'v2026.9.1', 'rc.1-v0.21.0', 'git.abcdef0', 'unknown', '0.23.6'])
      assert.equal(predatesScope(v), false, v);
  });

  it('not taken only when every install found predates it; none found, unknown or disagreeing: taken', () => {
    assert.match(
      scopeNotTaken([
        { dir: '/a', version: '0.20.6' },
        { dir: '/b', version: 'v2026.8.19' },
      ]) ?? '',
      /^every hermes install found .*0\.20\.6 at \/a/,
    );
    assert.equal(scopeNotTaken([]), null);
    assert.equal(
      scopeNotTaken([
        { dir: '/a', version: '0.20.6' },
        { dir: '/b', version: '0.23.6' },
      ]),
      null,
    );
    assert.equal(
      scopeNotTaken([
        { dir: '/a', version: '0.20.6' },
        { dir: '/b', version: null },
      ]),
      null,
    );
  });

  const src = (value: unknown, source: string): Sourced<unknown> => ({ value, source });
  const launch = {
    sandboxRoot: src('/h/sandboxes', 'default'),
    lifetimeSeconds: src(0, 'env TERMINAL_LIFETIME_SECONDS'),
    foregroundMaxTimeoutSeconds: src(600, 'default'),
    terminalTimeoutSeconds: src(180, 'default'),
    tmpDir: src('', 'default'),
    dockerSharedContainerKey: src('', 'default'),
    tmp: src('', 'default'),
    temp: src('', 'default'),
    terminalTempDir: src('', 'default'),
    dockerOrphanReaper: src(true, 'default'),
  } as HermesSettings;
  const scope = { settings: { lifetimeSeconds: src(300, 'default'), dockerOrphanReaper: src(true, 'default') } };

  it("the issue's case: TERMINAL_LIFETIME_SECONDS=0 for hermes at 614dc194 (before the scope): the launch lifetime acted on", () => {
    assert.equal(scopeDecides(launch, scope), true);
    assert.equal(combineReadings(launch, scope).settings.lifetimeSeconds.value, 300, 'with a hermes that has the scope, the longer');
    const why = scopeNotTaken([{ dir: '/c', version: '0.18.2' }])!;
    const old = combineReadings(launch, scope, { scopeNotTaken: why }).settings.lifetimeSeconds;
    assert.equal(old.value, 0, 'threshold 2 x max(60, 0) = 120 s, as that hermes reaps');
    assert.equal(old.used, 'launch');
    assert.equal(old.scopeNotTaken, why);
    assert.deepEqual(
      old.readings?.map((r) => r.reading),
      ['scope', 'launch'],
      'both readings still shown',
    );
    const refused = combineReadings(launch, { refused: 'bad line' }, { scopeNotTaken: why });
    assert.equal(refused.refused, null, 'a refusal of a reading no hermes here makes holds nothing');
    assert.equal(combineReadings(launch, { refused: 'bad line' }).refused, 'bad line');
    assert.equal(scopeDecides(launch, { settings: { lifetimeSeconds: src(0, 'default') } }), false, 'agreeing readings: no need to ask');
  });
});

describe('named execution targets', () => {
  const config = (terminal: Record<string, unknown>) => ({ terminal });

  it('a docker target inherits the flat keys, its own override them; backend as either text of hermes resolves it', () => {
    const c = config({
      lifetime_seconds: 900,
      backend: 'docker',
      targets: { box: { lifetime_seconds: 3600 }, same: {}, far: { backend: 'ssh', lifetime_seconds: 99999 } },
    });
    const flat = flatTerminal(c, undefined, '');
    const [box, far, same] = ['box', 'far', 'same'].map((name) => resolveTarget(staticTargets(c, 'config.yaml').find((t) => t.name === name)!, flat));
    assert.deepEqual([box!.backend, box!.lifetimeSeconds, box!.lifetimeSource], ['docker', 3600, 'config.yaml terminal.targets.box.lifetime_seconds']);
    assert.deepEqual(
      [same!.backend, same!.lifetimeSeconds, same!.lifetimeSource],
      ['docker', 900, 'config.yaml terminal.lifetime_seconds (inherited by target same)'],
    );
    assert.deepEqual([far!.backend, far!.docker], ['ssh', false]);
    const bare = resolveTarget(staticTargets(config({ targets: { t: { backend: ' Docker ' } } }), 'config.yaml')[0]!, {});
    assert.deepEqual([bare.docker, bare.lifetimeSeconds, bare.lifetimeSource, bare.dockerOrphanReaper], [true, 300, 'default (target t)', true]);
    // An empty backend: the earlier text falls through to env_type (docker), the later one refuses it: counted.
    const empty = resolveTarget(staticTargets(config({ targets: { e: { backend: '', env_type: 'docker' } } }), 'config.yaml')[0]!, {});
    assert.equal(empty.docker, true);
    const bad = resolveTarget(
      staticTargets(config({ targets: { b: { backend: 'docker', lifetime_seconds: 'soon', docker_orphan_reaper: 'no' } } }), 'x')[0]!,
      {},
    );
    assert.deepEqual([bad.lifetimeSeconds, bad.dockerOrphanReaper, bad.reaperSource], [null, false, 'x terminal.targets.b.docker_orphan_reaper']);
  });

  const settings = (life: number, reaper = true) =>
    ({ lifetimeSeconds: { value: life, source: 'default' }, dockerOrphanReaper: { value: reaper, source: 'default' } }) as unknown as HermesSettings;
  const targetsOf = (terminal: Record<string, unknown>) => {
    const c = config(terminal);
    return staticTargets(c, 'config.yaml').map((t) => resolveTarget(t, flatTerminal(c, undefined, '')));
  };

  it('the lifetime is the longest of the flat reading and every docker target; non-docker targets never count', () => {
    const s = withTargets(
      settings(300),
      targetsOf({ targets: { box: { backend: 'docker', lifetime_seconds: 3600 }, far: { backend: 'modal', lifetime_seconds: 86400 } } }),
    );
    assert.equal(s.lifetimeSeconds.value, 3600, 'threshold 7200 s');
    assert.equal(s.lifetimeSeconds.source, 'config.yaml terminal.targets.box.lifetime_seconds');
    assert.equal(s.lifetimeSeconds.target, 'box');
    assert.deepEqual(
      s.lifetimeSeconds.targets?.map((t) => [t.target, t.backend, t.counts, t.value]),
      [
        ['box', 'docker', true, 3600],
        ['far', 'modal', false, 86400],
      ],
    );
    const shorter = withTargets(settings(7200), targetsOf({ targets: { box: { backend: 'docker', lifetime_seconds: 60 } } }));
    assert.deepEqual([shorter.lifetimeSeconds.value, shorter.lifetimeSeconds.source, shorter.lifetimeSeconds.target], [7200, 'default', undefined]);
  });

  it("hermes' reaper counts as off when any docker target says off; a non-docker one never turns it off", () => {
    const off = withTargets(settings(300), targetsOf({ targets: { a: { backend: 'docker' }, b: { backend: 'docker', docker_orphan_reaper: false } } }));
    assert.deepEqual(
      [off.dockerOrphanReaper.value, off.dockerOrphanReaper.source, off.dockerOrphanReaper.target],
      [false, 'config.yaml terminal.targets.b.docker_orphan_reaper', 'b'],
    );
    const ssh = withTargets(settings(300), targetsOf({ targets: { r: { backend: 'ssh', docker_orphan_reaper: false } } }));
    assert.equal(ssh.dockerOrphanReaper.value, true);
  });

  it('a home without targets is returned as it is', () => {
    const s = settings(300);
    assert.equal(withTargets(s, []), s);
    assert.equal(withTargets(s, targetsOf({ lifetime_seconds: 5 })), s);
  });

  it('the runtime registry: each fragment read (draining and withheld records count), a bad fragment a warning', () => {
    const home = dir();
    const reg = registryDir(home);
    mkdirSync(reg, { recursive: true });
    const fragment = (provider: string, targets: unknown) =>
      writeFileSync(path.join(reg, `${provider}.json`), JSON.stringify({ version: 1, provider, targets }));
    fragment('acme', { gpu: { config: { backend: 'docker', lifetime_seconds: 5400 }, owner_id: 'o', generation: 'g', state: 'draining' } });
    writeFileSync(path.join(reg, 'broken.json'), '{not json');
    writeFileSync(path.join(reg, '.registry-state.json'), '{"version": 1, "legacy_activated": true}');
    fragment('liar', {}); // named liar, claims another provider below
    writeFileSync(path.join(reg, 'liar.json'), JSON.stringify({ version: 1, provider: 'acme', targets: {} }));
    const warnings: string[] = [];
    const t = readExecutionTargets(
      { home, config: { terminal: { targets: { box: { backend: 'docker', lifetime_seconds: 3600 } } } }, managed: null },
      warnings,
    );
    assert.deepEqual(
      t.map((x) => [x.name, x.lifetimeSeconds, x.registry?.state ?? null]),
      [
        ['box', 3600, null],
        ['gpu', 5400, 'draining'],
      ],
    );
    assert.equal(t[1]!.lifetimeSource, `${path.join(reg, 'acme.json')} targets.gpu.config.lifetime_seconds`);
    assert.equal(warnings.length, 2, warnings.join('\n'));
    assert.match(warnings.join('\n'), /broken\.json \(not JSON\)/);
    assert.match(warnings.join('\n'), /liar\.json is not a version 1 registry fragment/);
    assert.deepEqual(readExecutionTargets({ home: dir(), config: undefined, managed: null }, []), [], 'no config, no registry: none');
  });

  it('through the settings reader: config.yaml terminal.targets.box {backend: docker, lifetime_seconds: 3600} makes the lifetime 3600', async () => {
    const home = dir();
    const managed = dir();
    writeFileSync(path.join(home, 'config.yaml'), 'terminal:\n  targets:\n    box:\n      backend: docker\n      lifetime_seconds: 3600\n');
    const r = await loadHermesSettings({ home, env: { HERMES_MANAGED_DIR: managed, HERMES_JANITOR_PROC_ROOT: dir() }, cwd: home });
    assert.deepEqual([r.settings.lifetimeSeconds.value, r.settings.lifetimeSeconds.source], [3600, 'config.yaml terminal.targets.box.lifetime_seconds']);
    assert.equal(r.settings.dockerOrphanReaper.value, true);
    const plain = dir();
    const p = await loadHermesSettings({ home: plain, env: { HERMES_MANAGED_DIR: managed, HERMES_JANITOR_PROC_ROOT: dir() }, cwd: plain });
    assert.deepEqual([p.settings.lifetimeSeconds.value, p.settings.lifetimeSeconds.targets], [300, undefined], 'without targets, as before');
  });
});

describe('task ids in every form (values from Python hashlib, as hermes computes them)', () => {
  const scope = profileScopeOf('/home/u/.hermes/profiles/work');
  it('the multiplexer scope, the earlier and current target ids, their labels and directories', () => {
    assert.equal(scope, '9576d7280084');
    const legacy = legacyTargetTaskId('session-abc', 'box', scope);
    assert.equal(legacy, 'profile-9576d7280084:session-abc-target-26f8567f2569');
    const current = targetTaskId('session-abc', '0123456789abcdef0123', scope);
    assert.equal(current, 'task-064d4000ee1760a5-target-0123456789abcdef0123');
    assert.equal(taskLabel(legacy), 'profile-9576d7280084_session-abc-target-26f8567f25-445a2e1188f1');
    assert.equal(taskDirName(legacy), 'profile-9576d7280084_session-abc-target-26f8567f2569-445a2e1188f1');
    assert.equal(taskLabel(`profile-${scope}:session-abc`), 'profile-9576d7280084_session-abc-064d4000ee17');
    assert.equal(taskLabel(current), current, 'the current form fits a label as it is');
    assert.equal(taskDirName(current), current);
    assert.equal(taskDirName(''), 'default');
  });
  it('what a name says', () => {
    assert.deepEqual(parseTaskId('task-064d4000ee1760a5-target-0123456789abcdef0123'), { kind: 'target', profileScope: null, base: null });
    assert.deepEqual(parseTaskId(`task-${'a'.repeat(16)}-storage-${'b'.repeat(20)}`), { kind: 'storage', profileScope: null, base: null });
    assert.deepEqual(parseTaskId('profile-9576d7280084:session-abc-target-26f8567f2569'), { kind: 'legacy-target', profileScope: scope, base: 'session-abc' });
    assert.deepEqual(parseTaskId('session-abc-target-26f8567f2569'), { kind: 'legacy-target', profileScope: null, base: 'session-abc' });
    assert.deepEqual(parseTaskId('profile-9576d7280084_session-abc-064d4000ee17'), { kind: 'plain', profileScope: scope, base: 'session-abc-064d4000ee17' });
    assert.deepEqual(parseTaskId('default'), { kind: 'plain', profileScope: null, base: 'default' });
  });
});

describe('installs: the install stamp of a checkout or Desktop payload', () => {
  it('a payload (a checkout layout without .git) takes its version and commit from install-stamp.json', () => {
    const root = dir();
    mkdirSync(path.join(root, 'hermes_cli'));
    mkdirSync(path.join(root, 'tools'));
    writeFileSync(path.join(root, 'hermes_cli', 'main.py'), '');
    writeFileSync(path.join(root, 'tools', 'terminal_tool.py'), '');
    writeFileSync(path.join(root, 'pyproject.toml'), '[project]\nversion = "0.0.0"\n');
    assert.equal(describeInstall({ kind: 'checkout', dir: root }).version, '0.0.0', 'no stamp: the pyproject');
    const stamp = {
      baseVersion: '0.23.6',
      displayVersion: 'v0.23.6+2.g8fc0374',
      commit: '8fc03744473aaaa',
      distribution: 'desktop-app',
      updateMechanism: 'desktop',
    };
    writeFileSync(path.join(root, 'install-stamp.json'), `\uFEFF${JSON.stringify(stamp)}`);
    const d = describeInstall({ kind: 'checkout', dir: root });
    assert.deepEqual([d.version, d.commit, d.distribution], ['v0.23.6+2.g8fc0374', '8fc03744473aaaa', 'desktop-app']);
    assert.equal(newerThanKnown(d.version), true);
    writeFileSync(path.join(root, 'install-stamp.json'), JSON.stringify({ baseVersion: '0.0.0', commit: '0000000' }));
    assert.equal(installStamp(root), null, 'placeholders are no stamp');
  });
});

describe('one table of rules: docs/hermes.md and the drift check come from it', () => {
  it('docs/hermes.md holds the table as rules.ts makes it', () => {
    const doc = readFileSync(path.join(REPO, 'docs/hermes.md'), 'utf8');
    assert.ok(doc.includes(rulesTable()), 'docs/hermes.md: paste rulesTable() (src/hermes/rules.ts) between the rules markers');
  });
  it('every janitor file a rule names exists; every file of src/hermes/ is named by a rule', () => {
    const named = new Set(HERMES_RULES.flatMap((r) => r.janitor));
    for (const f of named) assert.ok(readFileSync(path.join(REPO, f), 'utf8').length > 0, f);
    const unnamed = readdirSync(path.join(REPO, 'src/hermes')).filter((f) => !named.has(`src/hermes/${f}`));
    assert.deepEqual(unnamed, ['rules.ts']);
  });
  it('the drift check lists every rule with its hermes file and the version last checked, and what to read again', () => {
    const text = driftReport('0.23.6');
    for (const r of HERMES_RULES) {
      assert.ok(text.includes(`\n${r.id}`), r.id);
      for (const f of r.follows) assert.ok(text.includes(f), f);
    }
    assert.equal(staleFor(HERMES_RULES.find((r) => r.id === 'labels')!, '0.21.3'), false);
    assert.equal(staleFor(HERMES_RULES.find((r) => r.id === 'labels')!, '0.23.6'), true);
    assert.equal(staleFor(HERMES_RULES.find((r) => r.id === 'targets')!, '0.21.3'), true, 'read on main only: always to read again');
    assert.match(text, /\n\d+ of \d+ rules to read again for hermes 0\.23\.6\.\n$/);
  });
});
