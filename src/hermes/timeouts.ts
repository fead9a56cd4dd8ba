/**
 * How long hermes lets a command run in a sandbox (hermes-agent `tools/terminal_tool.py`: `FOREGROUND_MAX_TIMEOUT`
 * from `TERMINAL_MAX_FOREGROUND_TIMEOUT`, 600; the default timeout `terminal.timeout` / `TERMINAL_TIMEOUT`, 180;
 * `tools/code_execution_tool.py`: `code_execution.timeout`, 300; read up to 0.21.3). The exec-tree pass bounds an exec
 * at twice the longest (`passes/exec-trees/settings.ts`); the first two are read through both of hermes' readings
 * (`settings.ts`, `readings.ts`: the longer is acted on).
 */
import type { HermesConfig } from '../adapters/config.js';
import { wholeNumberOf } from '../core/config-number.js';

/** hermes' defaults for its command timeouts (hermes-agent `tools/terminal_tool.py`). */
export const HERMES_FOREGROUND_MAX_TIMEOUT = 600;
export const HERMES_TERMINAL_TIMEOUT = 180;
/** hermes' default for `execute_code` (hermes-agent `tools/code_execution_tool.py`). */
export const HERMES_CODE_EXECUTION_TIMEOUT = 300;

/** hermes' command timeouts on this host, in seconds, with where each came from. */
export interface CommandTimeouts {
  /** Each timeout hermes can give a command run in a sandbox (name: value in seconds). */
  timeouts: ReadonlyArray<{ name: string; seconds: number; source: string }>;
}

/** A timeout and where it came from (hermes' settings, `settings.ts`). */
interface SourcedSeconds {
  value: number;
  source: string;
}

/** A positive whole number as hermes' `int()` would take it (`'90'`, ` 90 `, 90, 90.5 as 90), else undefined. */
function seconds(raw: unknown): number | undefined {
  const n = wholeNumberOf(raw, { floor: true });
  return n !== undefined && n > 0 ? n : undefined;
}

/**
 * Every timeout hermes can give a command run in a sandbox, read the way hermes reads it (the first two come from
 * the settings resolver, so `<home>/.env`, the managed `.env` and config.yaml's `terminal.timeout` count as in hermes):
 * - `TERMINAL_MAX_FOREGROUND_TIMEOUT` (600): the cap on a timeout the model asks for;
 * - `terminal.timeout` / `TERMINAL_TIMEOUT` (180): the default timeout, which that cap does not apply to;
 * - `code_execution.timeout` in config.yaml, else 300: `execute_code` on a sandbox backend.
 * A config.yaml that cannot be parsed gives hermes' default for `code_execution.timeout`.
 */
export function hermesCommandTimeouts(
  hermes: { foregroundMaxTimeoutSeconds: SourcedSeconds; terminalTimeoutSeconds: SourcedSeconds },
  config: HermesConfig,
): CommandTimeouts {
  const code = seconds(config.problem ? undefined : config.get('code_execution.timeout'));
  const fg = hermes.foregroundMaxTimeoutSeconds;
  const term = hermes.terminalTimeoutSeconds;
  return {
    timeouts: [
      { name: 'TERMINAL_MAX_FOREGROUND_TIMEOUT', seconds: fg.value, source: fg.source },
      { name: 'terminal.timeout', seconds: term.value, source: term.source },
      {
        name: 'code_execution.timeout',
        seconds: code ?? HERMES_CODE_EXECUTION_TIMEOUT,
        source: code ? `code_execution.timeout in ${config.file}` : 'default',
      },
    ],
  };
}
