/**
 * hermes as installed on this host: what a path is part of (a checkout, a venv, an installed package), and the
 * version and commit of an install. Reads only: existence checks, directory listings, and small metadata files opened
 * without following a final symlink, read up to 64 KiB, never blocking on a FIFO.
 *
 * Layouts (hermes-agent `scripts/install.sh`, `pyproject.toml`, read up to 0.21.3):
 * - a checkout: a directory holding `hermes_cli/main.py` and `tools/terminal_tool.py` (the installer clones into
 *   `~/.hermes/hermes-agent`); its version is `pyproject.toml` `[project] version`, its commit `.git/HEAD`;
 * - a venv: a directory holding `pyvenv.cfg` whose `lib/python3.X/site-packages` holds hermes (`hermes_cli/` or a
 *   `hermes_agent-<version>.dist-info`), or that lies in a checkout (`<checkout>/venv`); its version is that
 *   dist-info's `METADATA` `Version:`, and an editable install's `direct_url.json` names its checkout;
 * - an installed package: a `site-packages` directory holding `hermes_cli/main.py`;
 * - a Desktop or AppImage payload (a per-build copy of the agent: its code, a `venv` and an `install-stamp.json`),
 *   which is a checkout's layout without `.git`: found as one, its version and commit from the stamp.
 * Versions are in any of hermes' forms (`versions.ts`).
 */
import { existsSync, realpathSync } from 'node:fs';
import { readDirCapped } from '../adapters/dir-slices.js';
import { readFileSafely } from '../adapters/trust.js';
import path from 'node:path';
import type { HermesPlace, PlaceProbe } from './processes.js';

const MAX_METADATA_BYTES = 64 * 1024;
/** How far up from a script a checkout is looked for. */
const MAX_ANCESTORS = 8;
/**
 * At most this many entries of a venv's `lib` or a `site-packages` are read (a slice at a time, only hermes' names
 * kept): a venv holds a few thousand; one its owner filled past this is read this far, and hermes' dist-info past it
 * is not found (its version is then unknown, as a venv without one) (#47).
 */
export const INSTALL_DIR_ENTRIES_CAP = 65_536;

/**
 * The names in `dir` that `test` accepts, of its first `INSTALL_DIR_ENTRIES_CAP` entries; a directory holding more is
 * added to `capped` (its install's `capped`, said by `status`).
 */
function namesIn(dir: string, test: (name: string) => boolean, capped?: string[]): string[] {
  const read = readDirCapped(dir, { max: INSTALL_DIR_ENTRIES_CAP, keep: (e) => (test(e.name) ? e.name : null) });
  if (read.more) capped?.push(dir);
  return read.kept;
}

/**
 * A small metadata file's text, read by the trust rules (`adapters/trust.ts` `readFileSafely`: a regular file, never
 * through a symlink root may not follow, at most 64 KiB, never blocking on a FIFO); null when it cannot be read.
 */
export function readSmallFile(file: string): string | null {
  try {
    return readFileSafely(file, MAX_METADATA_BYTES);
  } catch {
    return null;
  }
}

const isSitePackages = (dir: string) => /^(site|dist)-packages$/.test(path.basename(dir));
const has = (dir: string, ...rel: string[]) => existsSync(path.join(dir, ...rel));

/** A hermes checkout at `dir` (not an installed package, whose top-level modules look the same). */
export function isCheckout(dir: string): boolean {
  return !isSitePackages(dir) && has(dir, 'hermes_cli', 'main.py') && has(dir, 'tools', 'terminal_tool.py');
}

/** The site-packages directories of a venv (a directory read past the cap: added to `capped`). */
export function sitePackagesOf(venv: string, capped?: string[]): string[] {
  let libs: string[];
  try {
    libs = namesIn(path.join(venv, 'lib'), (n) => /^python\d/.test(n), capped);
  } catch {
    return [];
  }
  return libs.map((l) => path.join(venv, 'lib', l, 'site-packages')).filter((d) => existsSync(d));
}

/** hermes' dist-info directory in a site-packages (`hermes_agent-<version>.dist-info`), or null (read past the cap: added to `capped`). */
export function distInfoOf(site: string, capped?: string[]): string | null {
  try {
    const n = namesIn(site, (x) => /^hermes[_-]agent-[^/]+\.dist-info$/i.test(x), capped)[0];
    return n ? path.join(site, n) : null;
  } catch {
    return null;
  }
}

