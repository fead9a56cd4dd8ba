/**
 * Owners in every current shape, against a real engine (#43): for each of hermes' own launchers
 * (test/fixtures/hermes-launchers/launchers.ts: the systemd unit, the launchd plist's stderr wrapper, Desktop's
 * `serve` and `dashboard --no-open` backends run from a per-build payload, the AppImage's payload, `hermes gateway
 * migrate --backends`), a stand-in process with exactly that command line (a real Python interpreter running a
 * stand-in `hermes_cli` package, its venv and payload paths under a temporary directory; the migrate one the usual
 * shell stand-in named `hermes`) and `HERMES_HOME` on a hermes root keeps its profiles' idle sandboxes (owner-alive,
 * the stand-in named as their owner); once it is gone, the same idle sandbox is stopped. The stand-ins, the janitor and
 * a Docker engine of their own share a pid namespace of their own (see multiplexer.test.ts).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { emptyManagedDir, tempDir } from '../helpers/cli.js';
import { EngineFixture, RUN_LABEL } from '../helpers/docker.js';
import { SecondDockerd } from '../helpers/second-dockerd.js';
import { type StandIn, pidNamespace, runCliAs, standInScript, startArgv, startStandIn } from '../helpers/owners.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';
import { LAUNCHERS, type Launcher } from '../fixtures/hermes-launchers/launchers.js';

interface Entry {
  id: string;
  reason?: string;
  idleReason?: string;
  owner?: { pid: number | null; serves: string; why: string };
}
interface ReapJson {
  stopped: Entry[];
  kept: Entry[];
}

/** A Python interpreter binary of this host (an ELF file, not a shim script), or null. */
function python(): string | null {
  for (const p of ['/usr/bin/python3', '/usr/local/bin/python3', '/bin/python3']) {
    try {
      const real = realpathSync(p);
      if (readFileSync(real).subarray(0, 4).toString('latin1') === '\x7fELF') return real;
    } catch {
      /* not here */
    }
  }
  return null;
}

