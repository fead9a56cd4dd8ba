// The least a Node client can do to stop a profile's running sandboxes, for `npm run bench:stop-floor`: one list,
// then `POST /containers/{id}/stop?t=10` for each, 50 at a time (as the Docker CLI), plain `http` over the engine's
// socket with keep-alive; with `--inspect`, an inspect right before each stop.
// Usage: node bench/stop-client.mjs <profile> [--inspect]
import http from 'node:http';

const [profile, flag] = process.argv.slice(2);
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
const filters = encodeURIComponent(JSON.stringify({ label: [`hermes-profile=${profile}`], status: ['running'] }));
const rows = JSON.parse(await request('GET', `/v1.41/containers/json?filters=${filters}`));
let next = 0;
await Promise.all(
  Array.from({ length: 50 }, async () => {
    while (next < rows.length) {
      const id = rows[next++].Id;
      if (flag === '--inspect') await request('GET', `/v1.41/containers/${id}/json`);
      await request('POST', `/v1.41/containers/${id}/stop?t=10`);
    }
  }),
);
