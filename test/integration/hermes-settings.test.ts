/**
 * hermes' settings read the way hermes reads them, against the real engine (Docker, and Podman through its
 * Docker-compatible API): for each source of the sandbox root, `status` counts and `reap --sandbox-dirs-older-than`
 * removes the task directories of the root named only there; with two sources, only the winner's are touched; the
 * lifetime of each source decides the threshold; a sandbox that ignores SIGTERM is stopped within a default reap.
 * The managed directory is always a temporary one (HERMES_MANAGED_DIR): never the machine's /etc/hermes.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, afterEach, before, describe, it } from 'node:test';
import { assertUsageError, runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, EngineFixture, RUN_LABEL, after as plus, requireEngine } from '../helpers/docker.js';
import { ageTree, makeTaskDir } from '../helpers/sandbox-dirs.js';
import { WatchProcess } from '../helpers/watch-process.js';

interface Sourced {
  value: unknown;
  source: string;
  readings?: Array<{ reading: 'scope' | 'launch'; value: number; source: string }>;
}
/** A setting's value and source (the reading acted on); its readings are looked at where a test says so. */
const acted = (s: Sourced | undefined) => ({ value: s?.value, source: s?.source });
interface StatusJson {
  settings: Record<string, Sourced>;
  sandboxDirs: { root: string; count: number | null };
  thresholdSeconds: number;
}
interface ReapJson {
  thresholdSeconds: number;
  removed: Array<{ id: string }>;
  kept: Array<{ id: string; reason: string }>;
  sandboxDirs?: { removed: Array<{ path: string }> };
  stopped: Array<{ id: string; killed?: boolean; graceSeconds?: number }>;
  failed: unknown[];
  timedOut: boolean;
}

/** A source of hermes' settings: how it is set in a fresh home and managed directory, and how status names it. */
interface Source {
  name: string;
  set(p: Place, variable: 'TERMINAL_SANDBOX_DIR' | 'TERMINAL_LIFETIME_SECONDS', value: string): void;
  spelled(p: Place, variable: string): string;
}
interface Place {
  home: string;
  managed: string;
  env: Record<string, string>;
}

const KEY: Record<string, string> = { TERMINAL_SANDBOX_DIR: 'sandbox_dir', TERMINAL_LIFETIME_SECONDS: 'lifetime_seconds' };
/** A key under `terminal:` of a config.yaml (the file rewritten whole, with the keys set so far). */
const yamlOf = new Map<string, Record<string, string>>();
function setYaml(file: string, key: string, value: string): void {
  const doc = { ...(yamlOf.get(file) ?? {}), [key]: value };
  yamlOf.set(file, doc);
  writeFileSync(
    file,
    `terminal:\n${Object.entries(doc)
      .map(([k, v]) => `  ${k}: ${/^\d+$/.test(v) ? v : JSON.stringify(v)}`)
      .join('\n')}\n`,
  );
}
/** Appends a line to a .env file. */
function appendLine(file: string, line: string): void {
  writeFileSync(file, `${existsSync(file) ? readFileSync(file, 'utf8') : ''}${line}\n`);
}

/** Lowest to highest, as hermes applies them. */
const SOURCES: Source[] = [
  { name: 'the environment', set: (p, v, x) => void (p.env[v] = x), spelled: (_p, v) => `env ${v}` },
  {
    name: '<home>/.env',
    set: (p, v, x) => appendLine(path.join(p.home, '.env'), `export ${v}="${x}"  # set by the test`),
    spelled: (p) => path.join(p.home, '.env'),
  },
  { name: 'the managed .env', set: (p, v, x) => appendLine(path.join(p.managed, '.env'), `${v}='${x}'`), spelled: (p) => path.join(p.managed, '.env') },
  { name: 'config.yaml', set: (p, v, x) => setYaml(path.join(p.home, 'config.yaml'), KEY[v]!, x), spelled: (_p, v) => `config.yaml terminal.${KEY[v]}` },
  {
    name: 'the managed config.yaml',
    set: (p, v, x) => setYaml(path.join(p.managed, 'config.yaml'), KEY[v]!, x),
    spelled: (p, v) => `${path.join(p.managed, 'config.yaml')} terminal.${KEY[v]}`,
  },
];

