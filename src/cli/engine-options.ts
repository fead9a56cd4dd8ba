import type { Command } from 'commander';
import { type HermesConfig, loadConfig } from '../adapters/config.js';
import { resolveEngines } from '../adapters/docker-context.js';
import { type EngineEndpoint, whyEngine } from '../adapters/engine-host.js';
import type { EngineClient } from '../adapters/engine.js';
import type { Context } from '../context.js';
import { KILL_MARGIN_SECONDS } from '../defaults.js';
import { UsageError } from '../errors.js';
import type { HermesHome } from '../hermes/home.js';
import type { HermesSettings, Sourced } from '../hermes/settings.js';
import { ValueError } from '../core/parse-args.js';
import { type Selection, profileValuesOf, selectionFrom } from '../core/selection.js';
import type { Held, LabelRules } from '../hermes/judgement.js';
import { type RunSettings, type SettingSources, janitorReaps, resolveRunSettings } from '../reaper/settings.js';
import { PASSES, passOptions } from '../passes/index.js';
import type { PassSettingsInput } from '../passes/types.js';
import { ACTION_OPTIONS, ENGINE_OPTIONS, OUTPUT_OPTIONS } from './engine-option-table.js';
import { addOptions, homeDirFrom, missingProfileHome, optionsOnly, warn } from './shared.js';
import { escapeControls } from '../util/escape-controls.js';

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
  /** `--exec-max-age`, in ms. */
  execMaxAge?: number;
  verbose?: boolean;
}

/** The engine and selection options; `output: false` leaves out --log-format and --quiet (status prints one report). */
export function addEngineOptions(cmd: Command, { output = true }: { output?: boolean } = {}): Command {
  addOptions(optionsOnly(cmd), ENGINE_OPTIONS);
  return output ? addOptions(cmd, OUTPUT_OPTIONS) : cmd;
}

/** What `reap` and `watch` do to what they act on (`addActionOptions`); each pass's flags are its own (`passes/`). */
export interface ActionOptions {
  /** Seconds a stop waits before the engine's SIGKILL. */
  stopTimeout: number;
  keepVolumes?: boolean;
  /** `--keep-exec-trees`. */
  keepExecTrees?: boolean;
}

/** Options of the commands that act (`reap`, `watch`): how a stop ends a sandbox, anonymous volumes, then each pass's. */
export function addActionOptions(cmd: Command): Command {
  return addOptions(cmd, [...ACTION_OPTIONS, ...passOptions()]);
}

/**
 * What a pass's settings are resolved from (`Pass.settings`, `Pass.status`): the command's flags, the environment,
 * the home's files and the run's policy.
 */
export function passInput(
  opts: object,
  ctx: Pick<Context, 'env'>,
  files: HomeFiles,
  run: Pick<EngineTargets, 'home' | 'selection'> & { profiles: PassSettingsInput['profiles']; lifetimeSeconds: number },
  extra: { command?: PassSettingsInput['command']; plan?: boolean; metrics?: boolean } = {},
): PassSettingsInput {
  return {
    command: extra.command ?? 'reap',
    flags: opts as Record<string, unknown>,
    env: ctx.env,
    config: files.config,
    hermes: files.hermes,
    home: run.home.home,
    profiles: run.profiles,
    selection: run.selection,
    lifetimeSeconds: run.lifetimeSeconds,
    plan: extra.plan ?? false,
    metrics: extra.metrics ?? false,
  };
}

/** What a run is aimed at: resolved without reading config.yaml or loading the engine client. */
export interface EngineTargets {
  home: HermesHome;
  selection: Selection;
  endpoints: EngineEndpoint[];
  /** Warnings to say once the run's usage is known good (`sayNotes`): a `--profile` whose home does not exist. */
  notes: string[];
}

export function resolveTargets(cmd: Command, opts: EngineCommandOptions, ctx: Context): EngineTargets {
  if (opts.json && opts.logFormat === 'json') {
    throw new UsageError('--json and --log-format json cannot be combined: pick one');
  }
  const home = homeDirFrom(cmd, ctx);
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
  const missing = missingProfileHome(cmd, home);
  return { home, selection, endpoints, notes: missing ? [missing] : [] };
}

