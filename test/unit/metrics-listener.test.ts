/**
 * The metrics listener of `watch --metrics-listen` (src/watch/metrics.ts), bounded against whoever can connect: at
 * most `--metrics-max-connections` connections served; past the cap, a health slot answers `/healthz` alone (anything
 * else 503), and a connection there that sends nothing is closed at once.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { describe, it } from 'node:test';
import { serveMetrics } from '../../src/watch/metrics.js';

/** One raw request on a fresh connection: the status line's code, or `closed` when the server closed it unanswered. */
async function ask(port: number, path: string): Promise<number | 'closed'> {
  const s = net.connect({ host: '127.0.0.1', port });
  await once(s, 'connect');
  s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  let got = '';
  s.on('data', (d: Buffer) => (got += d.toString('latin1')));
  await once(s, 'close').catch(() => undefined);
  const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
  return m ? Number(m[1]) : 'closed';
}

describe('metrics listener: bounded connections', () => {
  it('two idle connections fill a cap of 2: then /healthz is answered on a health slot, /metrics refused (503); an idle third is closed', async () => {
    const metrics = { contentType: 'text/plain', text: async () => 'm 1\n' } as never;
    const srv = await serveMetrics(
      { host: '127.0.0.1', port: 0 },
      metrics,
      () => true,
      () => undefined,
      2,
    );
    const port = Number(new URL(srv.url).port);
    const idle = [net.connect({ host: '127.0.0.1', port }), net.connect({ host: '127.0.0.1', port })];
    try {
      await Promise.all(idle.map((s) => once(s, 'connect')));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(await ask(port, '/healthz'), 200);
      assert.equal(await ask(port, '/metrics'), 503);
      // A third idle connection, over the cap: closed at once (it sent no request).
      const third = net.connect({ host: '127.0.0.1', port });
      const t0 = Date.now();
      await once(third, 'close');
      assert.ok(Date.now() - t0 < 2000, `closed after ${Date.now() - t0} ms`);
      // The two within the cap are still open.
      assert.deepEqual(
        idle.map((s) => s.destroyed),
        [false, false],
      );
    } finally {
      for (const s of idle) s.destroy();
      await srv.close();
    }
    // Under the cap again: /metrics is served.
    const again = await serveMetrics(
      { host: '127.0.0.1', port: 0 },
      metrics,
      () => true,
      () => undefined,
      2,
    );
    try {
      assert.equal(await ask(Number(new URL(again.url).port), '/metrics'), 200);
    } finally {
      await again.close();
    }
  });
});
