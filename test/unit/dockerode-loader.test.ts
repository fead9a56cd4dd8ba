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
    [
      'tcp',
      { host: 'tcp://10.0.0.5:2375', protocol: 'http', hostname: '10.0.0.5', port: 2375 },
      { host: '10.0.0.5', port: 2375, protocol: 'http', pathPrefix: '/' },
    ],
    [
      'tcp with TLS',
      { host: 'tcp://10.0.0.5:2376', protocol: 'https', hostname: '10.0.0.5', port: 2376, tlsDir: tls, tlsVerify: true },
      {
        host: '10.0.0.5',
        port: 2376,
        protocol: 'https',
        pathPrefix: '/',
        ca: Buffer.from('ca.pem bytes\n'),
        cert: Buffer.from('cert.pem bytes\n'),
        key: Buffer.from('key.pem bytes\n'),
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
    const script = [
      '',
      `      import { dockerFor } from './dist/adapters/dockerode-loader.js';`,
      `      const d = await dockerFor({ host: 'unix:///run/nowhere.sock', socketPath: '/run/nowhere.sock' });`,
      `      console.log(JSON.stringify({ socketPath: d.modem.socketPath, host: d.modem.host ?? null, protocol: d.modem.protocol, ca: d.modem.ca ?? null }));`,
    ].join('\n');
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, DOCKER_HOST: 'tcp://203.0.113.9:2376', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: '/nonexistent/certs' },
    });
    assert.equal(res.status, 0, res.stderr);
    assert.deepEqual(JSON.parse(res.stdout), { socketPath: '/run/nowhere.sock', host: null, protocol: 'http', ca: null });
  });

  it('BuildKit (gRPC, protobuf), the tar stack, readable-stream and ssh2 stay unloaded until used; an ssh:// engine then loads ssh2 through dockerode', () => {
    const script = [
      '',
      `      import { createRequire } from 'node:module';`,
      `      import { dockerFor } from './dist/adapters/dockerode-loader.js';`,
      `      const req = createRequire(import.meta.url);`,
      `      const loaded = () => [...new Set(Object.keys(req.cache)`,
      `        .filter((f) => /node_modules\\/(@grpc|protobufjs|tar-fs|ssh2|@balena|readable-stream|dockerode|docker-modem)\\//.test(f))`,
      `        .map((f) => f.match(/node_modules\\/((@[^/]+\\/)?[^/]+)\\//)[1]))].sort();`,
      `      // Port 1 on loopback refuses: the request gets as far as ssh2's Client connecting.`,
      `      const d = await dockerFor({ host: 'ssh://me@127.0.0.1:1', protocol: 'ssh', hostname: '127.0.0.1', port: 1, username: 'me' });`,
      `      const before = loaded();`,
      `      const err = await d.ping().then(() => null, (e) => e);`,
      `      console.log(JSON.stringify({ before, after: loaded(), code: err && err.code }));`,
    ].join('\n');
    const res = spawnSync(process.execPath, ['--no-deprecation', '--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });
    assert.equal(res.status, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { before: string[]; after: string[]; code: string };
    // Nothing of dockerode's is left in the process-wide cache either: the library's dockerode is its own copy.
    assert.deepEqual(out.before, []);
    assert.deepEqual(out.after, ['ssh2']);
    assert.equal(out.code, 'ECONNREFUSED');
  });

  it('an image build still works through the deferred tar stack and .dockerignore (the build context reaches the engine)', () => {
    const script = [
      '',
      `      import fs from 'node:fs';`,
      `      import http from 'node:http';`,
      `      import zlib from 'node:zlib';`,
      `      import { dockerFor } from './dist/adapters/dockerode-loader.js';`,
      `      let body;`,
      `      const srv = http.createServer((rq, rs) => {`,
      `        const chunks = [];`,
      `        rq.on('data', (c) => chunks.push(c));`,
      `        rq.on('end', () => { body = { url: rq.url, tar: zlib.gunzipSync(Buffer.concat(chunks)) }; rs.end('{"stream":"built"}\\n'); });`,
      `      });`,
      `      await new Promise((r) => srv.listen(0, '127.0.0.1', r));`,
      `      const dir = fs.mkdtempSync(process.env.TMP_BASE + '/hj-build-');`,
      `      fs.writeFileSync(dir + '/Dockerfile', 'FROM scratch\\n');`,
      `      fs.writeFileSync(dir + '/.dockerignore', 'secret.txt\\n');`,
      `      fs.writeFileSync(dir + '/secret.txt', 'x');`,
      `      const d = await dockerFor({ host: 'tcp://127.0.0.1', protocol: 'http', hostname: '127.0.0.1', port: srv.address().port });`,
      `      const s = await d.buildImage({ context: dir, src: ['Dockerfile', 'secret.txt'] }, { t: 'hj-lazy' });`,
      `      s.resume();`,
      `      await new Promise((r) => s.on('end', r));`,
      `      srv.close();`,
      `      fs.rmSync(dir, { recursive: true });`,
      `      const names = [];`,
      `      for (let off = 0; off + 512 <= body.tar.length; ) {`,
      `        const name = body.tar.subarray(off, off + 100).toString().replace(/\\0.*$/s, '');`,
      `        if (!name) break;`,
      `        const size = parseInt(body.tar.subarray(off + 124, off + 136).toString().replace(/\\0/g, '').trim() || '0', 8);`,
      `        names.push(name);`,
      `        off += 512 + Math.ceil(size / 512) * 512;`,
      `      }`,
      `      console.log(JSON.stringify({ url: body.url, names }));`,
    ].join('\n');
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, TMP_BASE: os.tmpdir() },
    });
    assert.equal(res.status, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { url: string; names: string[] };
    assert.match(out.url, /\/build\?t=hj-lazy$/);
    assert.deepEqual(out.names, ['Dockerfile']);
  });

  it("docker-modem's debug line: with DEBUG=modem written as before; without, its request options are never formatted, and the host's util is its own", () => {
    const script = [
      '',
      `      import fs from 'node:fs';`,
      `      import http from 'node:http';`,
      `      import { createRequire } from 'node:module';`,
      `      import util from 'node:util';`,
      `      const real = util.inspect;`,
      `      let deep = 0;`,
      `      const spy = (v, o) => { if (o && o.showHidden && o.depth === null) deep++; return real(v, o); };`,
      `      Object.setPrototypeOf(spy, real);`,
      `      util.inspect = spy;`,
      `      const { dockerFor } = await import('./dist/adapters/dockerode-loader.js');`,
      `      const sock = process.env.TMP_BASE + '/hj-modem-debug-' + process.pid + '.sock';`,
      `      const srv = http.createServer((q, s) => s.end('OK'));`,
      `      await new Promise((r) => srv.listen(sock, r));`,
      `      const d = await dockerFor({ host: 'unix://' + sock, socketPath: sock });`,
      `      const pong = String(await d.ping());`,
      `      srv.close();`,
      `      fs.rmSync(sock, { force: true });`,
      `      const req = createRequire(import.meta.url);`,
      `      console.log(JSON.stringify({ pong, deep, cached: 'util' in req.cache, own: req('util').inspect === spy }));`,
    ].join('\n');
    const run = (env: Record<string, string>) => {
      const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { PATH: process.env.PATH, TMP_BASE: os.tmpdir(), ...env },
      });
      assert.equal(res.status, 0, res.stderr);
      return { out: JSON.parse(res.stdout) as { pong: string; deep: number; cached: boolean; own: boolean }, stderr: res.stderr };
    };
    const off = run({});
    assert.deepEqual(off.out, { pong: 'OK', deep: 0, cached: false, own: true });
    assert.equal(off.stderr, '');
    const on = run({ DEBUG: 'modem' });
    assert.equal(on.out.pong, 'OK');
    assert.ok(on.out.deep >= 1, 'the request options are formatted for the debug line');
    assert.match(on.stderr, /modem Sending: \{[\s\S]*path: '\/v1\.41\/_ping'/);
  });
});
