/**
 * dockerode as the engine client: its Docker object is made from the endpoint alone (docker-modem's own reading of
 * the environment never decides where a request goes), and the parts the janitor never uses (BuildKit sessions with
 * gRPC and protobuf, the tar stack, ssh2) stay unloaded until something uses them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { EngineEndpoint } from '../../src/adapters/engine-host.js';
import { modemFields } from '../../src/adapters/dockerode-loader.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** docker-modem's constructor, run with no DOCKER_* or SSH_AUTH_SOCK in the environment. */
function constructed(options: Record<string, unknown>): Record<string, unknown> {
  const Modem = createRequire(path.join(ROOT, 'node_modules/dockerode/lib/docker.js'))('docker-modem') as new (o: object) => object;
  const keys = ['DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH', 'DOCKER_CLIENT_TIMEOUT', 'DOCKER_PATH_PREFIX', 'SSH_AUTH_SOCK'];
  const saved = keys.map((k) => [k, process.env[k]] as const);
  for (const k of keys) delete process.env[k];
  try {
    return { ...(new Modem(options) as Record<string, unknown>) };
  } finally {
    for (const [k, v] of saved) if (v !== undefined) process.env[k] = v;
  }
}

/** Own fields with a value (the constructor assigns `undefined` to those it was not given). */
const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

describe('dockerode: the Docker object for an endpoint', () => {
  const tls = mkdtempSync(path.join(os.tmpdir(), 'hj-tls-'));
  for (const f of ['ca.pem', 'cert.pem', 'key.pem']) writeFileSync(path.join(tls, f), `${f} bytes\n`);
  const cases: Array<[string, EngineEndpoint, Record<string, unknown>]> = [
    ['unix socket', { host: 'unix:///run/x.sock', socketPath: '/run/x.sock' }, { socketPath: '/run/x.sock' }],
    ['tcp', { host: 'tcp://10.0.0.5:2375', protocol: 'http', hostname: '10.0.0.5', port: 2375 }, { host: '10.0.0.5', port: 2375, protocol: 'http', pathPrefix: '/' }],
    [
      'tcp with TLS',
      { host: 'tcp://10.0.0.5:2376', protocol: 'https', hostname: '10.0.0.5', port: 2376, tlsDir: tls, tlsVerify: true },
      {
        host: '10.0.0.5', port: 2376, protocol: 'https', pathPrefix: '/',
        ca: Buffer.from('ca.pem bytes\n'), cert: Buffer.from('cert.pem bytes\n'), key: Buffer.from('key.pem bytes\n'),
      },
    ],
    [
      'ssh with an agent',
      { host: 'ssh://me@box', protocol: 'ssh', hostname: 'box', port: 22, username: 'me', sshAgent: '/tmp/agent.sock' },
      { host: 'box', port: 22, protocol: 'ssh', username: 'me', pathPrefix: '/', sshOptions: { agent: '/tmp/agent.sock' } },
    ],
  ];
  for (const [name, endpoint, options] of cases) {
    it(`${name}: the fields docker-modem's constructor sets in a clean environment, and no other`, () => {
      const real = defined(constructed({ version: 'v1.41', ...options }));
      const ours = defined(modemFields(endpoint));
      // docker-modem copies sshOptions.agentForward from its options (undefined here): compare what is set.
      real.sshOptions = defined(real.sshOptions as Record<string, unknown>);
      assert.deepEqual(ours, real);
    });
  }

  it('the environment never decides: DOCKER_HOST, DOCKER_CERT_PATH (without its files) and DOCKER_TLS_VERIFY are not read', () => {
    const script = `
      import { dockerFor } from './dist/adapters/dockerode-loader.js';
      const d = await dockerFor({ host: 'unix:///run/nowhere.sock', socketPath: '/run/nowhere.sock' });
      console.log(JSON.stringify({ socketPath: d.modem.socketPath, host: d.modem.host ?? null, protocol: d.modem.protocol, ca: d.modem.ca ?? null }));`;
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, DOCKER_HOST: 'tcp://203.0.113.9:2376', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: '/nonexistent/certs' },
    });
    assert.equal(res.status, 0, res.stderr);
    assert.deepEqual(JSON.parse(res.stdout), { socketPath: '/run/nowhere.sock', host: null, protocol: 'http', ca: null });
  });

  it('BuildKit (gRPC, protobuf), the tar stack, readable-stream and ssh2 stay unloaded until used; ssh2 then loads and works', () => {
    const script = `
      import { createRequire } from 'node:module';
      import { types } from 'node:util';
      import { dockerFor } from './dist/adapters/dockerode-loader.js';
      const req = createRequire(import.meta.url);
      // A package counts as loaded when one of its files is in the require cache with real exports (a stand-in's
      // exports are a proxy, told apart without touching it).
      const loaded = () => Object.entries(req.cache)
        .filter(([f, m]) => /node_modules\\/(@grpc|protobufjs|tar-fs|ssh2|@balena|readable-stream)\\//.test(f) && !types.isProxy(m.exports))
        .map(([f]) => f.match(/node_modules\\/((@[^/]+\\/)?[^/]+)\\//)[1]);
      const d = await dockerFor({ host: 'unix:///run/nowhere.sock', socketPath: '/run/nowhere.sock' });
      const before = [...new Set(loaded())].sort();
      // What an ssh:// engine does on its first request: docker-modem's ssh transport makes an ssh2 Client.
      const ssh = req(req.resolve('docker-modem/lib/ssh.js', { paths: [req.resolve('dockerode')] }));
      const agent = ssh({ host: '127.0.0.1', port: 1 });
      const after = [...new Set(loaded())].sort();
      console.log(JSON.stringify({ before, after, docker: typeof d.getContainer, agent: typeof agent.createConnection }));`;
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH } });
    assert.equal(res.status, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { before: string[]; after: string[]; docker: string; agent: string };
    assert.deepEqual(out.before, []);
    assert.deepEqual(out.after, ['ssh2']);
    assert.equal(out.docker, 'function');
    assert.equal(out.agent, 'function');
  });
});
