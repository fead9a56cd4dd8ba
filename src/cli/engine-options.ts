import type { Command } from 'commander';
import { type HermesConfig, loadConfig } from '../adapters/config.js';
import { resolveEngines } from '../adapters/docker-context.js';
import { type EngineEndpoint, whyEngine } from '../adapters/engine-host.js';
import type { EngineClient } from '../adapters/engine.js';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import type { HermesHome } from '../core/hermes-home.js';
import { ValueError } from '../core/parse-args.js';
import { type Selection, selectionFrom } from '../core/selection.js';
import { type RunSettings, resolveRunSettings } from '../reaper/settings.js';
import { ACTION_OPTIONS, ENGINE_OPTIONS, OUTPUT_OPTIONS } from './engine-option-table.js';
import { addOptions, homeFrom, optionsOnly } from './shared.js';

/** Options shared by `list` and `reap`. */
export interface EngineCommandOptions {
  host?: string[];
  context?: string;
  allProfiles?: boolean;
  lifetime?: number;
  /** `--older-than`, in ms: replaces the computed threshold. */
  olderThan?: number;
  forceThreshold?: boolean;
  asOf?: Date;
  concurrency: number;
  timeout: number;
  label?: string[];
  excludeLabel?: string[];
  profileLabel?: string;
  json?: boolean;
  logFormat: 'text' | 'json';
  quiet?: boolean;
  /** Idle threshold in ms (`--idle-after`). */
  idleAfter?: number;
  /** Idle threshold of an owned sandbox in ms, null for never (`--idle-after-owned`). */
  idleAfterOwned?: number | null;
  /** `--stopped-retention`, in ms. */
  stoppedRetention?: number;
  /** `--stop-idle` (true) / `--no-stop-idle` (false). */
  stopIdle?: boolean;
  /** `--idle-max-processes`: the most processes an idle container may hold. */
  idleMaxProcesses?: number;
  verbose?: boolean;
}

/** The engine and selection options; `output: false` leaves out --log-format and --quiet (status prints one report). */
export function addEngineOptions(cmd: Command, { output = true }: { output?: boolean } = {}): Command {
  addOptions(optionsOnly(cmd), ENGINE_OPTIONS);
  return output ? addOptions(cmd, OUTPUT_OPTIONS) : cmd;
}

/** What `reap` and `watch` do to what they act on (`addActionOptions`). */
export interface ActionOptions {
  /** Seconds a stop waits before the engine's SIGKILL. */
  stopTimeout: number;
  keepVolumes?: boolean;
  /** `--sandbox-dirs-older-than`, in ms. */
  sandboxDirsOlderThan?: number;
  /** `--keep-shell-snapshots`. */
  keepShellSnapshots?: boolean;
}

/** Options of the commands that act (`reap`, `watch`): how a stop ends a sandbox, and anonymous volumes. */
export function addActionOptions(cmd: Command): Command {
  return addOptions(cmd, ACTION_OPTIONS);
}

/** What a run is aimed at: resolved without reading config.yaml or loading the engine client. */
export interface EngineTargets {
  home: HermesHome;
  selection: Selection;
  endpoints: EngineEndpoint[];
}

export function resolveTargets(cmd: Command, opts: EngineCommandOptions, ctx: Context): EngineTargets {
  if (opts.json && opts.logFormat === 'json') {
    throw new UsageError('--json and --log-format json cannot be combined: pick one');
  }
  const home = homeFrom(cmd, ctx);
  let selection: Selection;
  try {
    selection = selectionFrom({
      profile: opts.allProfiles ? null : home.profile,
      labels: opts.label,
      excludeLabels: opts.excludeLabel,
      profileLabel: opts.profileLabel,
    });
  } catch (err) {
    throw err instanceof ValueError ? new UsageError(err.message) : err;
  }
  const endpoints = resolveEngines(opts.host, opts.context, ctx.env, ctx.homedir);
  return { home, selection, endpoints };
}

