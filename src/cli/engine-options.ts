import type { Command } from 'commander';
import { type HermesConfig, loadConfig } from '../adapters/config.js';
import { type EngineEndpoint, resolveEndpoint } from '../adapters/engine-host.js';
import type { EngineClient } from '../adapters/engine.js';
import type { Context } from '../context.js';
import { DEFAULT_CONCURRENCY, DEFAULT_RUN_TIMEOUT_MS, PROFILE_LABEL } from '../defaults.js';
import { UsageError } from '../errors.js';
import type { HermesHome } from '../core/hermes-home.js';
import { ValueError, parseDuration, parseInstant, parseWholeNumber } from '../core/parse-args.js';
import { thresholdSeconds } from '../core/policy.js';
import { type Selection, defaultSelection, parseLabelMatcher } from '../core/selection.js';
import { resolveLifetime } from '../reaper/settings.js';
import { collect, homeFrom, optionParser } from './shared.js';

/** Options shared by `list` and `reap`. */
export interface EngineCommandOptions {
  host?: string[];
  allProfiles?: boolean;
  lifetime?: number;
  asOf?: Date;
  concurrency: number;
  timeout: number;
  label?: string[];
  excludeLabel?: string[];
  profileLabel?: string;
  json?: boolean;
  logFormat: 'text' | 'json';
  quiet?: boolean;
}

export function addEngineOptions(cmd: Command): Command {
  return cmd
    .option('--host <url>', 'engine address, repeatable: unix:///path, tcp://host:port, ssh://user@host (default: $DOCKER_HOST, else the default socket)', collect)
    .option('--all-profiles', 'every profile: drop the profile filter')
    .option('--lifetime <seconds>', 'terminal lifetime, whole seconds >= 0 (default: $TERMINAL_LIFETIME_SECONDS, else terminal.lifetime_seconds in config.yaml, else 300); threshold = 2 x max(lifetime, 60)', optionParser((v) => parseWholeNumber(v, '--lifetime')))
    .option('--as-of <instant>', 'judge ages as of this ISO-8601 instant instead of now', optionParser((v) => parseInstant(v, '--as-of')))
    .option('--concurrency <n>', 'parallel engine requests per engine, >= 1', optionParser((v) => parseWholeNumber(v, '--concurrency', 1)), DEFAULT_CONCURRENCY)
    .option('--timeout <duration>', 'bound on the whole run (90s, 2m; 0 for none); on expiry report what finished and exit 3', optionParser((v) => parseDuration(v, '--timeout', true)), DEFAULT_RUN_TIMEOUT_MS)
    .option('--label <key[=value]>', 'select by this label instead of hermes-agent=1 (repeatable, all must match)', collectMatchers('--label'))
    .option('--exclude-label <key[=value]>', 'keep containers carrying this label (repeatable; reason "excluded")', collectMatchers('--exclude-label'))
    .option('--profile-label <key>', `label that holds the profile (default: ${PROFILE_LABEL})`)
    .option('--json', 'print one JSON document on stdout')
    .option('--log-format <format>', 'text (default) or json (NDJSON events on stdout)', optionParser(parseLogFormat), 'text')
    .option('-q, --quiet', 'print nothing on success');
}

/** A repeatable `KEY[=VALUE]` option, validated as it is collected. */
function collectMatchers(what: string) {
  const check = optionParser((v: string) => parseLabelMatcher(v, what));
  return (value: string, previous: string[] | undefined) => (check(value), collect(value, previous));
}

function parseLogFormat(v: string): 'text' | 'json' {
  if (v === 'text' || v === 'json') return v;
  throw new ValueError(`--log-format must be 'text' or 'json', got '${v}'`);
}

/** Everything a `list`/`reap` run needs, resolved from flags, environment and config. */
export interface EngineRun {
  home: HermesHome;
  threshold: number;
  lifetimeSource: string;
  asOf: Date;
  selection: Selection;
  endpoints: EngineEndpoint[];
  /** Aborts at the run's `--timeout`, if any. */
  signal: AbortSignal | undefined;
}

/** The hermes home and its config.yaml, loaded once per run. */
export interface LoadedHome {
  home: HermesHome;
  config: HermesConfig;
}

export async function loadHome(cmd: Command, ctx: Context): Promise<LoadedHome> {
  const home = homeFrom(cmd, ctx);
  return { home, config: await loadConfig(home.home) };
}

export async function prepareEngineRun(
  cmd: Command,
  opts: EngineCommandOptions,
  ctx: Context,
  loaded?: LoadedHome,
): Promise<EngineRun> {
  if (opts.json && opts.logFormat === 'json') {
    throw new UsageError("--json and --log-format json cannot be combined: pick one");
  }
  const { home, config } = loaded ?? (await loadHome(cmd, ctx));
  const lifetime = resolveLifetime(opts.lifetime, ctx.env, config);
  const selection = defaultSelection(opts.allProfiles ? null : home.profile);
  if (opts.label?.length) selection.selectors = opts.label.map((l) => parseLabelMatcher(l));
  if (opts.excludeLabel?.length) selection.exclude = opts.excludeLabel.map((l) => parseLabelMatcher(l));
  if (opts.profileLabel !== undefined) {
    if (!opts.profileLabel || /\s|=/.test(opts.profileLabel)) {
      throw new UsageError(`--profile-label must be a label key without '=' or spaces, got '${opts.profileLabel}'`);
    }
    selection.profileLabel = opts.profileLabel;
  }
  const endpoints = (opts.host?.length ? opts.host : [undefined]).map((h) => resolveEndpoint(h, ctx.env, ctx.homedir));
  return {
    home,
    threshold: thresholdSeconds(lifetime.value),
    lifetimeSource: lifetime.source,
    asOf: opts.asOf ?? ctx.now(),
    selection,
    endpoints,
    signal: opts.timeout > 0 ? AbortSignal.timeout(opts.timeout) : undefined,
  };
}

/** Engine clients for the run's endpoints (dockerode is loaded here, never by breakers). */
export async function connectEngines(run: EngineRun): Promise<EngineClient[]> {
  const { createDockerodeEngine } = await import('../adapters/dockerode-engine.js');
  return Promise.all(run.endpoints.map((e) => createDockerodeEngine(e)));
}
