/**
 * Clear answers at the edges (#39): an address that answers HTTP but is not a Docker engine (`python3 -m
 * http.server`) is "not a Docker engine", exit 3, in every engine command; a list cut short by --timeout never says
 * there is nothing; a --profile whose home does not exist is one warning naming the path, its label still selected;
 * `reap --quiet --log-format json` prints nothing on success (docs/reaping.md), only what went wrong.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

async function listening(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on ${port}`);
}

describe('clear answers at the edges', () => {
  const tmp = tempDir('hj-edges-');
  const env = { HOME: tmp.dir, HERMES_HOME: path.join(tmp.dir, 'hermes') };
  let web: ChildProcess;
  let webHost = '';

  before(async () => {
    const port = await freePort();
    web = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', tmp.dir], { stdio: 'ignore' });
    await listening(port);
    webHost = `tcp://127.0.0.1:${port}`;
  });
  after(() => {
    web.kill();
    tmp.cleanup();
  });

  it('a web server where the engine should be: "not a Docker engine", exit 3, in list, reap, reap --dry-run, status and watch', async () => {
    for (const args of [['list'], ['list', '--json'], ['reap'], ['reap', '--dry-run'], ['status'], ['watch']]) {
      for (const how of [{ DOCKER_HOST: webHost }, { HOST: webHost }]) {
        const flags = 'HOST' in how ? ['--host', webHost] : [];
        const r = await runCli([...args, ...flags, '--timeout', '10s'], { env: { ...env, ...('DOCKER_HOST' in how ? how : {}) }, killAfterMs: 30_000 });
        const what = `${args.join(' ')} ${flags.join(' ')}`;
        assert.equal(r.code, 3, `${what}: ${r.stderr}`);
        assert.match(r.stdout + r.stderr, new RegExp(`${webHost.replace(/[/.]/g, '\\$&')} is not a Docker engine`), what);
        assert.doesNotMatch(r.stderr, /unexpected error/, what);
      }
    }
  });

  it('a list cut short by --timeout never says there is nothing', async () => {
    const profile = `edge${process.pid}`;
    const sim = await EngineSimulator.start({
      bulk: [{ count: 3, labels: { 'hermes-agent': '1', 'hermes-profile': profile }, finishedAt: '2026-01-01T00:00:00Z' }],
      faults: { hang: true },
    });
    try {
      const r = await runCli(['list', '--host', sim.host, '--profile', profile, '--timeout', '1s'], { env, killAfterMs: 20_000 });
      assert.equal(r.code, 3);
      assert.match(r.stderr, /timed out after --timeout 1s; the list is incomplete/);
      assert.doesNotMatch(r.stdout + r.stderr, /No labelled containers for/);
      assert.match(r.stderr, /the list is incomplete/);
    } finally {
      await sim.close();
    }
  });

  it('a --profile whose home does not exist: one warning naming the path; its containers are still listed', async () => {
    const profile = `wrok${process.pid}`;
    const sim = await EngineSimulator.start({
      containers: [{ name: 'hermes-0a0a0a0a', labels: { 'hermes-agent': '1', 'hermes-profile': profile }, finishedAt: '2026-01-01T00:00:00Z' }],
    });
    try {
      const r = await runCli(['list', '--host', sim.host, '--profile', profile], { env });
      assert.equal(r.code, 0, r.stderr);
      const warnings = r.stderr.split('\n').filter((l) => l.includes('warning'));
      assert.deepEqual(warnings, [
        `hermes-janitor: warning: --profile ${profile}: there is no hermes home at ${path.join(env.HERMES_HOME, 'profiles', profile)} ` +
          `(a mistyped profile?); its containers (label value ${profile}) are selected all the same`,
      ]);
      assert.match(r.stdout, /hermes-0a0a0a0a/);
      const quiet = await runCli(['reap', '--quiet', '--dry-run', '--host', sim.host, '--profile', profile], { env });
      assert.equal(quiet.stderr, '', '--quiet says nothing');
    } finally {
      await sim.close();
    }
  });

  it('reap --quiet --log-format json: nothing on success; on a failure, the failed container and the summary', async () => {
    const profile = `quiet${process.pid}`;
    const old = '2026-01-01T00:00:00Z';
    const labels = { 'hermes-agent': '1', 'hermes-profile': profile };
    const sim = await EngineSimulator.start({
      containers: [
        { name: 'hermes-0a0a0a0a', labels, finishedAt: old },
        { name: 'hermes-0b0b0b0b', labels, state: 'running' },
      ],
    });
    try {
      const args = ['reap', '--log-format', 'json', '--host', sim.host, '--profile', profile];
      const loud = await runCli([...args, '--dry-run'], { env });
      assert.equal(loud.code, 0, loud.stderr);
      assert.deepEqual(
        loud.stdout
          .trim()
          .split('\n')
          .map((l) => (JSON.parse(l) as { event: string }).event),
        ['would-remove', 'kept', 'summary'],
        'the control: without --quiet, every decision and the summary',
      );
      const quiet = await runCli([...args, '--quiet'], { env });
      assert.equal(quiet.code, 0, quiet.stderr);
      assert.deepEqual([quiet.stdout, quiet.stderr], ['', ''], 'a removal that went well: nothing at all');
      assert.deepEqual(
        sim.ids().map((id) => sim.get(id)!.name),
        ['hermes-0b0b0b0b'],
        'and it did remove',
      );
      sim.add({ name: 'hermes-0c0c0c0c', labels, finishedAt: old, faults: { removeStatus: 500 } });
      const failed = await runCli([...args, '--quiet'], { env });
      assert.equal(failed.code, 1, failed.stderr);
      const events = failed.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { event: string; name?: string; failed?: number });
      assert.deepEqual(
        events.map((e) => [e.event, e.name ?? e.failed]),
        [
          ['failed', 'hermes-0c0c0c0c'],
          ['summary', 1],
        ],
      );
      const down = await runCli(['reap', '--log-format', 'json', '--quiet', '--host', `unix://${tmp.dir}/nothing.sock`], { env });
      assert.equal(down.code, 3);
      assert.match(down.stdout, /^\{"time":"[^"]+","event":"summary",.*"reachable":false/, 'an engine that did not answer: the summary says which');
    } finally {
      await sim.close();
    }
  });
});
