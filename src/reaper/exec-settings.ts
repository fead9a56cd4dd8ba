/**
 * The exec-tree pass's settings: the bound (2 x the longest timeout hermes can give a command run in a sandbox, or
 * `--exec-max-age` / `janitor.exec_max_age`) and the switch (`--keep-exec-trees` / `janitor.keep_exec_trees`).
 *
 * hermes' own timeouts are read in ONE function, `hermesCommandTimeouts`, from the run's environment and config.yaml:
 * the one place to rewire onto a resolver that also reads hermes' `.env` files.
 */
import type { HermesConfig } from '../adapters/config.js';
import type { HermesSettings } from '../core/hermes-settings.js';
import { type CommandTimeouts, execBoundSeconds } from '../core/exec-trees.js';
import { UsageError } from '../errors.js';
import type { ProcAccess } from '../adapters/proc-table.js';
import type { ClientReader } from '../adapters/exec-clients.js';
import { wholeNumberOf } from '../core/config-number.js';
import { EXEC_MAX_AGE, KEEP_EXEC_TREES, readJanitorSetting } from './janitor-settings.js';

/** hermes' default for `execute_code` (hermes-agent `tools/code_execution_tool.py`). */
export const HERMES_CODE_EXECUTION_TIMEOUT = 300;

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
export function hermesCommandTimeouts(hermes: Pick<HermesSettings, 'foregroundMaxTimeoutSeconds' | 'terminalTimeoutSeconds'>, config: HermesConfig): CommandTimeouts {
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

/** The exec-tree pass as a sweep takes it. */
export interface ExecTreeOptions {
  /** Seconds past which a running exec is abandoned. */
  boundSeconds: number;
  /** Where the bound came from (`--exec-max-age`, `janitor.exec_max_age in ...`, or `2 x <timeout> (<source>)`). */
  boundSource: string;
  /** End abandoned trees (false: `--keep-exec-trees`, only reported). */
  end: boolean;
  /** The host's processes (default: `/proc`). */
  proc?: ProcAccess;
  /** The host's `docker`/`podman` client processes, for the client rule (default: `/proc`'s, `adapters/exec-clients.ts`). */
  clients?: ClientReader;
}

/** `--exec-max-age` (seconds), else `janitor.exec_max_age` (a duration or seconds), else 2 x hermes' longest timeout. */
export function resolveExecTrees(
  inputs: { execMaxAgeSeconds?: number | undefined; keepExecTrees?: boolean | undefined },
  where: { hermes: HermesSettings; config: HermesConfig },
): ExecTreeOptions {
  const { config } = where;
  const end = !(inputs.keepExecTrees ?? readJanitorSetting(config, KEEP_EXEC_TREES) ?? false);
  if (inputs.execMaxAgeSeconds !== undefined) {
    if (!(inputs.execMaxAgeSeconds > 0)) throw new UsageError(`--exec-max-age must be a duration > 0, got '${inputs.execMaxAgeSeconds}'`);
    return { boundSeconds: inputs.execMaxAgeSeconds, boundSource: '--exec-max-age', end };
  }
  const ms = readJanitorSetting(config, EXEC_MAX_AGE);
  if (ms !== undefined && ms !== null) return { boundSeconds: ms / 1000, boundSource: `janitor.exec_max_age in ${config.file}`, end };
  const t = hermesCommandTimeouts(where.hermes, config);
  const longest = t.timeouts.reduce((a, b) => (b.seconds > a.seconds ? b : a));
  return { boundSeconds: execBoundSeconds(t), boundSource: `2 x ${longest.name} ${longest.seconds}s (${longest.source})`, end };
}
