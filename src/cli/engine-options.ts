import type { Command } from 'commander';
import { type HermesConfig, loadConfig } from '../adapters/config.js';
import { resolveEngines } from '../adapters/docker-context.js';
import { type EngineEndpoint, whyEngine } from '../adapters/engine-host.js';
import type { EngineClient } from '../adapters/engine.js';
import type { Context } from '../context.js';
import { DEFAULT_CONCURRENCY, DEFAULT_RUN_TIMEOUT_MS, DEFAULT_STOP_TIMEOUT_SECONDS, ENV_STOP_IDLE, PROFILE_LABEL } from '../defaults.js';
import { UsageError } from '../errors.js';
import type { HermesHome } from '../core/hermes-home.js';
import { ValueError, parseDuration, parseInstant, parseWholeNumber } from '../core/parse-args.js';
import { type Selection, parseLabelMatcher, selectionFrom } from '../core/selection.js';
import { type RunSettings, resolveRunSettings } from '../reaper/settings.js';
import { collect, homeFrom, optionParser, optionsOnly } from './shared.js';

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
  /** `--stop-idle` (true) / `--no-stop-idle` (false). */
  stopIdle?: boolean;
  /** `--idle-max-processes`: the most processes an idle container may hold. */
  idleMaxProcesses?: number;
  verbose?: boolean;
}

/** The engine and selection options; `output: false` leaves out --log-format and --quiet (status prints one report). */
export function addEngineOptions(cmd: Command, { output = true }: { output?: boolean } = {}): Command {
  optionsOnly(cmd)
    .option('--host <url>', 'engine address, repeatable: unix:///path, tcp://host:port, ssh://user@host (default: --context, $DOCKER_HOST, $DOCKER_CONTEXT, the current docker context, else the first usual Docker/Podman socket that answers)', collect)
    .option('--context <name>', 'docker context whose engine to use')
    .option('--all-profiles', 'every profile: drop the profile filter')
    .option('--lifetime <seconds>', 'terminal lifetime, whole seconds >= 0 (default: $TERMINAL_LIFETIME_SECONDS, else terminal.lifetime_seconds in config.yaml, else 300); threshold = 2 x max(lifetime, 60)', optionParser((v) => parseWholeNumber(v, '--lifetime')))
    .option('--older-than <duration>', 'replace the computed threshold with this age (whole seconds: 3s, 10m, 1h); under 120s with the hermes selection needs --force-threshold', optionParser(parseOlderThan))
    .option('--force-threshold', 'allow --older-than under 120s with the hermes selection (hermes siblings need that margin)')
    .option('--as-of <instant>', 'judge ages as of this ISO-8601 instant instead of now', optionParser((v) => parseInstant(v, '--as-of')))
    .option('--concurrency <n>', 'parallel engine requests per engine, >= 1', optionParser((v) => parseWholeNumber(v, '--concurrency', 1)), DEFAULT_CONCURRENCY)
    .option('--timeout <duration>', 'bound on the whole run (90s, 2m; 0 for none); on expiry report what finished and exit 3', optionParser((v) => parseDuration(v, '--timeout', true)), DEFAULT_RUN_TIMEOUT_MS)
    .option('--label <key[=value]>', 'select by this label instead of hermes-agent=1 (repeatable, all must match)', collectMatchers('--label'))
    .option('--exclude-label <key[=value]>', 'keep containers carrying this label (repeatable; reason "excluded")', collectMatchers('--exclude-label'))
    .option('--profile-label <key>', `label that holds the profile (default: ${PROFILE_LABEL})`)
    .option('--json', 'print one JSON document on stdout');
  if (!output) return cmd;
  return cmd
    .option('--log-format <format>', 'text (default) or json (NDJSON events on stdout)', optionParser(parseLogFormat), 'text')
    .option('-q, --quiet', 'print nothing on success')
    .option('--idle-after <duration>', 'stop a running sandbox idle at least this long (90s, 30m, 1h; default: the threshold computed from the lifetime, also with --older-than)', optionParser((v) => parseDuration(v, '--idle-after')))
    .option('--stop-idle', 'stop idle running sandboxes (the default for the hermes selection; needed with --label)')
    .option('--no-stop-idle', `never stop running sandboxes (also ${ENV_STOP_IDLE}=false or janitor.stop_idle: false in config.yaml)`)
    .option('--idle-max-processes <n>', 'the most processes a running container may hold and still be idle, >= 1 (default: its init and its command, 2 with --init, else 1; also janitor.idle_max_processes in config.yaml); more is in use (a background job) and never stopped', optionParser((v) => parseWholeNumber(v, '--idle-max-processes', 1)))
    .option('-v, --verbose', 'say on stderr which engine is used and why');
}

/** What `reap` and `watch` do to what they act on (`addActionOptions`). */
export interface ActionOptions {
  /** Seconds a stop waits before the engine's SIGKILL. */
  stopTimeout: number;
  keepVolumes?: boolean;
}

/** Options of the commands that act (`reap`, `watch`): how a stop ends a sandbox, and anonymous volumes. */
export function addActionOptions(cmd: Command): Command {
  return cmd
    .option('--stop-timeout <seconds>', 'seconds a stop waits for the sandbox to exit before the engine kills it', optionParser((v) => parseWholeNumber(v, '--stop-timeout')), DEFAULT_STOP_TIMEOUT_SECONDS)
    .option('--keep-volumes', "leave removed containers' anonymous volumes behind (default: they go with the container)");
}

/** A repeatable `KEY[=VALUE]` option, validated as it is collected. */
function collectMatchers(what: string) {
  const check = optionParser((v: string) => parseLabelMatcher(v, what));
  return (value: string, previous: string[] | undefined) => (check(value), collect(value, previous));
}

function parseOlderThan(v: string): number {
  const ms = parseDuration(v, '--older-than');
  if (ms % 1000 !== 0) throw new ValueError(`--older-than must be whole seconds (3s, 90s, 10m), got '${v}'`);
  return ms;
}

function parseLogFormat(v: string): 'text' | 'json' {
  if (v === 'text' || v === 'json') return v;
  throw new ValueError(`--log-format must be 'text' or 'json', got '${v}'`);
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
  const { createDockerodeEngine } = await import('../adapters/dockerode-engine.js');
  return Promise.all(endpoints.map((e) => createDockerodeEngine(e)));
}
