/** Label keys, label values and every default, in one place. */

/** Label that marks a container as started by hermes-agent (value `1`). */
export const AGENT_LABEL = 'hermes-agent';
export const AGENT_LABEL_VALUE = '1';
/** Label holding the (sanitized) profile name. */
export const PROFILE_LABEL = 'hermes-profile';
/** Label holding the (sanitized) task id. */
export const TASK_LABEL = 'hermes-task-id';

/** Terminal lifetime when neither flag, environment nor config sets one. */
export const DEFAULT_LIFETIME_SECONDS = 300;
/** The lifetime never counts as less than this when computing the threshold. */
export const MIN_LIFETIME_SECONDS = 60;
/** Parallel inspect/remove requests per engine. */
export const DEFAULT_CONCURRENCY = 8;
/** Bound on a whole `reap`/`list` run. */
export const DEFAULT_RUN_TIMEOUT_MS = 10_000;
/** Bound on a single engine request. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** hermes-agent's rule for a profile directory name. */
export const PROFILE_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** Maximum length of a sanitized label value. */
export const LABEL_VALUE_MAX = 63;

export const ENV_HERMES_HOME = 'HERMES_HOME';
export const ENV_LIFETIME = 'TERMINAL_LIFETIME_SECONDS';
export const ENV_REAPER_SWITCH = 'TERMINAL_DOCKER_ORPHAN_REAPER';
export const ENV_MAX_STOP_BLOCKS = 'HERMES_JANITOR_MAX_STOP_BLOCKS';
export const ENV_DEBUG = 'HERMES_JANITOR_DEBUG';
/** `reap --metrics-file` when the flag is not given. */
export const ENV_METRICS_FILE = 'HERMES_JANITOR_METRICS_FILE';

/** Name of the hermes home under the user's home directory. */
export const DEFAULT_HOME_DIRNAME = '.hermes';
export const CONFIG_FILENAME = 'config.yaml';
