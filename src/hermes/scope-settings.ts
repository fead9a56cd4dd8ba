/**
 * A profile's terminal settings as a routed turn reads them: the scope reading. hermes-agent
 * `tools/terminal_scope.py` `build_profile_terminal_scope(home)` (the multiplexed surfaces: gateway, dashboard/TUI,
 * cron; every 0.21 release): hermes' defaults (`hermes_cli/config_defaults.py` `DEFAULT_CONFIG['terminal']` and the
 * module's `_TOOL_LEVEL_DEFAULTS`: lifetime 300, orphan reaper on, sandbox_dir and shared key empty), then the
 * profile's `.env` (its `TERMINAL_*` keys only, `env-file.ts`), then the keys the profile's `config.yaml` writes
 * under `terminal:` (`TERMINAL_CONFIG_ENV_MAP`, values as `_terminal_env_value` writes them). The process environment
 * and the managed `.env` never reach it. A file present but unreadable, a `.env` line that does not parse, a
 * config.yaml that does not parse or is not a mapping, or a `terminal:` that is not a mapping refuses the reading
 * (`TerminalPolicyUnavailable`): hermes runs nothing for that profile.
 *
 * Older releases read every profile in the launch order (`hermes/settings.ts`); the newest also lets the launch
 * profile's own environment through (`env_overlay`) and merges the managed config.yaml: both are in the launch
 * reading, and the janitor acts on whichever of the two removes later (`readings.ts`).
 */
import { type HermesSettingName, HERMES_SETTINGS, type HermesSettingSpec, type SettingWhere, type Sourced, pythonEnvText } from './settings.js';
import type { EnvFileReading } from './env-file.js';

/** What the scope reading is built from (null: the file is absent). */
export interface ScopeInputs extends SettingWhere {
  dotenv: { path: string; reading: EnvFileReading } | null;
  /** `<home>/config.yaml`: parsed, or why it could not be (unreadable, not YAML). */
  config: { path: string; data: unknown } | { path: string; problem: string } | null;
}

/** The settings a routed turn reads (each with its source), or why hermes refuses the profile's turns. */
export type ScopeReading = { settings: Partial<Record<HermesSettingName, Sourced<unknown>>> } | { refused: string };

/** Whether a setting is part of the scope (a `TERMINAL_*` variable): the others only exist in the launch reading. */
export function inScope(spec: HermesSettingSpec<unknown>): boolean {
  return spec.envVar.startsWith('TERMINAL_');
}

/** The `terminal:` map of a profile config.yaml as the scope takes it, or why it refuses the file. */
function terminalOf(config: ScopeInputs['config']): { map: Record<string, unknown> } | { refused: string } {
  if (config === null) return { map: {} };
  if ('problem' in config) return { refused: config.problem };
  const data = config.data;
  if (data === null || data === undefined) return { map: {} };
  if (typeof data !== 'object' || Array.isArray(data)) return { refused: `${config.path} must contain a mapping` };
  const t = (data as Record<string, unknown>).terminal;
  if (t === undefined || t === null) return { map: {} };
  if (typeof t !== 'object' || Array.isArray(t)) return { refused: `terminal in ${config.path} must be a mapping` };
  return { map: t as Record<string, unknown> };
}

/** The scope reading of every `TERMINAL_*` setting of `HERMES_SETTINGS`. */
export function resolveScopeSettings(inputs: ScopeInputs): ScopeReading {
  if (inputs.dotenv && 'refused' in inputs.dotenv.reading) return { refused: inputs.dotenv.reading.refused };
  const t = terminalOf(inputs.config);
  if ('refused' in t) return { refused: t.refused };
  const terminal = t.map;
  const env = inputs.dotenv && 'values' in inputs.dotenv.reading ? inputs.dotenv.reading.values : new Map<string, string>();
  const out: Partial<Record<HermesSettingName, Sourced<unknown>>> = {};
  for (const [name, spec] of Object.entries(HERMES_SETTINGS) as [HermesSettingName, HermesSettingSpec<unknown>][]) {
    if (!inScope(spec)) continue;
    const k = spec.configKey;
    const fromConfig = k !== null && Object.hasOwn(terminal, k) && terminal[k] !== null;
    const raw = fromConfig ? pythonEnvText(terminal[k!]) : env.get(spec.envVar);
    const source = fromConfig ? `config.yaml terminal.${k}` : env.has(spec.envVar) ? inputs.dotenv!.path : 'default';
    try {
      out[name] = { value: spec.interpret(raw, inputs), source };
    } catch (err) {
      return { refused: `${spec.envVar} from ${source} ${(err as Error).message}` };
    }
  }
  return { settings: out };
}