/** Whether a venv holds hermes, or lies in a checkout. */
function venvHasHermes(venv: string): boolean {
  if (isCheckout(path.dirname(venv))) return true;
  return sitePackagesOf(venv).some((s) => has(s, 'hermes_cli', 'main.py') || distInfoOf(s) !== null);
}

/** The first ancestor of `dir` (itself included) that is a hermes checkout or an installed package. */
function placeAbove(dir: string): HermesPlace | null {
  let d = dir;
  for (let i = 0; i < MAX_ANCESTORS; i++) {
    if (isSitePackages(d) && has(d, 'hermes_cli', 'main.py')) return { kind: 'package', dir: d };
    if (isCheckout(d)) return { kind: 'checkout', dir: d };
    const up = path.dirname(d);
    if (up === d) break;
    d = up;
  }
  return null;
}

/** A venv whose interpreter `python` is (`<venv>/bin/python*`), when it holds hermes. */
function venvOfInterpreter(python: string): HermesPlace | null {
  const venv = path.dirname(path.dirname(python));
  return path.basename(path.dirname(python)) === 'bin' && has(venv, 'pyvenv.cfg') && venvHasHermes(venv) ? { kind: 'venv', dir: venv } : null;
}

/** The probe of `processes.ts`, memoised for one reading of the process table. */
export function createPlaceProbe(): PlaceProbe {
  const memo = new Map<string, HermesPlace | null>();
  return (p, kind) => {
    const key = `${kind}\0${p}`;
    if (!memo.has(key)) {
      const found = kind === 'interpreter' ? venvOfInterpreter(p) : kind === 'pythonpath' ? placeAbove(p) : placeAbove(path.dirname(p));
      memo.set(key, found);
    }
    return memo.get(key)!;
  };
}

/** One hermes install: where, what, its version and commit where they can be read. */
export interface HermesInstall {
  kind: HermesPlace['kind'];
  dir: string;
  /** From the package metadata (a dist-info's `METADATA`, a checkout's `pyproject.toml`); null: not readable. */
  version: string | null;
  /** The checkout's commit (full hex), or null. */
  commit: string | null;
  /** The checkout an editable venv install points at, or the tree a venv lies in (a checkout, a desktop payload). */
  checkout?: string;
  /** The install stamp's `distribution` (`docker`, `nix`, `desktop-app`), when the tree has one. */
  distribution?: string;
  /**
   * The directories read only as far as `INSTALL_DIR_ENTRIES_CAP` entries while the version was looked for (a venv's
   * `lib`, a site-packages), when the version was not found among them: it may lie past the cap.
   */
  capped?: string[];
}

