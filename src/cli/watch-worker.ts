/**
 * `watch`'s work, in the Worker its supervisor starts (watch-supervisor.ts): the command as ever (`main`), with a
 * link to the supervisor (watch-link.ts) for what must outlive a run that does not end by its deadline: the metrics
 * endpoint and `/healthz`, the locks (released by the supervisor when it ends this worker), the signals (which only
 * the main thread receives) and the exit code.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { observeLocks } from '../adapters/file-lock.js';
import { processContext } from '../context.js';
import { main } from './main.js';
import { type ToSupervisor, type ToWork, type WatchLink, type WatchWorkerData, setWatchLink } from './watch-link.js';

const toSupervisor = parentPort!;
const data = workerData as WatchWorkerData;
const send = (m: ToSupervisor) => toSupervisor.postMessage(m);

let nextRun = 0;
let scrape: (() => Promise<{ body: string; contentType: string }>) | undefined;
let listening: ((m: Extract<ToWork, { t: 'listening' }>) => void) | undefined;

const link: WatchLink = {
  restarts: data.restarts,
  listen: (host, port, maxConnections) =>
    new Promise((resolve, reject) => {
      listening = (m) => (m.url ? resolve({ url: m.url, first: m.first }) : reject(Object.assign(new Error(m.error ?? 'cannot listen'), { code: m.error })));
      send({ t: 'listen', host, port, maxConnections });
    }),
  onScrape: (answer) => void (scrape = answer),
  health: (ok) => send({ t: 'health', ok }),
  run: (label, deadlineMs) => {
    const id = ++nextRun;
    send({ t: 'run', id, label, deadlineMs });
    return () => send({ t: 'run-end', id });
  },
};

toSupervisor.on('message', (m: ToWork) => {
  switch (m.t) {
    case 'signal':
      // Signals reach the main thread only: the command's own handlers (SIGTERM, SIGINT, SIGHUP) get them here.
      process.emit(m.signal, m.signal);
      return;
    case 'listening':
      listening?.(m);
      return;
    case 'scrape':
      if (!scrape) return send({ t: 'scraped', id: m.id, error: 'not serving metrics' });
      scrape().then(
        (r) => send({ t: 'scraped', id: m.id, ...r }),
        (err: unknown) => send({ t: 'scraped', id: m.id, error: String(err) }),
      );
      return;
  }
});

setWatchLink(link);
observeLocks(({ held, lockPath, body }) => send({ t: 'lock', held, lockPath, body }));
// Its own context: the run is not ended by a watchdog of its own (the supervisor bounds each run).
const ctx = processContext(data.argv);
ctx.ownsProcess = false;
void main(data.argv, ctx, { fastPathTried: true })
  .catch((err: unknown) => {
    process.stderr.write(`hermes-janitor: unexpected error: ${String(err)}\n`);
    return 1;
  })
  .then(async (code) => {
    send({ t: 'exit', code });
    // What it wrote reaches the supervisor's stdout and stderr first; then this thread ends (handles the run left
    // open, a keep-alive socket, would keep it alive).
    await Promise.all([process.stdout, process.stderr].map((s) => new Promise((r) => s.write('', r))));
    process.exit(code);
  });
