/**
 * Asks a `watch`'s `/healthz` (its `--metrics-listen` address, as its record names it), for `status`: one GET, bounded
 * in time, no redirect followed, the answer's status only. An address that listens on every interface (`0.0.0.0`,
 * `[::]`) is asked on the loopback.
 */
import http from 'node:http';
import { errorMessage } from '../errors.js';

/** What `/healthz` answered: its HTTP status (200: every engine connected, 503: not), or why there was no answer. */
export interface HealthzAnswer {
  url: string;
  status: number | null;
  error: string | null;
}

/** `base` (`http://127.0.0.1:9464`) made the URL of its `/healthz`, the loopback for an every-address listener. */
export function healthzUrl(base: string): string | null {
  let u: URL;
  try {
    u = new URL(base);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:') return null;
  if (u.hostname === '0.0.0.0') u.hostname = '127.0.0.1';
  if (u.hostname === '[::]') u.hostname = '[::1]';
  u.pathname = '/healthz';
  u.search = '';
  u.hash = '';
  return u.toString();
}

export function probeHealthz(base: string, timeoutMs: number, signal?: AbortSignal): Promise<HealthzAnswer> {
  const url = healthzUrl(base);
  if (url === null) return Promise.resolve({ url: base, status: null, error: 'not an http:// address' });
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: timeoutMs, ...(signal ? { signal } : {}) }, (res) => {
      res.resume();
      resolve({ url, status: res.statusCode ?? null, error: null });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)));
    req.on('error', (err) => resolve({ url, status: null, error: (err as NodeJS.ErrnoException).code ?? errorMessage(err) }));
  });
}
