/**
 * The pass interface: what a cleanup pass declares so that every output, the metrics, `status`, `--timeout` and
 * `watch`'s scheduling handle it without naming it. The reporters, `reap`, `watch`, `status` and the metrics iterate
 * over the one list of passes (`passes/index.ts`); a pass is one folder, `src/passes/<pass>/`: its rule, its I/O, its
 * run, its settings, its status part and its descriptor (`pass.ts`). A leaf module: types only, and it imports only
 * leaf modules' types.
 *
 * Two kinds: a `run` pass runs after the container sweep (or alone, on a host with no engine, when it needs none);
 * a `sweep` pass runs inside the container sweep, per running sandbox (the exec-tree pass), through its hooks
 * (`Pass.sweep`, declared in `sweep-pass.ts`); its outcome is handled here.
 */
import type { EngineClient, EngineEvent } from '../adapters/engine.js';
import type { ProcessTable } from '../adapters/hermes-processes.js';
import type { HermesConfig } from '../adapters/config.js';
import type { HermesSettings, Sourced } from '../hermes/settings.js';
import type { Selection } from '../core/selection.js';
import type { ReapResult } from '../reaper/sweep-types.js';
import type { OptionDecl } from '../cli/option-table.js';
import type { JanitorSetting } from '../reaper/janitor-settings.js';
import type { SweepHooks } from './sweep-pass.js';

/** A failure of a pass: one line saying what, why and the fix. */
export interface PassFailure {
  readonly error: string;
}

/** The three lists every pass's outcome has: what it removed (or ended; a dry run: would), kept (why), failed on. */
export interface PassOutcome<F extends PassFailure = PassFailure> {
  readonly done: readonly object[];
  readonly kept: ReadonlyArray<{ readonly reason: string }>;
  readonly failed: readonly F[];
}

/** How a pass is named in each output. */
export interface PassNouns {
  /** NDJSON, one entry: `removed-<event>`, `would-remove-<event>`, `kept-<event>`, `failed-<event>`. */
  readonly event: string;
  /** NDJSON, `watch`'s line after each of its runs (with the counts). */
  readonly events: string;
  /** Text, one entry: `removed <text> ...`. */
  readonly text: string;
  /** Text, the summary's part (`; <texts>: removed 2, kept 1, failed 0`) and `watch`'s `checked <texts>: ...`. */
  readonly texts: string;
}

/** What a pass's settings are resolved from (flags, the environment, the home's files, the run's policy). */
export interface PassSettingsInput {
  readonly command: 'reap' | 'watch' | 'status' | 'list';
  /** The command's parsed flags, by commander's attribute name (`--keep-image` is `keepImage`). */
  readonly flags: Readonly<Record<string, unknown>>;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly config: HermesConfig;
  readonly hermes: HermesSettings;
  /** The hermes home of the run. */
  readonly home: string;
  /** `--all-profiles`: every profile's home and hermes settings (else empty). */
  readonly profiles: ReadonlyArray<{ readonly profile: string; readonly home: string; readonly hermes: HermesSettings }>;
  readonly selection: Selection;
  /** The terminal lifetime of the run (`--lifetime`, else hermes'). */
  readonly lifetimeSeconds: number;
  /** A plan is applied or made (`--plan`, `--plan-out`): a plan lists containers only. */
  readonly plan: boolean;
  /** Metrics are asked for (`--metrics-file`, `--metrics-listen`): a pass with gauges measures. */
  readonly metrics: boolean;
}

/** One engine of the run, and whether it answered the run's sweep (one that did not might hold a container that uses what a pass would remove). */
export interface EngineAnswer {
  readonly engine: EngineClient;
  readonly answered: boolean;
  readonly error?: string;
}

/** What a run gives a pass that runs after the sweep. */
export interface PassRunContext {
  readonly dryRun: boolean;
  readonly now: () => Date;
  /** `--timeout` (reap) or the stop (watch): no new work once aborted. */
  readonly signal?: AbortSignal | undefined;
  /** Every engine of the run, with its answer (empty on a host with no engine). */
  readonly engines: readonly EngineAnswer[];
}

/** What a pass's run gave: its outcome (null: it only measured) and its gauges (null: not measured). */
export interface PassReport<R, G> {
  readonly result: R | null;
  readonly gauges: G | null;
}

/** How a pass's entries are said in text. */
export interface TextView {
  readonly dryRun: boolean;
  /** Ages as of this instant (the run's, or now for watch). */
  readonly asOf: Date;
  /** Name each entry's engine (a run over several engines). */
  readonly showHost: boolean;
}

/** One series of a gauge family (`labels` by the family's label names). */
export interface GaugeSample {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A gauge family a pass fills (`reap --metrics-file` and `watch --metrics-listen` alike). */
export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
}

/** What `status` gives a pass's part. */
export interface StatusContext {
  /** The engines that answered. */
  readonly engines: readonly EngineClient[];
  /** The hosts of those that did not. */
  readonly unreachable: readonly string[];
  readonly now: Date;
  readonly signal?: AbortSignal | undefined;
  /** The process table `status` read once (for the passes that judge by hermes' processes). */
  readonly processes: ProcessTable;
}

