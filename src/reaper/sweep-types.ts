/**
 * The types of the sweep: what `reap`, `list`, `status` and `watch` ask of one engine, and what they report. A leaf
 * module: the sweeps (`reap-sweep.ts`, `list-sweep.ts`) and everything that reads their outcome import these from
 * here, and `sweep.ts` holds the two functions that run them.
 */
import type { EngineClient } from '../adapters/engine.js';
import type { EngineProcess } from '../adapters/pid-namespace.js';
import type { StateStore } from '../adapters/state-file.js';
import type { IdleKeepReason } from '../core/idle.js';
import type { KeepReason, Rule, TiedRoot } from '../core/policy.js';
import type { OwnerView, SandboxOwner } from '../core/owners.js';
import type { Selection } from '../core/selection.js';
import type { ExecEnded, ExecFailed, ExecKept, ExecView, SweepDecisions } from '../passes/sweep-pass.js';
import type { LocalCounters } from './idle-stop.js';
import type { Interruption } from './run-guard.js';
import type { Held } from '../hermes/judgement.js';

export type { Interruption } from './run-guard.js';

/** One container as reported in every output. */
export interface SweepEntry {
  /** Full container id. */
  id: string;
  name: string;
  profile: string | null;
  state: string;
  /** `State.FinishedAt`, raw. */
  finishedAt: string;
  ageSeconds: number | null;
  /** The engine it lives on. */
  host: string;
  /** The rule it falls under (`exited`, `never-started`, `idle`), or null (paused, restarting, gone...). */
  rule: Rule | null;
  /** Running containers: seconds without activity (null until two samples, or without stats). */
  idleSeconds?: number | null;
  /** Running containers that are not stopped: why (`observing`, `idle-too-recent`, `in-use`, `exec-in-flight`, ...). */
  idleReason?: IdleKeepReason;
  /**
   * Running containers under the idle rule: the processes their cgroup held at this run's sample (null where neither
   * the engine nor the cgroup gave a count). More than its init and its command: `in-use`.
   */
  processes?: number | null;
  /** Running sandboxes whose profile a living hermes on this host may serve (absent: abandoned, or owners not considered). */
  owner?: SandboxOwner;
  /**
   * Running hermes sandboxes under a sweep pass (the exec-tree pass): their running `docker exec` sessions, with age,
   * process count, command and whether they are past the bound (`abandoned`).
   */
  execs?: ExecView[];
  /**
   * Removed containers (a dry run: would be): what removing it freed, its writable layer and the anonymous volumes
   * that went with it, as the engine measured them right before (0 for what it did not measure).
   */
  reclaimedBytes?: number;
  /**
   * Removed containers: the anonymous volumes that went with them (a dry run: those that would). Listed
   * containers: the anonymous volumes they hold, present only when they hold some (status counts these).
   */
  volumes?: string[];
  /** Kept as `stopped-retained`: when the retention of the stop ends (ISO 8601); the exited rule applies from then on. */
  retainedUntil?: string;
  /**
   * Sandboxes the idle rule stops (or, in a dry run and in `list`, would stop): the size of their writable layer in
   * bytes (`SizeRw`), which hermes' own reaper removes with the sandbox at its next start once it has been stopped
   * for 2 x its lifetime (unless `terminal.docker_orphan_reaper` is off); null when the engine gave none.
   */
  writableLayerBytes?: number | null;
}
export interface KeptEntry extends SweepEntry {
  reason: KeepReason;
}
/** A running container stopped (or, in a dry run, that would be) by the idle rule. */
export interface StoppedEntry extends SweepEntry {
  idleSeconds: number;
  /** Seconds the stop let the sandbox exit on SIGTERM before the engine's SIGKILL (`--stop-timeout`, cut to what the run had left). */
  graceSeconds?: number;
  /** The stop ended in the engine's SIGKILL (exit code 137 after it): the sandbox ignored SIGTERM for the grace. */
  killed?: boolean;
}
export interface FailedEntry extends SweepEntry {
  error: string;
}
export interface ListedEntry extends SweepEntry {
  verdict: 'reap' | 'stop' | 'keep';
  /** Why it is kept, `expired` for a container the reaper would remove, `idle` for one it would stop. */
  reason: KeepReason | 'expired' | 'idle';
}

