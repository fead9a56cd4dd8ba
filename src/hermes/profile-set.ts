/**
 * The profiles a run judges by (`judgement.ts`), read through the settings readers: with `--all-profiles`, every
 * profile under the run's root; for one profile that names a shared container key, every profile under its root
 * that shares one of its identities. A profile other than the run's own whose files do not parse is refused
 * (reported, its sandboxes kept), never the run's usage error.
 */
import { listProfileHomes, loadProfileSettings } from '../adapters/hermes-settings.js';
import { type Selection, isHermesSelection } from '../core/selection.js';
import { PROFILE_LABEL } from '../defaults.js';
import { MAX_PROFILES_PER_ROOT } from './owned-profiles.js';
import { type LabelRules, type ProfileRead, labelRules, labelsOf } from './judgement.js';
import { looksShared } from './identity.js';
import { profileIdentities } from './readings.js';
import { setImmediate as turn } from 'node:timers/promises';
import { ExitCode, JanitorError, UsageError } from '../errors.js';

export interface ProfileSetPlace {
  root: string;
  env: Record<string, string | undefined>;
  cwd: string;
  /** The run's `--timeout`: it bounds the reading too. */
  signal?: AbortSignal | undefined;
  /** Warnings of the files read (shown by the caller). */
  warnings: string[];
  /** A profile's settings as the janitor may act on them (what they are worth: `settings-worth.ts`); default as read. */
  actOn?: ((p: ProfileRead) => ProfileRead) | undefined;
}

/**
 * Every profile under the root, the run's own as already read (`run`), read one after the other inside the run's
 * `--timeout` (the event loop gets a turn between two: a deadline that passes stops the reading, exit 3). A root with
 * more profiles than `MAX_PROFILES_PER_ROOT` is a usage error (exit 2) naming it: its profiles are judged one at a
 * time (`--profile NAME`), never some of them silently.
 */
export async function allProfiles(run: ProfileRead, where: ProfileSetPlace): Promise<ProfileRead[]> {
  const listed = await listProfileHomes(where.root);
  if ('problem' in listed) {
    where.warnings.push(`${listed.problem}: only the run's own profile is judged`);
    return [run];
  }
  if (listed.more || listed.homes.length > MAX_PROFILES_PER_ROOT) {
    throw new UsageError(
      `${where.root} holds more than ${MAX_PROFILES_PER_ROOT} profiles: --all-profiles reads each one's settings and stops there; ` +
        'judge them one at a time with --profile NAME',
    );
  }
  const out: ProfileRead[] = [];
  for (const p of listed.homes) {
    if (p.home === run.home) {
      out.push(run);
      continue;
    }
    await turn(); // the run's --timeout fires between two profiles, whatever they hold
    if (where.signal?.aborted) {
      throw new JanitorError(
        `reading the profiles under ${where.root} did not finish within the run's --timeout (${out.length} of ${listed.homes.length} read): ` +
          'raise --timeout, or judge them one at a time with --profile NAME',
        ExitCode.ENGINE,
      );
    }
    const r = await loadProfileSettings({ home: p.home, env: where.env, cwd: where.cwd, signal: where.signal });
    where.warnings.push(...r.warnings);
    const read: ProfileRead = { ...p, settings: r.settings, refused: r.refused, ...('config' in r ? { config: r.config } : {}) };
    out.push(where.actOn ? where.actOn(read) : read);
  }
  if (!out.includes(run)) out.push(run);
  return out;
}

/**
 * The run's profile and every profile under the root sharing one of its shared identities (none: the run's alone).
 * A root that cannot be listed, or holds more profiles than `MAX_PROFILES_PER_ROOT`, is not read through: the run's
 * profile is then refused (its sandboxes kept).
 */
export async function sharers(run: ProfileRead, where: ProfileSetPlace): Promise<ProfileRead[]> {
  const shared = labelsOf(run).filter(looksShared);
  if (shared.length === 0) return [run];
  const listed = await listProfileHomes(where.root);
  if ('problem' in listed || listed.more || listed.homes.length > MAX_PROFILES_PER_ROOT) {
    const why = 'problem' in listed ? listed.problem : `more than ${MAX_PROFILES_PER_ROOT} profiles under ${where.root}`;
    return [{ ...run, refused: run.refused ?? `${why}: the profiles sharing its container identity (${shared.join(', ')}) cannot all be read` }];
  }
  const all = await allProfiles(run, where);
  return all.filter((p) => p === run || labelsOf(p).some((l) => shared.includes(l)));
}

/** What a run judges by: the profiles read, their label rules, and lines to say (a profile refused, a file unread). */
export interface RunJudgement {
  profiles: ProfileRead[];
  rules: LabelRules;
  warnings: string[];
}

/**
 * The profiles a run judges by and their rules: with `allProfiles` every profile under the root, else (hermes'
 * selection of one profile) the run's own and those sharing its container identity. The selection of one profile is
 * made its identities as hermes computes them (`selection.profileValues`), unless a plan gave them already.
 */
export async function judgeRun(
  run: ProfileRead,
  selection: Selection,
  where: Omit<ProfileSetPlace, 'warnings'> & { allProfiles: boolean; janitorReaps: boolean },
): Promise<RunJudgement> {
  const place = { ...where, warnings: [] as string[] };
  const hermesLabel = selection.profileLabel === PROFILE_LABEL && isHermesSelection(selection);
  const read = where.allProfiles ? await allProfiles(run, place) : hermesLabel && selection.profile !== null ? await sharers(run, place) : [run];
  if (hermesLabel && selection.profile !== null && selection.profileValues === undefined && run.settings) {
    const values = profileIdentities(selection.profile, run.settings);
    if (values.length !== 1 || values[0] !== selection.profile) selection.profileValues = values;
  }
  const warnings = [...place.warnings];
  for (const p of read.filter((x) => x.refused !== null)) {
    warnings.push(`profile ${p.profile}: hermes refuses its turns (${p.refused}): nothing is removed or stopped for it`);
  }
  return { profiles: read, rules: labelRules(read, { janitorReaps: where.janitorReaps }), warnings };
}
