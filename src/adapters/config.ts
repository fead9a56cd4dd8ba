import { requirePackage } from '../util/require-package.js';
import path from 'node:path';
import { CONFIG_FILENAME, DEFAULT_RUN_TIMEOUT_MS } from '../defaults.js';
import { ExitCode, JanitorError, UsageError } from '../errors.js';
import { SETTINGS_MAX_BYTES } from '../core/trust.js';
import type { SettingsWorth } from '../core/setting-worth.js';
import { TrustError, readFileSafely } from './trust.js';

/** `<home>/config.yaml`, read only when present (the YAML parser is loaded lazily). */
export interface HermesConfig {
  readonly file: string;
  /** Set when the file exists but cannot be read or parsed. */
  readonly problem?: string;
  /** The parsed document (undefined when absent or unusable). */
  readonly data?: unknown;
  /** A value by dotted path (`terminal.lifetime_seconds`), or undefined. */
  get(dotted: string): unknown;
  /**
   * What its `janitor.*` keys are worth (core/setting-worth.ts; absent: as written): with `keep-more`, the one reader
   * (`reaper/janitor-settings.ts`) refuses a value that would not keep more than the default.
   */
  readonly worth?: SettingsWorth;
}

/** The same file with what its settings are worth (`HermesConfig.worth`). */
export function withWorth(config: HermesConfig, worth: SettingsWorth): HermesConfig {
  return worth.worth === 'as-written' ? config : { ...config, get: config.get, worth };
}

export interface ConfigReadOptions {
  /** The run's `--timeout`: a parse still running when it fires is cut short (exit 3). Default: 10 s. */
  signal?: AbortSignal | undefined;
}

/**
 * Reads `<dir>/config.yaml` (a home's, or the managed one): as `readFileSafely` reads a settings file (a regular file
 * of at most 1 MiB; as root over another user's home, walked with that user's rights and never through a symlink).
 * A file that is there but refused (a symlink where it may not be followed, a FIFO, a device, too large) is a usage
 * error naming it (exit 2); one that cannot be read (permissions) or parsed is returned with its `problem`.
 */
export async function loadConfig(home: string, opts: ConfigReadOptions = {}): Promise<HermesConfig> {
  const file = path.join(home, CONFIG_FILENAME);
  let text: string;
  try {
    text = readFileSafely(file, SETTINGS_MAX_BYTES);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return configOf(file, undefined);
    if (err instanceof TrustError && code !== 'EISDIR') throw new UsageError(`${err.message}: fix or remove it`);
    return configOf(file, undefined, `cannot read ${file}: ${code === 'EISDIR' ? 'EISDIR: illegal operation on a directory' : (err as Error).message}`);
  }
  try {
    return configOf(file, await parseYaml(text, file, opts.signal));
  } catch (err) {
    if (err instanceof JanitorError) throw err;
    const first = String((err as Error).message ?? err).split('\n')[0];
    return configOf(file, undefined, `${file} is not valid YAML (${first})`);
  }
}

/**
 * Texts up to this size are parsed on the main thread, larger ones in a worker. hermes' installers seed config.yaml
 * with its cli-config.yaml.example (126 KB in December 2026, mostly comments), so that size is the usual one: parsed
 * here in about 40 ms. The parser's worst case at this size, a file of nested flow sequences, took 0.24 s here.
 */
const IN_PROCESS_YAML_BYTES = 256 * 1024;
const MANY_DOCUMENTS = 'the file holds more than one YAML document (--- between them): hermes reads only a single one';

/**
 * The worker: parses `workerData.text` with the YAML package at `workerData.yaml` and answers `{ data }` or `{ error }`
 * (its first line). Inline, so that it runs the same from the built files and from the sources (the unit tests).
 */
const WORKER = `const { parentPort, workerData } = require('node:worker_threads');
try {
  const y = require(workerData.yaml);
  const docs = y.loadAll(workerData.text, { schema: y.CORE_SCHEMA });
  if (docs.length > 1) throw new Error(${JSON.stringify(MANY_DOCUMENTS)});
  parentPort.postMessage({ data: docs[0] ?? null });
}
catch (err) { parentPort.postMessage({ error: String((err && err.message) || err).split('\\n')[0] }); }`;

/**
 * The parsed YAML (js-yaml, YAML 1.2's core schema: the reading of the janitor's earlier parser, `yaml`, which took
 * 0.25-0.35 s on hermes' seeded config.yaml where js-yaml takes 0.04 s). A large text is parsed in a worker thread
 * (`WORKER`), terminated when `signal` fires (or after 10 s without one), and the run's `--timeout` bounds its
 * settings too. A parse error is thrown as an Error with the parser's first line.
 */
async function parseYaml(text: string, file: string, signal: AbortSignal | undefined): Promise<unknown> {
  if (text.length <= IN_PROCESS_YAML_BYTES) {
    const { loadAll, CORE_SCHEMA } = requirePackage('js-yaml') as typeof import('js-yaml');
    // A file of several documents is refused, as hermes' loader refuses it; one with none (empty, comments only) is null.
    const docs = loadAll(text, { schema: CORE_SCHEMA });
    if (docs.length > 1) throw new Error(MANY_DOCUMENTS);
    return docs[0] ?? null;
  }
  const { Worker } = requirePackage('node:worker_threads') as typeof import('node:worker_threads');
  const bound = signal ?? AbortSignal.timeout(DEFAULT_RUN_TIMEOUT_MS);
  const tooLong = () =>
    new JanitorError(
      `reading ${file} did not finish within the run's --timeout: make the file smaller (it is ${text.length} bytes) or raise --timeout`,
      ExitCode.ENGINE,
    );
  if (bound.aborted) throw tooLong();
  const worker = new Worker(WORKER, { eval: true, workerData: { text, yaml: requirePackage.resolve('js-yaml') } });
  let onAbort = () => {};
  try {
    return await new Promise<unknown>((resolve, reject) => {
      onAbort = () => reject(tooLong());
      bound.addEventListener('abort', onAbort, { once: true });
      worker.once('message', (m: { data?: unknown; error?: string }) => (m.error !== undefined ? reject(new Error(m.error)) : resolve(m.data)));
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the YAML parser stopped (exit ${code})`)));
    });
  } finally {
    bound.removeEventListener('abort', onAbort);
    void worker.terminate();
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