/** A run's settings (`resolveRunSettings`: the same function `createReaper` calls) and the instant it judges at. */
export type RunPolicy = RunSettings & { asOf: Date };

/**
 * The run's settings from its flags, the environment and config.yaml, resolved once and carried down as one value;
 * `--older-than` and `--lifetime` are exclusive, and `--force-threshold` needs `--older-than`.
 */
export async function resolvePolicy(
  opts: EngineCommandOptions & Partial<ActionOptions>, ctx: Context, config: HermesConfig, targets: Pick<EngineTargets, 'home' | 'selection'>,
): Promise<RunPolicy> {
  if (opts.olderThan !== undefined && opts.lifetime !== undefined) {
    throw new UsageError('--older-than and --lifetime cannot be combined: --older-than replaces the threshold computed from the lifetime');
  }
  if (opts.olderThan === undefined && opts.forceThreshold) throw new UsageError('--force-threshold only applies with --older-than');
  const settings = await resolveRunSettings(
    {
      lifetimeSeconds: opts.lifetime,
      olderThanSeconds: opts.olderThan === undefined ? undefined : opts.olderThan / 1000,
      forceThreshold: opts.forceThreshold,
      stopIdle: opts.stopIdle,
      idleAfterSeconds: opts.idleAfter === undefined ? undefined : opts.idleAfter / 1000,
      idleMaxProcesses: opts.idleMaxProcesses,
      stopTimeoutSeconds: opts.stopTimeout,
      sandboxDirsOlderThanMs: opts.sandboxDirsOlderThan,
      idleAfterOwnedSeconds: opts.idleAfterOwned === undefined ? undefined : opts.idleAfterOwned === null ? null : opts.idleAfterOwned / 1000,
      stoppedRetentionSeconds: opts.stoppedRetention === undefined ? undefined : opts.stoppedRetention / 1000,
    },
    { env: ctx.env, config, home: targets.home.home, now: () => ctx.now(), selection: targets.selection, selectorGiven: Boolean(opts.label?.length) },
  );
  return { ...settings, asOf: opts.asOf ?? ctx.now() };
}

export function loadHomeConfig(home: HermesHome): Promise<HermesConfig> {
  return loadConfig(home.home);
}

/** The run-wide `--timeout` as a signal (none for 0). */
export function timeoutSignal(opts: EngineCommandOptions): AbortSignal | undefined {
  return opts.timeout > 0 ? AbortSignal.timeout(opts.timeout) : undefined;
}

/**
 * Replaces an endpoint left to discovery by the engine found (exit 3 with what was tried when none answers), and
 * with `--verbose` says on stderr which engine each endpoint is and why.
 */
export async function discoverTargets(targets: EngineTargets, opts: { verbose?: boolean }, ctx: Context): Promise<void> {
  if (targets.endpoints.some((e) => e.discover)) {
    const { discoverEndpoints } = await import('../adapters/engine-discovery.js');
    targets.endpoints = await discoverEndpoints(targets.endpoints, { env: ctx.env, homedir: ctx.homedir });
  }
  if (opts.verbose) {
    for (const e of targets.endpoints) ctx.stderr.write(`hermes-janitor: engine ${e.host}: ${whyEngine(e)}\n`);
  }
}

/** Engine clients for the endpoints (dockerode is loaded here, never by breakers). */
export async function connectEngines(endpoints: EngineEndpoint[]): Promise<EngineClient[]> {
  // docker-modem hands Node's url.parse an `ssh:` URL that it calls invalid (DEP0170: two lines on stderr in every run
  // over ssh://, about a dependency's internals). The CLI owns its process, so it silences deprecation warnings for
  // such runs; the adapter (and so the library) sets no process-wide flag.
  if (endpoints.some((e) => e.protocol === 'ssh')) process.noDeprecation = true;
  const { createDockerodeEngine } = await import('../adapters/dockerode-engine.js');
  return Promise.all(endpoints.map((e) => createDockerodeEngine(e)));
}
