'use strict';
// Build step: V8's code cache for the CLI proper (dist/cli/main.bundle.cjs, scripts/build-cli-bundle.cjs), saved to
// dist/cli/main.bundle.cjs.cache for bin/ (`loadCli`). The bundle is compiled and run in a child process, through the
// sweep a cron job and a shell run every day, as dry runs (`reap --dry-run`, `reap --dry-run --json`, `list`) against
// a small stand-in engine on a socket of its own (a few exited containers), with a temporary home, HOME and TMPDIR:
// nothing is removed or written anywhere else. The functions those runs compiled are in the cache too; a sweep's
// removals are not (a dry run removes nothing), and are compiled at their first call as before. The cache is then
// checked in a fresh process, as bin/ loads it.
//
// A sweep sets V8 flags (src/cli/heap.ts), and V8 rejects a cache made under other flags than the ones a process
// starts with: the child sets them back to V8's defaults before it saves the cache. If the fresh process still
// rejects it (another V8, other defaults), the cache is made again without the warm-up, right after compiling, which
// holds the bundle's top level only. No cache at all is no harm: bin/ compiles the bundle as usual.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const v8 = require('node:v8');
const { loadCli, DIST } = require('../bin/hermes-janitor.js');

const CACHE = path.join(DIST, 'cli', 'main.bundle.cjs.cache');
/** V8's defaults of the flags src/cli/heap.ts sets (node --v8-options). */
const V8_DEFAULTS = ['--heap-growing-percent=0', '--semi-space-growth-factor=2'];
const PROFILE = 'build-cache';

/** A stand-in engine (Docker Engine API 1.41): `n` exited containers of PROFILE (a removal is answered, never asked). */
function standInEngine(socket, n) {
  const finished = new Date(Date.now() - 86_400_000).toISOString();
  const ids = new Set(Array.from({ length: n }, (_, i) => i.toString(16).padStart(64, '0')));
  const row = (id) => ({
    Id: id,
    Names: [`/hermes-${id.slice(-8)}`],
    Image: 'busybox',
    State: 'exited',
    Status: 'Exited (0) 1 day ago',
    Labels: { 'hermes-agent': '1', 'hermes-profile': PROFILE, 'hermes-task-id': id.slice(-8) },
    Mounts: [],
  });
  const inspect = (id) => ({
    Id: id,
    Name: `/hermes-${id.slice(-8)}`,
    Created: finished,
    State: { Status: 'exited', Running: false, Paused: false, Restarting: false, ExitCode: 0, StartedAt: finished, FinishedAt: finished },
    Config: { Labels: row(id).Labels, Image: 'busybox' },
    HostConfig: { Init: true },
    Mounts: [],
  });
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://engine');
    const p = url.pathname.replace(/^\/v[\d.]+/, '');
    const send = (status, body) => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'Api-Version': '1.41' });
      res.end(body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body));
    };
    const id = /^\/containers\/([0-9a-f]{64})(\/json)?$/.exec(p)?.[1];
    if (p === '/_ping') return send(200, 'OK');
    if (p === '/version') return send(200, { ApiVersion: '1.41', Version: '20.10.24', MinAPIVersion: '1.12', Os: 'linux' });
    if (p === '/containers/json') return send(200, [...ids].map(row));
    if (id && !ids.has(id)) return send(404, { message: `No such container: ${id}` });
    if (id && req.method === 'GET') return send(200, inspect(id));
    if (id && req.method === 'DELETE') return send(204);
    return send(404, { message: 'page not found' });
  });
  return new Promise((resolve) => server.listen(socket, () => resolve(server)));
}

/** The child: compiles the bundle, runs the forms, saves the cache with V8's flags as a process starts with them. */
async function warm(dir) {
  const socket = path.join(dir, 'engine.sock');
  const server = await standInEngine(socket, 4);
  const { exports: cli, script } = loadCli(true);
  const common = ['--host', `unix://${socket}`, '--home', dir, '--profile', PROFILE, '--timeout', '0'];
  for (const argv of [
    ['reap', '--dry-run', '--quiet', ...common],
    ['reap', '--dry-run', '--json', ...common],
    ['list', ...common],
  ])
    await cli.main(argv, undefined, { fastPathTried: true });
  server.close();
  for (const flag of V8_DEFAULTS) v8.setFlagsFromString(flag);
  fs.writeFileSync(CACHE, script.createCachedData());
}

/**
 * The environment of the warm-up and of the check: PATH and the temporary home only. Nothing of the build's own
 * (DOCKER_HOST, HERMES_JANITOR_METRICS_FILE, ...) reaches the runs, and no NODE_OPTIONS: V8 flags given there would be
 * in the cache's flags and make V8 reject it in a plain `node` start.
 */
const cleanEnv = (dir) => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, HERMES_HOME: dir, TMPDIR: dir });

/** Whether a fresh process takes the cache (as bin/ loads it). */
function accepted(dir) {
  const probe = `const { loadCli } = require(${JSON.stringify(require.resolve('../bin/hermes-janitor.js'))}); process.exit(loadCli().script.cachedDataRejected ? 1 : 0);`;
  return spawnSync(process.execPath, ['-e', probe], { stdio: 'ignore', env: cleanEnv(dir) }).status === 0;
}

if (process.argv[2] === '--warm') {
  warm(process.argv[3]).catch((err) => {
    process.stderr.write(`${(err && err.stack) || err}\n`);
    process.exit(1);
  });
} else {
  fs.rmSync(CACHE, { force: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hj-cli-cache-'));
  try {
    const r = spawnSync(process.execPath, [__filename, '--warm', dir], { stdio: ['ignore', 'ignore', 'pipe'], env: cleanEnv(dir), encoding: 'utf8' });
    if (r.status !== 0) process.stderr.write(`cli-cache: the warm-up failed (${(r.error && r.error.message) || r.stderr}); caching the top level only\n`);
    if (r.status !== 0 || !accepted(dir)) {
      const { script } = loadCli(true);
      fs.writeFileSync(CACHE, script.createCachedData());
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
