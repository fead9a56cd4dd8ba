/**
 * What the engine commands (`reap`, `watch`) tell their reporter: the types only, in a leaf module that the reporters
 * and the commands import (the factory that picks a reporter is `reporter.ts`).
 */
import type { LockRecord } from '../../adapters/file-lock.js';
import type { UntrustedSetting } from '../../core/setting-worth.js';
import type { Reclaimed } from '../reclaimed.js';
import type { HostOutcome } from '../../reaper/run.js';
import type { Pass, PassResult } from '../../passes/types.js';
import type { FailedEntry, KeptEntry, StoppedEntry, SweepEntry, SweepEvent } from '../../reaper/sweep-types.js';
import type { WatchEvent } from '../../watch/engine-watcher.js';

/** An engine a run did not contact: whether it is reachable is not known (`reachable: null`). */
export type NamedHost = { host: string; reachable: null; error: null };

/** Something a run says that is not a container's verdict. */
export type Notice =
  /** `reap --once-per`: every stamp is fresh; nothing was done. */
  | { kind: 'skipped-fresh'; oncePerSeconds: number; hosts: NamedHost[] }
  /** `reap --background`: the run goes on in a detached process. */
  | { kind: 'background'; pid: number | null; log: string }
  /** The reaper switch is off (`what`: `nothing done`, `not watching`). */
  | { kind: 'disabled'; reason: string; what: string }
  /** `reap`: another run holds the reap lock of this home and engine (`timedOut`: `--wait` ran out). */
  | { kind: 'locked'; host: string; holder: LockRecord | null; timedOut: boolean; hosts: NamedHost[]; failOpen: boolean }
  /** `watch`: waits for the reap lock another run holds. */
  | { kind: 'waiting-for-lock'; host: string; holder: LockRecord | null }
  | { kind: 'metrics'; url: string }
  | {
      kind: 'started';
      hosts: string[];
      thresholdSeconds: number;
      profile: string | null;
      dryRun: boolean;
      stopIdle: boolean;
      idleAfterSeconds: number;
      pid: number;
      /** The thresholds differ by profile (said instead of one number). */
      perProfile?: boolean;
    }
  | { kind: 'stopping'; signal: NodeJS.Signals }
  | { kind: 'shutdown'; tracked: number }
  /**
   * `watch`: hermes' files changed (or SIGHUP): the settings that changed (`changes`, each `name: old (source) ->
   * new (source)`), or why the files were not taken (`problem`: the last good settings stay).
   */
  | { kind: 'settings'; changes: string[]; problem?: string }
  /**
   * A run ended at its deadline before it had its settings (`phase`: what it was doing): nothing was done. Once it
   * has them, the report says what was done (`ReapReport.endedAtDeadline`).
   */
  | { kind: 'timed-out'; timeoutSeconds: number; phase: string; hosts: NamedHost[]; failOpen: boolean }
  /**
   * A setting of a user who cannot act on the engine that would remove, stop or end sooner than hermes' defaults:
   * refused for the run (core/setting-worth.ts), said once, also with `--quiet`.
   */
  | { kind: 'untrusted-setting'; setting: UntrustedSetting };

/** The end of a `reap`: what it did, under which policy. */
export interface ReapReport {
  dryRun: boolean;
  asOf: Date;
  thresholdSeconds: number;
  profile: string | null;
  stopIdle: boolean;
  idleAfterSeconds: number;
  removed: SweepEntry[];
  stopped: StoppedEntry[];
  kept: KeptEntry[];
  failed: FailedEntry[];
  hosts: HostOutcome[];
  timedOut: boolean;
  /** `--timeout`, in seconds (for the "timed out" line). */
  timeoutSeconds: number;
  /**
   * Ended at the deadline by its watchdog (cli/deadline.ts), while doing this (`sweeping`, `checking session files`):
   * the report holds what was done before it, and nothing under way then.
   */
  endedAtDeadline?: string;
  warnings: string[];
  planOut?: string;
  /** `--fail-open`: problems do not change the exit code, and text says the first one only. */
  failOpen: boolean;
  /**
   * Each pass that ran, with its outcome, in the list's order (`passes/index.ts`): the sweep passes always (their
   * outcome is empty without a sweep), the others when they ran.
   */
  passes: readonly PassResult[];
  /** This host has no engine at all: the line saying so (the run checked the host's own files only). */
  noEngine?: string;
  /** What the run freed (a dry run: would free), in all and by kind (`cli/reclaimed.ts`). */
  reclaimed?: Reclaimed;
  /** The settings refused for the run (`untrusted-setting`), when any. */
  untrustedSettings?: UntrustedSetting[];
  /** Each label's thresholds, when they differ (the summary says "thresholds per profile"). */
  perProfile?: { thresholdByProfile: Record<string, number>; idleAfterByProfile: Record<string, number> };
}

export interface Reporter {
  /** A sweep begins (the spinner, for people at a terminal). */
  sweepStarting(verb: string): Promise<void>;
  /** A decision of a running sweep, as it is made. */
  sweepEvent(ev: SweepEvent): void;
  notice(n: Notice): void;
  /** The end of a `reap`. */
  reapResult(r: ReapReport): Promise<void>;
  /** One of `watch`'s events, as it happens. */
  watchEvent(ev: WatchEvent): void;
  /** `watch`: one run of a pass (on its schedule), with its outcome. */
  passRun(pass: Pass, result: unknown, dryRun: boolean): void;
  /** `watch`: something a pass noted as it happened (`image-used`): an NDJSON event, no text line. */
  passNotice(pass: Pass, event: string, fields: Record<string, unknown>): void;
  /** With `--fail-open`, the problem that left the exit code at 0 (text says it; the other formats carry it). */
  failOpen(problem: string | null): void;
}