export type SweepEvent =
  | { type: 'removed'; entry: SweepEntry; dryRun: boolean }
  | { type: 'stopped'; entry: StoppedEntry; dryRun: boolean }
  | { type: 'kept'; entry: KeptEntry }
  | { type: 'failed'; entry: FailedEntry }
  | { type: 'listed'; entry: ListedEntry }
  | { type: 'candidates'; count: number }
  // A sweep pass's decision on one exec (the type is its `nouns.event`: the exec-tree pass's).
  | { type: 'exec-tree'; state: 'ended'; tree: ExecEnded }
  | { type: 'exec-tree'; state: 'kept'; tree: ExecKept }
  | { type: 'exec-tree'; state: 'failed'; tree: ExecFailed };

export interface SweepRequest {
  engine: EngineClient;
  selection: Selection;
  thresholdSeconds: number;
  /** Ages are judged as of this instant. */
  asOf: Date;
  concurrency: number;
  /** Aborting stops the sweep (a run-wide timeout); what finished is still reported. */
  signal?: AbortSignal;
  onEvent?: (event: SweepEvent) => void;
  /** Ask the engine for these containers only (full ids): `watch` re-checks one container at its deadline. */
  ids?: string[];
  /** The idle rule: observe running containers (and, in `reap`, stop idle ones). Omitted: running ones are not sampled. */
  idle?: IdleOptions;
  /**
   * When the run's deadline (`signal`) falls, in `Date.now()` ms: each stop's grace before the engine's SIGKILL is cut
   * to what is left of the run minus `KILL_MARGIN_SECONDS` (`core/policy.ts` `stopGrace`), so a sandbox that ignores
   * SIGTERM is still killed, and the stop answered, within the run.
   */
  deadlineMs?: number;
  /**
   * Each label's own threshold, by the value of its `hermes-profile` label: from the longest lifetime among the
   * profiles it belongs to (`hermes/judgement.ts`: `--all-profiles`, or the profiles sharing a container identity); a
   * container of a label not listed is judged by `thresholdSeconds`.
   */
  thresholdByProfile?: Readonly<Record<string, number>>;
  /**
   * Label values (of `hermes-profile`) nothing is removed or stopped for: a profile they belong to is refused by
   * hermes, or has hermes' orphan reaper off (`hermes/judgement.ts`). Their containers are kept with that reason.
   */
  held?: Readonly<Record<string, Held>>;
  /**
   * A run over several homes (`--homes`, `--all-homes`): the label values some home of the run has. A container of any
   * other (or without the label) is kept as `unknown-profile`, never judged by the janitor's own defaults.
   */
  knownProfiles?: ReadonlySet<string>;
  /**
   * A run over several homes: each home's sandbox roots. A container whose bind mounts lie under one home's is judged
   * by that home alone (`core/policy.ts` `tiedLabels`: its tables under `<label>\u0000<home>`).
   */
  tiedRoots?: readonly TiedRoot[];
}

