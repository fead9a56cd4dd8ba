/**
 * What the janitor knows of hermes-agent, dated: the newest hermes it was checked against, and how a version found
 * on this host compares with it. Every rule the janitor follows of hermes lives in this folder (`src/hermes/`) and
 * names the hermes file, function and versions it holds for; following a new hermes is an edit here.
 *
 * Checked against NousResearch/hermes-agent `pyproject.toml` `[project] version` and `hermes_cli/__init__.py`
 * `__version__` / `__release_date__` at commit 00067189dfecf833d4d009c2dd977ae85cf800e0 (0.21.3, 2026.9.14), and
 * the source text and issues read up to hermes-agent #118320 (2026-09-21: one gateway per host serves every profile).
 */

/** The newest hermes-agent this janitor was checked against. */
export const KNOWN_HERMES = {
  version: '0.21.3',
  releaseDate: '2026.9.14',
  commit: '00067189dfecf833d4d009c2dd977ae85cf800e0',
} as const;

/**
 * A PEP 440 release's numeric parts (`0.21.3`, `v0.21.3`, `0.21.3.post1`, `2026.9.14`), or null when it does not
 * start with one. Pre- and post-release parts are not compared: `0.22.0rc1` counts as `0.22.0`.
 */
export function releaseParts(version: string): number[] | null {
  const m = /^\s*v?(\d+(?:\.\d+)*)/i.exec(version);
  if (!m) return null;
  const parts = m[1]!.split('.').map(Number);
  return parts.every((n) => Number.isSafeInteger(n)) ? parts : null;
}

/** -1, 0 or 1 as `a` is older than, the same release as, or newer than `b`; null when either is not a release. */
export function compareReleases(a: string, b: string): -1 | 0 | 1 | null {
  const x = releaseParts(a);
  const y = releaseParts(b);
  if (!x || !y) return null;
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/** Whether a version found on this host is newer than the newest hermes the janitor knows (unknown: null). */
export function newerThanKnown(version: string | null): boolean | null {
  if (version === null) return null;
  const c = compareReleases(version, KNOWN_HERMES.version);
  return c === null ? null : c > 0;
}
