/**
 * `watch` under a supervisor (#47): the command's work runs in a Worker (watch-worker.ts), and this main thread
 * keeps what must outlive a run that does not end by its deadline. Each run the work bounds with `--timeout` (a full
 * sweep, a deadline check, a pass's run) tells this thread when it began and when it must end; past that deadline
 * and a grace (HARD_STOP_GRACE_MS, as a one-shot run's), whatever the work is doing (a synchronous loop included),
 * this thread ends the worker, releases the locks it held (file-lock.ts `releaseRecordedLock`: compare-and-delete,
 * as their holder would have), says one line, and starts the work again: a full sweep, as after a reconnect. The
 * metrics endpoint and `/healthz` are served here, so they answer throughout (`/healthz` from the engines' state
 * the work last told; `/metrics` from the work, within a bound, else 503). Signals come here first and go to the
 * work; the work's exit code is the process's.
 *
 * Cheap on purpose: this thread loads node:worker_threads and, with `--metrics-listen`, node:http and the endpoint;
 * never the command's own modules (the work loads those), nor file-lock.ts until a worker has to be ended.
 */
import { Worker, isMainThread } from 'node:worker_threads';
import type { Context } from '../context.js';
import { HARD_STOP_GRACE_MS } from './deadline-protocol.js';
import type { ToSupervisor, ToWork, WatchWorkerData } from './watch-link.js';
import { escapeControls } from '../util/escape-controls.js';

/** How long a scrape waits for the work's answer (a run being ended at its deadline does not answer). */
const SCRAPE_MS = 5000;
/** The signals the work handles (SIGTERM, SIGINT: stop; SIGHUP: read hermes' settings again). */
const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/** Whether this process runs `watch` under a supervisor: the CLI's own process, on its main thread. */
export function supervises(ctx: Pick<Context, 'ownsProcess'>): boolean {
  return ctx.ownsProcess === true && isMainThread;
}

interface Endpoint {
  url: string;
  close(): Promise<void>;
}

class WatchSupervisor {
  private worker: Worker | null = null;
  private restarts = 0;
  /** The locks the work holds (by path, with the record it wrote). */
  private readonly locks = new Map<string, string>();
  /** Its runs with a deadline, and their timers. */
  private readonly runs = new Map<number, { label: string; timer: NodeJS.Timeout }>();
  private endpoint: Endpoint | null = null;
  private listening: Promise<Endpoint> | null = null;
  private scrapes = new Map<number, (m: Extract<ToSupervisor, { t: 'scraped' }>) => void>();
  private nextScrape = 0;
  private health = false;
  /** The code the work said it exits with. */
  private code: number | null = null;
  private ndjson: boolean;
  private timeoutSeconds: string;
  private done!: (code: number) => void;
  readonly finished = new Promise<number>((r) => (this.done = r));

  constructor(
    private readonly argv: string[],
    private readonly ctx: Context,
  ) {
    this.ndjson = logFormatIsJson(argv);
    this.timeoutSeconds = timeoutGiven(argv) ?? '';
  }

  async start(): Promise<void> {
    const data: WatchWorkerData = { argv: this.argv, restarts: this.restarts };
    const w = new Worker(new URL('./watch-worker.js', import.meta.url), { workerData: data });
    this.worker = w;
    w.on('message', (m: ToSupervisor) => this.onMessage(w, m));
    w.on('error', (err) => {
      if (this.worker !== w) return;
      this.ctx.stderr.write(`hermes-janitor: unexpected error: ${escapeControls(String(err))}\n`);
      this.done(1);
    });
    w.on('exit', () => {
      if (this.worker !== w) return; // ended here (a run past its deadline): another is starting
      // Its code, or (ended without saying it) a failure.
      this.done(this.code ?? 1);
    });
  }

  private onMessage(w: Worker, m: ToSupervisor): void {
    if (this.worker !== w) return; // a worker being ended says nothing more
    switch (m.t) {
      case 'lock':
        if (m.held) this.locks.set(m.lockPath, m.body);
        else this.locks.delete(m.lockPath);
        return;
      case 'run': {
        const timer = setTimeout(() => void this.overdue(w, m.label), Math.max(0, m.deadlineMs - Date.now()) + HARD_STOP_GRACE_MS);
        this.runs.set(m.id, { label: m.label, timer });
        return;
      }
      case 'run-end':
        clearTimeout(this.runs.get(m.id)?.timer);
        this.runs.delete(m.id);
        return;
      case 'health':
        this.health = m.ok;
        return;
      case 'listen':
        void this.listen(m.host, m.port, m.maxConnections).then(
          ({ url, first }) => this.send({ t: 'listening', url, first }),
          (err: unknown) => this.send({ t: 'listening', error: (err as NodeJS.ErrnoException).code ?? String(err), first: true }),
        );
        return;
      case 'scraped':
        this.scrapes.get(m.id)?.(m);
        this.scrapes.delete(m.id);
        return;
      case 'exit':
        this.code = m.code; // it ends by itself once its output is written (its 'exit' event)
        return;
    }
  }

