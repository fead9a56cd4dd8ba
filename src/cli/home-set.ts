/**
 * A run over several homes (`--homes`, `--all-homes`; `reap`, `list`, `watch`, `status`): which hermes roots, and every
 * profile under each read as that home's owner's words are worth (adapters/settings-worth.ts), so that each container
 * is judged by the homes that have its profile label, the reading that removes, stops or ends later among them
 * (`hermes/judgement.ts`, `reaper/label-rules.ts`); a label none of them has is kept (`unknown-profile`).
 * The reading is in functions `watch`'s settings follower and a supervising run can call again.
 */
import path from 'node:path';
import type { Context } from '../context.js';
import type { TiedRoot } from '../core/policy.js';
import type { EngineEndpoint } from '../adapters/engine-host.js';
import { withWorth } from '../adapters/config.js';
import type { RunHome, SkippedHome } from '../core/home-set.js';
import type { SettingsWorth } from '../core/setting-worth.js';
import { UsageError, errorMessage } from '../errors.js';
import { type ProfileRead, labelsOf } from '../hermes/judgement.js';
import { settingsWorthActing } from '../hermes/settings-worth.js';

/** A root of the run and where it was found. */
export interface FoundHome {
  root: string;
  from: RunHome['from'];
}

/**
 * The roots of a run over several homes, or null for a run over one (neither flag). `--homes` as given (a glob
 * expanded; one matching nothing is a note), then with `--all-homes` each user's `~/.hermes` and every living hermes
 * process' root (at most `PROCESS_ROOTS_PER_USER` a user); each once, at most `ROOTS_PER_RUN_CAP` (a note past each cap).
 */
export async function homesOf(
  opts: { homes?: string[] | undefined; allHomes?: boolean | undefined },
  ctx: Pick<Context, 'cwd' | 'env'>,
  notes: string[],
): Promise<FoundHome[] | null> {
  if (!opts.homes?.length && !opts.allHomes) return null;
  const { capRoots, expandHomes, passwdHomes, processHomes, uniqueHomes } = await import('../adapters/home-discovery.js');
  const { procRootOf } = await import('../adapters/hermes-processes.js');
  const found: FoundHome[] = [];
  for (const given of opts.homes ?? []) {
    const dirs = expandHomes(given, ctx.cwd, notes);
    if (dirs.length === 0) notes.push(`--homes ${given}: no directory matches it`);
    found.push(...dirs.map((root) => ({ root, from: 'homes' as const })));
  }
  if (opts.allHomes) {
    found.push(...passwdHomes().map((root) => ({ root, from: 'passwd' as const })));
    found.push(...processHomes(procRootOf(ctx.env), notes).map((root) => ({ root, from: 'process' as const })));
  }
  const roots = new Set(uniqueHomes(found.map((f) => f.root)));
  const out = capRoots(
    found.filter((f) => roots.delete(f.root)),
    opts.allHomes ? '--all-homes' : '--homes',
    notes,
  );
  if (out.length === 0) notes.push(`${opts.allHomes ? '--all-homes' : '--homes'}: no hermes home found: every container is kept (unknown-profile)`);
  return out;
}

/** Every profile of every home, as the janitor may act on them, with the homes and those left out. */
export interface HomesRead {
  reads: ProfileRead[];
  homes: RunHome[];
  /**
   * Each home's sandbox roots (their `docker` directories) that tie a container to it: those of its profiles that are
   * its owner's (the owner rule, as for removing there: a root a user names that is another's ties nothing to them).
   */
  roots: TiedRoot[];
  skipped: SkippedHome[];
  warnings: string[];
}

/** A profile's settings and config.yaml as worth `worth`: hermes' clamped on top of the readings, the janitor's keys by their reader. */
function actingOn(worth: SettingsWorth, cwd: string, note: Parameters<typeof settingsWorthActing>[3]) {
  return (p: ProfileRead): ProfileRead => ({
    ...p,
    settings: p.settings && settingsWorthActing(p.settings, worth, { home: p.home, cwd }, note),
    ...(p.config ? { config: withWorth(p.config, worth) } : {}),
  });
}

/**
 * Reads every profile of every root (each root's profiles as `--all-profiles` reads them). A root `--homes` named
 * that nobody can be trusted with (several users can change it) is the run's usage error, as `--home`'s; one
 * `--all-homes` found is left out, said once.
 */
export async function readHomes(
  found: readonly FoundHome[],
  ctx: Pick<Context, 'env' | 'cwd' | 'homedir'>,
  where: { endpoints: readonly EngineEndpoint[]; signal?: AbortSignal | undefined },
): Promise<HomesRead> {
  const [{ homeAccess }, { settingsWorth, noteUntrusted }, { loadProfileSettings }, { allProfiles }] = await Promise.all([
    import('../adapters/trust.js'),
    import('../adapters/settings-worth.js'),
    import('../adapters/hermes-settings.js'),
    import('../hermes/profile-set.js'),
  ]);
  const out: HomesRead = { reads: [], homes: [], roots: [], skipped: [], warnings: [] };
  for (const { root, from } of found) {
    let owner: RunHome['owner'];
    try {
      const o = homeAccess(root).owner;
      owner = o ? { uid: o.uid, name: o.name } : null;
    } catch (err) {
      if (from === 'homes' || !(err instanceof UsageError)) throw err;
      out.skipped.push({ root, why: errorMessage(err) });
      out.warnings.push(`${errorMessage(err)}: left out of this run (its containers are judged by the other homes, or kept)`);
      continue;
    }
    const worth = await settingsWorth(root, where.endpoints, { env: ctx.env, homedir: ctx.homedir });
    const actOn = actingOn(worth, ctx.cwd, noteUntrusted);
    const own = await loadProfileSettings({ home: root, env: ctx.env, cwd: ctx.cwd, signal: where.signal });
    out.warnings.push(...own.warnings);
    const base = actOn({ profile: 'default', home: root, settings: own.settings, refused: own.refused, ...('config' in own ? { config: own.config } : {}) });
    const profiles = await allProfiles(base, { root, env: ctx.env, cwd: ctx.cwd, signal: where.signal, warnings: out.warnings, actOn });
    for (const p of profiles.filter((x) => x.refused !== null)) {
      out.warnings.push(`profile ${p.profile} of ${root}: hermes refuses its turns (${p.refused}): nothing is removed or stopped for it`);
    }
    out.reads.push(...profiles);
    out.homes.push({ root, from, owner, worth, labels: [...new Set(profiles.flatMap((p) => labelsOf(p)))] });
    out.roots.push(...(await tyingRoots(root, owner, profiles)));
  }
  return out;
}

/** The `docker` directories of a home's profiles' sandbox roots that may tie a container to it (each once). */
async function tyingRoots(root: string, owner: RunHome['owner'], profiles: readonly ProfileRead[]): Promise<TiedRoot[]> {
  const { untrustedRoot } = await import('../adapters/trust.js');
  const dirs = [...new Set(profiles.flatMap((p) => (p.settings ? [p.settings.sandboxRoot.value] : [])))];
  return dirs
    .filter((d) => owner === null || untrustedRoot('sandbox root', d, owner.uid, ['docker']).line === null)
    .map((d) => ({ dir: path.join(d, 'docker'), home: root }));
}
