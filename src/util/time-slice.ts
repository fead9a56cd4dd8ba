/**
 * Synchronous work in slices: a pass that reads thousands of files with the synchronous fs calls gives the event loop
 * a turn every few milliseconds (`watch`'s /healthz, its deadline timers and engine stream answer meanwhile), and
 * notices a run's abort (`--timeout`: an AbortSignal's timer fires only when the loop gets a turn).
 */
import { performance } from 'node:perf_hooks';
import { setImmediate as turn } from 'node:timers/promises';

export class TimeSlice {
  private startedAt = performance.now();

  constructor(
    private readonly signal?: AbortSignal | undefined,
    private readonly sliceMs = 8,
  ) {}

  /** True once the run is aborted. */
  get aborted(): boolean {
    return this.signal?.aborted ?? false;
  }

  /** Gives the event loop a turn once a slice of work has passed; true when the run is aborted (stop there). */
  async pause(): Promise<boolean> {
    if (performance.now() - this.startedAt >= this.sliceMs) {
      await turn();
      this.startedAt = performance.now();
    }
    return this.aborted;
  }
}
