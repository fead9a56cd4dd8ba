/**
 * An exec is abandoned when its client is gone (#38), against the real engine: a stream opened as hermes opens one
 * (`tools/environments/streams.py`: `docker exec -i <sandbox> bash -c 'exec <argv>'`, its stdin held open by a living
 * client; the test image is busybox, so `sh`) and a tree whose client was killed (hermes' timeout: `timeout -s KILL`),
 * both older than a bound of a few seconds (`--exec-max-age 3s`): the stream runs on (`client-alive`), the tree is
 * ended; once the stream's client is killed, the next pass ends it too. The exec-tree pass reads this host's `/proc`
 * (the clients are real `docker` processes of this test).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, afterEach, before, describe, it } from 'node:test';
import { createDockerodeEngine } from '../../src/adapters/dockerode-engine.js';
import type { EngineClient } from '../../src/adapters/engine.js';
import { runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_HOST, ENGINE_KIND, ENGINE_SOCKET, EngineFixture, requireEngine } from '../helpers/docker.js';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ExecJson {
  id: string;
  command: string;
  abandoned: boolean;
  client: { pid: number; since: string } | null;
  clientUnverifiable: string | null;
}
interface Trees {
  ended: Array<{ execId: string }>;
  kept: Array<{ execId: string; reason: string }>;
  failed: unknown[];
}

describe(`an exec is abandoned when its client is gone (${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const home = tempDir('hj-clients-');
  const env = { HOME: home.dir, HERMES_HOME: `${home.dir}/hermes` };
  const flags = ['--profile', fx.profile, '--no-stop-idle', '--exec-max-age', '3s'];
  const clients: ChildProcess[] = [];
  let engine: EngineClient;

  const cli = async (args: string[]) => {
    const r = await runCli([...args, ...flags], { env });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as unknown;
  };
  /** The running exec of the sandbox whose command is `command`. */
  const execOf = async (id: string, command: string, ms = 10_000): Promise<string> => {
    for (const until = Date.now() + ms; Date.now() < until; await sleep(50)) {
      for (const x of (await engine.inspect(id))?.execIds ?? []) {
        const e = await engine.execInspect(x);
        if (e?.running && [e.entrypoint, ...e.arguments].join(' ') === command) return x;
      }
    }
    return assert.fail(`no running exec '${command}' in ${id.slice(0, 12)}`);
  };
  const running = async (execId: string) => Boolean((await engine.execInspect(execId))?.running);
  const ends = async (execId: string, ms = 10_000) => {
    for (const until = Date.now() + ms; Date.now() < until; await sleep(100)) if (!(await running(execId))) return;
    assert.fail(`exec ${execId.slice(0, 12)} still running`);
  };

  before(async () => {
    await requireEngine();
    engine = await createDockerodeEngine({ host: ENGINE_HOST, socketPath: ENGINE_SOCKET });
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.kill('SIGKILL');
    await fx.removeContainers();
  });
  after(async () => {
    await fx.cleanup();
    home.cleanup();
  });

  it(
    'the stream with a living client runs on (client-alive); the tree whose client was killed is ended; ' + 'then the stream too, once its client dies',
    async () => {
      const id = await fx.create({ state: 'running', cmd: ['sleep', 'infinity'] });
      // The stream, as hermes opens one: `exec -i`, its stdin a pipe the client holds open for as long as it lives.
      const stream = spawn('docker', ['exec', '-i', id, 'sh', '-c', 'exec sleep 100000'], { stdio: ['pipe', 'pipe', 'ignore'] });
      clients.push(stream);
      const streamExec = await execOf(id, 'sh -c exec sleep 100000');
      // The tree: its client killed by a timeout, the exec runs on.
      await run('timeout', ['-s', 'KILL', '2', 'docker', 'exec', id, 'sh', '-c', 'sleep 1000 & sleep 1000']).catch(() => undefined);
      const treeExec = await execOf(id, 'sh -c sleep 1000 & sleep 1000');
      await sleep(3500);

      const listed = (await cli(['list', '--json'])) as { containers: Array<{ id: string; execs?: ExecJson[] }> };
      const execs = new Map(listed.containers.find((c) => c.id === id)!.execs!.map((x) => [x.id, x]));
      assert.deepEqual([execs.get(streamExec)?.client?.pid, execs.get(streamExec)?.abandoned], [stream.pid, false], JSON.stringify([...execs.values()]));
      assert.deepEqual([execs.get(treeExec)?.client, execs.get(treeExec)?.clientUnverifiable, execs.get(treeExec)?.abandoned], [null, null, true]);

      const first = ((await cli(['reap', '--json'])) as { execTrees: Trees }).execTrees;
      assert.deepEqual(
        first.kept.filter((k) => k.execId === streamExec).map((k) => k.reason),
        ['client-alive'],
        JSON.stringify(first),
      );
      assert.deepEqual(
        first.ended.map((e) => e.execId),
        [treeExec],
      );
      await ends(treeExec);
      assert.equal(await running(streamExec), true, 'the stream runs on');
      assert.equal(stream.exitCode, null, 'its client too');

      // The stream's client dies (hermes killed): the next pass ends the exec it held.
      stream.kill('SIGKILL');
      await once(stream, 'exit');
      assert.equal(await running(streamExec), true, 'the exec outlives its client');
      const next = ((await cli(['reap', '--json'])) as { execTrees: Trees }).execTrees;
      assert.deepEqual(
        next.ended.map((e) => e.execId),
        [streamExec],
        JSON.stringify(next),
      );
      await ends(streamExec);
    },
  );

  it('a renamed client keeps its stream: the docker CLI run as podman-remote (comm and argv[0]) holds its exec past the bound (#47)', async () => {
    const id = await fx.create({ state: 'running', cmd: ['sleep', 'infinity'] });
    const dir = tempDir('hj-remote-');
    try {
      const { stdout } = await run('sh', ['-c', 'command -v docker']);
      const remote = path.join(dir.dir, 'podman-remote');
      symlinkSync(stdout.trim(), remote); // the kernel names the process after the link: comm podman-remote
      const stream = spawn(remote, ['exec', '-i', id, 'sh', '-c', 'exec sleep 100001'], { stdio: ['pipe', 'pipe', 'ignore'] });
      clients.push(stream);
      const streamExec = await execOf(id, 'sh -c exec sleep 100001');
      assert.equal(readFileSync(`/proc/${stream.pid}/comm`, 'utf8').trim(), 'podman-remote');
      await sleep(3500);

      const first = ((await cli(['reap', '--json'])) as { execTrees: Trees }).execTrees;
      assert.deepEqual(
        first.kept.filter((k) => k.execId === streamExec).map((k) => k.reason),
        ['client-alive'],
        JSON.stringify(first),
      );
      assert.deepEqual(first.ended, []);
      assert.equal(await running(streamExec), true, 'the stream runs on');

      stream.kill('SIGKILL');
      await once(stream, 'exit');
      const next = ((await cli(['reap', '--json'])) as { execTrees: Trees }).execTrees;
      assert.deepEqual(
        next.ended.map((e) => e.execId),
        [streamExec],
        JSON.stringify(next),
      );
      await ends(streamExec);
    } finally {
      dir.cleanup();
    }
  });
});
