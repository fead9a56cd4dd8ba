/**
 * The hermes installed on the host, against the real engine (#43):
 * - `status` on a 0.23.6 install (a venv whose `hermes` is on PATH) says what the janitor was checked against
 *   (`hermes 0.21.3 (2026.9.14)`), flags the install newer, and lists each rule with the hermes it was last checked
 *   against (text and `--json`); a Desktop payload is found with its install stamp's version, commit and distribution;
 * - the readings of the hermes installed: with `TERMINAL_LIFETIME_SECONDS=0` for hermes and every install found older
 *   than the routed-profile scope (0.20.6), an exited sandbox finished 150 s ago is removed (threshold 120 s, as that
 *   hermes' own reaper) and `status` says the scope reading is not taken; with a 0.23.6 install it is kept (600 s).
 */
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, EngineFixture, RUN_LABEL, after as plus, requireEngine } from '../helpers/docker.js';
import { HERMES_RULES } from '../../src/hermes/rules.js';

interface StatusJson {
  settings: Record<string, { value: unknown; source: string; used?: string; scopeNotTaken?: string }>;
  hermesInstalls: {
    known: { version: string; releaseDate: string };
    installs: Array<{ kind: string; dir: string; version: string | null; commit: string | null; distribution?: string; newerThanKnown: boolean | null }>;
    rules?: Array<{ id: string; checked: string }>;
  };
}
interface ReapJson {
  thresholdSeconds: number;
  removed: Array<{ id: string }>;
  kept: Array<{ id: string; reason?: string }>;
}

