/**
 * The options of the engine commands (`list`, `reap`, `watch`, `status`), declared once, as data: commander
 * registers them from here (`addEngineOptions`, `addActionOptions` and the commands' own) and the shell start-up
 * fast path (`reap --once-per` with fresh stamps) parses argv with those marked `startup`. Cheap to import: the fast
 * path loads it at every shell start-up, so it imports no commander, no engine client, no config reader.
 */
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_METRICS_MAX_CONNECTIONS,
  DEFAULT_RUN_TIMEOUT_MS,
  DEFAULT_STOP_TIMEOUT_SECONDS,
  ENV_METRICS_FILE,
  ENV_STOP_IDLE,
  PROFILE_LABEL,
} from '../defaults.js';
import { ValueError, parseDuration, parseInstant, parseWholeNumber } from '../core/parse-args.js';
import { UsageError } from '../errors.js';
import { parseLabelMatcher } from '../core/selection.js';
import type { OptionDecl } from './option-table.js';
import { formatDuration } from './format-duration.js';

function parseOlderThan(v: string): number {
  const ms = parseDuration(v, '--older-than');
  if (ms % 1000 !== 0) throw new ValueError(`--older-than must be whole seconds (3s, 90s, 10m), got '${v}'`);
  return ms;
}

function parseLogFormat(v: string): 'text' | 'json' {
  if (v === 'text' || v === 'json') return v;
  throw new ValueError(`--log-format must be 'text' or 'json', got '${v}'`);
}

/** A `KEY[=VALUE]` label matcher, checked, kept as given. */
const matcher = (what: string) => (v: string) => (parseLabelMatcher(v, what), v);

/** Which engines, which containers, and the age policy: every engine command. */
export const ENGINE_OPTIONS: readonly OptionDecl[] = [
  {
    flag: '--host',
    value: '<url>',
    repeatable: true,
    startup: true,
    description:
      'engine address, repeatable: unix:///path, tcp://host:port, ssh://user@host (default: --context, $DOCKER_HOST, $DOCKER_CONTEXT, the current docker context, else the first usual Docker/Podman socket that answers)',
  },
  { flag: '--context', value: '<name>', startup: true, description: 'docker context whose engine to use' },
  { flag: '--all-profiles', startup: true, description: 'every profile: drop the profile filter' },
  {
    flag: '--homes',
    value: '<path|glob>',
    repeatable: true,
    description:
      "hermes homes to judge every profile of, in one run, repeatable, a glob such as '/home/*/.hermes' (quoted): each container by the homes " +
      'that have its profile, the later reading where they differ; a profile none has is kept (unknown-profile)',
  },
  {
    flag: '--all-homes',
    description: "as --homes, with each user's ~/.hermes (the password database) and the HERMES_HOME of every living hermes process",
  },
  {
    flag: '--lifetime',
    value: '<seconds>',
    startup: true,
    parse: (v) => parseWholeNumber(v, '--lifetime'),
    description:
      "terminal lifetime, whole seconds >= 0 (default: hermes' own, as hermes resolves it: terminal.lifetime_seconds in config.yaml, the .env " +
      'files, $TERMINAL_LIFETIME_SECONDS, else 300; status shows which); threshold = 2 x max(lifetime, 60)',
  },
  {
    flag: '--older-than',
    value: '<duration>',
    parse: parseOlderThan,
    description: 'replace the computed threshold with this age (whole seconds: 3s, 10m, 1h); under 120s with the hermes selection needs --force-threshold',
  },
  { flag: '--force-threshold', description: 'allow --older-than under 120s with the hermes selection (hermes siblings need that margin)' },
  { flag: '--as-of', value: '<instant>', parse: (v) => parseInstant(v, '--as-of'), description: 'judge ages as of this ISO-8601 instant instead of now' },
  {
    flag: '--concurrency',
    value: '<n>',
    startup: true,
    parse: (v) => parseWholeNumber(v, '--concurrency', 1),
    defaultValue: DEFAULT_CONCURRENCY,
    description: 'parallel engine requests per engine, >= 1',
  },
  {
    flag: '--timeout',
    value: '<duration>',
    startup: true,
    parse: (v) => parseDuration(v, '--timeout', true),
    defaultValue: DEFAULT_RUN_TIMEOUT_MS,
    defaultDescription: formatDuration(DEFAULT_RUN_TIMEOUT_MS),
    description: 'bound on the whole run: 90s, 2m, 1h; a bare number is seconds (0 for none); on expiry report what finished and exit 3',
  },
  {
    flag: '--label',
    value: '<key[=value]>',
    repeatable: true,
    startup: true,
    parse: matcher('--label'),
    description: 'select by this label instead of hermes-agent=1 (repeatable, all must match)',
  },
  {
    flag: '--exclude-label',
    value: '<key[=value]>',
    repeatable: true,
    startup: true,
    parse: matcher('--exclude-label'),
    description: 'keep containers carrying this label (repeatable; reason "excluded")',
  },
  { flag: '--profile-label', value: '<key>', startup: true, description: `label that holds the profile (default: ${PROFILE_LABEL})` },
  { flag: '--json', description: 'print one JSON document on stdout' },
];

