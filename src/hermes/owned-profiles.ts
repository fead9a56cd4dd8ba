/**
 * What each living hermes process owns, resolved from the files of what it serves (`processes.ts` says which root or
 * profile that is): a surface launched on a root owns `default` and every `<root>/profiles/<name>`, or `default` and
 * the root config.yaml's allowlist; every owned profile also owns its container identities (its shared key's, in
 * either reading: `readings.ts`). Files are read through the settings readers (`adapters/hermes-settings.ts`,
 * `adapters/config.ts`). A root whose profiles cannot be listed, or holds more than `MAX_PROFILES_PER_ROOT`, owns
 * everything (unverifiable).
 */
import path from 'node:path';
import type { HermesProcess } from './process-facts.js';
import { ENV_MANAGED_DIR, ENV_PROC_ROOT } from '../defaults.js';
import { loadConfig } from '../adapters/config.js';
import { homeAccess } from '../adapters/trust.js';
import { errorMessage } from '../errors.js';
import { listProfileHomes, loadProfileSettings } from '../adapters/hermes-settings.js';
import { allowlistOf } from './processes.js';
import { profileIdentities } from './readings.js';

/** More profiles than this under one served root: it owns everything (the work stays bounded). */
export const MAX_PROFILES_PER_ROOT = 256;

export interface OwnershipContext {
  /** The janitor's environment (`HERMES_MANAGED_DIR`). */
  env: Record<string, string | undefined>;
  cwd: string;
  /**
   * What was read of served roots and profiles, kept for `OWNERSHIP_CACHE_MS` across resolutions (a run's refresh right
   * before each stop reads the process table afresh, not every profile's files again). Absent: read each time.
   */
  cache?: OwnershipCache;
}

/** How long what a root or profile holds is kept between resolutions (a run refreshes its owners before each stop). */
export const OWNERSHIP_CACHE_MS = 60_000;

/** What a run read of roots and profiles, with when (ms). */
export interface OwnershipCache {
  identities: Map<string, { at: number; value: Promise<string[]> }>;
  roots: Map<string, { at: number; value: Promise<Pick<HermesProcess, 'serves' | 'owns' | 'ownsWhy'>> }>;
}

export function newOwnershipCache(): OwnershipCache {
  return { identities: new Map(), roots: new Map() };
}

/** A cached value younger than `OWNERSHIP_CACHE_MS`, else `make()`'s (kept). */
function cached<T>(map: Map<string, { at: number; value: Promise<T> }>, key: string, make: () => Promise<T>): Promise<T> {
  const hit = map.get(key);
  if (hit && Date.now() - hit.at < OWNERSHIP_CACHE_MS) return hit.value;
  const value = make();
  map.set(key, { at: Date.now(), value });
  return value;
}

/**
 * Why the files under a home may not be read (`adapters/trust.ts` `homeAccess`: as root, a home several users can
 * change), or null: they are then read by the trust rules, as the owner's words.
 */
function trusted(home: string): string | null {
  try {
    homeAccess(home);
    return null;
  } catch (err) {
    return errorMessage(err);
  }
}

/** Reads each profile's identities once per resolution (and per cache period). */
class IdentityReader {
  private readonly memo: Map<string, { at: number; value: Promise<string[]> }>;
  constructor(private readonly ctx: OwnershipContext) {
    this.memo = ctx.cache?.identities ?? new Map();
  }

  of(profile: string, home: string, sharedKey: string | undefined): Promise<string[]> {
    const key = `${home}\0${sharedKey ?? ''}`;
    return cached(this.memo, key, () => {
      // The janitor's procfs root and PATH too: where the hermes installed is looked for (`adapters/host-hermes.ts`).
      const env = {
        [ENV_MANAGED_DIR]: this.ctx.env[ENV_MANAGED_DIR],
        [ENV_PROC_ROOT]: this.ctx.env[ENV_PROC_ROOT],
        PATH: this.ctx.env.PATH,
        ...(sharedKey !== undefined ? { TERMINAL_DOCKER_SHARED_CONTAINER_KEY: sharedKey } : {}),
      };
      if (trusted(home)) return Promise.resolve([profile]);
      return loadProfileSettings({ home, env, cwd: this.ctx.cwd }).then(
        (r) => (r.settings ? profileIdentities(profile, r.settings) : [profile]),
        () => [profile],
      );
    });
  }
}

/** A process launched on a root: the profiles it serves, or why they cannot be told. */
async function servedByRoot(root: string, p: HermesProcess, ids: IdentityReader): Promise<Pick<HermesProcess, 'serves' | 'owns' | 'ownsWhy'>> {
  const why = p.ownsWhy;
  const untrusted = trusted(root);
  if (untrusted) return { serves: 'all-profiles', owns: null, ownsWhy: `${why}; ${untrusted}: every profile counts as served` };
  const listed = await listProfileHomes(root);
  if ('problem' in listed)
    return { serves: 'all-profiles', owns: null, ownsWhy: `${why}; its profiles cannot be listed (${listed.problem}): every profile counts as served` };
  if (listed.homes.length > MAX_PROFILES_PER_ROOT) {
    return { serves: 'all-profiles', owns: null, ownsWhy: `${why}; more than ${MAX_PROFILES_PER_ROOT} profiles under it: every profile counts as served` };
  }
  const config = await loadConfig(root);
  const allowlist = config.problem ? null : allowlistOf(config.data);
  const names = allowlist === null ? listed.homes.map((h) => h.profile) : ['default', ...allowlist];
  const homeOf = (n: string) => (n === 'default' ? root : path.join(root, 'profiles', n));
  const owns = (await Promise.all(names.map((n) => ids.of(n, homeOf(n), n === 'default' ? p.sharedKey : undefined)))).flat();
  const served =
    allowlist === null
      ? { serves: 'all-profiles' as const, ownsWhy: `${why}: it serves every profile under it` }
      : {
          serves: 'allowlist' as const,
          ownsWhy: `${why}: it serves default and gateway.multiplex_profile_allowlist (${allowlist.join(', ') || 'empty'}) of ${config.file}`,
        };
  return { ...served, owns: [...new Set([...names, ...owns])] };
}

/** The table with each hermes process's `serves`, `owns` and `ownsWhy` resolved from the files of what it serves. */
export async function resolveOwnership<T extends { processes: HermesProcess[] }>(table: T, ctx: OwnershipContext): Promise<T> {
  const ids = new IdentityReader(ctx);
  const processes = await Promise.all(
    table.processes.map(async (p): Promise<HermesProcess> => {
      const o = p.ownership;
      if (!p.hermes || !o) return p;
      if (o.serves === 'root') {
        const key = `${o.root}\0${p.sharedKey ?? ''}\0${p.ownsWhy}`;
        const make = () => servedByRoot(o.root, p, ids);
        return { ...p, ...(await (ctx.cache ? cached(ctx.cache.roots, key, make) : make())) };
      }
      if (o.serves === 'profile' && o.home) return { ...p, owns: [...new Set([o.profile, ...(await ids.of(o.profile, o.home, p.sharedKey))])] };
      return p;
    }),
  );
  return { ...table, processes };
}
