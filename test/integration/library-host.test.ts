/**
 * The library leaves its host alone: a host program (a separate node process, importing the built package by its
 * name as a user would) runs a sweep against the engine simulator, and the modules dockerode also loads (ssh2,
 * tar-fs, the BuildKit gRPC stack, .dockerignore), and dockerode and docker-modem themselves, look to it exactly as
 * they look to a fresh Node process: same exports, same types, real classes that subclass. Both orders: the library
 * first, and the host's modules first (which must then stay the very objects the host loaded). No V8 flag is set,
 * and the require cache is as it was.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { EngineSimulator } from '../helpers/engine-simulator.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MODULES = ['ssh2', 'tar-fs', '@grpc/grpc-js', '@grpc/proto-loader', '@balena/dockerignore', 'dockerode', 'docker-modem'];
const execFileP = promisify(execFile);
const OLD = '2020-01-01T00:00:00Z';

interface HostResult {
  listed: number;
  removed: number;
  cacheAdded: string[];
  cacheRemoved: string[];
  sameObjects: boolean;
  v8FlagCalls: number;
  views: unknown[];
}

/** A plain `node` (no tsx, no loader hooks), as a host application runs; asynchronous: the simulator answers it. */
async function runNode(args: string[]): Promise<string> {
  const { stdout } = await execFileP(process.execPath, args, { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH }, timeout: 60_000 });
  return stdout;
}

describe('library host: importing hermes-janitor and sweeping changes no module the host can load', () => {
  let home: string;
  let fresh: unknown[];
  before(async () => {
    home = mkdtempSync(path.join(os.tmpdir(), 'hj-libhost-'));
    fresh = JSON.parse(await runNode(['test/helpers/module-view.mjs', ...MODULES])) as unknown[];
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  for (const order of ['library-first', 'modules-first'] as const) {
    it(`${order}: each module as a fresh process sees it; the host's require cache and V8 flags untouched`, async () => {
      const profile = `libhost-${Math.random().toString(36).slice(2, 8)}`;
      const sim = await EngineSimulator.start({
        bulk: [{ count: 6, labels: { 'hermes-agent': '1', 'hermes-profile': profile }, finishedAt: OLD }],
      });
      try {
        const out = await runNode(['test/helpers/library-host.mjs', order, sim.host, path.join(home, order), profile, ...MODULES]);
        const host = JSON.parse(out) as HostResult;
        // The sweep went through dockerode to the engine.
        assert.equal(host.listed, 6);
        assert.equal(host.removed, 6);
        assert.deepEqual(host.views, fresh);
        assert.deepEqual(host.cacheAdded, [], "the library left entries in the host's require cache");
        assert.deepEqual(host.cacheRemoved, []);
        assert.equal(host.sameObjects, true);
        assert.equal(host.v8FlagCalls, 0);
      } finally {
        await sim.close();
      }
    });
  }
});
