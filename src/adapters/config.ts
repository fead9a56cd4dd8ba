import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CONFIG_FILENAME } from '../defaults.js';
import { UsageError } from '../errors.js';

/** `<home>/config.yaml`, read only when present (the YAML parser is loaded lazily). */
export interface HermesConfig {
  readonly file: string;
  /** Set when the file exists but cannot be read or parsed. */
  readonly problem?: string;
  /** The parsed document (undefined when absent or unusable). */
  readonly data?: unknown;
  /** A value by dotted path (`terminal.lifetime_seconds`), or undefined. */
  get(dotted: string): unknown;
}

export async function loadConfig(home: string): Promise<HermesConfig> {
  const file = path.join(home, CONFIG_FILENAME);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return configOf(file, undefined);
    return configOf(file, undefined, `cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    const { parse } = await import('yaml');
    return configOf(file, parse(text) as unknown);
  } catch (err) {
    const first = String((err as Error).message ?? err).split('\n')[0];
    return configOf(file, undefined, `${file} is not valid YAML (${first})`);
  }
}

/**
 * The one policy for a config.yaml that exists and does not parse (or cannot be read): exit 2 naming it, whichever
 * setting a run needs from it (the janitor's keys, `janitor-settings.ts`, and hermes' own, `hermes-settings.ts`).
 */
export function usableConfig(config: HermesConfig): HermesConfig {
  if (config.problem) throw new UsageError(`${config.problem}: fix the file`);
  return config;
}

export function configOf(file: string, data: unknown, problem?: string): HermesConfig {
  return {
    file,
    ...(problem ? { problem } : {}),
    ...(data !== undefined ? { data } : {}),
    get(dotted: string): unknown {
      let cur: unknown = data;
      for (const key of dotted.split('.')) {
        if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
        cur = (cur as Record<string, unknown>)[key];
      }
      return cur;
    },
  };
}
