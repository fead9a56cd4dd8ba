/**
 * Which of hermes' readings the hermes installed on this host has (pure): the routed-profile scope reading
 * (`scope-settings.ts`, hermes-agent `tools/terminal_scope.py`) came with PR #101242, merged 2026-09-02, between
 * 0.20.6 (2026-08-27) and 0.21.1 (2026-09-07); the janitor counts it from 0.21.0, the first release that may have it.
 * Where every hermes install found on the host (`status`'s hermes installs: behind each living hermes process and
 * the `hermes` on PATH) is older, no hermes here reads the scope: the janitor does not act on it (acting on it would
 * keep exited sandboxes up to five times longer than the hermes it serves). Where none is found, a version cannot be
 * told (no version, `git.<sha>`, a CalVer date past a release by an unknown amount), or the installs disagree, the
 * reading that removes later stays.
 */
import { KNOWN_RELEASES, compareHermesVersions, parseHermesVersion, releaseOf } from './versions.js';

/** The first release that may have the routed-profile scope reading. */
export const SCOPE_SINCE = '0.21.0';

/** One install found: where, and its version (null: unknown). */
export interface FoundInstall {
  dir: string;
  version: string | null;
}

/** Whether a version is a release older than the scope reading (false: it may have it, or cannot be told). */
export function predatesScope(version: string): boolean {
  const v = parseHermesVersion(version);
  const placed = releaseOf(v);
  if (!placed || compareHermesVersions({ ...v, rc: null, distance: 0 }, SCOPE_SINCE) !== -1) return false;
  if (!placed.past) return true;
  // Past a release by commits or days: older than the scope only while a later release is known to be older too.
  const last = [...KNOWN_RELEASES].reverse().find((r) => compareHermesVersions(r.version, SCOPE_SINCE) === -1)!;
  return compareHermesVersions(placed.release.join('.'), last.version) === -1;
}

/** Why the scope reading is not taken, or null: it is (where it removes later). */
export function scopeNotTaken(installs: readonly FoundInstall[]): string | null {
  if (installs.length === 0) return null;
  if (!installs.every((i) => i.version !== null && predatesScope(i.version))) return null;
  const shown = installs.slice(0, 3).map((i) => `${i.version} at ${i.dir}`);
  const more = installs.length > 3 ? `, and ${installs.length - 3} more` : '';
  return `every hermes install found on this host predates the routed-profile scope reading (${SCOPE_SINCE}): ${shown.join(', ')}${more}`;
}
