/**
 * Reads a profile's named execution targets (the rules are `hermes/targets.ts`): the static ones of its config.yaml
 * and the managed config.yaml (already parsed by the caller), and its runtime registry, hermes-agent
 * `tools/execution_target_registry.py`: one JSON fragment per provider, `<home>/runtime/execution-targets.d/
 * <provider>.json` (a provider name `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`, the file's stem; names starting with `.` are
 * hermes' own state), `{"version": 1, "provider": <stem>, "targets": {<name>: {"config": {...}, "owner_id",
 * "generation", "state": "ready" | "draining"}}}`, at most 1 MiB each. Files are read by the trust rules (as root over
 * another user's home: that user's words, never through a symlink). Bounded: at most `MAX_REGISTRY_FILES` fragments
 * and `MAX_TARGETS_PER_FILE` targets each (hermes' own limit); a fragment that does not parse, or what is past a
 * bound, is a warning and counts for nothing, as hermes withholds it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { type ExecutionTarget, type TargetEntry, flatTerminal, resolveTarget, staticTargets } from '../hermes/targets.js';
import { SETTINGS_MAX_BYTES } from '../core/trust.js';
import { TrustError, listDirSafely, readFileSafely } from './trust.js';
import { errorMessage } from '../errors.js';

/** The most fragment files read from one registry (hermes has one per provider). */
export const MAX_REGISTRY_FILES = 64;
/**
 * At most this many entries of a registry directory are read (a slice at a time, only the fragments' names kept): a
 * directory its owner filled past it is read this far, with a warning (#47).
 */
export const REGISTRY_DIR_ENTRIES_CAP = 4096;
/** The most targets read from one fragment (hermes' `MAX_TARGETS_PER_PROVIDER`). */
export const MAX_TARGETS_PER_FILE = 1024;

const PROVIDER = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The registry directory of a home. */
export function registryDir(home: string): string {
  return path.join(home, 'runtime', 'execution-targets.d');
}

/** The fragment files of a registry (sorted), or why it cannot be listed; none when it is absent. */
function fragments(dir: string, warnings: string[]): string[] {
  // Most homes have no registry: one stat says so (a registry that is there is listed by the trust rules).
  if (!existsSync(dir)) return [];
  let names: string[];
  try {
    // At most REGISTRY_DIR_ENTRIES_CAP entries read, the fragments' names only kept (#47).
    const listed = listDirSafely(dir, {
      max: REGISTRY_DIR_ENTRIES_CAP,
      keep: (name, directory) => !directory && name.endsWith('.json') && !name.startsWith('.'),
    });
    if (listed.more)
      warnings.push(
        `${dir} holds more than ${REGISTRY_DIR_ENTRIES_CAP} entries: only the fragments among the first ${REGISTRY_DIR_ENTRIES_CAP} read are known`,
      );
    names = listed.map((e) => e.name).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    warnings.push(`cannot list ${dir} (${err instanceof TrustError ? err.message : (code ?? errorMessage(err))}): its runtime execution targets are not read`);
    return [];
  }
  if (names.length > MAX_REGISTRY_FILES) {
    warnings.push(`${dir} holds ${names.length} fragments: only the first ${MAX_REGISTRY_FILES} are read`);
    names = names.slice(0, MAX_REGISTRY_FILES);
  }
  return names;
}

/** The records of one fragment, or a warning naming it. */
function records(file: string, warnings: string[]): TargetEntry[] {
  const provider = path.basename(file, '.json');
  let data: unknown;
  try {
    data = JSON.parse(readFileSafely(file, SETTINGS_MAX_BYTES));
  } catch (err) {
    warnings.push(`cannot read ${file} (${err instanceof SyntaxError ? 'not JSON' : errorMessage(err)}): its execution targets are not counted`);
    return [];
  }
  if (!PROVIDER.test(provider) || !isMap(data) || data.version !== 1 || data.provider !== provider || !isMap(data.targets)) {
    warnings.push(`${file} is not a version 1 registry fragment of provider ${provider}: its execution targets are not counted`);
    return [];
  }
  const from = `runtime registry ${file}`;
  const out: TargetEntry[] = [];
  for (const [name, rec] of Object.entries(data.targets).slice(0, MAX_TARGETS_PER_FILE)) {
    if (name === '' || !isMap(rec) || !isMap(rec.config)) continue;
    out.push({
      name,
      entry: rec.config,
      from,
      path: `${file} targets.${name}.config`,
      registry: { provider, state: typeof rec.state === 'string' ? rec.state : '?' },
    });
  }
  return out;
}

/** The runtime registry's records of a home (none when it has no registry). */
export function registryTargets(home: string, warnings: string[]): TargetEntry[] {
  const dir = registryDir(home);
  return fragments(dir, warnings).flatMap((name) => records(path.join(dir, name), warnings));
}

export interface TargetFiles {
  home: string;
  /** `<home>/config.yaml` parsed (undefined: absent or not read). */
  config: unknown;
  /** The managed config.yaml parsed, and its path, when there is one. */
  managed: { file: string; data: unknown } | null;
}

/** Every named execution target of a profile, resolved (none: the home has none, and behaves as before). */
export function readExecutionTargets(files: TargetFiles, warnings: string[]): ExecutionTarget[] {
  const managedName = files.managed ? files.managed.file : '';
  const entries = [
    ...staticTargets(files.config, 'config.yaml'),
    ...(files.managed ? staticTargets(files.managed.data, managedName) : []),
    ...registryTargets(files.home, warnings),
  ];
  if (entries.length === 0) return [];
  const flat = flatTerminal(files.config, files.managed?.data, managedName);
  return entries.map((e) => resolveTarget(e, flat));
}
