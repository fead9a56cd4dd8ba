/**
 * The cost of a stop, against the real engine (Docker, and Podman through its Docker-compatible API): a sandbox that
 * wrote 20 MB outside its bind mounts, stopped by the idle rule, is shown with the size of its writable layer
 * (`SizeRw`) in its stop line, in `reap --json`'s `stopped[]` and in `list --json` (`status` takes the same sweep as
 * `list`; its section is checked in test/unit/stop-cost.test.ts: it judges idleness by the computed threshold, 2
 * minutes at least). hermes' own reaper
 * removes a stopped sandbox at its next start once stopped for 2 x its lifetime, and this layer with it: the packages
 * an agent installed outside the bind-mounted `/root` and `/workspace`.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, EngineFixture, docker, requireEngine } from '../helpers/docker.js';

interface Entry {
  id: string;
  verdict?: string;
  writableLayerBytes?: number | null;
}
const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe(`the cost of a stop: the writable layer of a sandbox the idle rule stops (${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const home = tempDir('hj-stopcost-');
  const hermesHome = path.join(home.dir, 'hermes');
  const env = { HOME: home.dir, HERMES_HOME: hermesHome };
  const workspace = path.join(home.dir, 'workspace');
  const sel = ['--profile', fx.profile, '--idle-after', '1s', '--idle-after-owned', '1s'];

  before(requireEngine);
  afterEach(() => fx.removeContainers());
  after(async () => {
    await fx.cleanup();
    home.cleanup();
  });

  /** A sandbox with 20 MiB written outside its mounts and 8 MiB inside its bind-mounted /workspace, then quiet. */
  async function sandboxWith20MiB(): Promise<string> {
    mkdirSync(workspace, { recursive: true });
    const id = await fx.create({ state: 'running', args: ['-v', `${workspace}:/workspace`] });
    await docker(['exec', id, 'busybox', 'dd', 'if=/dev/zero', 'of=/installed.bin', 'bs=1048576', 'count=20']);
    await docker(['exec', id, 'busybox', 'dd', 'if=/dev/zero', `of=/workspace/${fx.runId}.bin`, 'bs=1048576', 'count=8']);
    return id;
  }

  it("gives the writable layer's size in list --json, in the stop line and in a dry run's", async () => {
    const id = await sandboxWith20MiB();
    // Two samples, the idle threshold apart: the first run observes, the second can prove it idle.
    assert.equal((await runCli(['list', '--json', ...sel], { env })).code, 0);
    await sleep(1600);

    const listed = await runCli(['list', '--json', ...sel], { env });
    assert.equal(listed.code, 0, listed.stderr);
    const l = (JSON.parse(listed.stdout) as { containers: Entry[] }).containers.find((e) => e.id === id)!;
    assert.equal(l.verdict, 'stop', listed.stdout);
    const bytes = l.writableLayerBytes!;
    // 20 MiB written outside the mounts (and a few bytes the engine adds); the 8 MiB in /workspace are not in it.
    assert.ok(typeof bytes === 'number' && bytes >= 20 * MB && bytes < 27 * MB, `writableLayerBytes ${bytes}`);

    const dry = await runCli(['reap', '--dry-run', ...sel], { env });
    assert.match(dry.stdout, new RegExp(`Would stop ${id.slice(0, 12)} .*idle .*, writable layer 2\\d\\.\\d MiB\\)`), dry.stdout);
    assert.equal(await fx.state(id), 'running');

    const text = await runCli(['reap', ...sel], { env });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`stopped ${id.slice(0, 12)} .*idle .*, writable layer 2\\d\\.\\d MiB\\)`), text.stdout);
    assert.equal(await fx.state(id), 'exited');
  });

  it("reap --json: the stopped entry's writableLayerBytes is the engine's SizeRw", async () => {
    const id = await sandboxWith20MiB();
    assert.equal((await runCli(['list', '--json', ...sel], { env })).code, 0);
    await sleep(1600);
    const r = await runCli(['reap', '--json', ...sel], { env });
    assert.equal(r.code, 0, r.stderr);
    const stopped = (JSON.parse(r.stdout) as { stopped: Entry[] }).stopped.find((e) => e.id === id);
    assert.ok(stopped, r.stdout);
    const engine = Number(await docker(['inspect', '--size', '--format', '{{.SizeRw}}', id]));
    assert.equal(stopped.writableLayerBytes, engine);
    assert.ok(engine >= 20 * MB, `SizeRw ${engine}`);
  });
});
