/**
 * The janitor's own settings in config.yaml (`janitor.*`): every key declared once here, with its kind, the flag that
 * overrides it and a value it accepts, and read by the one typed reader `readJanitorSetting`. The policy for a value
 * that does not read is the same for every key: a usage error (exit 2) naming the key, the file, what it accepts and
 * what it got. A config.yaml that does not parse is refused before any key is read (`usableConfig` in
 * adapters/config.ts), the one way for every key and for hermes' own settings: exit 2 naming the file.
 *
 * The flags themselves are parsed by the option tables (`--stopped-retention 3d` is checked there): a flag
 * given wins over its key, and the key is then not read at all (junk in a key a flag overrides is not an error).
 */
import path from 'node:path';
import { type HermesConfig, usableConfig } from '../adapters/config.js';
import { wholeNumberOf } from '../core/config-number.js';
import { ValueError, parseDuration } from '../core/parse-args.js';
import { DEFAULT_IDLE_AFTER_OWNED_SECONDS, DEFAULT_STOPPED_RETENTION_SECONDS } from '../defaults.js';
import { UsageError } from '../errors.js';
import { type KeepsMore, keepsMore, untrustedSettingLine, UNTRUSTED_SETTING } from '../core/setting-worth.js';
import { noteUntrusted } from '../adapters/settings-worth.js';
import { HERMES_FOREGROUND_MAX_TIMEOUT } from '../hermes/timeouts.js';
import { unreachable } from '../util/unreachable.js';

/** How a key's value is read. */
export type SettingKind = 'switch' | 'duration' | 'number' | 'size' | 'list';

/** One `janitor.*` key. */
export interface JanitorSetting<K extends SettingKind = SettingKind> {
  /** The key in config.yaml. */
  readonly key: `janitor.${string}`;
  readonly kind: K;
  /** The flag that overrides it (`reap`, `watch`, `status`), if any. */
  readonly flag?: `--${string}`;
  /** What it accepts, as said in the docs and in the error for a value that does not read. */
  readonly accepts: string;
  /** What it does (the docs' table). */
  readonly description: string;
  /** Its default, as the docs say it. */
  readonly defaultText: string;
  /** `duration`: `never` is accepted (read as null). */
  readonly never?: true;
  /** YAML `false` turns it off (read as absent). */
  readonly falseIsOff?: true;
  /** `number`: the least value accepted. */
  readonly min?: number;
  /** `size` and `list` (each item): the value's own parser; throws a `ValueError`. */
  readonly parse?: (raw: string, what: string) => unknown;
  /**
   * Which values keep more than the default (core/setting-worth.ts): all a user without engine rights may set, as
   * read (a duration in ms); another value of theirs is refused for the run (`untrusted-setting`), the default used.
   */
  readonly keepsMore: KeepsMore;
}

/** The values a switch accepts, as YAML booleans or as text (any case). */
const ON = ['true', 'yes', 'on', '1'];
const OFF = ['false', 'no', 'off', '0'];

/** What a key of each kind reads as. */
export interface SettingValue {
  switch: boolean;
  /** Milliseconds; null for `never`. */
  duration: number | null;
  number: number;
  size: unknown;
  list: unknown[];
}

const shown = (raw: unknown) => (typeof raw === 'string' ? raw : (JSON.stringify(raw) ?? String(raw)));

/** The one error for a value that does not read. */
function junk(s: JanitorSetting, config: HermesConfig, raw: unknown): UsageError {
  const fix = s.flag ? `fix the file or pass ${s.flag}` : 'fix the file';
  return new UsageError(`${s.key} in ${config.file} must be ${s.accepts}, got '${shown(raw)}': ${fix}`);
}

function readSwitch(raw: unknown): boolean | undefined {
  if (typeof raw === 'boolean') return raw;
  if (typeof raw === 'number' && (raw === 0 || raw === 1)) return raw === 1;
  if (typeof raw !== 'string') return undefined;
  const t = raw.trim().toLowerCase();
  return ON.includes(t) ? true : OFF.includes(t) ? false : undefined;
}

function readDuration(s: JanitorSetting, raw: unknown): number | null | undefined {
  if (s.never && typeof raw === 'string' && raw.trim().toLowerCase() === 'never') return null;
  // A number is seconds (a finite one: YAML's .inf is not a duration).
  if (typeof raw === 'number') return Number.isFinite(raw) && raw > 0 ? Math.round(raw * 1000) : undefined;
  if (typeof raw !== 'string') return undefined;
  try {
    return parseDuration(raw, s.key);
  } catch {
    return undefined;
  }
}

function readParsed(s: JanitorSetting, raw: unknown): unknown {
  if (typeof raw !== 'string' && typeof raw !== 'number') return undefined;
  try {
    return s.parse ? s.parse(String(raw), s.key) : String(raw);
  } catch (err) {
    if (err instanceof ValueError) return undefined;
    throw err;
  }
}

function readList(s: JanitorSetting, raw: unknown): unknown[] | undefined {
  const items = typeof raw === 'string' ? [raw] : Array.isArray(raw) && raw.every((r) => typeof r === 'string') ? (raw as string[]) : null;
  if (!items) return undefined;
  const out: unknown[] = [];
  for (const item of items) {
    const v = readParsed(s, item);
    if (v === undefined) return undefined;
    out.push(v);
  }
  return out;
}

