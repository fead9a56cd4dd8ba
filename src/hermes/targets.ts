/**
 * Named execution targets, and what they do to a profile's lifetime and reaper switch (pure: the parsed files in).
 *
 * hermes-agent `tools/execution_targets.py` `resolve_execution_target` (source text of main; release not
 * established): `terminal.targets.<name>` is a mapping per target; a target inherits every flat `terminal:` key
 * (`targets` and `default_target` aside) and its own entry overrides them; its backend is `backend`, else `env_type`,
 * else `local` (the earlier text: the first non-empty of them; the later: the first present), one of local, docker,
 * ssh, modal, daytona, singularity, vercel_sandbox. `tools/execution_target_overlay.py`
 * `overlay_runtime_execution_targets` adds the profile's runtime registry (`<home>/runtime/execution-targets.d/
 * <provider>.json`, `{version: 1, provider, targets: {<name>: {config, owner_id, generation, state}}}`, read in
 * `adapters/execution-targets.ts`): a `ready` record becomes a target, a `draining` one, one shadowed by a static
 * name, two providers claiming one name, or records without static targets or activation are withheld.
 *
 * `tools/terminal_tool.py` `_maybe_reap_docker_orphans` (targets-aware): the threshold is 2 x max(60, the longest of
 * the calling target's lifetime and `lifetime_seconds` (default 300) of every docker target); the reaper runs unless
 * the calling target's `docker_orphan_reaper` is false.
 *
 * The janitor, acting on what removes later: every docker target counts, a withheld registry record too (its
 * sandboxes may outlive its record); the longest lifetime of the flat readings and the targets is the profile's;
 * hermes' reaper counts as off when any of them that could cover the container says off. Other backends (ssh, modal,
 * ...) make no docker sandbox: they are listed, and do not count.
 */
import { wholeNumberOf } from '../core/config-number.js';
import { DEFAULT_LIFETIME_SECONDS } from '../defaults.js';
import { HERMES_SETTINGS, type HermesSettings, type Sourced, type TargetReading, pythonEnvText } from './settings.js';

/** One target as read from one file. */
export interface TargetEntry {
  name: string;
  /** Its settings as written (the target's own keys). */
  entry: Record<string, unknown>;
  /** Where it was read, for a person: `config.yaml`, `<managed dir>/config.yaml`, `runtime registry <file>`. */
  from: string;
  /** How the setting path is spelled in `from` (`config.yaml terminal.targets.box`, `<file> targets.box.config`). */
  path: string;
  /** A registry record's state and provider (absent for a static target). */
  registry?: { provider: string; state: string };
}

/** The flat `terminal:` keys a target inherits, each with where it was written. */
export type FlatTerminal = Record<string, { value: unknown; source: string }>;

/** One named execution target as the janitor reads it. */
export interface ExecutionTarget {
  name: string;
  from: string;
  /** Its backend (lower-case), as hermes resolves it. */
  backend: string;
  /** A docker target: it counts. */
  docker: boolean;
  /** Its lifetime, or null when it is not a whole number (hermes skips it). */
  lifetimeSeconds: number | null;
  lifetimeSource: string;
  dockerOrphanReaper: boolean;
  reaperSource: string;
  registry?: { provider: string; state: string };
}

const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The `terminal:` map of a parsed config.yaml, or null. */
export function terminalMap(data: unknown): Record<string, unknown> | null {
  return isMap(data) && isMap(data.terminal) ? data.terminal : null;
}

/** The static targets of one parsed config.yaml (`from`: how the file is named). Entries that are not maps are skipped. */
export function staticTargets(data: unknown, from: string): TargetEntry[] {
  const targets = terminalMap(data)?.targets;
  if (!isMap(targets)) return [];
  return Object.entries(targets)
    .filter(([name, e]) => name !== '' && isMap(e))
    .map(([name, e]) => ({ name, entry: e as Record<string, unknown>, from, path: `${from} terminal.targets.${name}` }));
}