/** The idle rule's settings for a sweep. */
export interface IdleOptions {
  /** Stop idle sandboxes (else they are only observed). */
  stopIdle: boolean;
  /** Idle threshold in seconds. */
  idleAfterSeconds: number;
  /** Seconds the engine's stop waits before its SIGKILL (default 10). */
  stopTimeoutSeconds?: number;
  /** Where the observations live between runs (`<home>/janitor/idle.json`); default: nothing kept. */
  store?: StateStore;
  /** The clock samples are stamped with (default: the real one); judging uses `asOf`. */
  now?: () => Date;
  /**
   * The re-check right before a stop reads the container's cgroup on this host with this, where it can prove the
   * cgroup is the container's; else (and when omitted) it asks the engine's one-shot stats. A sample of the engine's
   * stats without a process count takes the cgroup's count from it too.
   */
  localCounters?: LocalCounters;
  /**
   * The most processes a container may hold and still be idle (`--idle-max-processes`); default: its init and its
   * command (2 with `HostConfig.Init`, else 1).
   */
  maxProcesses?: number;
  /**
   * The sweep passes' options, by pass name (`Pass.sweep`, `passes/sweep-pass.ts`; absent: it does not run): each runs
   * over each running sandbox before the idle rule (the exec-tree pass: execs past the bound are reported, ended by
   * `reap` unless its switch says not, and left out of the idle rule's in-use count).
   */
  sweeps?: Readonly<Record<string, unknown>>;
  /** `watch`: when each exec started, from the engine's `exec_start` events (ms since the epoch), by exec id. */
  execStarts?: ReadonlyMap<string, number>;
  /**
   * The living hermes processes that may own this engine's sandboxes (what each owns resolved from the files of what
   * it serves: `hermes/owned-profiles.ts`), read afresh at each call (the start of a sweep,
   * and right before each stop). Omitted: owners are not considered (every sandbox is judged by `idleAfterSeconds`).
   * `evidence`: the running container being judged, whose `State.Pid` can prove the janitor sees the engine's pid
   * namespace (`adapters/pid-namespace.ts`).
   */
  owners?: (engineHost: string, evidence?: EngineProcess) => Promise<OwnerView>;
  /** Idle threshold of an owned sandbox, in seconds; null: never stopped (`--idle-after-owned never`). Default 24 h. */
  idleAfterOwnedSeconds?: number | null;
  /** How long a sandbox the janitor stopped is kept before the exited rule applies (`--stopped-retention`); default 0. */
  stoppedRetentionSeconds?: number;
  /**
   * Each label's own rule, by the value of its `hermes-profile` label: from the settings of the profiles (of every
   * home of the run) it belongs to, the reading that stops or ends later (`reaper/label-rules.ts`); a container of a
   * label not listed is judged by the values above.
   */
  byProfile?: Readonly<Record<string, IdleRule>>;
}

/** The parts of the idle rule a label may have of its own (`IdleOptions.byProfile`). */
export interface IdleRule {
  stopIdle: boolean;
  idleAfterSeconds: number;
  /** Undefined: the rule's own (its init and its command). */
  maxProcesses?: number;
  idleAfterOwnedSeconds: number | null;
  stoppedRetentionSeconds: number;
  /** The sweep passes' options of the label, by pass name (over the run's: each pass's `withLabel`). */
  sweeps?: Readonly<Record<string, unknown>>;
}

export interface ReapRequest extends SweepRequest {
  dryRun: boolean;
  /** Only these ids are considered (a plan being applied); others are neither touched nor reported. */
  onlyIds?: ReadonlySet<string>;
  /** Leave anonymous volumes behind (default: they go with their container). */
  keepVolumes?: boolean;
  /**
   * false: the run's output shows no sizes (`reap --quiet` without a metrics file), so none is measured: removed
   * entries carry no `reclaimedBytes`, and the engine is not asked to size each writable layer (`size=1` on the
   * inspect, which costs Docker 20.10 here more than the inspect itself) nor its volumes. Default: measured.
   */
  measure?: boolean;
}

export interface ReapResult {
  removed: SweepEntry[];
  /** Running sandboxes stopped by the idle rule (a dry run: those that would be). */
  stopped: StoppedEntry[];
  kept: KeptEntry[];
  failed: FailedEntry[];
  /** Abandoned exec trees ended, kept (and why), failed: the exec-tree pass's part (`SweepParts`). */
  execTrees: SweepDecisions;
  interrupted: Interruption | null;
  /** Non-fatal problems (the idle state could not be read or written). */
  warnings: string[];
}

/** Each sweep pass's part of a sweep's result, by its name (the exec-tree pass: `execTrees`, a key of `reap --json`). */
export type SweepParts = Pick<ReapResult, 'execTrees'>;

export interface ListResult {
  containers: ListedEntry[];
  /** Containers that could not be inspected. */
  failed: FailedEntry[];
  interrupted: Interruption | null;
  warnings: string[];
}
