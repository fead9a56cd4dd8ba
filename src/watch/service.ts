/**
 * The `watch` service: one watcher per engine, a shared report, and a graceful stop (no new work at once, requests
 * still in flight aborted after a grace period).
 */
import type { EngineClient } from '../adapters/engine.js';
import { EngineWatcher, type WatchEvent, type WatchPolicy, type WatcherDeps } from './engine-watcher.js';

/** How long requests in flight may finish after a stop is asked for. */
export const STOP_GRACE_MS = 4000;

export class WatchService {
  readonly watchers: EngineWatcher[];
  private readonly stopCtl = new AbortController();
  private readonly hardCtl = new AbortController();
  private running: Promise<void> | null = null;

  constructor(
    engines: EngineClient[],
    policy: WatchPolicy,
    report: (ev: WatchEvent) => void,
    deps: WatcherDeps = {},
    private readonly graceMs = STOP_GRACE_MS,
  ) {
    this.watchers = engines.map((e) => new EngineWatcher(e, policy, report, this.hardCtl.signal, deps));
  }

  /** Starts every watcher; resolves once all have stopped. */
  run(): Promise<void> {
    this.running ??= Promise.all(this.watchers.map((w) => w.run(this.stopCtl.signal))).then(() => undefined);
    return this.running;
  }

  /** True while every engine is connected. */
  get healthy(): boolean {
    return this.watchers.every((w) => w.state === 'connected');
  }

  get tracked(): number {
    return this.watchers.reduce((n, w) => n + w.tracked, 0);
  }

  /** Stops taking work; what is in flight may finish within the grace period, then it is aborted. */
  async stop(): Promise<void> {
    this.stopCtl.abort();
    const hard = setTimeout(() => this.hardCtl.abort(new Error('stopping')), this.graceMs);
    try {
      await this.run();
    } finally {
      clearTimeout(hard);
      this.hardCtl.abort(new Error('stopped'));
    }
  }
}