/** The targets' warnings, one line each on stderr (not with `--quiet`), once the run's flags and files are known good. */
export function sayNotes(targets: EngineTargets, opts: { quiet?: boolean }, ctx: Context): void {
  if (!opts.quiet) for (const n of targets.notes.splice(0)) warn(ctx, n);
}

/** A run's settings (`resolveRunSettings`: the same function `createReaper` calls) and the instant it judges at. */
export type RunPolicy = Omit<RunSettings, 'sources'> & {
  /** Every setting with its source: the sweep's, then each pass's (`Pass.status.sources`). */
  sources: SettingSources & Record<string, Sourced<unknown>>;
  asOf: Date;
  /** `--all-profiles`: every profile's settings, from its own home (else empty). */
  profiles: ProfileSettings[];
  /** The same profiles, those hermes does not refuse: what the passes act on (`passInput`). */
  passProfiles: PassSettingsInput['profiles'];
  /**
   * Without `--lifetime`/`--older-than`: the threshold of each label value from the longest lifetime among the
   * profiles it belongs to (`--all-profiles`: every profile's; one profile: its own and those sharing its container
   * identity), by profile label value (`SweepRequest.thresholdByProfile`).
   */
  thresholdByProfile?: Record<string, number>;
  /** The label values nothing is removed or stopped for (`SweepRequest.held`). */
  held: Record<string, Held>;
};

/**
 * The run's settings from its flags, the environment and config.yaml, resolved once and carried down as one value;
 * `--older-than` and `--lifetime` are exclusive, and `--force-threshold` needs `--older-than`.
 */
export async function resolvePolicy(
  opts: EngineCommandOptions & Partial<ActionOptions>,
  ctx: Context,
  files: HomeFiles,
  targets: Pick<EngineTargets, 'home' | 'selection'>,
  signal?: AbortSignal,
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
      execMaxAgeSeconds: opts.execMaxAge === undefined ? undefined : opts.execMaxAge / 1000,
      keepExecTrees: opts.keepExecTrees,
      idleAfterOwnedSeconds: opts.idleAfterOwned === undefined ? undefined : opts.idleAfterOwned === null ? null : opts.idleAfterOwned / 1000,
      stoppedRetentionSeconds: opts.stoppedRetention === undefined ? undefined : opts.stoppedRetention / 1000,
    },
    {
      env: ctx.env,
      config: files.config,
      hermes: files.hermes,
      home: targets.home.home,
      now: () => ctx.now(),
      selection: targets.selection,
      selectorGiven: Boolean(opts.label?.length),
    },
  );
  const judged = await judgeProfiles(opts, ctx, files, { ...targets, signal });
  const flagged = opts.lifetime !== undefined || opts.olderThan !== undefined;
  const byLabel = judged.rules.thresholdByLabel;
  // One profile: its own threshold is the longest of its labels' (those it shares with other profiles included).
  const selected = profileValuesOf(targets.selection) ?? [];
  const shared = !flagged && !opts.allProfiles ? Math.max(settings.thresholdSeconds, ...selected.map((l) => byLabel[l] ?? 0)) : settings.thresholdSeconds;
  const profiles = opts.allProfiles ? judged.profiles : [];
  // The passes act on the profiles hermes does not refuse (a refused profile has nothing removed: its root is not swept).
  const usable = profiles.flatMap((p) => (p.hermes && p.refused === null ? [{ profile: p.profile, home: p.home, hermes: p.hermes }] : []));
  const input = passInput(opts, ctx, files, { ...targets, profiles: usable, lifetimeSeconds: settings.lifetimeSeconds });
  const sources = Object.assign({}, settings.sources, ...PASSES.map((p) => p.status?.sources?.(input) ?? {})) as RunPolicy['sources'];
  return {
    ...settings,
    sources,
    thresholdSeconds: shared,
    asOf: opts.asOf ?? ctx.now(),
    profiles,
    passProfiles: usable,
    held: judged.rules.held,
    ...(!flagged && Object.keys(byLabel).length ? { thresholdByProfile: byLabel } : {}),
  };
}

/** One profile of `--all-profiles`: its home and hermes' settings as read from that home (null: refused). */
export interface ProfileSettings {
  profile: string;
  home: string;
  hermes: HermesSettings | null;
  /** Why hermes refuses the profile's turns (a file that does not parse), or null: nothing is removed for it. */
  refused: string | null;
}

