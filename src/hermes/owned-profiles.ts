/**
 * What each living hermes process owns, resolved from the files of what it serves (`processes.ts` says which root or
 * profile that is): a surface launched on a root owns `default` and every `<root>/profiles/<name>`, or `default` and
 * the root config.yaml's allowlist; every owned profile also owns its container identities (its shared key's, in
 * either reading: `readings.ts`). Files are read through the settings readers (`adapters/hermes-settings.ts`,
 * `adapters/config.ts`). A root whose profiles cannot be listed, or holds more than `MAX_PROFILES_PER_ROOT`, owns
 * everything (unverifiable).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { HermesProcess } from './process-facts.js';
import { CONFIG_FILENAME, DOTENV_FILENAME, ENV_MANAGED_DIR, ENV_PROC_ROOT } from '../defaults.js';
import { loadConfig } from '../adapters/config.js';
import { homeAccess } from '../adapters/trust.js';
import { errorMessage } from '../errors.js';
import { listProfileHomes, loadProfileSettings } from '../adapters/hermes-settings.js';
import { allowlistOf } from './processes.js';
import { profileIdentities } from './readings.js';

/** More profiles than this under one served root: it owns everything (the work stays bounded). */
export const MAX_PROFILES_PER_ROOT = 256;

/**
 * What is read to tell what a living process serves, at most: the files of this many profiles of its root, this many
 * bytes of them in all. Past either it owns everything (unverifiable), as a root of more than `MAX_PROFILES_PER_ROOT`
 * does: a user's files never make a run over another home read for long (#47: 100 profiles of 31 KiB config.yaml
 * under a fake gateway's root made root's runs over another home take 19 s).
 */
export const OWNER_PROFILES_READ = 64;
export const OWNER_BYTES_READ = 1024 * 1024;

/** The bytes of a profile's settings files, as `lstat` says (a symlink counts for its own few bytes: it is not read). */
function settingsBytes(home: string): number {
  let n = 0;
  for (const f of [CONFIG_FILENAME, DOTENV_FILENAME]) n += fs.lstatSync(path.join(home, f), { throwIfNoEntry: false })?.size ?? 0;
  return n;
}

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

/** Why the profiles' files are more than is read for one process (`OWNER_PROFILES_READ`, `OWNER_BYTES_READ`), or null. */
function overBudget(homes: readonly string[]): string | null {
  if (homes.length > OWNER_PROFILES_READ) return `more than ${OWNER_PROFILES_READ} profiles under it (${homes.length}) are more than is read for one process`;
  let bytes = 0;
  for (const h of homes) {
    bytes += settingsBytes(h);
    if (bytes > OWNER_BYTES_READ) return `its profiles' settings files are more than the ${OWNER_BYTES_READ / (1024 * 1024)} MiB read for one process`;
  }
  return null;
}

/** A process launched on a root: the profiles it serves, or why they cannot be told. */
async function servedByRoot(root: string, p: HermesProcess, ids: IdentityReader): Promise<Pick<HermesProcess, 'serves' | 'owns' | 'ownsWhy'>> {
  const why = p.ownsWhy;
  const untrusted = trusted(root);
  if (untrusted) return { serves: 'all-profiles', owns: null, ownsWhy: `${why}; ${untrusted}: every profile counts as served` };
  const listed = await listProfileHomes(root);
  if ('problem' in listed)
    return { serves: 'all-profiles', owns: null, ownsWhy: `${why}; its profiles cannot be listed (${listed.problem}): every profile counts as served` };
  if (listed.more || listed.homes.length > MAX_PROFILES_PER_ROOT) {
    return { serves: 'all-profiles', owns: null, ownsWhy: `${why}; more than ${MAX_PROFILES_PER_ROOT} profiles under it: every profile counts as served` };
  }
  const homeOf = (n: string) => (n === 'default' ? root : path.join(root, 'profiles', n));
  const over = overBudget(listed.homes.map((h) => h.home));
  if (over) return { serves: 'all-profiles', owns: null, ownsWhy: `${why}; ${over}: every profile counts as served` };
  const config = await loadConfig(root);
  const allowlist = config.problem ? null : allowlistOf(config.data);
  const names = allowlist === null ? listed.homes.map((h) => h.profile) : ['default', ...allowlist];
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
