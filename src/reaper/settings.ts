/**
 * A run's settings, resolved once from what the caller gave (flags, or the library's options), the environment and
 * `config.yaml`: the command line and `createReaper` both call `resolveRunSettings`.
 */
import type { HermesConfig } from '../adapters/config.js';
import type { HermesSettings, Sourced } from '../hermes/settings.js';
import { idleStatePath } from '../adapters/janitor-files.js';
import type { StateStore } from '../adapters/state-file.js';
import { ENV_JANITOR_REAPER, DEFAULT_STOP_TIMEOUT_SECONDS, ENV_CGROUP_SAMPLES, ENV_STOP_IDLE, HERMES_MIN_THRESHOLD_SECONDS } from '../defaults.js';
import { UsageError } from '../errors.js';
import { ValueError, parseDuration } from '../core/parse-args.js';
import { thresholdSeconds } from '../core/policy.js';
import { type Selection, isHermesSelection } from '../core/selection.js';
import { resolveLifetime } from './lifetime.js';
import type { IdleOptions } from './sweep-types.js';
import { IDLE_MAX_PROCESSES, STOP_IDLE, readJanitorSetting } from './janitor-settings.js';

/** What a run was given (undefined: not given): flags on the command line, options in the library. */
export interface RunInputs {
  lifetimeSeconds?: number | undefined;
  /** `--older-than`, in seconds: replaces the threshold computed from the lifetime (the idle threshold keeps it). */
  olderThanSeconds?: number | undefined;
  /** Allow `olderThanSeconds` under 120 s with the hermes selection. */
  forceThreshold?: boolean | undefined;
  stopIdle?: boolean | undefined;
  idleAfterSeconds?: number | undefined;
  idleMaxProcesses?: number | undefined;
  stopTimeoutSeconds?: number | undefined;
  /** False: the stop re-check always asks the engine's stats (default: `HERMES_JANITOR_CGROUP_SAMPLES`, else yes). */
  cgroupSamples?: boolean | undefined;
  /** Where idle observations live (default `<home>/janitor/idle.json`). */
  idleStore?: StateStore | undefined;
  /** `--exec-max-age`, in seconds: replaces the bound from hermes' timeouts (the exec-tree pass's settings). */
  execMaxAgeSeconds?: number | undefined;
  /** `--keep-exec-trees`: abandoned exec trees are reported, never ended. */
  keepExecTrees?: boolean | undefined;
  /** `--idle-after-owned`, in seconds (null: never); `--stopped-retention`, in seconds (owner-settings.ts). */
  idleAfterOwnedSeconds?: number | null | undefined;
  stoppedRetentionSeconds?: number | undefined;
}

/** Where a run's settings are resolved: its environment, config.yaml, hermes' settings, hermes home, clock and selection. */
export interface RunContext {
  env: Record<string, string | undefined>;
  config: HermesConfig;
  /** hermes' own settings of the home, as hermes resolves them (`adapters/hermes-settings.ts`). */
  hermes: HermesSettings;
  /** The hermes home (idle observations under `<home>/janitor/`). */
  home: string;
  now: () => Date;
  selection: Selection;
  /** The selector labels were given (`--label`, `labels`): the idle rule is then off unless asked for. */
  selectorGiven: boolean;
  /** How messages name the inputs: command-line flags (default) or the library's option names. */
  naming?: 'flags' | 'options';
}

/** Everything a sweep needs that is not the engine: the thresholds and the idle rule. */
export interface RunSettings {
  thresholdSeconds: number;
  /** The lifetime the threshold came from (half an `--older-than` threshold). */
  lifetimeSeconds: number;
  /** The threshold came from `--older-than`. */
  olderThan: boolean;
  stopIdle: boolean;
  idleAfterSeconds: number;
  /** The most processes an idle container may hold (undefined: its init and its command). */
  idleMaxProcesses?: number;
  stopTimeoutSeconds: number;
  /** The idle rule as a sweep takes it (the same values, plus the store, the clock and the cgroup reader). */
  idle: IdleOptions;
  /** Every setting read from hermes' files, the environment or a flag, with where it came from (`status` shows them). */
  sources: SettingSources;
}

/**
 * The settings with their sources, as `status --json` carries them (`settings`); hermes' own also with their scope and
 * launch readings (`readings`) and the one acted on (`used`).
 */
export interface SettingSources {
  sandboxRoot: Sourced<string>;
  lifetimeSeconds: Sourced<number>;
  dockerOrphanReaper: Sourced<boolean>;
  dockerSharedContainerKey: Sourced<string>;
  terminalTimeoutSeconds: Sourced<number>;
  foregroundMaxTimeoutSeconds: Sourced<number>;
  stopIdle: Sourced<boolean>;
  idleMaxProcesses: Sourced<number | null>;
}