describe(`hermes' settings, from every source hermes reads (${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const tmp = tempDir('hj-settings-');
  let n = 0;
  /** A fresh home and managed directory. */
  const place = (): Place => {
    const base = path.join(tmp.dir, String(n++));
    const p = { home: path.join(base, 'home'), managed: path.join(base, 'managed'), env: {} as Record<string, string> };
    mkdirSync(p.home, { recursive: true });
    mkdirSync(p.managed, { recursive: true });
    p.env = { HOME: base, HERMES_MANAGED_DIR: p.managed };
    return p;
  };
  const sel = (p: Place) => ['--home', p.home, '--profile', fx.profile];
  const daysAgo = (d: number) => new Date(Date.now() - d * 86_400_000);
  /** An old task directory under `root` (unchanged for 40 days), used by no container. */
  const oldTask = (root: string, id: string) => {
    const t = makeTaskDir(root, id);
    ageTree(t.dir, daysAgo(40));
    return t.dir;
  };

  before(requireEngine);
  afterEach(() => fx.removeContainers());
  after(async () => {
    await fx.cleanup();
    tmp.cleanup();
  });

  for (const source of SOURCES) {
    it(`a sandbox root named only in ${source.name}: status counts its task directories, reap --sandbox-dirs-older-than removes them`, async () => {
      const p = place();
      const root = path.join(tmp.dir, `root-${n}`);
      const dir = oldTask(root, 'task-1');
      source.set(p, 'TERMINAL_SANDBOX_DIR', root);
      const status = await runCli(['status', '--json', ...sel(p)], { env: p.env });
      assert.ok(status.code === 0 || status.code === 1, status.stderr);
      const s = JSON.parse(status.stdout) as StatusJson;
      assert.deepEqual(acted(s.settings.sandboxRoot), { value: root, source: source.spelled(p, 'TERMINAL_SANDBOX_DIR') });
      assert.equal(s.sandboxDirs.root, root);
      assert.equal(s.sandboxDirs.count, 1);
      const text = await runCli(['status', ...sel(p)], { env: p.env });
      assert.match(
        text.stdout,
        new RegExp(`\\n {2}sandbox root: ${root} \\(${source.spelled(p, 'TERMINAL_SANDBOX_DIR').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[;)]`),
      );
      const reap = await runCli(['reap', '--json', ...sel(p), '--sandbox-dirs-older-than', '30d'], { env: p.env });
      assert.equal(reap.code, 0, reap.stderr);
      assert.deepEqual(
        (JSON.parse(reap.stdout) as ReapJson).sandboxDirs!.removed.map((r) => r.path),
        [dir],
      );
      assert.equal(existsSync(dir), false);
    });
  }

  for (let i = 1; i < SOURCES.length; i++) {
    const [lower, higher] = [SOURCES[i - 1]!, SOURCES[i]!];
    it(`two roots, in ${lower.name} and ${higher.name}: only ${higher.name}'s is measured and swept`, async () => {
      const p = place();
      const [loser, winner] = [path.join(tmp.dir, `lose-${n}`), path.join(tmp.dir, `win-${n}`)];
      const [loserDir, winnerDir] = [oldTask(loser, 'task-l'), oldTask(winner, 'task-w')];
      lower.set(p, 'TERMINAL_SANDBOX_DIR', loser);
      higher.set(p, 'TERMINAL_SANDBOX_DIR', winner);
      const s = JSON.parse((await runCli(['status', '--json', ...sel(p)], { env: p.env })).stdout) as StatusJson;
      assert.deepEqual(acted(s.settings.sandboxRoot), { value: winner, source: higher.spelled(p, 'TERMINAL_SANDBOX_DIR') });
      const reap = await runCli(['reap', '--json', ...sel(p), '--sandbox-dirs-older-than', '30d'], { env: p.env });
      assert.equal(reap.code, 0, reap.stderr);
      assert.deepEqual(
        (JSON.parse(reap.stdout) as ReapJson).sandboxDirs!.removed.map((r) => r.path),
        [winnerDir],
      );
      assert.equal(existsSync(loserDir), true, `${lower.name}'s root is not touched`);
    });
  }

  it(
    'the lifetime of each source decides the threshold: config.yaml beats the .env files beats the environment; ' +
      'a flag beats all; the longer reading is acted on',
    async () => {
      const p = place();
      const threshold = async (extra: string[] = []) => {
        const r = await runCli(['reap', '--json', '--dry-run', ...sel(p), ...extra], { env: p.env });
        assert.equal(r.code, 0, r.stderr);
        return (JSON.parse(r.stdout) as ReapJson).thresholdSeconds;
      };
      assert.equal(await threshold(), 600, 'default 300 s');
      const lifetimes = [100, 200, 250, 400, 500];
      for (const [i, source] of SOURCES.entries()) {
        source.set(p, 'TERMINAL_LIFETIME_SECONDS', String(lifetimes[i]));
        const s = JSON.parse((await runCli(['status', '--json', ...sel(p)], { env: p.env })).stdout) as StatusJson;
        const launch = s.settings.lifetimeSeconds!.readings!.find((r) => r.reading === 'launch')!;
        assert.deepEqual(
          launch,
          { reading: 'launch', value: lifetimes[i], source: source.spelled(p, 'TERMINAL_LIFETIME_SECONDS') },
          `${source.name} wins over the sources below it`,
        );
        // A routed turn reads the profile's own .env and config.yaml only: the environment and the managed files do not
        // reach it, and the janitor acts on whichever reading is longer.
        const scope = s.settings.lifetimeSeconds!.readings!.find((r) => r.reading === 'scope')!;
        const acting = Math.max(scope.value, lifetimes[i]!);
        assert.equal(s.settings.lifetimeSeconds!.value, acting);
        assert.equal(await threshold(), 2 * acting);
      }
      assert.equal(await threshold(['--lifetime', '70']), 140, '--lifetime beats every file');
      const s = JSON.parse((await runCli(['status', '--json', ...sel(p), '--lifetime', '70'], { env: p.env })).stdout) as StatusJson;
      assert.deepEqual(s.settings.lifetimeSeconds, { value: 70, source: '--lifetime' });
    },
  );

  it('a .env with quotes, comments, export lines and ${VAR}; an unreadable .env is a warning naming it', async () => {
    const p = place();
    const base = path.join(tmp.dir, 'interp');
    writeFileSync(
      path.join(p.home, '.env'),
      ['# hermes .env', '', `export BASE=${base}`, 'TERMINAL_SANDBOX_DIR="${BASE}/sbx" # a comment', "TERMINAL_LIFETIME_SECONDS='450'", 'X=a#b', ''].join('\n'),
    );
    const s = JSON.parse((await runCli(['status', '--json', ...sel(p)], { env: p.env })).stdout) as StatusJson;
    assert.equal(s.settings.sandboxRoot!.value, path.join(base, 'sbx'));
    assert.equal(s.settings.lifetimeSeconds!.value, 450);
    // A .env that cannot be read (a directory here; permissions as a user): said on stderr, the rest resolved.
    const q = place();
    mkdirSync(path.join(q.home, '.env'));
    const r = await runCli(['status', '--json', ...sel(q)], { env: { ...q.env, TERMINAL_LIFETIME_SECONDS: '90' } });
    assert.ok(r.code === 0 || r.code === 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(`^hermes-janitor: warning: cannot read ${path.join(q.home, '.env')} \\(EISDIR\\): the settings in it are not applied`, 'm'),
    );
    assert.equal((JSON.parse(r.stdout) as StatusJson).settings.lifetimeSeconds!.value, 90);
  });

  it("a config.yaml that is not YAML (the home's or the managed one): one line naming it, exit 2", async () => {
    for (const which of ['home', 'managed'] as const) {
      const p = place();
      const file = path.join(which === 'home' ? p.home : p.managed, 'config.yaml');
      writeFileSync(file, 'terminal: [\n  lifetime_seconds: 5\n');
      for (const cmd of [['status'], ['reap', '--dry-run'], ['list']]) {
        assertUsageError(await runCli([...cmd, ...sel(p)], { env: p.env }), [file, 'not valid YAML'], `${which} ${cmd[0]}`);
      }
    }
  });

  it("--all-profiles: each profile's settings from its own home; every profile's root swept, a shared root once", async () => {
    const root = path.join(tmp.dir, `all-${n++}`);
    const [pa, pb] = [`${fx.profile}-a`, `${fx.profile}-b`];
    const [homeA, homeB] = [path.join(root, 'profiles', pa), path.join(root, 'profiles', pb)];
    const shared = path.join(tmp.dir, `shared-${n}`);
    for (const h of [homeA, homeB]) mkdirSync(h, { recursive: true });
    writeFileSync(path.join(homeA, 'config.yaml'), `terminal:\n  sandbox_dir: ${shared}\n  lifetime_seconds: 100\n`);
    writeFileSync(path.join(homeB, '.env'), `TERMINAL_SANDBOX_DIR=${shared}\n`);
    const sharedDir = oldTask(shared, 'task-shared');
    const defaultDir = oldTask(path.join(root, 'sandboxes'), 'task-default');
    const managed = path.join(tmp.dir, `managed-${n}`);
    mkdirSync(managed);
    const env = { HOME: tmp.dir, HERMES_MANAGED_DIR: managed };
    // Only this run's containers (--label replaces the hermes selector): the engine is shared.
    const args = ['--all-profiles', '--home', root, '--label', 'hermes-agent=1', '--label', `${RUN_LABEL}=${fx.runId}`];

    const s = JSON.parse((await runCli(['status', '--json', ...args], { env })).stdout) as StatusJson & {
      profiles: Array<{ profile: string; home: string; settings: Record<string, Sourced> }>;
    };
    const byName = Object.fromEntries(s.profiles.map((p) => [p.profile, p]));
    assert.deepEqual(Object.keys(byName).sort(), [pa, pb, 'default'].sort());
    assert.deepEqual(acted(byName[pa]!.settings.sandboxRoot), { value: shared, source: 'config.yaml terminal.sandbox_dir' });
    assert.deepEqual(acted(byName[pa]!.settings.lifetimeSeconds), { value: 100, source: 'config.yaml terminal.lifetime_seconds' });
    assert.deepEqual(acted(byName[pb]!.settings.sandboxRoot), { value: shared, source: path.join(homeB, '.env') });
    assert.deepEqual(acted(byName.default!.settings.sandboxRoot), { value: path.join(root, 'sandboxes'), source: 'default' });

    // Profile a's lifetime (100 s: threshold 200 s) decides for its containers, b's default (600 s) for b's.
    const [a, b] = [await fx.create({ state: 'exited', profile: pa }), await fx.create({ state: 'exited', profile: pb })];
    const asOf = plus([await fx.finishedAt(a), await fx.finishedAt(b)].sort()[1]!, 300);
    const res = await runCli(['reap', '--json', ...args, '--as-of', asOf, '--sandbox-dirs-older-than', '30d'], { env });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as ReapJson;
    assert.deepEqual(
      out.removed.map((e) => e.id),
      [a],
    );
    assert.equal(out.kept.find((e) => e.id === b)?.reason, 'too-recent');
    assert.deepEqual(out.sandboxDirs!.removed.map((r) => r.path).sort(), [sharedDir, defaultDir].sort(), 'the shared root swept once');
  });

  it('watch picks up a changed config.yaml or .env, says so, and keeps the last good settings while a file does not parse', async () => {
    const p = place();
    const w = WatchProcess.start(['--dry-run', ...sel(p)], p.env);
    try {
      await w.waitFor('started', (l) => l.some((e) => e.event === 'started'));
      assert.equal(w.events('started')[0]!.thresholdSeconds, 600);
      const settingsEvents = () => w.events('settings');
      writeFileSync(path.join(p.home, 'config.yaml'), 'terminal:\n  lifetime_seconds: 100\n');
      await w.waitFor('reload', () => settingsEvents().length >= 1);
      assert.deepEqual(settingsEvents()[0]!.changes, [
        'lifetimeSeconds: 300 (default) -> 100 (config.yaml terminal.lifetime_seconds)',
        'threshold: 600 s -> 200 s',
      ]);
      // Half-written YAML: refused, said once, the last good settings stay.
      writeFileSync(path.join(p.home, 'config.yaml'), 'terminal:\n  lifetime_seconds: [1\n');
      await w.waitFor('refusal', () => settingsEvents().length >= 2);
      assert.match(String(settingsEvents()[1]!.problem), new RegExp(`${path.join(p.home, 'config.yaml')} is not valid YAML`));
      // Fixed, and a .env beside it, told on SIGHUP: the .env's root, config.yaml's lifetime still.
      writeFileSync(path.join(p.home, 'config.yaml'), 'terminal:\n  lifetime_seconds: 150\n');
      writeFileSync(path.join(p.home, '.env'), `TERMINAL_SANDBOX_DIR=${path.join(tmp.dir, 'watched')}\nTERMINAL_LIFETIME_SECONDS=999\n`);
      w.child.kill('SIGHUP');
      await w.waitFor('second reload', () => settingsEvents().length >= 3);
      const last = settingsEvents().at(-1)!.changes as string[];
      assert.ok(
        last.includes(`sandboxRoot: ${path.join(p.home, 'sandboxes')} (default) -> ${path.join(tmp.dir, 'watched')} (${path.join(p.home, '.env')})`),
        last.join('; '),
      );
      assert.ok(last.includes('threshold: 200 s -> 300 s'), last.join('; '));
      assert.equal(settingsEvents().length, 3, 'nothing said while nothing changed');
    } finally {
      const { code } = await w.stop();
      assert.equal(code, 0, w.stderr);
    }
  });

  it('a sandbox whose PID 1 ignores SIGTERM (no --init, sleep) is stopped by a default reap: exit 0, under 15 s, reported as killed', async () => {
    const p = place();
    const id = await fx.create({ state: 'running', init: false });
    // The idle rule needs two observations at least --idle-after apart.
    const first = await runCli(['list', '--json', ...sel(p), '--idle-after', '2s'], { env: p.env });
    assert.equal(first.code, 0, first.stderr);
    await new Promise((r) => setTimeout(r, 2600));
    const started = performance.now();
    const res = await runCli(['reap', '--json', ...sel(p), '--idle-after', '2s'], { env: p.env });
    const seconds = (performance.now() - started) / 1000;
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as ReapJson;
    assert.equal(out.timedOut, false);
    assert.deepEqual(out.failed, []);
    const stopped = out.stopped.find((e) => id.startsWith(e.id) || e.id.startsWith(id));
    assert.ok(stopped, `stopped: ${res.stdout}`);
    assert.equal(stopped.killed, true, "the stop ended in the engine's kill");
    assert.ok(stopped.graceSeconds! <= 8, `grace ${stopped.graceSeconds} s fits the 10 s run`);
    assert.ok(seconds < 15, `took ${seconds.toFixed(1)} s`);
    console.log(`# ${ENGINE_KIND}: default reap stopped a SIGTERM-ignoring sandbox in ${seconds.toFixed(1)} s (grace ${stopped.graceSeconds} s)`);
    assertUsageError(await runCli(['reap', ...sel(p), '--stop-timeout', '9'], { env: p.env }), ['--stop-timeout 9', '--timeout 10s']);
  });
});
