/** Label keys, label values and every default, in one place. */

/** hermes' labels and profile names live with what the janitor knows of hermes (`hermes/labels.ts`). */
export { AGENT_LABEL, AGENT_LABEL_VALUE, LABEL_VALUE_MAX, PROFILE_LABEL, PROFILE_NAME_PATTERN } from './hermes/labels.js';

/** Terminal lifetime when neither flag, environment nor config sets one. */
export const DEFAULT_LIFETIME_SECONDS = 300;
/** The lifetime never counts as less than this when computing the threshold. */
export const MIN_LIFETIME_SECONDS = 60;
/** The smallest threshold hermes itself uses (lifetime 0): `--older-than` below it needs `--force-threshold` on hermes' containers. */
export const HERMES_MIN_THRESHOLD_SECONDS = 2 * MIN_LIFETIME_SECONDS;
/** Parallel inspect/remove requests per engine. */
export const DEFAULT_CONCURRENCY = 8;
/**
 * Stats and re-check requests in flight per engine. Docker answers a one-shot stats request at its stats
 * collector's next pass (once a second while anyone is subscribed), so the samples of a sweep are asked for
 * together, not 8 at a time: they are cheap subscriptions, answered in the same pass.
 */
export const STATS_CONCURRENCY = 128;
/** Stops in flight per engine (`docker stop` of many containers runs them all at once). */
export const STOP_CONCURRENCY = 32;
/** Bound on a whole `reap`/`list` run. */
export const DEFAULT_RUN_TIMEOUT_MS = 10_000;
/** Bound on a single engine request. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** Largest row of the engine's container list (bytes of its JSON); a larger one makes the answer malformed. */
export const MAX_LIST_ROW_BYTES = 1024 * 1024;

export const ENV_HERMES_HOME = 'HERMES_HOME';
export const ENV_LIFETIME = 'TERMINAL_LIFETIME_SECONDS';
export const ENV_REAPER_SWITCH = 'TERMINAL_DOCKER_ORPHAN_REAPER';
/**
 * `true`/`1`/`yes`/`on`: the janitor reaps even where hermes' own orphan reaper is switched off (to leave removal to
 * the janitor, e.g. so that a stopped sandbox is kept for `--stopped-retention`); unset or anything else: it follows
 * hermes' switch.
 */
export const ENV_JANITOR_REAPER = 'HERMES_JANITOR_REAPER';
export const ENV_MAX_STOP_BLOCKS = 'HERMES_JANITOR_MAX_STOP_BLOCKS';
/** `1`/`true`/`yes`/`on`: the tool-loop breaker warns only (never denies nor ends a turn; loops are counted and told). */
export const ENV_TOOL_LOOP_WARN_ONLY = 'HERMES_JANITOR_TOOL_LOOP_WARN_ONLY';
export const ENV_DEBUG = 'HERMES_JANITOR_DEBUG';
/** `false`/`0`/`no` turns the idle rule (stopping idle running sandboxes) off. */
export const ENV_STOP_IDLE = 'HERMES_JANITOR_STOP_IDLE';
/** `false`/`0`/`no`/`off`: the re-check before a stop always asks the engine's stats, never reads the cgroup here. */
export const ENV_CGROUP_SAMPLES = 'HERMES_JANITOR_CGROUP_SAMPLES';
/**
 * The procfs root the janitor reads hermes' processes from (the owners of sandboxes and shell snapshots, `status`'s
 * hermes processes); default `/proc`. For tests and diagnosis: a test points it at a tree of its own so that hermes
 * processes of the machine it runs on do not count. The exec-tree pass always reads `/proc`.
 */
export const ENV_PROC_ROOT = 'HERMES_JANITOR_PROC_ROOT';
/**
 * The directory the janitor takes for the system's `/tmp` when it lists where hermes puts session files
 * (`hermes/session-dirs.ts`); default `/tmp`. For tests and diagnosis: a test points it at a directory of its own, so
 * that session files of the machine it runs on (a real hermes', another test's) are never judged by its runs.
 */
export const ENV_SYSTEM_TMP = 'HERMES_JANITOR_SYSTEM_TMP';
/** Seconds the engine's stop waits before its SIGKILL (`--stop-timeout`). */
export const DEFAULT_STOP_TIMEOUT_SECONDS = 10;
/**
 * Seconds a run keeps, after a stop's grace, for the engine's SIGKILL and its answer: a stop's grace is cut to what the
 * run has left minus this, and `--stop-timeout` may be at most `--timeout` minus this. Measured here (load average
 * 13 on 2 cores): `docker stop -t 0` of a busybox sleep, the kill and the answer, 0.6 s on Docker 20.10, 0.7 s on
 * Podman 4.3 (CLI included); whole seconds of grace leave up to 1 s more.
 */