const FLAG_NAMES = { lifetime: '--lifetime', maxProcesses: '--idle-max-processes' };
const OPTION_NAMES = { lifetime: 'lifetimeSeconds', maxProcesses: 'idleMaxProcesses' };

/**
 * The run's settings from its inputs: the threshold (from `--older-than`, else 2 x max(lifetime, 60) with the
 * lifetime from the input, else hermes' own: `RunContext.hermes`), the idle rule (switch,
 * threshold, process limit, stop timeout) and where its observations live. Bad values are usage errors naming
 * their source. The state store and the cgroup reader are loaded here, not at start-up.
 */
export async function resolveRunSettings(inputs: RunInputs, where: RunContext): Promise<RunSettings> {
  const names = where.naming === 'options' ? OPTION_NAMES : FLAG_NAMES;
  const lifetime = resolveLifetime(inputs.lifetimeSeconds, where.hermes.lifetimeSeconds, names.lifetime);
  // The idle rule keeps the computed threshold as its default: --older-than is about exited containers.
  const computed = thresholdSeconds(lifetime.value);
  let threshold = computed;
  let lifetimeSeconds = lifetime.value;
  if (inputs.olderThanSeconds !== undefined) {
    const seconds = inputs.olderThanSeconds;
    if (seconds < HERMES_MIN_THRESHOLD_SECONDS && !inputs.forceThreshold && isHermesSelection(where.selection)) {
      throw new UsageError(
        `--older-than ${seconds}s is under ${HERMES_MIN_THRESHOLD_SECONDS}s with the hermes selection (hermes-agent=1), whose siblings need that ` +
          `margin: pass --force-threshold, or select other containers with --label`,
      );
    }
    threshold = seconds;
    lifetimeSeconds = Math.floor(seconds / 2);
  }
  const stopIdleSourced = resolveStopIdle(inputs.stopIdle, where.selectorGiven, where.env, where.config);
  const stopIdle = stopIdleSourced.value;
  const idleAfterSeconds = inputs.idleAfterSeconds ?? computed;
  const maxProcesses = resolveIdleMaxProcesses(inputs.idleMaxProcesses, where.config, names.maxProcesses);
  const idleMaxProcesses = maxProcesses.value;
  const stopTimeoutSeconds = inputs.stopTimeoutSeconds ?? DEFAULT_STOP_TIMEOUT_SECONDS;
  const cgroup = inputs.cgroupSamples ?? cgroupSamplesEnabled(where.env);
  const store = inputs.idleStore ?? new (await import('../adapters/state-file.js')).FileStateStore(idleStatePath(where.home));
  const owned = await (await import('./owner-settings.js')).resolveOwnerSettings(inputs, where.config, where.env);
  const idle: IdleOptions = {
    stopIdle,
    idleAfterSeconds,
    stopTimeoutSeconds,
    store,
    now: where.now,
    ...owned,
    ...(idleMaxProcesses !== undefined ? { maxProcesses: idleMaxProcesses } : {}),
    ...(cgroup ? { localCounters: (await import('../adapters/cgroup-counters.js')).readCgroupCounters } : {}),
  };
  // Each sweep pass's options (the exec-tree pass: for hermes' sandboxes only, not a --label selection). The list of
  // passes is loaded here, not at start-up (the library's import does not load every pass).
  const sweeps = (await import('./sweep-passes.js')).sweepOptions(inputs, where);
  if (sweeps) idle.sweeps = sweeps;
  return {
    thresholdSeconds: threshold,
    lifetimeSeconds,
    olderThan: inputs.olderThanSeconds !== undefined,
    stopIdle,
    idleAfterSeconds,
    ...(idleMaxProcesses !== undefined ? { idleMaxProcesses } : {}),
    stopTimeoutSeconds,
    idle,
    sources: {
      sandboxRoot: where.hermes.sandboxRoot,
      lifetimeSeconds: lifetime,
      dockerOrphanReaper: where.hermes.dockerOrphanReaper,
      dockerSharedContainerKey: where.hermes.dockerSharedContainerKey,
      terminalTimeoutSeconds: where.hermes.terminalTimeoutSeconds,
      foregroundMaxTimeoutSeconds: where.hermes.foregroundMaxTimeoutSeconds,
      stopIdle: stopIdleSourced,
      idleMaxProcesses: { value: maxProcesses.value ?? null, source: maxProcesses.source },
    },
  };
}