/** How a run reports, and the idle rule: the commands that print per container (`list`, `reap`, `watch`). */
export const OUTPUT_OPTIONS: readonly OptionDecl[] = [
  {
    flag: '--log-format',
    value: '<format>',
    parse: parseLogFormat,
    defaultValue: 'text',
    values: ['text', 'json'],
    description: 'text or json (NDJSON events on stdout)',
  },
  { flag: '--quiet', short: '-q', startup: true, description: 'print nothing on success' },
  {
    flag: '--idle-after',
    value: '<duration>',
    parse: (v) => parseDuration(v, '--idle-after'),
    description: 'stop a running sandbox idle at least this long (90s, 30m, 1h; default: the threshold computed from the lifetime, also with --older-than)',
  },
  {
    flag: '--idle-after-owned',
    value: '<duration>',
    parse: (v) => parseIdleAfterOwnedFlag(v),
    description:
      "stop a sandbox that a living hermes on this host may own (its profile's) only once idle this long: 24h (default), 90m, or never (also " +
      'janitor.idle_after_owned in config.yaml)',
  },
  {
    flag: '--stopped-retention',
    value: '<duration>',
    parse: (v) => parseDuration(v, '--stopped-retention'),
    description:
      'keep a sandbox the janitor stopped this long before the exited rule removes it, so hermes can start it again: 7d (default) (also ' +
      'janitor.stopped_retention in config.yaml)',
  },
  { flag: '--stop-idle', description: 'stop idle running sandboxes (the default for the hermes selection; needed with --label)' },
  { flag: '--no-stop-idle', description: `never stop running sandboxes (also ${ENV_STOP_IDLE}=false or janitor.stop_idle: false in config.yaml)` },
  {
    flag: '--idle-max-processes',
    value: '<n>',
    parse: (v) => parseWholeNumber(v, '--idle-max-processes', 1),
    description:
      'the most processes a running container may hold and still be idle, >= 1 (default: its init and its command, 2 with --init, else 1; also ' +
      'janitor.idle_max_processes in config.yaml); more is in use (a background job) and never stopped',
  },
  { flag: '--verbose', short: '-v', description: 'say on stderr which engine is used and why' },
  {
    flag: '--exec-max-age',
    value: '<duration>',
    parse: (v) => parseDuration(v, '--exec-max-age'),
    description:
      "a sandbox's `docker exec` running longer than this is abandoned: its tree is ended and not counted as use (20m, 1h; default: " +
      'janitor.exec_max_age in config.yaml, else 2 x the longest command timeout hermes can use: TERMINAL_MAX_FOREGROUND_TIMEOUT, ' +
      'terminal.timeout, code_execution.timeout)',
  },
];

/**
 * The options of OUTPUT_OPTIONS that change a verdict (the idle rule, the exec bound), not how a run reports: `status`
 * takes them too, so that it judges as the `list` or `reap` beside it does (the same declarations, not copies).
 */
export const POLICY_OUTPUT_OPTIONS: readonly OptionDecl[] = OUTPUT_OPTIONS.filter((d) =>
  ['--idle-after', '--idle-after-owned', '--stopped-retention', '--stop-idle', '--no-stop-idle', '--idle-max-processes', '--exec-max-age'].includes(d.flag),
);