export const KILL_MARGIN_SECONDS = 2;
/** A container's exit code after the engine's SIGKILL (128 + 9). */
export const KILLED_EXIT_CODE = 137;
/** The idle-observation state, under `<home>/janitor/`. */
export const IDLE_STATE_FILENAME = 'idle.json';
/** `reap --metrics-file` when the flag is not given. */
export const ENV_METRICS_FILE = 'HERMES_JANITOR_METRICS_FILE';

/** Name of the hermes home under the user's home directory. */
export const DEFAULT_HOME_DIRNAME = '.hermes';
export const CONFIG_FILENAME = 'config.yaml';
/** hermes' `.env` (in a home, and in the managed directory). */
export const DOTENV_FILENAME = '.env';
/** The managed directory (administrator-pinned `.env` and `config.yaml`) when `HERMES_MANAGED_DIR` does not name one. */
export const DEFAULT_MANAGED_DIR = '/etc/hermes';
export const ENV_MANAGED_DIR = 'HERMES_MANAGED_DIR';

/** hermes' sandbox root when set (persistent sandboxes' host directories); else `<home>/sandboxes`. */
export const ENV_TERMINAL_SANDBOX_DIR = 'TERMINAL_SANDBOX_DIR';
/** The sandbox root's name under a hermes home. */
export const SANDBOX_ROOT_DIRNAME = 'sandboxes';
/** The directory under the sandbox root holding one directory per Docker task (`<root>/docker/<task dir>`). */
export const SANDBOX_DOCKER_DIRNAME = 'docker';
/** Prefix of the name a task directory is renamed to while the janitor removes it (claimed by one run only). */
export const SANDBOX_REMOVING_PREFIX = '.hermes-janitor-removing.';
/** How often `watch` checks the sandbox directories (the removal pass, the metrics): once an hour. */
export const SANDBOX_DIRS_EVERY_MS = 3_600_000;
/** Another interval for that check (a duration: `30m`; tests use seconds). */
export const ENV_SANDBOX_DIRS_EVERY = 'HERMES_JANITOR_SANDBOX_DIRS_EVERY';

/**
 * `watch`'s heartbeat: how often it pings each engine and, while every engine is connected, says it is working (the
 * metric `hermes_janitor_heartbeat_timestamp_seconds`, its sweep stamps, its record for `status`): every 30 s.
 */
export const WATCH_HEARTBEAT_MS = 30_000;
/** Another interval for the heartbeat (a duration: `10s`; tests use a second). */
export const ENV_HEARTBEAT_EVERY = 'HERMES_JANITOR_HEARTBEAT_EVERY';

/** The images hermes used and when (the image budget), under `<home>/janitor/`. */
export const IMAGES_STATE_FILENAME = 'images.json';
/** `--images-min-age` when not given: an image used or created within the last hour stays. */
export const DEFAULT_IMAGES_MIN_AGE_MS = 3_600_000;
/** How often `watch` runs its image pass (with `--images-over`): every ten minutes. */
export const IMAGES_EVERY_MS = 600_000;
/** Another interval for that pass (a duration: `5m`; tests use seconds). */
export const ENV_IMAGES_EVERY = 'HERMES_JANITOR_IMAGES_EVERY';
/** The idle threshold of an owned sandbox (a living hermes on this host may serve its profile): 24 h. */
export const DEFAULT_IDLE_AFTER_OWNED_SECONDS = 86_400;
/** How long a sandbox the janitor stopped is kept before the exited rule applies: 7 days. */
export const DEFAULT_STOPPED_RETENTION_SECONDS = 7 * 86_400;
/** `watch --metrics-listen`: connections served at once (`--metrics-max-connections`); more are refused. */
export const DEFAULT_METRICS_MAX_CONNECTIONS = 64;

/**
 * Where root keeps what it records for itself about a home another user owns (idle samples, image uses, stamps,
 * locks): `<this>/<key of the home>/`, mode 0700 (core/trust.ts `stateDirName`). Tests point it elsewhere.
 */
export const ENV_STATE_DIR = 'HERMES_JANITOR_STATE_DIR';
export const DEFAULT_STATE_DIR = '/var/lib/hermes-janitor';