/**
 * The profiles the run judges by (`hermes/profile-set.ts` `judgeRun`): with `--all-profiles` every profile under the
 * run's hermes root, else the run's own and those sharing its container identity; a profile refused is said on stderr.
 */
async function judgeProfiles(
  opts: { allProfiles?: boolean },
  ctx: Pick<Context, 'env' | 'cwd' | 'stderr'>,
  files: HomeFiles,
  targets: Pick<EngineTargets, 'home' | 'selection'> & { signal?: AbortSignal | undefined },
): Promise<{ profiles: ProfileSettings[]; rules: LabelRules }> {
  const { judgeRun } = await import('../hermes/profile-set.js');
  const { home, selection, signal } = targets;
  const run = { profile: home.profile, home: home.home, settings: files.hermes, refused: files.refused };
  const judged = await judgeRun(run, selection, {
    root: home.root,
    env: ctx.env,
    cwd: ctx.cwd,
    allProfiles: Boolean(opts.allProfiles),
    janitorReaps: janitorReaps(ctx.env),
    signal,
  });
  for (const w of judged.warnings) ctx.stderr.write(`hermes-janitor: warning: ${escapeControls(w)}\n`);
  return { profiles: judged.profiles.map((p) => ({ profile: p.profile, home: p.home, hermes: p.settings, refused: p.refused })), rules: judged.rules };
}

/** A home's config.yaml and hermes' settings for it. */
export interface HomeFiles {
  config: HermesConfig;
  hermes: HermesSettings;
  /** Why hermes refuses the profile's routed turns (a file that does not parse), or null. */
  refused: string | null;
}

/**
 * Reads a home's config.yaml (a file that is not YAML: exit 2, naming it) and resolves hermes' settings for it; a
 * `.env` that cannot be read is a warning on stderr naming it. `signal`: the run's `--timeout`, which bounds the
 * reading too (settings are read inside it).
 */
export async function loadHomeConfig(home: HermesHome, ctx: Pick<Context, 'env' | 'cwd' | 'stderr'>, signal?: AbortSignal): Promise<HomeFiles> {
  const config = await loadConfig(home.home, { signal });
  const { loadHermesSettings } = await import('../adapters/hermes-settings.js');
  const { settings, warnings, refused } = await loadHermesSettings({ home: home.home, env: ctx.env, cwd: ctx.cwd, config, signal });
  for (const w of warnings) ctx.stderr.write(`hermes-janitor: warning: ${escapeControls(w)}\n`);
  return { config, hermes: settings, refused };
}

/**
 * A `--stop-timeout` given that does not fit in the run's `--timeout` with the margin for the engine's kill
 * (`KILL_MARGIN_SECONDS`) is a usage error. The default stop timeout is cut to fit instead (`core/policy.ts` `stopGrace`).
 */
export function checkStopTimeout(opts: Partial<ActionOptions> & { timeout: number }, command: Command): void {
  if (opts.stopTimeout === undefined || command.getOptionValueSource('stopTimeout') !== 'cli' || opts.timeout <= 0) return;
  const room = Math.floor(opts.timeout / 1000) - KILL_MARGIN_SECONDS;
  if (opts.stopTimeout > room) {
    throw new UsageError(
      `--stop-timeout ${opts.stopTimeout} does not fit in --timeout ${opts.timeout / 1000}s: the run keeps ${KILL_MARGIN_SECONDS} s for the ` +
        `engine's kill, so at most ${Math.max(0, room)}; lower --stop-timeout or raise --timeout`,
    );
  }
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
    for (const e of targets.endpoints) ctx.stderr.write(`hermes-janitor: ${escapeControls(`engine ${e.host}: ${whyEngine(e)}`)}\n`);
  }
}

/**
 * Starts loading the engine client (dockerode) without waiting for it, so that it loads while something else waits
 * (the discovery's ping, the home's files); `connectEngines` then finds it loaded. A failure is `connectEngines`'s to
 * report.
 */
export function preloadEngineClient(): void {
  import('../adapters/dockerode-loader.js').then((m) => m.loadDockerode()).catch(() => undefined);
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
