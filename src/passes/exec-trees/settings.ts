/**
 * The exec-tree pass's settings: the bound (2 x the longest timeout hermes can give a command run in a sandbox, or
 * `--exec-max-age` / `janitor.exec_max_age`) and the switch (`--keep-exec-trees` / `janitor.keep_exec_trees`).
 *
 * hermes' own timeouts are read in ONE function, `hermes/timeouts.ts` `hermesCommandTimeouts`.
 */
import type { HermesConfig } from '../../adapters/config.js';
import type { HermesSettings } from '../../hermes/settings.js';
import { execBoundSeconds } from './rule.js';
import { hermesCommandTimeouts } from '../../hermes/timeouts.js';
import { UsageError } from '../../errors.js';
import type { ProcAccess } from './proc-table.js';
import type { ClientReader } from './clients.js';
import { EXEC_MAX_AGE, KEEP_EXEC_TREES, readJanitorSetting } from '../../reaper/janitor-settings.js';

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
  /** The host's `docker`/`podman` client processes, for the client rule (default: `/proc`'s, `passes/exec-trees/clients.ts`). */
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

/** Two profiles' options of one label as one: the longer bound (with its source), and trees kept if either keeps them. */
export function laterExecTrees(x: ExecTreeOptions, y: ExecTreeOptions): ExecTreeOptions {
  return { ...(y.boundSeconds > x.boundSeconds ? y : x), end: x.end && y.end };
}

/** The run's options with a label's own bound and switch over them (its process readers are the run's). */
export function withLabelBound(run: ExecTreeOptions, label: ExecTreeOptions): ExecTreeOptions {
  return { ...run, boundSeconds: label.boundSeconds, boundSource: label.boundSource, end: label.end };
}
