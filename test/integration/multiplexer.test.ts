/**
 * hermes as it runs today (#37), against the real engine (Docker, and Podman through its compatible API):
 * - one gateway serves every profile: a stand-in `<dir>/hermes gateway run` with HERMES_HOME=<root> owns `default`
 *   and every `<root>/profiles/<name>` (all three idle sandboxes kept, owner-alive), or `default` and the root
 *   config.yaml's `gateway.multiplex_profile_allowlist` (the other one stopped); `hermes -p NAME` alone owns NAME;
 *   `bash <dir>/hermes-notes/backup.sh` owns nothing. Stand-ins, the janitor and a Docker engine of their own (a
 *   private dockerd) share a pid namespace of their own, so other processes of a shared machine (another helper's
 *   stand-ins, hermes itself) do not count, and the janitor's view is the engine's (proved by `State.Pid`).
 * - a routed profile's settings: the janitor's own TERMINAL_LIFETIME_SECONDS=30 does not shorten a profile's
 *   threshold (an exited sandbox finished 300 s ago is kept: threshold 600); `status --json` shows both readings.
 * - shared identities: `terminal.docker_shared_container_key: team` selects `hermes-profile=team-<sha256("team")[:12]>`;
 *   two profiles sharing it with lifetimes 60 and 900 judge it by 1800 s; `--all-profiles` lists it once.
 * - a profile whose config.yaml does not parse keeps its sandboxes and is reported.
 * - `status` names a hermes checkout with its version and commit, and flags a venv newer than this janitor knows.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { emptyManagedDir, runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, EngineFixture, RUN_LABEL, requireEngine } from '../helpers/docker.js';
import { SecondDockerd } from '../helpers/second-dockerd.js';
import { type StandIn, pidNamespace, runCliAs, standInScript, startStandIn } from '../helpers/owners.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';

interface Owner {
  pid: number | null;
  command: string;
  since: string | null;
  serves: string;
  why: string;
}
interface Entry {
  id: string;
  state: string;
  reason?: string;
  idleReason?: string;
  owner?: Owner;
  verdict?: string;
  profile?: string | null;
}
interface ReapJson {
  removed: Entry[];
  stopped: Entry[];
  kept: Entry[];
  failed: Entry[];
  thresholdSeconds: number;
}
interface Reading {
  reading: 'scope' | 'launch';
  value: unknown;
  source: string;
}
interface StatusJson {
  settings: Record<string, { value: unknown; source: string; used?: string; readings?: Reading[] }>;
  identities: string[] | null;
  held: Record<string, { reason: string; why: string }>;
  hermesProcesses: { processes: Array<{ pid: number; serves: string; labels: string[] | null; ownsWhy: string; why: string; owns: number }> };
  hermesInstalls: {
    known: { version: string };
    installs: Array<{ kind: string; dir: string; version: string | null; commit: string | null; newerThanKnown: boolean | null; foundBy: string[] }>;
  };
}

const root = process.getuid?.() === 0 ? false : "needs root (a pid namespace of its own, and other users' process environments)";
const dockerd = root || (!existsSync('/usr/sbin/dockerd') && !existsSync('/usr/bin/dockerd') ? 'needs dockerd (an engine in the pid namespace)' : false);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TEAM = 'team-ca8b22d0db83'; // python3 -c "import hashlib; print('team-' + hashlib.sha256(b'team').hexdigest()[:12])"

describe(`hermes as it runs today (${ENGINE_KIND}): owners under the multiplexer, routed settings, shared identities`, { skip: skipUnless(root) }, () => {
  const fx = new EngineFixture();
  const tmp = tempDir('hj-mux-');
  const standIns: StandIn[] = [];
  let ns: { prefix: string[]; close: () => Promise<void> };
  let stand: ReturnType<typeof standInScript>;
  let n = 0;
  /** A hermes root of its own: `<root>/profiles/<w>` and `<o>` exist. */
  const hermesRoot = (...profiles: string[]) => {
    const r = path.join(tmp.dir, `root-${n++}`);
    for (const p of profiles) mkdirSync(path.join(r, 'profiles', p), { recursive: true });
    mkdirSync(r, { recursive: true });
    return r;
  };
  const env = (extra: Record<string, string> = {}) => ({
    HOME: tmp.dir,
    HERMES_MANAGED_DIR: emptyManagedDir(),
    ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}),
    ...extra,
  });
  // hermes' own selection, narrowed to this run's containers.
  const mine = ['--label', 'hermes-agent=1', '--label', `${RUN_LABEL}=${fx.runId}`];
  const byId = (entries: Entry[], id: string) => entries.find((e) => e.id === id);

  before(async () => {
    failUnderCi(root);
    await requireEngine();
    ns = await pidNamespace();
    stand = standInScript();
  });
  afterEach(async () => {
    await Promise.all(standIns.splice(0).map((s) => s.kill()));
    await fx.removeContainers();
  });
  after(async () => {
    await ns?.close();
    await fx.cleanup();
    stand?.cleanup();
    tmp.cleanup();
  });

  /**
   * A Docker engine of its own in the pid namespace (whatever engine the rest runs on): the janitor sees its
   * processes there (proved by the containers' State.Pid), as it must to tell owners (pid-namespace.test.ts).
   */
  describe('owners under the multiplexer (real processes, a Docker engine in the pid namespace)', { skip: skipUnless(dockerd) }, () => {
    const ofx = new EngineFixture();
    const omine = ['--label', 'hermes-agent=1', '--label', `${RUN_LABEL}=${ofx.runId}`];
    const shared = process.env.DOCKER_HOST;
    let engine: SecondDockerd | undefined;
    before(async () => {
      failUnderCi(dockerd);
      const started = await SecondDockerd.start(ns.prefix);
      if ('unavailable' in started) throw new Error(started.unavailable);
      engine = started;
      // The fixture's docker CLI calls go to that engine.
      process.env.DOCKER_HOST = engine.host;
    });
    afterEach(async () => {
      await ofx.removeContainers();
    });
    after(async () => {
      await ofx.cleanup();
      await engine?.cleanup();
      if (shared === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = shared;
    });
    const sel = ['--all-profiles', ...omine, '--stop-idle', '--idle-after', '2s', '--idle-after-owned', '1h'];
    const janitor = async (args: string[]) => {
      const r = await runCliAs(null, args, env({ DOCKER_HOST: engine!.host }), ns.prefix);
      assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}${r.stdout}`);
      return r;
    };
    const reap = async () => JSON.parse((await janitor(['reap', '--json', ...sel])).stdout) as ReapJson;
    /**
     * Reaps until `id` is stopped (a few rounds: on a loaded machine the re-check right before a stop can see the
     * sandbox's init wake, `proof-failed`, and the proof starts again); nothing else may be stopped meanwhile.
     */
    const reapUntilStopped = async (id: string): Promise<ReapJson> => {
      for (let round = 0; ; round++) {
        const out = await reap();
        assert.deepEqual(
          out.stopped.map((e) => e.id).filter((x) => x !== id),
          [],
          JSON.stringify(out),
        );
        if (out.stopped.length || round === 3) return out;
        await sleep(2600);
      }
    };
    const start = async (script: string, vars: Record<string, string>, args: string[]) => {
      const s = await startStandIn(script, '-', { HOME: '/srv/hj-mux-user', ...vars }, null, ns.prefix, args);
      standIns.push(s);
      return s;
    };

    it(
      'a gateway on the root owns default and every profile; with an allowlist, default and the listed; ' + '-p NAME owns NAME; hermes-notes/ owns nothing',
      async () => {
        const [w, o] = [`${ofx.profile}w`, `${ofx.profile}o`];
        const r = hermesRoot(w, o);
        const [sd, sw, so] = await Promise.all([
          ofx.create({ state: 'running', profile: 'default' }),
          ofx.create({ state: 'running', profile: w }),
          ofx.create({ state: 'running', profile: o }),
        ]);
        const gw = await start(stand.script, { HERMES_HOME: r }, ['gateway', 'run']);
        // The first sample starts each proof; the next run, past the short threshold, decides.
        const first = JSON.parse((await janitor(['list', '--json', ...sel])).stdout) as { containers: Entry[] };
        for (const id of [sd, sw, so]) {
          const e = byId(first.containers, id)!;
          assert.equal(e.owner?.pid, gw.innerPid, JSON.stringify(e));
          assert.equal(e.owner?.serves, 'all-profiles');
          assert.match(e.owner!.why, new RegExp(`gateway launched on the hermes root ${r}: it serves every profile under it`));
        }
        await sleep(2600);
        const all = await reap();
        assert.deepEqual(all.stopped, [], JSON.stringify(all));
        // Kept, owned (owner-alive while idle; a sample that saw its init wake says so instead, and starts the proof again).
        for (const id of [sd, sw, so])
          assert.deepEqual([byId(all.kept, id)?.owner?.pid, byId(all.kept, id)?.owner?.serves], [gw.innerPid, 'all-profiles'], JSON.stringify(all));

        writeFileSync(path.join(r, 'config.yaml'), `gateway:\n  multiplex_profile_allowlist: [${w}]\n`);
        const allow = await reapUntilStopped(so);
        assert.deepEqual(
          allow.stopped.map((e) => e.id),
          [so],
          JSON.stringify(allow),
        );
        for (const id of [sd, sw]) {
          const k = byId(allow.kept, id)!;
          assert.deepEqual([k.owner?.pid, k.owner?.serves], [gw.innerPid, 'allowlist'], JSON.stringify(k));
        }
        assert.equal(await ofx.state(so), 'exited');
        const st = JSON.parse((await janitor(['status', '--json', '--all-profiles', ...omine])).stdout) as StatusJson;
        const shown = st.hermesProcesses.processes.find((p) => p.pid === gw.innerPid)!;
        assert.deepEqual([shown.serves, shown.labels, shown.owns], ['allowlist', ['default', w], 2]);

        // The gateway gone: `hermes -p w` alone owns only w.
        await gw.kill();
        const named = await start(stand.script, { HERMES_HOME: r }, ['-p', w]);
        const one = await reapUntilStopped(sd);
        assert.deepEqual(
          one.stopped.map((e) => e.id),
          [sd],
          JSON.stringify(one),
        );
        const kw = byId(one.kept, sw)!;
        assert.deepEqual([kw.owner?.pid, kw.owner?.serves], [named.innerPid, 'profile'], JSON.stringify(kw));
        assert.match(kw.owner!.why, new RegExp(`started with --profile ${w}`));

        // A script under a directory that merely starts with hermes- is not hermes: nothing owns w any more.
        await named.kill();
        await start(stand.notHermes, { HERMES_HOME: r }, []);
        const none = await reapUntilStopped(sw);
        assert.deepEqual(
          none.stopped.map((e) => e.id),
          [sw],
          JSON.stringify(none),
        );
        // No running sandbox is left to prove the janitor's pid namespace the engine's: status says its view may be
        // partial (exit 1), and lists no hermes process all the same.
        const table = await runCliAs(null, ['status', '--json', ...omine], env({ DOCKER_HOST: engine!.host }), ns.prefix);
        assert.ok(table.code === 0 || table.code === 1, `exit ${table.code}: ${table.stderr}`);
        assert.deepEqual((JSON.parse(table.stdout) as StatusJson).hermesProcesses.processes, []);
      },
    );
  });

  describe("a routed profile's settings", () => {
    it(
      "the janitor's own TERMINAL_LIFETIME_SECONDS=30 does not shorten it: finished 300 s ago is kept (threshold 600); " + 'status shows both readings',
      async () => {
        const p = `${fx.profile}r`;
        const r = hermesRoot(p);
        const id = await fx.create({ state: 'exited', profile: p });
        const asOf = new Date(Date.parse(await fx.finishedAt(id)) + 300_000).toISOString();
        const e = env({ HERMES_HOME: r, TERMINAL_LIFETIME_SECONDS: '30' });
        const res = await runCli(['reap', '--json', '--profile', p, ...mine, '--as-of', asOf], { env: e });
        assert.equal(res.code, 0, res.stderr);
        const out = JSON.parse(res.stdout) as ReapJson;
        assert.equal(out.thresholdSeconds, 600);
        assert.deepEqual(out.removed, []);
        assert.equal(byId(out.kept, id)?.reason, 'too-recent');
        const st = JSON.parse((await runCli(['status', '--json', '--profile', p, ...mine], { env: e })).stdout) as StatusJson;
        const life = st.settings.lifetimeSeconds!;
        assert.deepEqual([life.value, life.source, life.used], [300, 'default', 'scope']);
        assert.deepEqual(life.readings, [
          { reading: 'scope', value: 300, source: 'default' },
          { reading: 'launch', value: 30, source: 'env TERMINAL_LIFETIME_SECONDS' },
        ]);
        const text = await runCli(['status', '--profile', p, ...mine], { env: e });
        assert.match(text.stdout, /lifetime: 300 s \(default; scope 300 s from default, launch 30 s from env TERMINAL_LIFETIME_SECONDS: acting on scope\)/);
      },
    );

    it('a profile whose config.yaml does not parse keeps its sandboxes (nothing removed for it), and says so', async () => {
      const [p, q] = [`${fx.profile}b`, `${fx.profile}g`];
      const r = hermesRoot(p, q);
      writeFileSync(path.join(r, 'profiles', p, 'config.yaml'), 'terminal: [unclosed\n');
      const [bad, good] = await Promise.all([fx.create({ state: 'exited', profile: p }), fx.create({ state: 'exited', profile: q })]);
      const asOf = new Date(Date.parse(await fx.finishedAt(bad)) + 86_400_000).toISOString();
      const res = await runCli(['reap', '--json', '--all-profiles', ...mine, '--as-of', asOf], { env: env({ HERMES_HOME: r }) });
      assert.equal(res.code, 0, res.stderr);
      const out = JSON.parse(res.stdout) as ReapJson;
      assert.deepEqual(
        out.removed.map((e) => e.id),
        [good],
      );
      assert.equal(byId(out.kept, bad)?.reason, 'settings-refused');
      assert.match(
        res.stderr,
        new RegExp(`profile ${p}: hermes refuses its turns \\(.*config\\.yaml is not valid YAML.*\\): nothing is removed or stopped for it`),
      );
    });
  });

  describe('shared container identities', () => {
    const keyed = (r: string, p: string, lifetime?: number) =>
      writeFileSync(
        path.join(r, 'profiles', p, 'config.yaml'),
        `terminal:\n  docker_shared_container_key: team\n${lifetime === undefined ? '' : `  lifetime_seconds: ${lifetime}\n`}`,
      );

    it(`docker_shared_container_key: team selects hermes-profile=${TEAM}: listed, and reaped once old`, async () => {
      const p = `${fx.profile}k`;
      const r = hermesRoot(p);
      keyed(r, p);
      const [shared, own] = await Promise.all([fx.create({ state: 'exited', profile: TEAM }), fx.create({ state: 'exited', profile: p })]);
      const e = env({ HERMES_HOME: r });
      const listed = JSON.parse((await runCli(['list', '--json', '--profile', p, ...mine], { env: e })).stdout) as { containers: Entry[] };
      assert.deepEqual(
        listed.containers.map((c) => [c.id, c.profile]),
        [[shared, TEAM]],
        'the identity, not the profile name',
      );
      const young = new Date(Date.parse(await fx.finishedAt(shared)) + 599_000).toISOString();
      const kept = JSON.parse((await runCli(['reap', '--json', '--profile', p, ...mine, '--as-of', young], { env: e })).stdout) as ReapJson;
      assert.deepEqual([kept.removed, byId(kept.kept, shared)?.reason], [[], 'too-recent']);
      const old = new Date(Date.parse(await fx.finishedAt(shared)) + 601_000).toISOString(); // FinishedAt has nanoseconds
      const res = await runCli(['reap', '--json', '--profile', p, ...mine, '--as-of', old], { env: e });
      assert.equal(res.code, 0, res.stderr);
      assert.deepEqual(
        (JSON.parse(res.stdout) as ReapJson).removed.map((c) => c.id),
        [shared],
      );
      assert.equal(await fx.state(own), 'exited', "the profile's own label is not its selection");
      const st = JSON.parse((await runCli(['status', '--json', '--profile', p, ...mine], { env: e })).stdout) as StatusJson;
      assert.deepEqual(st.identities, [TEAM]);
    });

    it('two profiles sharing the key with lifetimes 60 and 900: the 1800 s threshold applies; --all-profiles lists it once', async () => {
      const [a, b] = [`${fx.profile}s`, `${fx.profile}t`];
      const r = hermesRoot(a, b);
      keyed(r, a, 60);
      keyed(r, b, 900);
      const id = await fx.create({ state: 'exited', profile: TEAM });
      const finished = Date.parse(await fx.finishedAt(id));
      const e = env({ HERMES_HOME: r });
      const at = (s: number) => new Date(finished + s * 1000).toISOString();
      const young = JSON.parse((await runCli(['reap', '--json', '--profile', a, ...mine, '--as-of', at(1799)], { env: e })).stdout) as ReapJson;
      assert.equal(young.thresholdSeconds, 1800);
      assert.deepEqual([young.removed, byId(young.kept, id)?.reason], [[], 'too-recent']);
      const all = JSON.parse((await runCli(['list', '--json', '--all-profiles', ...mine, '--as-of', at(1799)], { env: e })).stdout) as { containers: Entry[] };
      assert.deepEqual(
        all.containers.filter((c) => c.id === id).map((c) => c.reason),
        ['too-recent'],
        'once, by the longer lifetime',
      );
      const res = await runCli(['reap', '--json', '--profile', a, ...mine, '--as-of', at(1801)], { env: e });
      assert.deepEqual(
        (JSON.parse(res.stdout) as ReapJson).removed.map((c) => c.id),
        [id],
        res.stderr,
      );
    });
  });

  describe('hermes installs', () => {
    it('status names a checkout with its version and commit, and flags a venv newer than this janitor knows', async () => {
      const base = path.join(tmp.dir, `installs-${n++}`);
      const w = (rel: string, text = '') => {
        mkdirSync(path.dirname(path.join(base, rel)), { recursive: true });
        writeFileSync(path.join(base, rel), text);
      };
      w('checkout/hermes_cli/main.py');
      w('checkout/tools/terminal_tool.py');
      w('checkout/pyproject.toml', '[project]\nname = "hermes-agent"\nversion = "0.21.3"\n');
      w('checkout/.git/HEAD', '00067189dfecf833d4d009c2dd977ae85cf800e0\n');
      w('checkout/hermes', '#!/bin/sh\necho "ready $$"\nsleep 3600 &\nwait\n');
      w('venv/pyvenv.cfg', 'home = /usr/bin\n');
      w('venv/lib/python3.12/site-packages/hermes_agent-0.99.0.dist-info/METADATA', 'Metadata-Version: 2.4\nName: hermes-agent\nVersion: 0.99.0\n');
      w('venv/bin/hermes', `#!${base}/venv/bin/python3\n`);
      symlinkSync('/usr/bin/python3', path.join(base, 'venv/bin/python3'));
      const s = await startStandIn(path.join(base, 'checkout/hermes'), '-', { HOME: '/srv/hj-mux-user', HERMES_HOME: hermesRoot() }, null, ns.prefix, ['chat']);
      standIns.push(s);
      const PATH = `${path.join(base, 'venv/bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`;
      const r = await runCliAs(null, ['status', '--json', ...mine], { ...env(), PATH }, ns.prefix);
      const st = JSON.parse(r.stdout) as StatusJson;
      const checkout = st.hermesInstalls.installs.find((i) => i.dir === path.join(base, 'checkout'))!;
      assert.deepEqual(
        [checkout.kind, checkout.version, checkout.commit, checkout.newerThanKnown, checkout.foundBy],
        ['checkout', '0.21.3', '00067189dfecf833d4d009c2dd977ae85cf800e0', false, [`pid ${s.innerPid}`]],
        JSON.stringify(st.hermesInstalls),
      );
      const venv = st.hermesInstalls.installs.find((i) => i.dir === path.join(base, 'venv'))!;
      assert.deepEqual([venv.kind, venv.version, venv.newerThanKnown], ['venv', '0.99.0', true]);
      const text = await runCliAs(null, ['status', ...mine], { ...env(), PATH }, ns.prefix);
      assert.match(
        text.stdout,
        new RegExp(
          `${path.join(base, 'checkout').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(checkout\\): 0\\.21\\.3, ` +
            `commit 00067189dfec; found by pid ${s.innerPid}\\n`,
        ),
      );
      assert.match(text.stdout, /\(venv\): 0\.99\.0; found by PATH \(.*\): newer than this janitor knows/);
    });
  });
});