/**
 * The value of `setting` in config.yaml, read by its kind; undefined when the key is absent (or null: YAML's empty
 * value). A value that does not read is a usage error naming the key, the file and what it accepts.
 */
export function readJanitorSetting<K extends SettingKind>(config: HermesConfig, setting: JanitorSetting<K>): SettingValue[K] | undefined {
  const raw = usableConfig(config).get(setting.key);
  if (raw === undefined || raw === null || (raw === false && setting.falseIsOff)) return undefined;
  let v: unknown;
  switch (setting.kind) {
    case 'switch':
      v = readSwitch(raw);
      break;
    case 'duration':
      v = readDuration(setting, raw);
      break;
    case 'number': {
      const n = wholeNumberOf(raw);
      v = n !== undefined && n >= (setting.min ?? 0) ? n : undefined;
      break;
    }
    case 'size':
      v = readParsed(setting, raw);
      break;
    case 'list':
      v = readList(setting, raw);
      break;
    default:
      return unreachable(setting.kind, 'setting kind');
  }
  if (v === undefined) throw junk(setting, config, raw);
  const worth = config.worth;
  if (worth?.worth === 'keep-more' && !keepsMore(setting.keepsMore, v)) {
    const u = { home: path.dirname(config.file), file: config.file, setting: setting.key, value: shown(raw) };
    const used = `the default (${setting.defaultText.replace(/`/g, '')})`;
    noteUntrusted({ ...u, used, reason: UNTRUSTED_SETTING, detail: untrustedSettingLine({ ...u, used }, worth) });
    return undefined;
  }
  return v as SettingValue[K];
}

/** What a switch accepts. */
export const SWITCH_ACCEPTS = 'true or false (also yes/no, on/off, 1/0)';

/** The keys of the container sweep (the idle rule, owners, exec trees); each pass declares its own (`passes/`). */
export const STOP_IDLE: JanitorSetting<'switch'> = {
  key: 'janitor.stop_idle',
  kind: 'switch',
  flag: '--stop-idle or --no-stop-idle',
  accepts: SWITCH_ACCEPTS,
  description: 'false: running sandboxes are never stopped (as `--no-stop-idle` and `HERMES_JANITOR_STOP_IDLE=false`)',
  defaultText: 'true (false with `--label`)',
  keepsMore: { more: 'switch', keeps: false, default: true },
};
export const IDLE_MAX_PROCESSES: JanitorSetting<'number'> = {
  key: 'janitor.idle_max_processes',
  kind: 'number',
  flag: '--idle-max-processes',
  accepts: 'a whole number >= 1',
  min: 1,
  description: 'the most processes a running sandbox may hold and still be idle',
  defaultText: 'its init and its command (2 with `--init`, else 1)',
  // The default is 1 for a sandbox without an init: more is a laxer in-use rule for some.
  keepsMore: { more: 'fewer', than: 1 },
};
export const IDLE_AFTER_OWNED: JanitorSetting<'duration'> = {
  key: 'janitor.idle_after_owned',
  kind: 'duration',
  flag: '--idle-after-owned',
  never: true,
  accepts: "a duration such as 24h, 7d or 90m (or seconds), or 'never'",
  description: 'the idle threshold of a sandbox a living hermes on this host may own',
  defaultText: '24h',
  keepsMore: { more: 'longer', than: DEFAULT_IDLE_AFTER_OWNED_SECONDS * 1000 },
};
export const STOPPED_RETENTION: JanitorSetting<'duration'> = {
  key: 'janitor.stopped_retention',
  kind: 'duration',
  flag: '--stopped-retention',
  accepts: 'a duration such as 24h, 7d or 90m (or seconds)',
  description: 'how long a sandbox the janitor stopped is kept before the exited rule removes it',
  defaultText: '7d',
  keepsMore: { more: 'longer', than: DEFAULT_STOPPED_RETENTION_SECONDS * 1000 },
};
export const EXEC_MAX_AGE: JanitorSetting<'duration'> = {
  key: 'janitor.exec_max_age',
  kind: 'duration',
  flag: '--exec-max-age',
  accepts: 'a duration such as 20m or 1h (or seconds)',
  description: "a sandbox's `docker exec` running longer is abandoned",
  defaultText: '2 x the longest command timeout hermes can use',
  // The bound hermes' default timeouts give (2 x its foreground cap, the longest of them).
  keepsMore: { more: 'longer', than: 2 * HERMES_FOREGROUND_MAX_TIMEOUT * 1000 },
};
export const KEEP_EXEC_TREES: JanitorSetting<'switch'> = {
  key: 'janitor.keep_exec_trees',
  kind: 'switch',
  flag: '--keep-exec-trees',
  accepts: SWITCH_ACCEPTS,
  description: 'true: abandoned exec trees are reported, never ended',
  defaultText: 'false',
  keepsMore: { more: 'switch', keeps: true, default: false },
};

/** The sweep's keys, in the order the docs list them. */
export const SWEEP_SETTINGS: readonly JanitorSetting[] = [STOP_IDLE, IDLE_MAX_PROCESSES, IDLE_AFTER_OWNED, STOPPED_RETENTION, EXEC_MAX_AGE, KEEP_EXEC_TREES];
