/**
 * What a `reap` has done so far, for its report when it is ended at its deadline (cli/deadline.ts): the sweep's
 * decisions as they were made (each engine's removed, stopped, kept and failed containers, the exec trees), and each
 * pass that ran to its end. A pass or a removal under way at the deadline is not reported as done: a container is
 * listed once the engine answered its removal (the sweep's event), a pass once it returned.
 */
import type { Pass, PassResult } from '../passes/types.js';
import { addSweepEvent, emptyReapResult } from '../reaper/reap-sweep.js';
import type { ReapResult, SweepEvent } from '../reaper/sweep-types.js';
import { reclaimed } from './reclaimed.js';
import type { ReapReport } from './report/types.js';

/** The policy part of a reap's report, once the run's settings are resolved. */
export type ReapFrame = Pick<ReapReport, 'dryRun' | 'asOf' | 'thresholdSeconds' | 'profile' | 'stopIdle' | 'idleAfterSeconds' | 'failOpen' | 'timeoutSeconds'>;

export class ReapProgress {
  /** Set once the settings are resolved: before that nothing can have been done. */
  frame: ReapFrame | null = null;
  private readonly sweep: ReapResult = emptyReapResult();
  /** Every engine of the run, and whether it answered (an event of its sweep came). */
  private readonly hosts = new Map<string, boolean>();
  private readonly passes = new Map<Pass, PassResult>();

  /** The engines of the run (in order). */
  engines(hosts: readonly string[]): void {
    for (const h of hosts) if (!this.hosts.has(h)) this.hosts.set(h, false);
  }

  /** A decision of `host`'s sweep, as it was made. */
  sweepEvent(host: string, ev: SweepEvent): void {
    this.hosts.set(host, true);
    addSweepEvent(this.sweep, ev);
  }

  /** A pass that ran to its end (null: it only measured). */
  passDone(pass: Pass, result: unknown): void {
    if (result !== null) this.passes.set(pass, { pass, result });
  }

  /** The report of what was done, timed out (`endedAtDeadline`: what the run was doing), or null before the settings. */
  report(all: readonly Pass[], endedAtDeadline: string): ReapReport | null {
    if (!this.frame) return null;
    const passes: PassResult[] = [];
    for (const pass of all) {
      if (pass.kind === 'sweep' && pass.fromSweeps) passes.push({ pass, result: pass.fromSweeps([this.sweep]) });
      else if (this.passes.has(pass)) passes.push(this.passes.get(pass)!);
    }
    const hosts = [...this.hosts].map(([host, answered]) => ({
      host,
      reachable: answered,
      error: answered ? null : 'no answer before the deadline',
    }));
    const done: ReapReport = {
      ...this.frame,
      removed: this.sweep.removed,
      stopped: this.sweep.stopped,
      kept: this.sweep.kept,
      failed: this.sweep.failed,
      hosts,
      timedOut: true,
      endedAtDeadline,
      warnings: [],
      passes,
    };
    done.reclaimed = reclaimed(done);
    return done;
  }
}