  private send(m: ToWork): void {
    this.worker?.postMessage(m);
  }

  /** A signal: to the work, which stops (SIGTERM, SIGINT) or reads its settings again (SIGHUP). */
  signal(signal: NodeJS.Signals): void {
    this.send({ t: 'signal', signal });
  }

  /** `--metrics-listen`, served here for as long as the process runs (the work asks at each of its starts). */
  private async listen(host: string | undefined, port: number, maxConnections: number): Promise<{ url: string; first: boolean }> {
    if (this.listening) return { url: (await this.listening).url, first: false };
    this.listening = (async () => {
      const { serveMetrics } = await import('../watch/metrics.js');
      const self = this; // the endpoint asks the work as it stands at each scrape
      let contentType = 'text/plain; version=0.0.4; charset=utf-8';
      const metrics = {
        get contentType() {
          return contentType;
        },
        text: () =>
          self.scrape().then((r) => {
            contentType = r.contentType;
            return r.body;
          }),
      };
      const srv = await serveMetrics(
        { host, port },
        metrics,
        () => this.health && this.worker !== null,
        () => undefined,
        maxConnections,
      );
      this.endpoint = { url: srv.url, close: srv.close };
      return this.endpoint;
    })();
    this.listening.catch(() => (this.listening = null));
    return { url: (await this.listening).url, first: true };
  }

  /** The work's metrics, or an error once SCRAPE_MS pass without its answer. */
  private scrape(): Promise<{ body: string; contentType: string }> {
    const id = ++this.nextScrape;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.scrapes.delete(id);
        reject(new Error(`watch's work did not answer within ${SCRAPE_MS / 1000} s (a run is being ended at its deadline)`));
      }, SCRAPE_MS);
      this.scrapes.set(id, (m) => {
        clearTimeout(timer);
        if (m.body !== undefined) resolve({ body: m.body, contentType: m.contentType ?? 'text/plain' });
        else reject(new Error(m.error ?? 'no metrics'));
      });
      this.send({ t: 'scrape', id });
    });
  }

  /**
   * A run past its deadline and the grace: the work is ended whatever it is doing, its locks released, one line
   * said, and the work started again.
   */
  private async overdue(w: Worker, label: string): Promise<void> {
    if (this.worker !== w) return;
    this.worker = null;
    this.health = false;
    for (const { timer } of this.runs.values()) clearTimeout(timer);
    this.runs.clear();
    await w.terminate();
    if (this.locks.size > 0) {
      const { releaseRecordedLock } = await import('../adapters/file-lock.js');
      for (const [lockPath, body] of this.locks) releaseRecordedLock(lockPath, body);
      this.locks.clear();
    }
    this.sayEnded(label);
    this.restarts++;
    await this.start();
  }

  /** The one line of a run ended at its deadline, in the log's format. */
  private sayEnded(label: string): void {
    const time = new Date().toISOString();
    const timeout = this.timeoutSeconds ? ` (--timeout ${this.timeoutSeconds})` : '';
    if (this.ndjson) {
      const fields = { time, event: 'run-ended-at-deadline', run: label, ...(this.timeoutSeconds ? { timeout: this.timeoutSeconds } : {}), restarting: true };
      this.ctx.stdout.write(`${JSON.stringify(fields)}\n`);
    } else {
      this.ctx.stderr.write(`${time} ${escapeControls(`${label} did not end by its deadline${timeout}: ended; watch starts its work again`)}\n`);
    }
  }

  async close(): Promise<void> {
    await this.endpoint?.close();
  }
}

/** `--log-format json` (or `--log-format=json`) among the arguments: the supervisor's line is an NDJSON event. */
function logFormatIsJson(argv: readonly string[]): boolean {
  return argv.some((a, i) => a === '--log-format=json' || (a === '--log-format' && argv[i + 1] === 'json'));
}

/** `--timeout` as given, for the supervisor's line. */
function timeoutGiven(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--timeout') return argv[i + 1];
    if (argv[i]!.startsWith('--timeout=')) return argv[i]!.slice('--timeout='.length);
  }
  return undefined;
}

/** Runs `watch ARGV` under its supervisor; the work's exit code. */
export async function superviseWatch(argv: string[], ctx: Context): Promise<number> {
  const sup = new WatchSupervisor(argv, ctx);
  const onSignal = (signal: NodeJS.Signals) => sup.signal(signal);
  for (const s of SIGNALS) process.on(s, onSignal);
  try {
    await sup.start();
    return await sup.finished;
  } finally {
    for (const s of SIGNALS) process.off(s, onSignal);
    await sup.close();
  }
}
