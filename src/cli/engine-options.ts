import type { Command } from 'commander';
import { type HermesConfig, loadConfig, withWorth } from '../adapters/config.js';
import { AS_WRITTEN, type SettingsWorth } from '../core/setting-worth.js';
import { settingsWorthActing } from '../hermes/settings-worth.js';
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
import type { Held, LabelRules, ProfileRead } from '../hermes/judgement.js';
import { type RunInputs, type RunSettings, type SettingSources, janitorReaps, resolveRunSettings } from '../reaper/settings.js';
import { labelIdleRules, tiedTables } from '../reaper/label-rules.js';
import { TIED, type TiedRoot } from '../core/policy.js';
import { PASSES, passOptions } from '../passes/index.js';
import type { PassSettingsInput } from '../passes/types.js';
import type { SweepRequest } from '../reaper/sweep-types.js';
import { ACTION_OPTIONS, ENGINE_OPTIONS, OUTPUT_OPTIONS, POLICY_OUTPUT_OPTIONS } from './engine-option-table.js';
import { addOptions, homeDirFrom, missingProfileHome, optionsOnly, warn } from './shared.js';
import { useSharedStore } from '../adapters/trust.js';
import type { RunHome } from '../core/home-set.js';
import { escapeControls } from '../util/escape-controls.js';
import { unsaidUntrusted, untrustedSettings } from '../adapters/settings-worth.js';
import type { Notice } from './report/types.js';

export { untrustedSettings };