describe(`the hermes installed on the host (${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const tmp = tempDir('hj-installed-');
  let n = 0;
  /** A venv holding hermes `version`, its `hermes` script's shebang its interpreter: the PATH entry to find it by. */
  const venv = (version: string) => {
    const base = path.join(tmp.dir, `venv-${n++}`);
    const w = (rel: string, text = '') => {
      mkdirSync(path.dirname(path.join(base, rel)), { recursive: true });
      writeFileSync(path.join(base, rel), text);
    };
    w('pyvenv.cfg', 'home = /usr/bin\n');
    w(`lib/python3.11/site-packages/hermes_agent-${version}.dist-info/METADATA`, `Metadata-Version: 2.4\nName: hermes-agent\nVersion: ${version}\n`);
    w('bin/hermes', `#!${base}/bin/python3\n`);
    symlinkSync('/usr/bin/python3', path.join(base, 'bin/python3'));
    return { dir: base, PATH: `${path.join(base, 'bin')}:/usr/bin:/bin` };
  };
  const home = () => {
    const h = path.join(tmp.dir, `home-${n++}`);
    mkdirSync(h, { recursive: true });
    return h;
  };
  const sel = (h: string) => ['--home', h, '--profile', fx.profile, '--label', `${RUN_LABEL}=${fx.runId}`];
  const status = async (h: string, env: Record<string, string>) => {
    const r = await runCli(['status', '--json', ...sel(h)], { env });
    assert.ok(r.code === 0 || r.code === 1, r.stderr);
    return JSON.parse(r.stdout) as StatusJson;
  };

  before(requireEngine);
  afterEach(() => fx.removeContainers());
  after(async () => {
    await fx.cleanup();
    tmp.cleanup();
  });

  it('status on a 0.23.6 install: checked against hermes 0.21.3, the install newer, each rule with the hermes it was last checked against', async () => {
    const v = venv('0.23.6');
    const h = home();
    const env = { HOME: tmp.dir, PATH: v.PATH };
    const st = await status(h, env);
    assert.deepEqual([st.hermesInstalls.known.version, st.hermesInstalls.known.releaseDate], ['0.21.3', '2026.9.14']);
    const i = st.hermesInstalls.installs.find((x) => x.dir === v.dir)!;
    assert.deepEqual([i.kind, i.version, i.newerThanKnown], ['venv', '0.23.6', true]);
    assert.deepEqual(
      st.hermesInstalls.rules?.map((r) => r.id),
      HERMES_RULES.map((r) => r.id),
    );
    const text = (await runCli(['status', ...sel(h)], { env })).stdout;
    assert.match(
      text,
      /\nhermes installs \(this janitor was checked against hermes 0\.21\.3 \(2026\.9\.14\), commit 00067189dfec; release notes read up to 0\.23\.6/,
    );
    assert.match(text, /\(venv\): 0\.23\.6; found by PATH \(.*\): newer than this janitor knows/);
    assert.match(text, /\n {2}each rule was last checked against \(docs\/hermes\.md, npm run hermes-drift\):\n {4}labels: 0\.21\.3 \(2026-09-14\), source\n/);
    assert.match(text, /\n {4}targets: main, source text \(release not established\)\n/);
    // An install the janitor knows: no rule list.
    const known = await status(home(), { HOME: tmp.dir, PATH: venv('0.21.3').PATH });
    assert.equal(known.hermesInstalls.rules, undefined);
  });

  it('a Desktop payload (the agent tree, its venv and install-stamp.json): version, commit and distribution from the stamp', async () => {
    const payload = path.join(tmp.dir, 'payload', '0.23.6-8fc0374');
    const w = (rel: string, text = '') => {
      mkdirSync(path.dirname(path.join(payload, rel)), { recursive: true });
      writeFileSync(path.join(payload, rel), text);
    };
    w('hermes_cli/main.py');
    w('tools/terminal_tool.py');
    w('pyproject.toml', '[project]\nname = "hermes-agent"\nversion = "0.0.0"\n');
    w(
      'install-stamp.json',
      JSON.stringify({ baseVersion: '0.23.6', displayVersion: 'v0.23.6+2.g8fc0374', commit: '8fc03744473b0e', distribution: 'desktop-app' }),
    );
    w('venv/pyvenv.cfg', 'home = /usr/bin\n');
    w('venv/bin/hermes', `#!${payload}/venv/bin/python3\n`);
    symlinkSync('/usr/bin/python3', path.join(payload, 'venv/bin/python3'));
    const st = await status(home(), { HOME: tmp.dir, PATH: `${path.join(payload, 'venv/bin')}:/usr/bin:/bin` });
    const i = st.hermesInstalls.installs.find((x) => x.dir === path.join(payload, 'venv'))!;
    assert.deepEqual([i.kind, i.version, i.commit, i.distribution, i.newerThanKnown], ['venv', 'v0.23.6+2.g8fc0374', '8fc03744473b0e', 'desktop-app', true]);
  });

  it('hermes older than the scope reading everywhere: TERMINAL_LIFETIME_SECONDS=0 removes at 120 s, as that hermes does; a 0.23.6 install: kept', async () => {
    const h = home();
    const id = await fx.create({ state: 'exited' });
    const asOf = plus(await fx.finishedAt(id), 150);
    const reap = async (PATH: string) => {
      const r = await runCli(['reap', '--json', ...sel(h), '--as-of', asOf], { env: { HOME: tmp.dir, PATH, TERMINAL_LIFETIME_SECONDS: '0' } });
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout) as ReapJson;
    };
    const current = await reap(venv('0.23.6').PATH);
    assert.equal(current.thresholdSeconds, 600, 'the scope reading (300 s) removes later, and a 0.23.6 hermes reads it');
    assert.equal(current.kept.find((e) => e.id === id)?.reason, 'too-recent');
    const old = venv('0.20.6');
    const st = await status(h, { HOME: tmp.dir, PATH: old.PATH, TERMINAL_LIFETIME_SECONDS: '0' });
    const life = st.settings.lifetimeSeconds!;
    assert.deepEqual([life.value, life.used], [0, 'launch']);
    assert.match(
      life.scopeNotTaken ?? '',
      new RegExp(`^every hermes install found on this host predates the routed-profile scope reading \\(0\\.21\\.0\\): 0\\.20\\.6 at ${old.dir}`),
    );
    const out = await reap(old.PATH);
    assert.equal(out.thresholdSeconds, 120);
    assert.deepEqual(
      out.removed.map((e) => e.id),
      [id],
    );
  });
});
