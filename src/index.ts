/**
 * hermes-janitor as a library: `import { ... } from "hermes-janitor"`.
 *
 * Every breaker has the same shape: `createX(options)` returns an object with one async method per CLI verb.
 * The options always accept
 * - `store`: where the state lives (a {@link StateStore}; file-backed under the hermes home by default, a
 *   {@link MemoryStateStore} or your own implementation otherwise),
 * - `home` / `profile` / `env`: how the default file location is found (as the CLI's `--home`/`--profile`),
 * - `now`: the clock (`() => Date`),
 * plus the breaker's own thresholds. Hook decisions (`decide`, `pre`, `post`) never throw: like the CLI they fail
 * open and report warnings in the result. Management verbs (`arm`, `reset`, ...) throw on I/O errors.
 *
 * @packageDocumentation
 */

// ---- State stores ------------------------------------------------------------------------------------------

export {
  /** A JSON state file: atomic writes (temp file + rename), mode 0600 in 0700 directories, serialised updates. */
  FileStateStore,
  /** State kept in memory (tests, or a long-lived harness process). */
  MemoryStateStore,
  /** Thrown by `FileStateStore.update` when another process holds the lock for too long. */
  StateLockTimeout,
  type FileStateStoreOptions,
  type StateRead,
  type StateStore,
  type StateUpdate,
} from './adapters/state-file.js';

/** Resolves the hermes home like the CLI: `home`, else `$HERMES_HOME`, else `~/.hermes`; `profile` selects `<root>/profiles/<name>`. */
export { type HermesHome, type HomeInputs, resolveHermesHome } from './hermes/home.js';

// ---- Agent loop breakers (hooks) ----------------------------------------------------------------------------

/**
 * The hook dialects the breakers speak (claude, codex, gemini, qwen, copilot, cursor, hermes): each decision is the
 * same whatever the dialect; the input is read, and the answer written, in the agent's own shape.
 */
export { DIALECTS, type Dialect, recognizeDialect } from './core/hook-dialects.js';

export {
  /** Stop-hook breaker: keeps a multi-step run going while items remain, but never spins forever. */
  createStopHook,
  /** `<home>/stop-hook/marker.json`. */
  defaultMarkerPath,
  DEFAULT_MAX_BLOCKS,
  /** The default cap for a dialect: 5, or one below the host's own cap when that is lower (Cursor 4, hermes 2). */
  defaultMaxBlocks,
  type StopHook,
  type StopHookInput,
  type StopHookOptions,
  type StopHookOutput,
  type StopHookResult,
  type StopHookStatus,
  type StopHookWhy,
  type StopMarker,
} from './breakers/stop-hook.js';

export {
  /** Tool-loop breaker: denies the n-th identical call in a row, reports a tool failing n times in a row. */
  createToolLoop,
  /** `<home>/tool-loop`. */
  defaultToolLoopDir,
  /** Histories as files in a directory (the default). */
  FileToolLoopStore,
  /** Histories in memory. */
  MemoryToolLoopStore,
  /** Canonical JSON: keys sorted at every depth, no insignificant whitespace. */
  canonicalJson,
  /** A call's signature: the tool name and the SHA-256 of its canonical input. */
  callSignature,
  /** Whether a tool response counts as a failure. */
  isFailure,
  DEFAULT_CYCLE_THRESHOLD,
  DEFAULT_FAILURE_THRESHOLD,
  DEFAULT_REPEAT_THRESHOLD,
  SESSION_TTL_MS,
  type ToolHookInput,
  type ToolLoop,
  type ToolLoopOptions,
  type ToolLoopOutput,
  type ToolLoopResult,
  type ToolLoopSessionStatus,
  type ToolLoopState,
  type ToolLoopStore,
  type ToolLoopWhy,
} from './breakers/tool-loop.js';

// ---- Gateway loop breakers -------------------------------------------------------------------------------------

export {
  /** Restart-loop guard: trips when `max` restart-interrupted boots fall inside the rolling window. */
  createRestartGuard,
  /** `<home>/gateway/restart_loop.json`. */
  restartLoopFile,
  type RestartGuard,
  type RestartGuardOptions,
  type RestartGuardReport,
  type ClearOutcome,
} from './breakers/restart-guard.js';

export {
  /** Stuck-session suspension: counts sessions active at shutdown, suspends those at the threshold on start-up. */
  createStuckSessions,
  /** `<home>/.restart_failure_counts`. */
  restartFailureCountsFile,
  type StuckSessions,
  type StuckSessionsOptions,
} from './breakers/stuck-sessions.js';

export {
  /** Lifecycle scan: finds commands that would restart or kill the gateway in text or scripts. */
  createLifecycleScan,
  /** One-shot scan of texts and scripts. */
  scanLifecycle,
  MAX_SCAN_BYTES,
  type LifecycleScanner,
  type LifecycleScanOptions,
  type LifecycleScanInput,
  type LifecycleScanOutcome,
} from './breakers/lifecycle-scan.js';

// ---- The reaper ---------------------------------------------------------------------------------------------------

export {
  /** The in-process reaper (`list` and `reap` without a process start). */
  createReaper,
  type Reaper,
  type ReaperOptions,
  type SweepCallOptions,
} from './reaper/api.js';
export type {
  FailedEntry,
  IdleOptions,
  KeptEntry,
  ListResult,
  ListedEntry,
  ReapResult,
  StoppedEntry,
  SweepEntry,
  SweepEvent,
} from './reaper/sweep.js';
/** The engine interface the reaper uses; implement it to sweep another engine (or a test double). */
export type { ContainerDetails, ContainerSummary, EngineClient, ListQuery, RemoveOptions, StatsCounters } from './adapters/engine.js';
/** The pure policy: `judge` a container's verdict, the threshold, FinishedAt parsing and hermes' label sanitizer. */
export { judge, neverStarted, ruleOf, thresholdSeconds, type KeepReason, type Rule, type Verdict } from './core/policy.js';
/**
 * The idle rule, for a long-running watcher judging one container at a deadline: the pure proof (`observe`,
 * `idleSeconds`, `decideStop`, `reproved`, `showsActivity`; `processLimit` and `occupancy` for the in-use rule: a
 * container holding more processes than its init and its command is in use), the engine steps (`takeSample`,
 * `reproveAndStop`), and the state document kept in `<home>/janitor/idle.json` (`parseIdleState`, `mergeIdleState`,
 * `idleStatePath`).
 */
export {
  decideStop,
  idleSeconds,
  mergeIdleState,
  observe,
  occupancy,
  parseIdleState,
  processLimit,
  reproved,
  showsActivity,
  IDLE_CPU_NS_PER_SECOND,
  IDLE_PROCESSES_WITH_INIT,
  IDLE_PROCESSES_WITHOUT_INIT,
  type IdleKeepReason,
  type IdleRecord,
  type IdleSample,
  type IdleState,
  type Recheck,
  type StopDecision,
  type StopInput,
} from './core/idle.js';
export { reproveAndStop, takeSample, volumesGone, type ReproveOptions, type StopOutcome } from './reaper/idle-stop.js';
export { idleStatePath } from './adapters/janitor-files.js';
export { parseFinishedAt, type FinishedAt } from './core/finished-at.js';
export { sanitizeLabelValue } from './hermes/labels.js';