/** A pass's part of `status`. */
export interface PassStatus<P> {
  /** Read-only: measures what a run would do, removes nothing. */
  gather(input: PassSettingsInput, ctx: StatusContext): Promise<P>;
  /** Its keys of `status --json`, in order. */
  json(part: P): Record<string, unknown>;
  /** Its section of the text report. */
  render(part: P, now: Date): string[];
  /** What needs attention (each line makes `status` exit 1). */
  attention?(part: P): string[];
  /**
   * The paths its part refused for the run (root over another user's home: `untrusted-root`), for the trust section
   * (`attention`: whether `attention` above says it).
   */
  refused?(part: P): Array<{ path: string; what: string; reason: string; detail: string; attention: boolean }>;
  /**
   * Its settings with where each came from: `status --json`'s `settings` (by key), `watch`'s line when hermes' files
   * change, and (`sourceRows`) the rows of the text report's settings section.
   */
  sources?(input: PassSettingsInput): Record<string, Sourced<unknown>>;
  sourceRows?(sources: Readonly<Record<string, Sourced<unknown>>>): string[];
}

/** How `watch` runs a pass: on a schedule (passes naming the same `every` variable run together, in list order). */
export interface PassWatch<S> {
  /** The environment variable of its interval (a duration), and the interval without it. */
  readonly every: { readonly env: string; readonly defaultMs: number };
  /** An engine event, as it comes (queued with the pass's runs). */
  onEvent?(
    settings: S,
    engine: EngineClient,
    ev: EngineEvent,
    notice: (event: string, fields: Record<string, unknown>) => void,
    signal: AbortSignal,
  ): Promise<void>;
}

/**
 * A cleanup pass. `S`: its settings, `R`: its outcome (its object in `reap --json`, a contract), `G`: its gauges.
 * Methods, not function properties: a `Pass<S, R, G>` is a `Pass` (the list holds passes of every type).
 */
export interface Pass<S = unknown, R = unknown, G = unknown, F extends PassFailure = PassFailure, P = unknown> {
  /** Its key in `reap --json` and in the NDJSON summary. */
  readonly name: string;
  readonly kind: 'run' | 'sweep';
  /** `engine`: it works on what the engines have; `host`: on this host's files alone (it runs without an engine). */
  readonly place: 'engine' | 'host';
  readonly nouns: PassNouns;
  /** Its flags (`reap` and `watch`), declared once here. */
  readonly options?: readonly OptionDecl[];
  /** Its `janitor.*` keys, read by the one reader (`reaper/janitor-settings.ts`). */
  readonly keys?: readonly JanitorSetting[];
  /** Its settings for a run; null: it does not run. Bad input is a `UsageError`, before anything is touched. */
  settings?(input: PassSettingsInput): Promise<S | null>;
  /** Before the sweep (a container the sweep removes still counts as a use). */
  beforeSweep?(settings: S, engines: readonly EngineClient[], ctx: PassRunContext): Promise<void>;
  run?(settings: S, ctx: PassRunContext): Promise<PassReport<R, G>>;
  /**
   * A `sweep` pass: its hooks, which the container sweep calls per running sandbox (`sweep-pass.ts`); its options are
   * `IdleOptions.sweeps[name]`, its decisions `ReapResult[name]`.
   */
  readonly sweep?: SweepHooks;
  /** A `sweep` pass: its outcome from the sweeps of the run's engines (none: an empty outcome). */
  fromSweeps?(sweeps: readonly ReapResult[]): R;
  /** The three lists of an outcome. */
  outcome(result: R): PassOutcome<F>;
  /**
   * What it refused for the run before looking (root over another user's home: a root that is not theirs), one
   * NDJSON event and one warning line each; said also with `--quiet`.
   */
  refused?(result: R): Array<{ event: string; fields: Record<string, unknown>; line: string }>;
  /** `--timeout` cut it short: the run timed out (exit 3), as a sweep that was cut. */
  cutShort(result: R): boolean;
  /** What its removals freed, in bytes (a dry run: would free), for the space a reap reclaimed (absent: nothing). */
  freedBytes?(result: R): number;
  /** The gauges of an outcome (null: it has none, or they come from `run`). */
  gaugesOf?(result: R, dryRun: boolean): G | null;
  readonly text: {
    /** Lines on stdout for what it did (and kept, where that is news). */
    lines(result: R, view: TextView): string[];
    /** The summary's part: `; <texts>: ...`, or '' (`always`: also when nothing happened: watch's `checked` line). */
    summary(result: R, view: { dryRun: boolean; always: boolean }): string;
    /** A failure, on stderr: reap's line (after `hermes-janitor: `) and watch's (after the time). */
    failure(f: F): string;
    watchFailure(f: F): string;
    /** `2 sandbox directories not removed` (the first problem of a run that failed open). */
    failedCount(n: number): string;
  };
  /** Extra fields of its counts in the NDJSON summary and watch's line. */
  ndjsonCounts?(result: R): Record<string, unknown>;
  readonly metrics?: {
    readonly families: readonly MetricFamily[];
    /** Each family's series; null: the family is left out (not measured). */
    samples(gauges: G): Record<string, readonly GaugeSample[] | null>;
    /** What `watch` shows before the pass first ran (absent: its families appear once it has run). */
    readonly initial?: G;
    /** Two engines' gauges as one (a sweep pass in `watch`: each engine's last run, added up). */
    sum?(a: G, b: G): G;
  };
  readonly status?: PassStatus<P>;
  readonly watch?: PassWatch<S>;
}

/** A pass and what it gave in one run (the pair every output takes). */
export interface PassResult {
  readonly pass: Pass;
  readonly result: unknown;
  /** Its gauges for the metrics, when they were measured. */
  readonly gauges?: unknown;
}
