/**
 * hermes' version strings in every form a host shows them, parsed and compared (pure).
 *
 * The forms (NousResearch/hermes-agent release pages, `hermes_cli/version_info.py` `_derived_version` and
 * `_git_version_info`, `hermes_cli/__init__.py`):
 * - `X.Y.Z`, `vX.Y.Z` (tags since 0.21.5; `pyproject.toml` `[project] version`, a dist-info's `Version:`);
 * - `vYYYY.M.D` and `vYYYY.M.D.N` (the tags of releases up to 0.21.4: `v2026.9.21` is 0.21.4, `v2026.8.16.2` 0.20.3);
 * - `rc.N-vX.Y.Z` (a release candidate's name: 0.22.1 shipped as `rc.5-v0.22.1`), and PEP 440's `X.Y.ZrcN`;
 * - `<base>+N.g<sha>[.dirty]`, `<base>+N`, `<base>+?` (a git install N commits past its release: `v0.21.6+122.gcbe5e53`);
 * - `git.<sha>[.dirty]` (a checkout with no release tag: version unknown, commit known);
 * - the display form `v0.21.6+122.gcbe5e53 (2026.9.24) · upstream cbe5e53e`, whose commit is the `upstream` one.
 * `unknown` and the `0.0.0` placeholder of an unstamped checkout are no version.
 *
 * Comparison is by release (a CalVer date is placed among the known releases: `KNOWN_RELEASES`), then a release
 * candidate before its release, then commits past the release. What cannot be placed compares as null: the caller
 * keeps the reading that removes later.
 */

/** A hermes release the janitor knows the names of: its version, its CalVer tag where it had one, its date. */
export interface KnownRelease {
  version: string;
  /** The CalVer tag (`v2026.9.21`), for releases up to 0.21.4; null after (tags are `vX.Y.Z`). */
  calver: string | null;
  /** Release date (YYYY-MM-DD), from its release page. */
  date: string;
}

/**
 * The releases read on hermes-agent's release pages (title "Hermes Agent v0.21.4 (v2026.9.21)", "Release Date: ..."),
 * oldest first. 0.21.0, 0.21.2, 0.21.5, 0.21.6, 0.22.0 and 0.22.2-0.22.4 were not read: a CalVer date between two
 * rows is placed after the older one.
 */
export const KNOWN_RELEASES: readonly KnownRelease[] = [
  { version: '0.19.0', calver: '2026.7.20', date: '2026-07-20' },
  { version: '0.19.1', calver: '2026.7.30', date: '2026-07-30' },
  { version: '0.20.0', calver: '2026.8.3', date: '2026-08-03' },
  { version: '0.20.1', calver: '2026.8.13', date: '2026-08-13' },
  { version: '0.20.2', calver: '2026.8.16', date: '2026-08-16' },
  { version: '0.20.3', calver: '2026.8.16.2', date: '2026-08-16' },
  { version: '0.20.4', calver: '2026.8.18', date: '2026-08-18' },
  { version: '0.20.5', calver: '2026.8.19', date: '2026-08-19' },
  { version: '0.20.6', calver: '2026.8.27', date: '2026-08-27' },
  { version: '0.21.1', calver: '2026.9.7', date: '2026-09-07' },
  { version: '0.21.3', calver: '2026.9.14', date: '2026-09-14' },
  { version: '0.21.4', calver: '2026.9.21', date: '2026-09-21' },
  { version: '0.22.1', calver: null, date: '2026-10-14' },
  { version: '0.23.1', calver: null, date: '2026-11-09' },
  { version: '0.23.3', calver: null, date: '2026-11-19' },
  { version: '0.23.4', calver: null, date: '2026-11-23' },
  { version: '0.23.5', calver: null, date: '2026-11-27' },
  { version: '0.23.6', calver: null, date: '2026-12-01' },
];

/** A version string as parsed. */
export interface HermesVersion {
  /** As found (trimmed). */
  text: string;
  /** `semver` (`0.21.3`), `calver` (`2026.9.21`), or `unknown` (no release: `git.<sha>`, `unknown`, `0.0.0`). */
  scheme: 'semver' | 'calver' | 'unknown';
  /** The release's numeric parts (`[0, 21, 3]`, `[2026, 9, 21]`); empty when unknown. */
  parts: number[];
  /** The release candidate number (`rc.5-v0.22.1`, `0.22.0rc1`), or null for a release. */
  rc: number | null;
  /** Commits past the release (`+122`), 0 when it is the release, null when past it by an unknown count (`+?`). */
  distance: number | null;
  /** The working tree had changes (`.dirty`, `+?`). */
  dirty: boolean;
  /** The commit the string names (`.g<sha>`, `upstream <sha>`, `git.<sha>`), lower-case hex, or null. */
  commit: string | null;
}

const NUMBERS = /^(\d+(?:\.\d+)*)/;

/** The numbers of `0.21.3` / `2026.9.21`, or null when one is not a safe integer. */
function numbers(s: string): number[] | null {
  const parts = s.split('.').map(Number);
  return parts.every((n) => Number.isSafeInteger(n)) ? parts : null;
}

/** `<base>+N.g<sha>.dirty`, `<base>+N`, `<base>+?`: the distance, commit and dirtiness after the `+`. */
function local(suffix: string): Pick<HermesVersion, 'distance' | 'dirty' | 'commit'> {
  if (suffix === '?') return { distance: null, dirty: true, commit: null };
  const m = /^(\d+)(?:\.g([0-9a-f]{4,64}))?(\.dirty)?$/i.exec(suffix);
  if (!m) return { distance: null, dirty: false, commit: null };
  return { distance: Number(m[1]), dirty: m[3] !== undefined, commit: m[2]?.toLowerCase() ?? null };
}

