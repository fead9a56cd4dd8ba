import os from 'node:os';
import { loadConfig } from '../adapters/config.js';
import { homeAccess } from '../adapters/trust.js';
import { resolveEngines } from '../adapters/docker-context.js';
import type { EngineClient } from '../adapters/engine.js';
import { DEFAULT_CONCURRENCY } from '../defaults.js';
import { type HermesHome, resolveHermesHome } from '../hermes/home.js';
import { type Selection, profileValuesOf, selectionFrom } from '../core/selection.js';
import type { StateStore } from '../adapters/state-file.js';
import type { LabelRules } from '../hermes/judgement.js';
import { type RunSettings, janitorReaps, resolveRunSettings } from './settings.js';
import type { ListResult, ReapResult } from './sweep-types.js';

export interface ReaperOptions {
  /**
   * The engine; default: a dockerode client for `host`, else `$DOCKER_HOST` / docker context, else the first usual
   * Docker/Podman socket that answers (engine discovery).
   */
  engine?: EngineClient;
  /** Engine address (`unix://`, `tcp://`, `ssh://`) when `engine` is not given. */
  host?: string;
  /** Hermes home (default `$HERMES_HOME`, else `~/.hermes`): gives the default profile and `config.yaml`. */
  home?: string;
  /** Profile to select; `null` for every profile; default: derived from the home. */
  profile?: string | null;
  /** Selector labels (`KEY` or `KEY=VALUE`) instead of `hermes-agent=1`. */
  labels?: string[];
  /** Containers with any of these labels are kept (`excluded`). */
  excludeLabels?: string[];
  /** The label holding the profile (default `hermes-profile`). */
  profileLabel?: string;
  /** Terminal lifetime in seconds (default: hermes' own, as hermes resolves it from `home`'s config.yaml and .env files and `env`, else 300). */
  lifetimeSeconds?: number;
  /** Parallel requests (default 8). */
  concurrency?: number;
  /** Environment for home, lifetime and engine resolution (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** The clock (default `() => new Date()`): ages are judged and idle samples stamped with it. */
  now?: () => Date;
  /**
   * Stop running sandboxes proven idle (default: on for the hermes selection, off with `labels`; off when
   * `HERMES_JANITOR_STOP_IDLE` is false/0/no or `janitor.stop_idle: false` is in config.yaml).
   */
  stopIdle?: boolean;
  /** Idle threshold in seconds (default: the reap threshold). */
  idleAfterSeconds?: number;
  /** Seconds a stop waits before the engine's SIGKILL (default 10). */
  stopTimeoutSeconds?: number;
  /**
   * The most processes a running container may hold and still be idle (default: `janitor.idle_max_processes` in
   * config.yaml, else its init and its command: 2 with `HostConfig.Init`, else 1). More: in use, never stopped.
   */
  idleMaxProcesses?: number;
  /** Leave removed containers' anonymous volumes behind (default: they go with the container). */
  keepVolumes?: boolean;
  /** Where idle observations live between calls (default: `<home>/janitor/idle.json`). */
  idleStore?: StateStore;
  /**
   * The re-check right before a stop may read the container's cgroup on this host (default: yes, unless
   * `HERMES_JANITOR_CGROUP_SAMPLES` is false/0/no); false: always the engine's one-shot stats.
   */
  cgroupSamples?: boolean;
  /**
   * Seconds past which a running sandbox's `docker exec` is abandoned (default: `janitor.exec_max_age` in config.yaml,
   * else 2 x the longest command timeout hermes can use). Hermes selection only.
   */
  execMaxAgeSeconds?: number;
  /** Report abandoned exec trees, never end them (default: `janitor.keep_exec_trees`, else they are ended by `reap`). */
  keepExecTrees?: boolean;
}

export interface SweepCallOptions {
  /** Judge ages as of this instant (default: the clock). */
  asOf?: Date;
  /** Stops the sweep; what finished is still returned (`interrupted`). */
  signal?: AbortSignal;
}

/** The in-process reaper: the same selection, policy and removal rules as `hermes-janitor list` / `reap`. */
export interface Reaper {
  /** The threshold in seconds that `list` and `reap` use. */
  threshold(): Promise<number>;
  /** Every selected container in any state, with the verdict `reap` would reach. */
  list(options?: SweepCallOptions): Promise<ListResult & { thresholdSeconds: number; asOf: Date }>;
  /**
   * Removes (never forced, with their anonymous volumes) the exited and never-started containers older than the
   * threshold, and stops running sandboxes proven idle; `dryRun` changes nothing.
   */
  reap(options?: SweepCallOptions & { dryRun?: boolean }): Promise<ReapResult & { thresholdSeconds: number; asOf: Date }>;
}

/** The reaper's settings, and the label rules of the profiles that judge its selection. */
type ReaperSettings = RunSettings & { rules: LabelRules };

/**
 * The settings `createReaper` runs with (read once, at the first call): hermes' own, both readings, of its home and of
 * the profiles sharing its container identity; its selection made that identity.
 */
