/**
 * The sweep-pass interface: what a `sweep` pass (one that runs inside the container sweep, per running sandbox, before
 * the idle rule: the exec-tree pass) declares, so that the sweep (`reaper/`), `status` and the reporters take it from
 * the one list (`passes/index.ts`) by its descriptor (`Pass.sweep`), never by importing its folder: the host iterates,
 * each hook is the pass's. And the generic types the sweep shares with such a pass: a view of a sandbox's execs (what
 * `list` and `status` show), the load the idle rule leaves out, the three lists of its decisions. A leaf module: types
 * only, importing only leaf modules' types.
 */
import type { HermesConfig } from '../adapters/config.js';
import type { ContainerDetails, EngineClient } from '../adapters/engine.js';
import type { HermesSettings } from '../hermes/settings.js';
import type { Selection } from '../core/selection.js';
import type { LocalCounters } from '../reaper/idle-stop.js';

/**
 * One running `docker exec` of a sandbox as list/status show it (`execs: [{id, ageSeconds, processes, command,
 * abandoned, client, clientUnverifiable}]`).
 */
export interface ExecView {
  id: string;
  /** Seconds since it started; null when unknown. */
  ageSeconds: number | null;
  /** Its process and descendants on this host; null when they cannot be seen from here. */
  processes: number | null;
  /** `ProcessConfig`: entrypoint and arguments, joined by spaces. */
  command: string;
  /** No living client is attached to it and it is past the bound (never when its age is unknown, nor its clients unseen). */
  abandoned: boolean;
  /** The living `docker`/`podman` client attached to it on this host (`{pid, since}`), or null when none lives. */
  client: { pid: number; since: string } | null;
  /** Why its clients cannot be seen from here (an engine on another host, procfs `hidepid`, ...); null when they can. */
  clientUnverifiable: string | null;
}

/** What the idle rule leaves out of a running sandbox's use: the execs a sweep pass found abandoned, still running, and their processes. */
export interface AbandonedLoad {
  execIds: ReadonlySet<string>;
  processes: number;
}

/** One exec a sweep pass decided on: the sandbox (its name) and the exec (each pass adds its own fields). */
export interface ExecDecision {
  container: string;
  execId: string;
}
/** One exec a sweep pass ended (a dry run: would end): how long it ran, the processes signalled, how many took SIGKILL. */
export interface ExecEnded extends ExecDecision {
  ageSeconds: number;
  processes: number;
  killed: number;
}
export interface ExecKept extends ExecDecision {
  reason: string;
}
export interface ExecFailed extends ExecDecision {
  error: string;
}

/** A sweep pass's decisions over the sandboxes of a sweep: what it ended (a dry run: would end), kept (and why), failed on. */
export interface SweepDecisions {
  ended: ExecEnded[];
  kept: ExecKept[];
  failed: ExecFailed[];
}

/** Where a sweep pass's options are resolved: a home's settings (the run's, or one profile's for its label) and the run's selection. */
export interface SweepOptionsWhere {
  hermes: HermesSettings;
  config: HermesConfig;
  selection: Selection;
}

/** What one survey of a sandbox is taken with. */
export interface SweepSurveyAt {
  asOf: Date;
  signal?: AbortSignal | undefined;
  /** `watch`: when each exec started, from the engine's `exec_start` events (ms since the epoch), by exec id. */
  execStarts?: ReadonlyMap<string, number> | undefined;
}

/** How one act of a sweep pass on a sandbox runs. */
export interface SweepActContext {
  dryRun: boolean;
  stopTimeoutSeconds: number;
  now: () => Date;
  signal?: AbortSignal | undefined;
  /** Name of the container in reports. */
  container: string;
}

/** A running sandbox as a sweep pass takes it (the sweep's inspect). */
export type SweepSandbox = Pick<ContainerDetails, 'id' | 'pid' | 'init' | 'execIds'> & Partial<Pick<ContainerDetails, 'name'>>;

/**
 * A sweep pass's hooks (`Pass.sweep`). `O`: its options for a run (`IdleOptions.sweeps`, by the pass's name), `V`: its
 * survey of one sandbox. The sweep calls, per running sandbox and for each sweep pass in list order: `mayRun`, then
 * `survey` (its `views` are the sandbox's `execs`), then in `reap` `act` (each decision one `exec-tree` event, and its
 * part of the result), then `load` (what the idle rule, which comes next, leaves out).
 */
export interface SweepHooks<O = unknown, V = unknown> {
  /**
   * Its options from the run's inputs (by the library's option names, `reaper/settings.ts` `RunInputs`) and a home's
   * settings: for the run, and for each label from its profiles' (null: it does not run). Bad input is a `UsageError`.
   */
  options(inputs: object, where: SweepOptionsWhere): O | null;
  /** Two profiles' options of one label as one: the reading that ends later. */
  later(a: O, b: O): O;
  /** The run's options with a label's own over them (the run's process readers kept). */
  withLabel(run: O, label: O): O;
  /** Whether the sandbox may hold anything it looks at (false spares the survey). */
  mayRun(local: LocalCounters | undefined, d: SweepSandbox): boolean;
  survey(engine: EngineClient, d: SweepSandbox, options: O, at: SweepSurveyAt): Promise<V>;
  /** The sandbox's execs as the survey saw them (`execs` of `list`, `status` and the reap's entry). */
  views(survey: V): ExecView[];
  /** Ends (or says why not) what the survey found abandoned, re-checked right before each signal. */
  act(engine: EngineClient, d: SweepSandbox, survey: V, options: O, ctx: SweepActContext): Promise<SweepDecisions>;
  /** What the idle rule leaves out of the sandbox's use (`ended`: the execs `act` ended, no longer running). */
  load(survey: V, ended?: ReadonlySet<string>): AbandonedLoad;
  /** The text line of one exec it ended (`watch` says each as it comes). */
  endedLine(tree: ExecEnded): string;
}
