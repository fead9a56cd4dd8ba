/**
 * The Dockerfile: built from a base imported locally (no registry here: a root filesystem with this machine's
 * node and the libraries `ldd` lists), run with the engine socket mounted, and seen to reap; then, where
 * `docker swarm init` works, deployed as a global service and seen to reap. All of it on a private dockerd
 * (test/helpers/second-dockerd.ts): the shared engine's images and swarm state are never touched.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { REPO, tempDir } from '../helpers/cli.js';
import { TEST_IMAGE } from '../helpers/docker.js';
import { SecondDockerd } from '../helpers/second-dockerd.js';
import { unmet } from '../helpers/preconditions.js';

const exec = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let engine: SecondDockerd | undefined;
let unavailable = '';
const IMAGE = 'hermes-janitor:test';
const BASE = 'hj-local-node:test';

/** A root filesystem holding this machine's node binary and the shared libraries it links, as a tar stream source. */
async function nodeRootfs(dir: string): Promise<void> {
  const node = realpathSync(process.execPath);
  const { stdout } = await exec('ldd', [node]);
  const files = [node, ...[...stdout.matchAll(/(\/\S+\.so[^\s]*)/g)].map((m) => m[1]!)];
  for (const f of new Set(files)) {
    const to = path.join(dir, f);
    mkdirSync(path.dirname(to), { recursive: true });
    copyFileSync(realpathSync(f), to);
  }
  mkdirSync(path.join(dir, 'usr/local/bin'), { recursive: true });
  if (node !== '/usr/local/bin/node') copyFileSync(node, path.join(dir, 'usr/local/bin/node'));
  for (const d of ['tmp', 'etc', 'root']) mkdirSync(path.join(dir, d), { recursive: true });
}

async function waitGone(d: SecondDockerd, id: string, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!(await d.docker(['ps', '-aq', '--no-trunc']).catch(() => id)).includes(id)) return true;
    await sleep(500);
  }
  return false;
}

before(async () => {
  const d = await SecondDockerd.start();
  if ('unavailable' in d) unavailable = d.unavailable;
  else engine = d;
});
after(async () => {
  await engine?.cleanup(); // its images, containers and swarm go with it
});

describe('the container image', () => {
  it('builds from a locally imported base and reaps through the mounted socket; then as a Swarm global service', { timeout: 600_000 }, async (t) => {
    if (!engine) return void unmet(t, `the image test cannot run here: ${unavailable}`);
    const d = engine;
    const root = tempDir('hj-rootfs-');
    try {
      await nodeRootfs(root.dir);
      await exec('sh', ['-c', `tar -C '${root.dir}' -c . | DOCKER_HOST=${d.host} docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - ${BASE}`], {
        timeout: 120_000,
      });
    } finally {
      root.cleanup();
    }
    await exec('bash', [path.join(REPO, 'scripts/build-image.sh'), '-q', '-t', IMAGE, '--build-arg', `BASE_IMAGE=${BASE}`], {
      env: { ...process.env, DOCKER_HOST: d.host, DOCKER_BUILDKIT: '0' },
      timeout: 300_000,
    });
    assert.match(await d.docker(['image', 'inspect', IMAGE, '--format', '{{json .Config.Cmd}}']), /"watch"/);

    const labels = ['--label', 'hermes-agent=1', '--label', 'hermes-profile=default'];
    const orphan = () => d.docker(['run', '-d', ...labels, '--network', 'none', TEST_IMAGE, 'true']);
    const other = await d.docker(['run', '-d', '--label', 'hermes-agent=0', '--network', 'none', TEST_IMAGE, 'true']);

    // docker run with the socket mounted and the host's pid namespace (the documented command, with a short threshold).
    const janitor = await d.docker([
      'run',
      '-d',
      '--network',
      'none',
      '--pid=host',
      '-v',
      `${d.socket}:/var/run/docker.sock`,
      IMAGE,
      'watch',
      '--all-profiles',
      '--older-than',
      '3s',
      '--force-threshold',
      '--log-format',
      'json',
    ]);
    const first = await orphan();
    const gone = await waitGone(d, first, 30_000);
    const logs = await d.docker(['logs', janitor]).catch((e: Error) => e.message);
    assert.ok(gone, `the janitor in the image did not remove ${first}; its log:\n${logs}`);
    assert.match(logs, /"event":"removed"/);
    assert.match(await d.docker(['ps', '-aq', '--no-trunc']), new RegExp(other), 'a container not ours stays');
    const t0 = Date.now();
    await d.docker(['stop', '-t', '10', janitor]);
    assert.ok(Date.now() - t0 < 6000, 'docker stop: exits on SIGTERM, no SIGKILL after 10 s');
    assert.equal(await d.docker(['inspect', '--format', '{{.State.ExitCode}}', janitor]), '0');
    await d.docker(['rm', janitor]);

    // Swarm: a global service on this private engine, where `docker swarm init` works.
    // Where it does not, the suite's unmet precondition: skipped with the reason here, a failure under CI.
    const swarmInit = await d.docker(['swarm', 'init', '--advertise-addr', '127.0.0.1']).then(
      () => null,
      (err: Error) => err.message.split('\n')[0]!,
    );
    if (unmet(t, swarmInit !== null && `the Swarm part cannot run here: docker swarm init failed (${swarmInit})`)) return;
    let created = false;
    for (const network of ['host', 'none']) {
      try {
        await d.docker([
          'service',
          'create',
          '--detach',
          '--name',
          'hermes-janitor',
          '--mode',
          'global',
          '--network',
          network,
          '--mount',
          `type=bind,source=${d.socket},target=/var/run/docker.sock`,
          IMAGE,
          'watch',
          '--all-profiles',
          '--older-than',
          '3s',
          '--force-threshold',
          '--log-format',
          'json',
        ]);
        created = true;
        break;
      } catch (err) {
        console.log(`# service create with --network ${network} failed: ${(err as Error).message.split('\n')[0]}`);
      }
    }
    assert.ok(created, 'the global service could be created');
    const until = Date.now() + 60_000;
    let state = '';
    while (Date.now() < until) {
      state = await d.docker(['service', 'ps', 'hermes-janitor', '--format', '{{.CurrentState}} {{.Error}}']).catch(() => '');
      if (/^Running/m.test(state)) break;
      await sleep(500);
    }
    assert.match(state, /^Running/m, `service task state: ${state}`);
    // Connected and swept: its first sweep's line in the service's log.
    const swept = Date.now() + 30_000;
    let serviceLog = '';
    while (Date.now() < swept && !/"event":"sweep"/.test(serviceLog)) {
      serviceLog = await d.docker(['service', 'logs', '--raw', 'hermes-janitor']).catch(() => '');
      if (!/"event":"sweep"/.test(serviceLog)) await sleep(250);
    }
    assert.match(serviceLog, /"event":"sweep"/, 'the global service never reported its first sweep');
    const second = await orphan();
    assert.ok(await waitGone(d, second, 30_000), `the global service did not remove ${second}`);
    console.log('# Swarm global service: deployed and reaped');
    await d.docker(['service', 'rm', 'hermes-janitor']);
  });
});