/** The flat keys of the user's and the managed `terminal:` (the managed file wins key by key, as hermes merges them). */
export function flatTerminal(user: unknown, managed: unknown, managedName: string): FlatTerminal {
  const out: FlatTerminal = {};
  for (const [t, name] of [
    [terminalMap(user), 'config.yaml'],
    [terminalMap(managed), managedName],
  ] as const) {
    if (!t) continue;
    for (const [k, v] of Object.entries(t)) if (k !== 'targets' && k !== 'default_target') out[k] = { value: v, source: `${name} terminal.${k}` };
  }
  return out;
}

const norm = (v: unknown) => (typeof v === 'string' ? v.trim().toLowerCase() : '');

/** The backends the two texts of `resolve_execution_target` give (first non-empty; first present), as a set. */
function backendsOf(merged: Record<string, unknown>): string[] {
  const earlier = norm(merged.backend) || norm(merged.env_type) || 'local';
  const later = 'backend' in merged ? norm(merged.backend) : 'env_type' in merged ? norm(merged.env_type) : 'local';
  return [...new Set([earlier, later].filter((b) => b !== ''))];
}

/** A key of a target: its own, else inherited from the flat `terminal:`, else undefined. */
function keyOf(t: TargetEntry, flat: FlatTerminal, key: string): { value: unknown; source: string } | undefined {
  if (Object.hasOwn(t.entry, key)) return { value: t.entry[key], source: `${t.path}.${key}` };
  const f = flat[key];
  return f ? { value: f.value, source: `${f.source} (inherited by target ${t.name})` } : undefined;
}

/** One target resolved: backend, lifetime (`int()` of its value, default 300), reaper switch. */
export function resolveTarget(t: TargetEntry, flat: FlatTerminal): ExecutionTarget {
  const merged: Record<string, unknown> = Object.fromEntries(Object.entries(flat).map(([k, v]) => [k, v.value]));
  Object.assign(merged, t.entry);
  const backends = backendsOf(merged);
  const docker = backends.includes('docker');
  const life = keyOf(t, flat, 'lifetime_seconds');
  const lifetimeSeconds = life === undefined ? DEFAULT_LIFETIME_SECONDS : (wholeNumberOf(life.value, { floor: true }) ?? null);
  const reaper = keyOf(t, flat, 'docker_orphan_reaper');
  const on = reaper === undefined || HERMES_SETTINGS.dockerOrphanReaper.interpret(pythonEnvText(reaper.value));
  return {
    name: t.name,
    from: t.from,
    backend: docker ? 'docker' : backends[0]!,
    docker,
    lifetimeSeconds,
    lifetimeSource: life?.source ?? `default (target ${t.name})`,
    dockerOrphanReaper: on,
    reaperSource: reaper?.source ?? `default (target ${t.name})`,
    ...(t.registry ? { registry: t.registry } : {}),
  };
}

/**
 * The settings with the targets applied: the lifetime is the longest of the flat readings and every docker target's,
 * hermes' reaper off when the flat readings or any docker target say off; both carry the targets read (`targets`) and,
 * when a target decided the value, its name (`target`) and source. Without targets the settings are returned as they are.
 */
export function withTargets(settings: HermesSettings, targets: readonly ExecutionTarget[]): HermesSettings {
  if (targets.length === 0) return settings;
  const life: Sourced<number> = { ...settings.lifetimeSeconds };
  const reaper: Sourced<boolean> = { ...settings.dockerOrphanReaper };
  const reading = <T>(t: ExecutionTarget, value: T | null, source: string): TargetReading<T> => ({
    target: t.name,
    backend: t.backend,
    counts: t.docker,
    from: t.registry ? `${t.from} (provider ${t.registry.provider}, ${t.registry.state})` : t.from,
    value,
    source,
  });
  life.targets = targets.map((t) => reading(t, t.lifetimeSeconds, t.lifetimeSource));
  reaper.targets = targets.map((t) => reading(t, t.dockerOrphanReaper, t.reaperSource));
  for (const t of targets) {
    if (!t.docker) continue;
    if (t.lifetimeSeconds !== null && t.lifetimeSeconds > life.value)
      Object.assign(life, { value: t.lifetimeSeconds, source: t.lifetimeSource, target: t.name });
    if (!t.dockerOrphanReaper && reaper.value) Object.assign(reaper, { value: false, source: t.reaperSource, target: t.name });
  }
  return { ...settings, lifetimeSeconds: life, dockerOrphanReaper: reaper };
}