const PYTHON = python();
const unmet =
  process.getuid?.() !== 0
    ? "needs root (a pid namespace of its own, and other users' process environments)"
    : !existsSync('/usr/sbin/dockerd') && !existsSync('/usr/bin/dockerd')
      ? 'needs dockerd (an engine in the pid namespace)'
      : PYTHON === null
        ? 'needs a python3 binary (the stand-ins run the launchers command lines)'
        : false;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("owners in every shape of hermes' launchers (real processes, a Docker engine in the pid namespace)", { skip: skipUnless(unmet) }, () => {
  const fx = new EngineFixture();
  const tmp = tempDir('hj-launchers-');
  const standIns: StandIn[] = [];
  let ns: { prefix: string[]; close: () => Promise<void> };
  let engine: SecondDockerd | undefined;
  let stand: ReturnType<typeof standInScript>;
  const shared = process.env.DOCKER_HOST;
  const root = path.join(tmp.dir, 'root');
  const work = `${fx.profile}w`;
  const mine = ['--label', 'hermes-agent=1', '--label', `${RUN_LABEL}=${fx.runId}`];
  const sel = ['--all-profiles', ...mine, '--stop-idle', '--idle-after', '2s', '--idle-after-owned', '1h'];
  const env = () => ({ HOME: tmp.dir, HERMES_MANAGED_DIR: emptyManagedDir(), DOCKER_HOST: engine!.host });
  const janitor = async (args: string[]) => {
    const r = await runCliAs(null, args, env(), ns.prefix);
    assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}${r.stdout}`);
    return r;
  };

  /** A launcher's command line with its paths made real under the temporary directory (a stand-in `hermes_cli` there). */
  const realArgv = (l: Launcher): string[] => {
    if (l.name === 'migrate') return ['sh', stand.script, ...l.argv.slice(1)];
    return l.argv.map((a) => {
      if (!a.startsWith('/') || !a.endsWith('/bin/python')) return a.startsWith('/home/u/') ? path.join(tmp.dir, a) : a;
      const p = path.join(tmp.dir, a);
      if (!existsSync(p)) {
        mkdirSync(path.dirname(p), { recursive: true });
        symlinkSync(PYTHON!, p);
      }
      return p;
    });
  };

  before(async () => {
    failUnderCi(unmet);
    ns = await pidNamespace();
    const started = await SecondDockerd.start(ns.prefix);
    if ('unavailable' in started) throw new Error(started.unavailable);
    engine = started;
    process.env.DOCKER_HOST = engine.host;
    stand = standInScript();
    mkdirSync(path.join(root, 'profiles', work), { recursive: true });
    // A stand-in hermes_cli: each module says ready with its pid, then waits.
    const pkg = path.join(tmp.dir, 'src', 'hermes_cli');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(path.join(pkg, '__init__.py'), '');
    const body = 'import os, sys, time\nprint(f"ready {os.getpid()}", flush=True)\ntime.sleep(3600)\n';
    for (const m of ['main.py', 'stderr_timestamp.py']) writeFileSync(path.join(pkg, m), body);
  });
  afterEach(async () => {
    await Promise.all(standIns.splice(0).map((s) => s.kill()));
    await fx.removeContainers();
  });
  after(async () => {
    await Promise.all(standIns.map((s) => s.kill()));
    await fx.cleanup();
    await engine?.cleanup();
    await ns?.close();
    if (shared === undefined) delete process.env.DOCKER_HOST;
    else process.env.DOCKER_HOST = shared;
    stand?.cleanup();
    tmp.cleanup();
  });

  const start = async (l: Launcher): Promise<StandIn> => {
    const vars = { HERMES_HOME: root, HOME: '/srv/hj-launchers-user', PYTHONPATH: path.join(tmp.dir, 'src'), PYTHONDONTWRITEBYTECODE: '1' };
    const s =
      l.name === 'migrate'
        ? await startStandIn(stand.script, '-', vars, null, ns.prefix, l.argv.slice(1))
        : await startArgv(realArgv(l), vars, null, ns.prefix);
    standIns.push(s);
    return s;
  };

  for (const l of LAUNCHERS) {
    it(`${l.name} (${l.from}): its profiles' idle sandboxes are kept while it runs, owned by it`, async () => {
      // The profile it serves: the root's (default and every profile) unless its --profile names one.
      const profile = l.profileArg && l.profileArg !== 'default' ? l.profileArg : work;
      if (profile !== work) mkdirSync(path.join(root, 'profiles', profile), { recursive: true });
      const id = await fx.create({ state: 'running', profile });
      const s = await start(l);
      const first = JSON.parse((await janitor(['list', '--json', ...sel])).stdout) as { containers: Entry[] };
      const e = first.containers.find((c) => c.id === id)!;
      assert.equal(e.owner?.pid, s.innerPid, JSON.stringify(e));
      await sleep(2600);
      const out = JSON.parse((await janitor(['reap', '--json', ...sel])).stdout) as ReapJson;
      assert.deepEqual(out.stopped, [], JSON.stringify(out));
      assert.equal(out.kept.find((k) => k.id === id)?.owner?.pid, s.innerPid, JSON.stringify(out));
      // Gone: nothing owns it any more, and the idle sandbox is stopped (the proof can fail: the test can).
      await s.kill();
      standIns.splice(standIns.indexOf(s), 1);
      let stopped = false;
      for (let round = 0; round < 4 && !stopped; round++) {
        const r = JSON.parse((await janitor(['reap', '--json', ...sel])).stdout) as ReapJson;
        stopped = r.stopped.some((x) => x.id === id);
        if (!stopped) await sleep(2600);
      }
      assert.equal(stopped, true, `${l.name}: stopped once its stand-in is gone`);
    });
  }
});