/** `[project] version = "..."` of a pyproject.toml. */
export function pyprojectVersion(text: string): string | null {
  const project = /^\[project\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(text);
  const m = project ? /^\s*version\s*=\s*["']([^"'\n]+)["']/m.exec(project[1]!) : null;
  return m ? m[1]!.trim() : null;
}

/** `Version:` of a dist-info's METADATA. */
export function metadataVersion(text: string): string | null {
  const m = /^Version:\s*(\S+)\s*$/m.exec(text);
  return m ? m[1]! : null;
}

/** The commit a checkout's HEAD points at (a detached hash, a loose ref, or a packed one), or null. */
export function checkoutCommit(dir: string): string | null {
  let git = path.join(dir, '.git');
  const gitFile = readSmallFile(git);
  if (gitFile !== null) {
    const m = /^gitdir:\s*(.+)$/m.exec(gitFile);
    if (!m) return null;
    git = path.resolve(dir, m[1]!.trim());
  }
  const head = readSmallFile(path.join(git, 'HEAD'))?.trim();
  if (!head) return null;
  if (/^[0-9a-f]{40,64}$/.test(head)) return head;
  const ref = /^ref:\s*(refs\/[^\s]+)$/.exec(head)?.[1];
  if (!ref || ref.split('/').includes('..')) return null;
  const loose = readSmallFile(path.join(git, ref))?.trim();
  if (loose && /^[0-9a-f]{40,64}$/.test(loose)) return loose;
  const commonDir = readSmallFile(path.join(git, 'commondir'))?.trim();
  const packedIn = commonDir ? path.resolve(git, commonDir) : git;
  const packed = readSmallFile(path.join(packedIn, 'packed-refs')) ?? '';
  const line = packed.split('\n').find((l) => l.endsWith(` ${ref}`));
  return line && /^[0-9a-f]{40,64} /.test(line) ? line.split(' ')[0]! : null;
}

/** The checkout an editable install points at (`direct_url.json` `url` `file://...` with `dir_info.editable`). */
function editableCheckout(distInfo: string): string | null {
  try {
    const d = JSON.parse(readSmallFile(path.join(distInfo, 'direct_url.json')) ?? 'null') as { url?: unknown; dir_info?: { editable?: unknown } } | null;
    if (!d || d.dir_info?.editable !== true || typeof d.url !== 'string' || !d.url.startsWith('file://')) return null;
    const dir = decodeURIComponent(d.url.slice('file://'.length));
    return isCheckout(dir) ? dir : null;
  } catch {
    return null;
  }
}

/**
 * The install stamp beside a tree's code (hermes-agent `pm/paths.py` `install_stamp_path`: `<root>/install-stamp.json`,
 * written at build time for Docker, Nix and the desktop payloads; `hermes_cli/version_info.py` `_stamp_version_info`
 * takes it before git): its version (`displayVersion`, else `baseVersion`; `0.0.0` and `unknown` are none), its commit
 * (an all-zero one is a placeholder), its `distribution`. Null when there is no usable stamp.
 */
export function installStamp(dir: string): { version: string | null; commit: string | null; distribution?: string } | null {
  let d: unknown;
  try {
    d = JSON.parse((readSmallFile(path.join(dir, 'install-stamp.json')) ?? 'null').replace(/^\uFEFF/, ''));
  } catch {
    return null;
  }
  if (d === null || typeof d !== 'object' || Array.isArray(d)) return null;
  const o = d as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' && v.trim() !== '' && !/^(0\.0\.0|unknown)$/.test(v.trim()) ? v.trim() : null);
  const version = str(o.displayVersion) ?? str(o.baseVersion);
  const commit = typeof o.commit === 'string' && /^[0-9a-f]{7,64}$/i.test(o.commit) && !/^0+$/.test(o.commit) ? o.commit.toLowerCase() : null;
  if (version === null && commit === null) return null;
  return { version, commit, ...(typeof o.distribution === 'string' ? { distribution: o.distribution.slice(0, 40) } : {}) };
}

/** A tree's version and commit: its install stamp first, then `pyproject.toml` and its git HEAD. */
function treeVersion(dir: string): Pick<HermesInstall, 'version' | 'commit' | 'distribution'> {
  const stamp = installStamp(dir);
  const version = stamp?.version ?? pyprojectVersion(readSmallFile(path.join(dir, 'pyproject.toml')) ?? '');
  const commit = stamp?.commit ?? checkoutCommit(dir);
  return { version, commit, ...(stamp?.distribution ? { distribution: stamp.distribution } : {}) };
}

/** The version and commit of an install found at `place`. */
export function describeInstall(place: HermesPlace): HermesInstall {
  if (place.kind === 'checkout') return { ...place, ...treeVersion(place.dir) };
  const capped: string[] = [];
  const sites = place.kind === 'package' ? [place.dir] : sitePackagesOf(place.dir, capped);
  for (const site of sites) {
    const info = distInfoOf(site, capped);
    if (!info) continue;
    const checkout = editableCheckout(info);
    const version = metadataVersion(readSmallFile(path.join(info, 'METADATA')) ?? '');
    return { ...place, version, commit: checkout ? checkoutCommit(checkout) : null, ...(checkout ? { checkout } : {}) };
  }
  const parent = path.dirname(place.dir);
  if (place.kind === 'venv' && isCheckout(parent)) return { ...place, ...treeVersion(parent), checkout: parent };
  return { ...place, version: null, commit: null, ...(capped.length ? { capped } : {}) };
}

/**
 * The install behind the `hermes` found on `PATH` (each entry absolute, the first executable `hermes`): the venv its
 * shebang's interpreter belongs to, else the checkout or package it lies in. Null when there is none or it is not
 * hermes'.
 */
export function installOnPath(pathVar: string | undefined, probe: PlaceProbe): { file: string; place: HermesPlace } | null {
  for (const d of (pathVar ?? '').split(':')) {
    if (!d.startsWith('/')) continue;
    let file: string;
    try {
      file = realpathSync(path.join(d, 'hermes'));
    } catch {
      continue;
    }
    const shebang = /^#!\s*(\S+)/.exec(readSmallFile(file) ?? '')?.[1];
    const place = (shebang?.startsWith('/') ? probe(shebang, 'interpreter') : null) ?? probe(file, 'file');
    return place ? { file, place } : null;
  }
  return null;
}
