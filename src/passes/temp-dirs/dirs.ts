/**
 * The directories where hermes puts a session's files, for the profiles a run serves (`hermes/session-dirs.ts`: every
 * one any hermes release uses), as the shell-snapshot and session-file passes take them: each with the uid it must
 * belong to when the janitor runs as root over another user's home (adapters/trust.ts `untrustedRoot`, the trust rule
 * for roots). A directory under a served home is always held to it, whoever named it; one elsewhere is held to it
 * when only that home's owner named it (their `.env`, their config.yaml); `/tmp` and what the janitor's own
 * environment names are the operator's. Root over a home another user owns looks at that user's entries only, in every
 * directory (`onlyUid`): a user's run, report and log never hold another user's file names or variable names.
 */
import path from 'node:path';
import { loadConfig } from '../../adapters/config.js';
import { namedByOwner } from '../../core/trust.js';
import { ENV_SYSTEM_TMP } from '../../defaults.js';
import { type ProfileTempSettings, type SessionDir, sessionDirs } from '../../hermes/session-dirs.js';
import type { PassSettingsInput } from '../types.js';

/** A directory of the temp-directory passes, as a run takes it. */
export interface TempDir {
  dir: string;
  /** Where it came from: `terminal.env.TMPDIR`, `TMPDIR`, ..., or `default`. */
  from: string;
  /**
   * The uid the directory must belong to (no symlink, its owner's: adapters/trust.ts `untrustedRoot`): set when root
   * runs over another user's home and that user's settings named it. Absent: not checked.
   */
  owner?: number;
  /**
   * Only this uid's entries are looked at (judged, removed, reported): set when root runs over a home another user
   * owns, so that the run, its report and that user's log hold that user's files only, never another user's file
   * names or variable names (`passes/temp-dirs/dirs.ts`). Absent: every user's.
   */
  onlyUid?: number;
}

/** A directory of the passes, with the hermes readings that put files there (shown by `reap --json` and `status`). */
export interface SessionTempDir extends TempDir {
  readings: string[];
}

/** A config.yaml's `terminal.env` mapping, or null. */
function terminalEnvOf(get: (k: string) => unknown, problem: string | undefined): Record<string, unknown> | null {
  const v = problem ? null : get('terminal.env');
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

const under = (dir: string, home: string) => home !== '' && dir.startsWith(`${home.replace(/\/+$/, '')}/`);

/**
 * The uid a directory must belong to (undefined: not checked). `owners` gives a served home's owner when the janitor
 * runs as root over it (adapters/trust.ts `homeAccess`), else null.
 */
export function ownerOfDir(d: Pick<SessionDir, 'dir' | 'namedBy'>, owners: ReadonlyMap<string, number | null>): number | undefined {
  for (const [home, uid] of owners) if (uid !== null && (d.dir === home || under(d.dir, home))) return uid;
  const words = d.namedBy.map((n) => (namedByOwner(n.source, n.home) ? (owners.get(n.home) ?? null) : null));
  // Only users' words (none the operator's): held to the first of them (two users naming one directory: the first's).
  return words.every((w) => w !== null) ? (words[0] ?? undefined) : undefined;
}

/** The served profiles' settings as the rules take them: the run's home, and with `--all-profiles` every profile. */
async function servedProfiles(input: PassSettingsInput): Promise<ProfileTempSettings[]> {
  const own: ProfileTempSettings = {
    profile: input.selection.profile ?? 'default',
    home: input.home,
    terminalEnv: terminalEnvOf((k) => input.config.get(k), input.config.problem),
    settings: input.hermes,
  };
  const others = await Promise.all(
    input.profiles
      .filter((p) => path.resolve(p.home) !== path.resolve(input.home))
      .map(async (p): Promise<ProfileTempSettings> => {
        const config = await loadConfig(p.home);
        return { profile: p.profile, home: p.home, terminalEnv: terminalEnvOf((k) => config.get(k), config.problem), settings: p.hermes };
      }),
  );
  return [own, ...others];
}

const memo = new WeakMap<PassSettingsInput, Promise<SessionTempDir[]>>();

/** The run's session directories (read once per run's input: both passes take the same list). */
export function sessionTempDirs(input: PassSettingsInput): Promise<SessionTempDir[]> {
  const known = memo.get(input);
  if (known) return known;
  const made = (async () => {
    const profiles = await servedProfiles(input);
    const { homeAccess } = await import('../../adapters/trust.js');
    const owners = new Map(profiles.map((p) => [p.home, homeAccess(p.home).owner?.uid ?? null]));
    const tmp = input.env[ENV_SYSTEM_TMP]?.trim();
    // Root over a home another user owns: that user's entries only, in every directory (/tmp is everyone's).
    const onlyUid = owners.get(input.home) ?? null;
    return sessionDirs(profiles, tmp && tmp.startsWith('/') ? tmp : '/tmp').map((d): SessionTempDir => {
      const owner = ownerOfDir(d, owners);
      return { dir: d.dir, from: d.from, readings: d.readings, ...(owner === undefined ? {} : { owner }), ...(onlyUid === null ? {} : { onlyUid }) };
    });
  })();
  memo.set(input, made);
  return made;
}