/** Options shared by `list` and `reap`. */
export interface EngineCommandOptions {
  host?: string[];
  context?: string;
  allProfiles?: boolean;
  /** `--homes` (each a path or a glob). */
  homes?: string[];
  /** `--all-homes`. */
  allHomes?: boolean;
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

/**
 * The engine and selection options, then the output ones; `output: 'policy'` leaves out how a run reports (--log-format,
 * --quiet, --verbose: status prints one report) but keeps those that change a verdict (the idle rule, the exec bound).
 */
export function addEngineOptions(cmd: Command, { output = 'all' }: { output?: 'all' | 'policy' } = {}): Command {
  addOptions(optionsOnly(cmd), ENGINE_OPTIONS);
  return addOptions(cmd, output === 'all' ? OUTPUT_OPTIONS : POLICY_OUTPUT_OPTIONS);
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
  /**
   * `--homes`/`--all-homes`: a run over several homes (every profile of each; one store per engine for all: the run
   * home's state directory is the shared one). Which homes is read with the settings (`resolvePolicy`).
   */
  multiHome?: boolean;
}

export function resolveTargets(cmd: Command, opts: EngineCommandOptions, ctx: Context): EngineTargets {
  if (opts.json && opts.logFormat === 'json') {
    throw new UsageError('--json and --log-format json cannot be combined: pick one');
  }
  const home = homeDirFrom(cmd, ctx);
  const multiHome = Boolean(opts.homes?.length || opts.allHomes);
  if (multiHome && cmd.optsWithGlobals<{ profile?: string }>().profile !== undefined) {
    throw new UsageError('--profile selects one profile of one home; --homes and --all-homes judge every profile of each home: drop one');
  }
  let selection: Selection;
  try {
    selection = selectionFrom({
      profile: opts.allProfiles || multiHome ? null : home.profile,
      labels: opts.label,
      excludeLabels: opts.excludeLabel,
      profileLabel: opts.profileLabel,
    });
  } catch (err) {
    throw err instanceof ValueError ? new UsageError(err.message) : err;
  }
  const endpoints = resolveEngines(opts.host, opts.context, ctx.env, ctx.homedir);
  const missing = missingProfileHome(cmd, home);
  // One lock and one store per engine for every run over several homes (a watch and a cron run see each other's).
  if (multiHome) useSharedStore(home.home);
  return { home, selection, endpoints, notes: missing ? [missing] : [], ...(multiHome ? { multiHome } : {}) };
}

/** Each setting refused so far (`untrusted-setting`) and not yet said, as a notice of the run's reporter. */
export function noticeUntrusted(reporter: { notice(n: Notice): void }): void {
  for (const setting of unsaidUntrusted()) reporter.notice({ kind: 'untrusted-setting', setting });
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
  /** `--homes`/`--all-homes`: the homes judged by (their owners, what their settings are worth, their labels). */
  homes?: RunHome[];
  /** `--homes`/`--all-homes`: the labels some home has; a container of another is kept (`SweepRequest.knownProfiles`). */
  knownProfiles?: ReadonlySet<string>;
  /** `--homes`/`--all-homes`: each home's sandbox roots, tying a container mounted under them to it (`SweepRequest.tiedRoots`). */
  tiedRoots?: TiedRoot[];
};

/** What a sweep judges by, from the run's policy: the same for `reap`, `list`, `status` and the watchers. */
export type Judging = Pick<SweepRequest, 'thresholdSeconds' | 'thresholdByProfile' | 'held' | 'knownProfiles' | 'tiedRoots'>;

/**
 * The policy's judging inputs (`Judging`): the threshold, each label's own, the labels held, and over several homes
 * the labels known and the roots that tie a container to a home; the optional ones only when the policy has them.
 */
export function judgingOf(policy: RunPolicy): Judging {
  return {
    thresholdSeconds: policy.thresholdSeconds,
    ...(policy.thresholdByProfile ? { thresholdByProfile: policy.thresholdByProfile } : {}),
    held: policy.held,
    ...(policy.knownProfiles ? { knownProfiles: policy.knownProfiles } : {}),
    ...(policy.tiedRoots ? { tiedRoots: policy.tiedRoots } : {}),
  };
}

/**
 * The run's settings from its flags, the environment and config.yaml, resolved once and carried down as one value;
 * `--older-than` and `--lifetime` are exclusive, and `--force-threshold` needs `--older-than`.
 */
export async function resolvePolicy(
  opts: EngineCommandOptions & Partial<ActionOptions>,
  ctx: Context,
  files: HomeFiles,
  targets: Pick<EngineTargets, 'home' | 'selection'> & Partial<Pick<EngineTargets, 'endpoints' | 'multiHome'>>,
  signal?: AbortSignal,
): Promise<RunPolicy> {
  if (opts.olderThan !== undefined && opts.lifetime !== undefined) {
    throw new UsageError('--older-than and --lifetime cannot be combined: --older-than replaces the threshold computed from the lifetime');
  }
  if (opts.olderThan === undefined && opts.forceThreshold) throw new UsageError('--force-threshold only applies with --older-than');
  const inputs: RunInputs = {
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
  };
  const selectorGiven = Boolean(opts.label?.length);
  const settings = await resolveRunSettings(inputs, {
    env: ctx.env,
    config: files.config,
    hermes: files.hermes,
    home: targets.home.home,
    now: () => ctx.now(),
    selection: targets.selection,
    selectorGiven,
  });
  const judged: Awaited<ReturnType<typeof judgeProfiles>> = targets.multiHome
    ? await judgeHomes(opts, ctx, { endpoints: targets.endpoints ?? [], signal })
    : await judgeProfiles(opts, ctx, files, { ...targets, signal });
  // Each label's idle rule from its own profiles' settings (as under --profile), the later reading where they differ.
  const where = { env: ctx.env, selection: targets.selection, selectorGiven, janitorReaps: janitorReaps(ctx.env) };
  // Over several homes, also each home's own rules: for a container its mounts tie to one home (core/policy.ts tiedLabels).
  const tied = judged.homes ? tiedTables(judged.homes, judged.reads, inputs, where) : null;
  const byProfile = { ...labelIdleRules(judged.reads, inputs, where), ...tied?.idle };
  if (Object.keys(byProfile).length) settings.idle.byProfile = byProfile;
  const flagged = opts.lifetime !== undefined || opts.olderThan !== undefined;
  const byLabel = { ...judged.rules.thresholdByLabel, ...tied?.thresholdByProfile };
  // One profile: its own threshold is the longest of its labels' (those it shares with other profiles included).
  const selected = profileValuesOf(targets.selection) ?? [];
  const shared = !flagged && !opts.allProfiles ? Math.max(settings.thresholdSeconds, ...selected.map((l) => byLabel[l] ?? 0)) : settings.thresholdSeconds;
  const profiles = opts.allProfiles || targets.multiHome ? judged.profiles : [];
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
    held: { ...judged.rules.held, ...tied?.held },
    ...(!flagged && Object.keys(byLabel).length ? { thresholdByProfile: byLabel } : {}),
    ...(judged.homes
      ? { homes: judged.homes, knownProfiles: new Set([...Object.keys(judged.rules.profilesByLabel), ...(tied?.known ?? [])]), tiedRoots: judged.roots ?? [] }
      : {}),
  };
}

