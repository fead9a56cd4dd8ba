/**
 * What the engine commands (`reap`, `watch`) tell their caller, and the one place the output format is chosen:
 * text (for people), quiet (failures only), JSON (`--json`: one document) or NDJSON (`--log-format json`: one line
 * per event). The commands parse, run and hand what happened to the reporter; the reporter alone writes.
 */
import type { LockRecord } from '../../adapters/file-lock.js';
import type { Context } from '../../context.js';
import type { HostOutcome } from '../../reaper/run.js';
import type { ExecTreeReport } from '../../reaper/exec-trees.js';
import type { SandboxDirsResult } from '../../reaper/sandbox-dirs.js';
import type { ImagesReport } from '../images-step.js';
import type { Reclaimed } from '../reclaimed.js';
import type { ShellSnapshotsResult } from '../../reaper/shell-snapshots.js';
import type { FailedEntry, KeptEntry, StoppedEntry, SweepEntry, SweepEvent } from '../../reaper/sweep.js';
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
      kind: 'started'; hosts: string[]; thresholdSeconds: number; profile: string | null; dryRun: boolean; stopIdle: boolean;
      idleAfterSeconds: number; pid: number;
    }
  | { kind: 'stopping'; signal: NodeJS.Signals }
  | { kind: 'shutdown'; tracked: number }
  /**
   * `watch`: hermes' files changed (or SIGHUP): the settings that changed (`changes`, each `name: old (source) ->
   * new (source)`), or why the files were not taken (`problem`: the last good settings stay).
   */
  | { kind: 'settings'; changes: string[]; problem?: string };

/** `watch`: an image marked used by a container's event. */
export interface ImageUseNotice {
  host: string;
  id: string;
  container: string;
  action: string;
  at: string;
}

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
  warnings: string[];
  planOut?: string;
  /** `--fail-open`: problems do not change the exit code, and text says the first one only. */
  failOpen: boolean;
  /** The sandbox-directory pass (`--sandbox-dirs-older-than`), when it ran. */
  sandboxDirs?: SandboxDirsResult;
  /** The image pass (`--images-over`), when it ran. */
  images?: ImagesReport;
  /** The exec-tree pass: abandoned `docker exec` trees ended, kept (and why), failed. */
  execTrees: ExecTreeReport;
  /** The shell-snapshot pass, when it ran (not with `--keep-shell-snapshots`, nor with `--plan`). */
  shellSnapshots?: ShellSnapshotsResult;
  /** This host has no engine at all: the line saying so (the run checked the host's own files only). */
  noEngine?: string;
  /** What the run freed (a dry run: would free), in all and by kind (`reclaimed.ts`). */
  reclaimed?: Reclaimed;
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
  /** `watch`: its (hourly) pass over the sandbox directories. */
  sandboxDirsPass(result: SandboxDirsResult, dryRun: boolean): void;
  /** `watch`: a selected container's event marked its image used. */
  imageUsed(use: ImageUseNotice): void;
  /** `watch`: its (periodic) image pass. */
  imagesPass(result: ImagesReport, dryRun: boolean): void;
  /** `watch`: its pass over the shell snapshots (on the sandbox-directory schedule). */
  shellSnapshotsPass(result: ShellSnapshotsResult, dryRun: boolean): void;
  /** With `--fail-open`, the problem that left the exit code at 0 (text says it; the other formats carry it). */
  failOpen(problem: string | null): void;
}

export type OutputFormat = 'text' | 'quiet' | 'json' | 'ndjson';

/** The output format from the flags: `--json`, else `--log-format json`, else `--quiet`, else text. */
export function outputFormat(opts: { json?: boolean | undefined; logFormat: 'text' | 'json'; quiet?: boolean | undefined }): OutputFormat {
  if (opts.json) return 'json';
  if (opts.logFormat === 'json') return 'ndjson';
  return opts.quiet ? 'quiet' : 'text';
}

/** The reporter for the flags, chosen once per run. */
export async function chooseReporter(ctx: Context, opts: { json?: boolean; logFormat: 'text' | 'json'; quiet?: boolean }): Promise<Reporter> {
  const format = outputFormat(opts);
  if (format === 'json') return new (await import('./json-reporter.js')).JsonReporter(ctx);
  if (format === 'ndjson') return new (await import('./ndjson-reporter.js')).NdjsonReporter(ctx, Boolean(opts.quiet));
  const { TextReporter } = await import('./text-reporter.js');
  return new TextReporter(ctx, format === 'quiet');
}
