// The least a Node client can do, for the benchmarks' floors: one list of a profile's containers, then one request
// for each, `--concurrency` at a time, plain `http` over the engine's socket with keep-alive.
//   stop:   the running ones, `POST /containers/{id}/stop?t=10` (50 at a time by default, as the Docker CLI);
//           with `--inspect`, an inspect right before each stop (`npm run bench:stop-floor`)
//   remove: the exited ones, `DELETE /containers/{id}?v=1` (`npm run bench`, at reap's concurrency)
// Usage: node bench/floor-client.mjs stop|remove <profile> [--inspect] [--concurrency N]
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { inspect: { type: 'boolean' }, concurrency: { type: 'string' } } });
const [mode, profile] = positionals;
if (!['stop', 'remove'].includes(mode) || !profile) throw new Error('usage: floor-client.mjs stop|remove <profile> [--inspect] [--concurrency N]');
const concurrency = Number(values.concurrency ?? (mode === 'stop' ? 50 : 8));
const socketPath = process.env.HERMES_JANITOR_BENCH_SOCKET ?? '/var/run/docker.sock';
const agent = new http.Agent({ keepAlive: true });
const request = (method, path) =>
  new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path, method, agent }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => (res.statusCode < 400 ? resolve(Buffer.concat(parts).toString()) : reject(new Error(`${method} ${path}: HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
const status = mode === 'stop' ? 'running' : 'exited';
const filters = encodeURIComponent(JSON.stringify({ label: ['hermes-agent=1', `hermes-profile=${profile}`], status: [status] }));
const rows = JSON.parse(await request('GET', `/v1.41/containers/json?all=1&filters=${filters}`));
let next = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < rows.length) {
      const id = rows[next++].Id;
      if (values.inspect) await request('GET', `/v1.41/containers/${id}/json`);
      if (mode === 'stop') await request('POST', `/v1.41/containers/${id}/stop?t=10`);
      else await request('DELETE', `/v1.41/containers/${id}?v=1`);
    }
  }),
);
agent.destroy(); // keep-alive sockets would otherwise hold the process open until the engine closes them