async function reaperSettings(
  options: ReaperOptions,
  where: { env: Record<string, string | undefined>; now: () => Date; home: HermesHome; selection: Selection },
): Promise<ReaperSettings> {
  const { env, now, home, selection } = where;
  homeAccess(home.home); // whose home it is, as root (adapters/trust.ts): its files are then read by the trust rules
  const config = await loadConfig(home.home);
  const { loadHermesSettings } = await import('../adapters/hermes-settings.js');
  const hermes = await loadHermesSettings({ home: home.home, env, cwd: process.cwd(), config });
  for (const w of hermes.warnings) process.emitWarning(w, 'HermesJanitorWarning');
  const { judgeRun } = await import('../hermes/profile-set.js');
  const run = { profile: home.profile, home: home.home, settings: hermes.settings, refused: hermes.refused };
  const judged = await judgeRun(run, selection, { root: home.root, env, cwd: process.cwd(), allProfiles: false, janitorReaps: janitorReaps(env) });
  for (const w of judged.warnings) process.emitWarning(w, 'HermesJanitorWarning');
  const s = await resolveRunSettings(
    {
      lifetimeSeconds: options.lifetimeSeconds,
      stopIdle: options.stopIdle,
      idleAfterSeconds: options.idleAfterSeconds,
      idleMaxProcesses: options.idleMaxProcesses,
      stopTimeoutSeconds: options.stopTimeoutSeconds,
      cgroupSamples: options.cgroupSamples,
      idleStore: options.idleStore,
      execMaxAgeSeconds: options.execMaxAgeSeconds,
      keepExecTrees: options.keepExecTrees,
    },
    { env, config, hermes: hermes.settings, home: home.home, now, selection, selectorGiven: Boolean(options.labels?.length), naming: 'options' },
  );
  // Its own threshold is the longest of its labels' (those it shares with other profiles included).
  const labels = profileValuesOf(selection) ?? [];
  const longest =
    options.lifetimeSeconds === undefined ? Math.max(s.thresholdSeconds, ...labels.map((l) => judged.rules.thresholdByLabel[l] ?? 0)) : s.thresholdSeconds;
  return { ...s, thresholdSeconds: longest, rules: judged.rules };
}

/**
 * Creates an in-process reaper.
 *
 * @example
 * const reaper = createReaper({ profile: 'work', lifetimeSeconds: 0 });
 * const { removed, failed } = await reaper.reap();
 */
export function createReaper(options: ReaperOptions = {}): Reaper {
  const env = options.env ?? process.env;
  const now = options.now ?? (() => new Date());
  const home = resolveHermesHome({ home: options.home, env, homedir: os.homedir() });
  const selection = selectionFrom({
    profile: options.profile === undefined ? home.profile : options.profile,
    labels: options.labels,
    excludeLabels: options.excludeLabels,
    profileLabel: options.profileLabel || undefined,
  });
  let engine: Promise<EngineClient> | undefined;
  const getEngine = () =>
    (engine ??= options.engine
      ? Promise.resolve(options.engine)
      : (async () => {
          // Nothing named (host, DOCKER_HOST, a docker context): the first usual Docker/Podman socket that answers.
          const { discoverEndpoints } = await import('../adapters/engine-discovery.js');
          const [endpoint] = await discoverEndpoints(resolveEngines(options.host ? [options.host] : undefined, undefined, env, os.homedir()), {
            env,
            homedir: os.homedir(),
          });
          const { createDockerodeEngine } = await import('../adapters/dockerode-engine.js');
          return createDockerodeEngine(endpoint!);
        })());
  let settings: Promise<ReaperSettings> | undefined;
  const getSettings = () => (settings ??= reaperSettings(options, { env, now, home, selection }));
  const getThreshold = async () => (await getSettings()).thresholdSeconds;
  const base = async (o: SweepCallOptions) => {
    const s = await getSettings();
    return {
      engine: await getEngine(),
      selection,
      thresholdSeconds: s.thresholdSeconds,
      ...(options.lifetimeSeconds === undefined ? { thresholdByProfile: s.rules.thresholdByLabel } : {}),
      held: s.rules.held,
      asOf: o.asOf ?? now(),
      concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
      idle: s.idle,
      ...(o.signal ? { signal: o.signal } : {}),
    };
  };
  return {
    threshold: getThreshold,
    async list(o = {}) {
      const req = await base(o);
      const { list } = await import('./sweep.js');
      return { ...(await list(req)), thresholdSeconds: req.thresholdSeconds, asOf: req.asOf };
    },
    async reap(o = {}) {
      const req = await base(o);
      const { reap } = await import('./sweep.js');
      return {
        ...(await reap({ ...req, dryRun: Boolean(o.dryRun), keepVolumes: Boolean(options.keepVolumes) })),
        thresholdSeconds: req.thresholdSeconds,
        asOf: req.asOf,
      };
    },
  };
}
