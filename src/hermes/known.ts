/**
 * What the janitor knows of hermes-agent, dated: the newest hermes whose source it was checked against for every rule
 * (`rules.ts` says, rule by rule, what was read and when), and how a version found on this host compares with it
 * (`versions.ts` reads every form hermes writes a version in). Every rule the janitor follows of hermes lives in this
 * folder (`src/hermes/`) and names the hermes file, function and versions it holds for; following a new hermes is
 * an edit here.
 *
 * Checked against NousResearch/hermes-agent `pyproject.toml` `[project] version` and `hermes_cli/__init__.py`
 * `__version__` / `__release_date__` at commit 00067189dfecf833d4d009c2dd977ae85cf800e0 (0.21.3, 2026.9.14): the
 * newest release whose source text was read for every rule. Newer source text (stored copies of main whose commit
 * and release could not be told) and the release pages up to 0.23.6 (2026-12-01) were read too: `rules.ts` names
 * them per rule; a version seen only in release notes is never the one known here.
 */
import { compareHermesVersions, parseHermesVersion } from './versions.js';

/** The newest hermes-agent whose source this janitor was checked against, for every rule. */
export const KNOWN_HERMES = {
  version: '0.21.3',
  releaseDate: '2026.9.14',
  commit: '00067189dfecf833d4d009c2dd977ae85cf800e0',
} as const;

/** The newest hermes release whose notes were read (`rules.ts`: what each rule owes to them). */
export const NOTES_READ_UP_TO = { version: '0.23.6', date: '2026-12-01' } as const;

/**
 * A release's numeric parts (`0.21.3`, `v0.21.3`, `0.21.3.post1`, `2026.9.14`, `rc.5-v0.22.1`, `v0.21.6+122.gcbe5e53`),
 * or null when it is no release (`versions.ts`).
 */
export function releaseParts(version: string): number[] | null {
  const v = parseHermesVersion(version);
  return v.scheme === 'unknown' ? null : v.parts;
}

/** -1, 0 or 1 as `a` is older than, the same release as, or newer than `b`; null when it cannot be told. */
export function compareReleases(a: string, b: string): -1 | 0 | 1 | null {
  return compareHermesVersions(a, b);
}

/** Whether a version found on this host is newer than the newest hermes the janitor knows (unknown: null). */
export function newerThanKnown(version: string | null): boolean | null {
  if (version === null) return null;
  const c = compareHermesVersions(version, KNOWN_HERMES.version);
  return c === null ? null : c > 0;
}
