/** The run-wide state of a sweep that ends it early: the run's abort, or the engine going away. */
import { EngineUnreachableError } from '../errors.js';

/** Why a sweep stopped before its end. */
export type Interruption = { kind: 'timeout' } | { kind: 'engine'; error: string };

/** Tracks the first engine failure or the run's abort; stops new work once either happens. */
export class RunGuard {
  interrupted: Interruption | null = null;
  constructor(private readonly signal: AbortSignal | undefined) {}
  get stopped(): boolean {
    if (!this.interrupted && this.signal?.aborted) this.interrupted = { kind: 'timeout' };
    return this.interrupted !== null;
  }
  /** Returns true when the error ended the run (engine gone or run aborted), false when it is per-container. */
  absorb(err: unknown): boolean {
    if (this.signal?.aborted) {
      this.interrupted ??= { kind: 'timeout' };
      return true;
    }
    if (err instanceof EngineUnreachableError) {
      this.interrupted ??= { kind: 'engine', error: err.message };
      return true;
    }
    return false;
  }
}
