/**
 * A docker context's `SkipTLSVerify: true` is honoured as the docker CLI honours it: TLS to the engine without
 * verifying its certificate, the context's client certificate still sent; with no TLS material at all, TLS still.
 * Without it, the engine's certificate is verified against the context's ca.pem (exit 3 when it does not match).
 * Through the built CLI, against an https front (self-signed certificate, asks for a client certificate) to the
 * engine simulator. Certificates are made here with openssl.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';

const NO_OPENSSL = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0 ? false : 'openssl is not installed (it makes the test certificates)';

/** A self-signed certificate and its key (P-256), for `cn` (and 127.0.0.1). */
function selfSigned(dir: string, name: string, cn: string): { cert: string; key: string } {
  const cert = path.join(dir, `${name}.pem`);
  const key = path.join(dir, `${name}-key.pem`);
  const res = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-keyout',
      key,
      '-out',
      cert,
      '-subj',
      `/CN=${cn}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { encoding: 'utf8' },
  );
  assert.equal(res.status, 0, res.stderr);
  return { cert, key };
}

describe('docker context SkipTLSVerify', { skip: skipUnless(NO_OPENSSL) }, () => {
  let dir: string;
  let sim: EngineSimulator;
  let front: https.Server;
  let port: number;
  let client: { cert: string; key: string };
  const clientNames: Array<string | null> = [];
  const profile = `tls-${Math.random().toString(36).slice(2, 8)}`;

  before(async () => {
    failUnderCi(NO_OPENSSL);
    dir = mkdtempSync(path.join(os.tmpdir(), 'hj-ctx-tls-'));
    const server = selfSigned(dir, 'server', 'hj-engine');
    client = selfSigned(dir, 'client', 'hj-client');
    sim = await EngineSimulator.start({ bulk: [{ count: 3, labels: { 'hermes-agent': '1', 'hermes-profile': profile } }] });
    const socketPath = sim.host.replace(/^unix:\/\//, '');
    front = https.createServer({ cert: readFileSync(server.cert), key: readFileSync(server.key), requestCert: true, rejectUnauthorized: false }, (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      clientNames.push(peer && peer.subject ? String(peer.subject.CN) : null);
      const up = http.request({ socketPath, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    port = (front.address() as AddressInfo).port;
  });
  after(async () => {
    if (front) {
      front.closeAllConnections();
      await new Promise((r) => front.close(r));
    }
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A context named `name` for the https front; `tls`: its ca.pem (not the engine's: the client's own) and client pair. */
  function context(name: string, skip: boolean, tls: boolean): string {
    const cfg = path.join(dir, `docker-config-${name}`);
    const digest = createHash('sha256').update(name).digest('hex');
    const meta = path.join(cfg, 'contexts', 'meta', digest);
    mkdirSync(meta, { recursive: true });
    writeFileSync(
      path.join(meta, 'meta.json'),
      JSON.stringify({ Name: name, Endpoints: { docker: { Host: `tcp://127.0.0.1:${port}`, SkipTLSVerify: skip } } }),
    );
    if (tls) {
      const tlsDir = path.join(cfg, 'contexts', 'tls', digest, 'docker');
      mkdirSync(tlsDir, { recursive: true });
      writeFileSync(path.join(tlsDir, 'ca.pem'), readFileSync(client.cert));
      writeFileSync(path.join(tlsDir, 'cert.pem'), readFileSync(client.cert));
      writeFileSync(path.join(tlsDir, 'key.pem'), readFileSync(client.key));
    }
    return cfg;
  }

  const list = (name: string, cfg: string) =>
    runCli(['list', '--json', '--profile', profile, '--context', name], { env: { DOCKER_CONFIG: cfg, DOCKER_HOST: undefined } });

  it('SkipTLSVerify: true with TLS material: TLS without verifying the engine, the client certificate sent', async () => {
    clientNames.length = 0;
    const res = await list('skip-tls', context('skip-tls', true, true));
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { hosts: Array<{ host: string; reachable: boolean }>; containers: unknown[] };
    assert.deepEqual(
      out.hosts.map((h) => h.reachable),
      [true],
    );
    assert.equal(out.containers.length, 3);
    assert.ok(clientNames.length > 0, 'the engine saw no request over TLS');
    assert.deepEqual([...new Set(clientNames)], ['hj-client']);
  });

  it('SkipTLSVerify: true and no TLS material: still TLS (as the docker CLI), unverified', async () => {
    clientNames.length = 0;
    const res = await list('skip-bare', context('skip-bare', true, false));
    assert.equal(res.code, 0, res.stderr);
    assert.equal((JSON.parse(res.stdout) as { containers: unknown[] }).containers.length, 3);
    assert.ok(clientNames.length > 0);
    assert.deepEqual([...new Set(clientNames)], [null]);
  });

  it('SkipTLSVerify: false: the engine certificate is verified against the context ca.pem: unreachable, exit 3', async () => {
    clientNames.length = 0;
    const res = await list('verify-tls', context('verify-tls', false, true));
    assert.equal(res.code, 3, res.stderr);
    const out = JSON.parse(res.stdout) as { hosts: Array<{ reachable: boolean; error?: string }> };
    assert.equal(out.hosts[0]?.reachable, false);
    assert.match(out.hosts[0]?.error ?? '', /SELF_SIGNED_CERT/);
    assert.deepEqual(clientNames, [], 'a request went through an unverified engine');
  });
});
