/** `--json`: exactly one JSON document on stdout, whatever happened (`reap`; `watch` refuses `--json`). */
import type { Context } from '../../context.js';
import { writeJson } from '../shared.js';
import type { Notice, ReapReport, Reporter } from './types.js';

/**
 * The arrays of a reap's document, empty, for a run that did nothing (skipped, detached, disabled, locked): the same
 * keys as a run's (`jq '.removed[]'` reads every document alike).
 */
const NOTHING_DONE = { removed: [], stopped: [], kept: [], failed: [], reclaimedBytes: 0 } as const;

export class JsonReporter implements Reporter {
  constructor(private readonly ctx: Context) {}

  async sweepStarting(): Promise<void> {}

  sweepEvent(): void {}

  notice(n: Notice): void {
    switch (n.kind) {
      case 'skipped-fresh':
        return writeJson(this.ctx, { skipped: 'fresh', oncePerSeconds: n.oncePerSeconds, ...NOTHING_DONE, hosts: n.hosts });
      case 'background':
        return writeJson(this.ctx, { background: true, pid: n.pid, log: n.log, ...NOTHING_DONE, hosts: [] });
      case 'disabled':
        return writeJson(this.ctx, { disabled: true, reason: n.reason, ...NOTHING_DONE, hosts: [] });
      case 'locked':
        return writeJson(this.ctx, { skipped: 'locked', ...(n.timedOut ? { timedOut: true } : {}), holder: n.holder, ...NOTHING_DONE, hosts: n.hosts });
      case 'timed-out':
        return writeJson(this.ctx, { timedOut: true, endedAtDeadline: n.phase, ...NOTHING_DONE, hosts: n.hosts });
      case 'metrics':
      case 'settings':
      case 'shutdown':
      case 'started':
      case 'stopping':
      case 'waiting-for-lock':
      case 'untrusted-setting': // in the document (`untrustedSettings`)
        return; // watch's notices (watch has no --json) and the lock wait: not part of the one JSON document
    }
  }

  async reapResult(r: ReapReport): Promise<void> {
    // The sweep passes' objects are always there (after the containers), the others' when they ran (after the engines).
    const of = (kind: 'sweep' | 'run') => Object.fromEntries(r.passes.filter((p) => p.pass.kind === kind).map((p) => [p.pass.name, p.result]));
    writeJson(this.ctx, {
      dryRun: r.dryRun,
      asOf: r.asOf.toISOString(),
      thresholdSeconds: r.thresholdSeconds,
      profile: r.profile,
      stopIdle: r.stopIdle,
      idleAfterSeconds: r.idleAfterSeconds,
      ...(r.perProfile ?? {}),
      removed: r.removed,
      stopped: r.stopped,
      kept: r.kept,
      failed: r.failed,
      ...of('sweep'),
      hosts: r.hosts,
      timedOut: r.timedOut,
      ...(r.endedAtDeadline ? { endedAtDeadline: r.endedAtDeadline } : {}),
      ...of('run'),
      ...(r.noEngine ? { noEngine: r.noEngine } : {}),
      reclaimedBytes: r.reclaimed?.total ?? 0,
      ...(r.reclaimed ? { reclaimed: r.reclaimed } : {}),
      ...(r.planOut ? { planOut: r.planOut } : {}),
      ...(r.warnings.length ? { warnings: r.warnings } : {}),
      ...(r.untrustedSettings?.length ? { untrustedSettings: r.untrustedSettings } : {}),
    });
  }

  watchEvent(): void {}

  passRun(): void {}

  passNotice(): void {}

  failOpen(): void {}
}