/**
 * `--homes`/`--all-homes`: every profile of every home, each home's settings worth its owner's rights, and their label
 * rules (the later reading among the homes having a label); what was left out or refused said on stderr.
 */
async function judgeHomes(
  opts: { homes?: string[]; allHomes?: boolean },
  ctx: Context,
  where: { endpoints: readonly EngineEndpoint[]; signal?: AbortSignal | undefined },
): Promise<{ profiles: ProfileSettings[]; rules: LabelRules; reads: ProfileRead[]; homes: RunHome[]; roots: TiedRoot[] }> {
  const [{ homesOf, readHomes }, { labelRules }] = await Promise.all([import('./home-set.js'), import('../hermes/judgement.js')]);
  const notes: string[] = [];
  const found = (await homesOf(opts, ctx, notes)) ?? [];
  const read = await readHomes(found, ctx, where);
  for (const w of [...notes, ...read.warnings]) ctx.stderr.write(`hermes-janitor: warning: ${escapeControls(w)}\n`);
  const profiles = read.reads.map((p) => ({ profile: p.profile, home: p.home, hermes: p.settings, refused: p.refused }));
  return { profiles, rules: labelRules(read.reads, { janitorReaps: janitorReaps(ctx.env) }), reads: read.reads, homes: read.homes, roots: read.roots };
}

/** Each label's threshold and idle threshold, when not every container is judged by the same two numbers. */
export interface PerProfile {
  thresholdByProfile: Record<string, number>;
  idleAfterByProfile: Record<string, number>;
}

/**
 * The thresholds per profile of a run (null: one threshold and one idle threshold for every container): said instead
 * of one number in the summaries (`thresholds per profile`), and given by label in `--json`.
 */
export function perProfileOf(policy: Pick<RunPolicy, 'thresholdSeconds' | 'idleAfterSeconds' | 'thresholdByProfile' | 'idle'>): PerProfile | null {
  // Labels only (a home's own rules of a label, for the containers tied to it, are under `<label>\u0000<home>`).
  const thresholds = Object.fromEntries(Object.entries(policy.thresholdByProfile ?? {}).filter(([l]) => !l.includes(TIED)));
  const idle = Object.fromEntries(
    Object.entries(policy.idle.byProfile ?? {})
      .filter(([l]) => !l.includes(TIED))
      .map(([l, r]) => [l, r.idleAfterSeconds]),
  );
  const differ = (all: Record<string, number>, run: number) => Object.values(all).some((v) => v !== run);
  if (!differ(thresholds, policy.thresholdSeconds) && !differ(idle, policy.idleAfterSeconds)) return null;
  return { thresholdByProfile: { ...thresholds }, idleAfterByProfile: idle };
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
): Promise<{ profiles: ProfileSettings[]; rules: LabelRules; reads: ProfileRead[]; homes?: RunHome[]; roots?: TiedRoot[] }> {
  const [{ judgeRun }, { noteUntrusted }] = await Promise.all([import('../hermes/profile-set.js'), import('../adapters/settings-worth.js')]);
  const { home, selection, signal } = targets;
  const run = { profile: home.profile, home: home.home, settings: files.hermes, refused: files.refused, config: files.config };
  const judged = await judgeRun(run, selection, {
    root: home.root,
    env: ctx.env,
    cwd: ctx.cwd,
    allProfiles: Boolean(opts.allProfiles),
    janitorReaps: janitorReaps(ctx.env),
    signal,
    // The other profiles under the run's root are the same owner's words, worth the same.
    actOn: (p) => ({
      ...p,
      settings: p.settings && settingsWorthActing(p.settings, files.worth, { home: p.home, cwd: ctx.cwd }, noteUntrusted),
      ...(p.config ? { config: withWorth(p.config, files.worth) } : {}),
    }),
  });
  for (const w of judged.warnings) ctx.stderr.write(`hermes-janitor: warning: ${escapeControls(w)}\n`);
  const profiles = judged.profiles.map((p) => ({ profile: p.profile, home: p.home, hermes: p.settings, refused: p.refused }));
  return { profiles, rules: judged.rules, reads: judged.profiles };
}

