/**
 * A janitor whose pid namespace is not the host's (#35), against the real engine: `unshare --pid --fork --mount-proc`
 * around its runs, as the shipped image runs without `--pid=host`. A stand-in hermes (its command line names hermes,
 * its HERMES_HOME the test profile's home) lives on the host, out of the janitor's sight. Its view is partial, and it
 * knows it: the idle sandbox counts as owned (kept, the owner's reason naming the namespace, never stopped by the
 * short idle threshold), an exec past the bound is kept (`pid-namespace`), each said once; `status` says so once.
 * From the host's own pid namespace the same runs see the stand-in (the sandbox is owned by it).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, afterEach, before, describe, it } from 'node:test';
import { tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, EngineFixture, requireEngine } from '../helpers/docker.js';
import { type StandIn, runCliAs, standInScript, startStandIn } from '../helpers/owners.js';
import { WatchProcess } from '../helpers/watch-process.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const unmetReason = process.getuid?.() !== 0 ? 'needs root (unshare --pid)' : false;
const NAMESPACE = ['unshare', '--pid', '--fork', '--mount-proc'];

interface Entry {
  id: string;
  reason?: string;
  idleReason?: string;
  owner?: { pid: number | null; command: string };
}
interface ReapJson {
  stopped: Entry[];
  kept: Entry[];
  warnings?: string[];
  execTrees: { ended: unknown[]; kept: Array<{ execId: string; reason: string }> };
}

describe(`a janitor in a pid namespace of its own (${ENGINE_KIND})`, { skip: skipUnless(unmetReason) }, () => {
  const fx = new EngineFixture();
  const home = tempDir('hj-pidns-');
  const hermesHome = path.join(home.dir, 'hermes');
  const standIns: StandIn[] = [];
  const cleanups: Array<() => unknown> = [];
  let script: string;
  const env = { HOME: home.dir, HERMES_HOME: hermesHome, ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}) };
  const sel = ['--profile', fx.profile, '--stop-idle', '--idle-after', '2s', '--idle-after-owned', '1h', '--exec-max-age', '1s'];
  const janitor = async (args: string[], prefix: string[]) => runCliAs(null, args, env, prefix);

  before(async () => {
    failUnderCi(unmetReason);
    await requireEngine();
    const s = standInScript();
    script = s.script;
    cleanups.push(s.cleanup);
  });
  afterEach(async () => {
    await Promise.all(standIns.splice(0).map((s) => s.kill()));
    await fx.removeContainers();
  });
  after(async () => {
    await fx.cleanup();
    for (const c of cleanups) c();
    home.cleanup();
  });

  it('the stand-in out of sight: the sandbox is kept as owned, the reason names the namespace; an exec past the bound is kept; status says so', async () => {
    const idle = await fx.create({ state: 'running' });
    const busy = await fx.create({ state: 'running' });
    // An exec whose client hermes' timeout killed: past the 1 s bound, it would be ended from the host's view.
    await run('timeout', ['-s', 'KILL', '2', 'docker', 'exec', busy, 'sh', '-c', 'sleep 1000']).catch(() => undefined);
    // The stand-in serves the test profile (HERMES_HOME is its home under the hermes root).
    const gw = await startStandIn(script, '-', { HOME: home.dir, HERMES_HOME: path.join(hermesHome, 'profiles', fx.profile) }, null);
    standIns.push(gw);

    const reap = async () => {
      const r = await janitor(['reap', '--json', ...sel], NAMESPACE);
      assert.equal(r.code, 0, r.stderr + r.stdout);
      return JSON.parse(r.stdout) as ReapJson;
    };
    await reap(); // the first sample of each proof
    await sleep(2600);
    const out = await reap();
    assert.deepEqual(out.stopped, [], JSON.stringify(out));
    const kept = out.kept.find((e) => e.id === idle)!;
    assert.deepEqual([kept.reason, kept.idleReason, kept.owner?.pid], ['running', 'owner-alive', null], JSON.stringify(kept));
    assert.match(kept.owner!.command, /pid namespace of its own \(pid:\[\d+\]\), not the host's.*--pid=host/);
    const warned = (out.warnings ?? []).filter((w) => w.includes('pid namespace'));
    assert.equal(warned.length, 1, JSON.stringify(out.warnings));
    assert.deepEqual(out.execTrees.ended, []);
    assert.deepEqual([...new Set(out.execTrees.kept.map((k) => k.reason))], ['pid-namespace'], JSON.stringify(out.execTrees));
    assert.equal(await fx.state(idle), 'running');

    // status: said once, and it needs attention (exit 1).
    const st = await janitor(['status', ...sel.slice(0, 2)], NAMESPACE);
    assert.equal(st.code, 1, st.stderr);
    const attention = st.stdout.slice(st.stdout.indexOf('Needs attention'));
    assert.equal(attention.match(/pid namespace of its own/g)?.length, 1, st.stdout);
    const json = JSON.parse((await janitor(['status', '--json', ...sel.slice(0, 2)], NAMESPACE)).stdout) as {
      pidNamespace: string | null;
      attention: string[];
    };
    assert.match(json.pidNamespace ?? '', /--pid=host/);

    // From the host's pid namespace the stand-in is seen: the sandbox is owned by a process, not by the blindness.
    const host = JSON.parse((await janitor(['list', '--json', ...sel], [])).stdout) as { containers: Entry[] };
    assert.notEqual(host.containers.find((e) => e.id === idle)?.owner?.pid ?? null, null, JSON.stringify(host.containers));
  });

  it('watch in the same namespace: said once in its log, however many checks; the idle sandbox is never stopped', async () => {
    const idle = await fx.create({ state: 'running' });
    // unshare (--kill-child: it ends with its watch) runs watch in a pid namespace of its own.
    // The real procfs (WatchProcess gives the CLI a quiet one of its own by default): the janitor's own, in its namespace.
    const w = WatchProcess.start([...sel], { ...env, HERMES_JANITOR_PROC_ROOT: '' }, `exec unshare --pid --fork --mount-proc --kill-child "$@"; :`);
    try {
      await w.waitFor('connected', (lines) => lines.some((l) => l.event === 'engine' && l.state === 'connected'));
      // Several idle checks (2 s threshold, a check 1 s after the start and then each threshold).
      await sleep(9000);
      const warned = w.events('warning').filter((l) => String(l.message).includes('pid namespace of its own'));
      assert.equal(warned.length, 1, JSON.stringify(w.events('warning')));
      assert.deepEqual(w.events('stopped'), []);
      assert.equal(await fx.state(idle), 'running');
    } finally {
      w.kill();
      await w.exited;
    }
  });
});
