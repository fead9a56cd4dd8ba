/**
 * The terminal lifetime a run judges by, resolved in one place (a leaf: the run's settings, `reaper/settings.ts`, and
 * the passes whose thresholds follow it take it from here, so that the settings can take the passes from their list).
 */
import type { Sourced } from '../hermes/settings.js';
import { UsageError } from '../errors.js';

/**
 * Terminal lifetime in seconds: `--lifetime` (or the library's option), else hermes' own (`hermes`: config.yaml,
 * the managed and home `.env` files, the environment, 300; see `hermes/settings.ts`).
 */
export function resolveLifetime(flag: number | undefined, hermes: Sourced<number>, flagName = '--lifetime'): Sourced<number> {
  if (flag !== undefined) {
    if (!Number.isSafeInteger(flag) || flag < 0) throw new UsageError(`${flagName} must be a whole number of seconds >= 0, got '${flag}'`);
    return { value: flag, source: flagName };
  }
  return hermes;
}