/** A home's config.yaml and hermes' settings for it. */
export interface HomeFiles {
  config: HermesConfig;
  hermes: HermesSettings;
  /** Why hermes refuses the profile's routed turns (a file that does not parse), or null. */
  refused: string | null;
  /** What its settings are worth (core/setting-worth.ts): the profiles under it are read with the same. */
  worth: SettingsWorth;
}

/**
 * Reads a home's config.yaml (a file that is not YAML: exit 2, naming it) and resolves hermes' settings for it; a
 * `.env` that cannot be read is a warning on stderr naming it. `signal`: the run's `--timeout`, which bounds the
 * reading too (settings are read inside it).
 */
export async function loadHomeConfig(
  home: HermesHome,
  ctx: Pick<Context, 'env' | 'cwd' | 'stderr'>,
  signal?: AbortSignal,
  worth: SettingsWorth = AS_WRITTEN,
): Promise<HomeFiles> {
  const config = withWorth(await loadConfig(home.home, { signal }), worth);
  const [{ loadHermesSettings }, { noteUntrusted }] = await Promise.all([import('../adapters/hermes-settings.js'), import('../adapters/settings-worth.js')]);
  const { settings, warnings, refused } = await loadHermesSettings({ home: home.home, env: ctx.env, cwd: ctx.cwd, config, signal });
  for (const w of warnings) ctx.stderr.write(`hermes-janitor: warning: ${escapeControls(w)}\n`);
  // A user's settings are worth that user's rights: those of an owner who cannot act on the engine only keep more.
  const acted = settingsWorthActing(settings, worth, { home: home.home, cwd: ctx.cwd }, noteUntrusted);
  return { config, hermes: acted, refused, worth };
}

/**
 * What the settings of the run's home are worth on its engines (adapters/settings-worth.ts): as root over a home
 * another user owns who cannot act on every engine of the run, only what keeps more than the defaults.
 */
export async function homeWorth(targets: Pick<EngineTargets, 'home' | 'endpoints'>, ctx: Pick<Context, 'env' | 'homedir'>): Promise<SettingsWorth> {
  const { settingsWorth } = await import('../adapters/settings-worth.js');
  return settingsWorth(targets.home.home, targets.endpoints, { env: ctx.env, homedir: ctx.homedir });
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
 * Starts finding the engine (a ping) and loading its client while the home's files are read (`list`, `reap`).
 * Returns the discovery, to be awaited once the home's own errors (exit 2) are reported: never an unhandled rejection.
 */
export function startDiscovery(targets: EngineTargets, opts: { verbose?: boolean }, ctx: Context): Promise<void> {
  const discovered = discoverTargets(targets, opts, ctx);
  discovered.catch(() => undefined);
  preloadEngineClient();
  return discovered;
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