/** A duration in an environment variable; undefined when unset or empty; anything else that does not parse is a usage error. */
export function envDuration(env: Record<string, string | undefined>, name: string): number | undefined {
  const v = env[name];
  if (v === undefined || v.trim() === '') return undefined;
  try {
    return parseDuration(v, name);
  } catch (err) {
    throw new UsageError(`${(err as ValueError).message}: fix or unset ${name}`);
  }
}

/** Where a setting came from, for messages. */
export type Resolved<T> = Sourced<T>;

export { resolveLifetime } from './lifetime.js';

/**
 * The reaper's disable switch: hermes' `TERMINAL_DOCKER_ORPHAN_REAPER` (from wherever hermes takes it, config.yaml's
 * `terminal.docker_orphan_reaper` included) set to a non-empty value other than true/1/yes. Returns the reason when
 * disabled (the setting's source), else null.
 */
export function reaperDisabled(hermes: HermesSettings, env: Record<string, string | undefined> = {}): string | null {
  const s = hermes.dockerOrphanReaper;
  if (s.value) return null;
  // hermes' own reaper is off, but the janitor was told to reap regardless (removal left to it).
  if (janitorReaps(env)) return null;
  return s.source;
}

/** `HERMES_JANITOR_REAPER` is yes: the janitor reaps even where hermes' own orphan reaper is off. */
export function janitorReaps(env: Record<string, string | undefined>): boolean {
  return ['true', '1', 'yes', 'on'].includes((env[ENV_JANITOR_REAPER] ?? '').trim().toLowerCase());
}

/**
 * Whether idle running sandboxes are stopped. `--stop-idle` / `--no-stop-idle` decide; else it is off when
 * `HERMES_JANITOR_STOP_IDLE` is `false`/`0`/`no`/`off`, or `janitor.stop_idle: false` is in config.yaml, or `--label`
 * replaced the hermes selector; else on. A value of the variable that is neither yes nor no is a usage error.
 */
export function resolveStopIdle(
  flag: boolean | undefined,
  customSelector: boolean,
  env: Record<string, string | undefined>,
  config: HermesConfig,
): Resolved<boolean> {
  if (flag !== undefined) return { value: flag, source: flag ? '--stop-idle' : '--no-stop-idle' };
  if (envSwitch(env, ENV_STOP_IDLE) === false) return { value: false, source: ENV_STOP_IDLE };
  if (readJanitorSetting(config, STOP_IDLE) === false) return { value: false, source: 'config.yaml janitor.stop_idle' };
  if (customSelector) return { value: false, source: '--label (add --stop-idle to stop idle containers)' };
  return { value: true, source: 'default' };
}

/**
 * The most processes a running container may hold and still be idle: `--idle-max-processes` (or the library's
 * `idleMaxProcesses`), else `janitor.idle_max_processes` in config.yaml, else undefined (the rule's own: its init and
 * its command). A config value that is not a whole number >= 1 is a usage error naming the file.
 */
export function resolveIdleMaxProcesses(flag: number | undefined, config: HermesConfig, flagName = '--idle-max-processes'): Resolved<number | undefined> {
  if (flag !== undefined) {
    if (!Number.isSafeInteger(flag) || flag < 1) throw new UsageError(`${flagName} must be a whole number >= 1, got '${flag}'`);
    return { value: flag, source: flagName };
  }
  const n = readJanitorSetting(config, IDLE_MAX_PROCESSES);
  if (n === undefined) return { value: undefined, source: 'default' };
  return { value: n, source: 'config.yaml janitor.idle_max_processes' };
}

/**
 * Whether the re-check right before a stop may read the container's cgroup on this host (on unless
 * `HERMES_JANITOR_CGROUP_SAMPLES` is `false`/`0`/`no`/`off`; another value that is not yes is a usage error).
 */
export function cgroupSamplesEnabled(env: Record<string, string | undefined>): boolean {
  return envSwitch(env, ENV_CGROUP_SAMPLES) ?? true;
}

/**
 * A yes/no environment variable: true (`true`/`1`/`yes`/`on`), false (`false`/`0`/`no`/`off`), or undefined when
 * unset or empty; any other value is a usage error naming the variable.
 */
function envSwitch(env: Record<string, string | undefined>, name: string): boolean | undefined {
  const v = env[name];
  if (v === undefined || v.trim() === '') return undefined;
  const t = v.trim().toLowerCase();
  if (['false', '0', 'no', 'off'].includes(t)) return false;
  if (['true', '1', 'yes', 'on'].includes(t)) return true;
  throw new UsageError(`${name} must be true/1/yes or false/0/no, got '${v}': fix or unset ${name}`);
}