/** What the commands that act (`reap`, `watch`) do to what they act on. */
export const ACTION_OPTIONS: readonly OptionDecl[] = [
  {
    flag: '--stop-timeout',
    value: '<seconds>',
    parse: (v) => parseWholeNumber(v, '--stop-timeout'),
    defaultValue: DEFAULT_STOP_TIMEOUT_SECONDS,
    description:
      "seconds a stop waits for the sandbox to exit before the engine kills it, cut to what the run's --timeout leaves minus 2 s (given larger than " +
      'that: exit 2)',
  },
  {
    flag: '--keep-exec-trees',
    description:
      'report `docker exec` trees running past the bound (abandoned by a hermes timeout) but never end them (also janitor.keep_exec_trees: true in ' +
      'config.yaml)',
  },
  { flag: '--keep-volumes', description: "leave removed containers' anonymous volumes behind (default: they go with the container)" },
];

/** `--idle-after-owned`: a duration in ms, or null for `never` (this module imports nothing: the fast paths load it). */
function parseIdleAfterOwnedFlag(v: string): number | null {
  return v.trim().toLowerCase() === 'never' ? null : parseDuration(v, '--idle-after-owned');
}

/** `reap`'s own. */
export const REAP_OPTIONS: readonly OptionDecl[] = [
  { flag: '--dry-run', short: '-n', description: 'remove nothing; report what would be removed' },
  {
    flag: '--once-per',
    value: '<duration>',
    startup: true,
    parse: (v) => parseDuration(v, '--once-per'),
    description: 'skip at once (no engine contact) if a sweep completed within this duration: 90s, 30m, 1h, 1d',
  },
  {
    flag: '--fail-open',
    startup: true,
    description: 'exit 0 on an unreachable engine, a timeout, failed removals or any unexpected error (one line on stderr)',
  },
  { flag: '--background', startup: true, description: 'detach at once; the run writes to <home>/logs/janitor.log' },
  { flag: '--wait', startup: true, description: 'wait (within --timeout) for another reap of this home and engine instead of skipping' },
  { flag: '--plan-out', value: '<file>', description: 'with --dry-run: write the exact ids it would remove, with engine, selection and policy' },
  { flag: '--plan', value: '<file>', description: 'remove only the ids in this plan (engine, selection and policy come from it), each re-checked now' },
  {
    flag: '--metrics-file',
    value: '<path>',
    startup: true,
    description:
      `at the end of every run, write a Prometheus text file there (atomically, mode 0644) for node_exporter's textfile collector ` +
      `(default: $${ENV_METRICS_FILE})`,
  },
];

/** Every option `reap` takes but the passes' (`passes/`: none is a start-up one), in the order its help lists them. */
export const REAP_COMMAND_OPTIONS: readonly OptionDecl[] = [...REAP_OPTIONS, ...ACTION_OPTIONS, ...ENGINE_OPTIONS, ...OUTPUT_OPTIONS];

/** `--metrics-listen HOST:PORT`: `127.0.0.1:9464`, `:9464` (every address), `[::1]:9464`; port 0 for any free one. */
export function parseListenOption(v: string): { host: string | undefined; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(v.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new UsageError(`--metrics-listen must be HOST:PORT (127.0.0.1:9464, :9464, [::1]:9464), got '${v}'`);
  }
  const host = m[1] ?? m[2];
  return { host: host || undefined, port };
}

/** `watch`'s own. */
export const WATCH_OPTIONS: readonly OptionDecl[] = [
  { flag: '--dry-run', short: '-n', description: 'remove nothing; log what would be removed' },
  {
    flag: '--metrics-listen',
    value: '<host:port>',
    parse: parseListenOption,
    description: 'serve Prometheus metrics on /metrics and health on /healthz (200 while every engine is connected)',
  },
  {
    flag: '--metrics-max-connections',
    value: '<n>',
    parse: (v) => parseWholeNumber(v, '--metrics-max-connections', 1),
    defaultValue: DEFAULT_METRICS_MAX_CONNECTIONS,
    description: 'with --metrics-listen: connections served at once; more are refused (/healthz keeps a slot of its own)',
  },
];

/** `status`'s own. */
export const STATUS_OPTIONS: readonly OptionDecl[] = [
  {
    flag: '--schedule',
    value: '<duration>',
    parse: (v) => parseDuration(v, '--schedule'),
    description:
      'how often the janitor is meant to sweep here (the cron or timer interval: 15m, 1h): no completed sweep within twice this needs ' +
      "attention, none recorded at all too (default: each sweep's own, its --once-per or watch's heartbeat, else 1h)",
  },
];