const UNKNOWN = (text: string, commit: string | null = null, dirty = false): HermesVersion => ({
  text,
  scheme: 'unknown',
  parts: [],
  rc: null,
  distance: null,
  dirty,
  commit,
});

/** Parses a version string in any of hermes' forms (see the module comment). Never throws. */
export function parseHermesVersion(raw: string): HermesVersion {
  const text = raw.trim().slice(0, 200);
  // The display form: `<version> (<date>) · upstream <sha>`; the first word is the version.
  const upstream = /\bupstream\s+([0-9a-f]{7,64})\b/i.exec(text)?.[1]?.toLowerCase() ?? null;
  const word = text.split(/\s+/)[0] ?? '';
  const git = /^git\.([0-9a-f]{4,64})(\.dirty)?$/i.exec(word);
  if (git) return UNKNOWN(text, upstream ?? git[1]!.toLowerCase(), git[2] !== undefined);
  const rcForm = /^rc\.(\d+)-(.+)$/i.exec(word);
  const rest = (rcForm ? rcForm[2]! : word).replace(/^v/i, '');
  const [release = '', suffix] = rest.split('+', 2);
  const m = NUMBERS.exec(release);
  const parts = m ? numbers(m[1]!) : null;
  if (!parts || parts.every((n) => n === 0)) return UNKNOWN(text, upstream);
  const pep440Rc = /^rc(\d+)$/i.exec(release.slice(m![1]!.length).replace(/^[-.]/, ''));
  const rc = rcForm ? Number(rcForm[1]) : pep440Rc ? Number(pep440Rc[1]) : null;
  const loc = suffix === undefined ? { distance: 0, dirty: false, commit: null } : local(suffix);
  return { text, scheme: parts[0]! >= 2000 ? 'calver' : 'semver', parts, rc, ...loc, commit: upstream ?? loc.commit };
}

function compareParts(a: readonly number[], b: readonly number[]): -1 | 0 | 1 {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/**
 * A CalVer version placed among the known releases: the newest known release tagged on or before it, and whether it
 * is past that release (a later date, or commits past it). Null when it is older than every known release.
 */
function placeCalver(v: HermesVersion): Placed | null {
  let found: { at: number; cmp: number } | null = null;
  KNOWN_RELEASES.forEach((r, at) => {
    if (r.calver === null) return;
    const cmp = compareParts(v.parts, numbers(r.calver)!);
    if (cmp >= 0) found = { at, cmp };
  });
  if (!found) return null;
  const { at, cmp } = found as { at: number; cmp: number };
  const next = KNOWN_RELEASES[at + 1];
  return { release: numbers(KNOWN_RELEASES[at]!.version)!, past: cmp > 0 || v.distance !== 0, before: next ? numbers(next.version)! : null };
}

/** Where a version lies: a release, or past it (`past`) and then before `before` when that is known. */
interface Placed {
  release: number[];
  past: boolean;
  /** The next known release, which a CalVer date past `release` comes before (null: none known, or semver). */
  before: number[] | null;
}

/** The semver release a version is, or is past (`past`), or null when it cannot be placed. */
export function releaseOf(v: HermesVersion): Placed | null {
  if (v.scheme === 'semver') return { release: v.parts, past: v.distance !== 0, before: null };
  if (v.scheme === 'calver') return placeCalver(v);
  return null;
}

/**
 * -1, 0 or 1 as `a` is older than, the same as, or newer than `b`; null when it cannot be told (a version that is
 * no release, a CalVer date older than every known release, a CalVer date past a release compared with a later one).
 */
export function compareHermesVersions(a: string | HermesVersion, b: string | HermesVersion): -1 | 0 | 1 | null {
  const x = typeof a === 'string' ? parseHermesVersion(a) : a;
  const y = typeof b === 'string' ? parseHermesVersion(b) : b;
  if (x.scheme === 'calver' && y.scheme === 'calver') return compareParts(x.parts, y.parts) || compareLocal(x, y);
  const px = releaseOf(x);
  const py = releaseOf(y);
  if (!px || !py) return null;
  const c = compareParts(px.release, py.release);
  if (c !== 0) {
    // A CalVer date past a release lies before the next known one: known to be older only when that one is not newer.
    if (c < 0 && px.past && x.scheme === 'calver' && !(px.before && compareParts(px.before, py.release) <= 0)) return null;
    if (c > 0 && py.past && y.scheme === 'calver' && !(py.before && compareParts(py.before, px.release) <= 0)) return null;
    return c;
  }
  return compareRc(x, y) || compareLocal(x, y);
}

/** A release candidate comes before its release; two candidates by their number. */
function compareRc(x: HermesVersion, y: HermesVersion): -1 | 0 | 1 {
  if (x.rc === y.rc) return 0;
  if (x.rc === null) return 1;
  if (y.rc === null) return -1;
  return x.rc < y.rc ? -1 : 1;
}

/** Commits past the same release: more is newer; an unknown count is past the release, unordered with a known one. */
function compareLocal(x: HermesVersion, y: HermesVersion): -1 | 0 | 1 {
  const dx = x.distance ?? 1;
  const dy = y.distance ?? 1;
  return dx === dy ? 0 : dx < dy ? -1 : 1;
}
