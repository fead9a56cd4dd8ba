/**
 * `status`: the sandboxes section. How many task directories a home's sandbox root holds, their size on disk, how
 * many no container uses and their size, and the oldest "last changed" among those. Read-only: it lists, `lstat`s
 * and reads directories, and asks the engines for their containers' mounts; it never writes or removes anything.
 */
import type { EngineClient } from '../../adapters/engine.js';
import { readMountPoints, scanTaskDir } from '../dir-trees/files.js';
import { type TaskDirListing, listTaskDirs } from './files.js';
import { type SandboxDirsSummary, type SandboxRoot, type SurveyedDir, summarize, usageByTaskDir } from './rule.js';
import { errorMessage } from '../../errors.js';
import { engineMounts, rootRefusal } from './run.js';
import { forEachBounded } from '../../util/pool.js';

/** Task directories measured at once. */
const SCAN_CONCURRENCY = 4;

/** What `status --json` says beside `sandboxDirs` (which keeps exactly the keys the issue names). */
export interface SandboxDirsDetail {
  /** `TERMINAL_SANDBOX_DIR`, or `home` (`<home>/sandboxes`). */
  from: SandboxRoot['from'];
  /** Where the root came from (`SandboxRoot.source`). */
  source?: string;
  /** How many task directories some container uses; null when unknown. */
  used: number | null;
  /** Directories that could not be read: the sizes are at least the ones shown, those directories' last change unknown. */
  unreadable: Array<{ path: string; error: string }>;
  /** Other filesystems (or mount points) found in the task directories: not entered, not counted. */
  notEntered: string[];
  /** Why `unused` is unknown: the engines that did not answer (or none was reachable). */
  usageUnknown: string | null;
  /** The root cannot be used (not a directory, unreadable) or measuring was cut short: the counts are null. */
  error: string | null;
  /**
   * `<root>/docker` holds more entries than a run takes (`TASK_DIRS_CAP`): how many were counted (the first read); the
   * counts are then at least the ones shown.
   */
  capped?: number;
  /** The root is refused (root over another user's home: `untrusted-root`): not measured, `error` says why. */
  refused?: { reason: 'untrusted-root'; detail: string };
}

export interface SandboxDirsStatus {
  summary: SandboxDirsSummary;
  detail: SandboxDirsDetail;
}

const unknownCounts = (root: string): SandboxDirsSummary => ({ root, count: null, bytes: null, unused: null, unusedBytes: null, oldestUnusedChange: null });

/**
 * Surveys one sandbox root. `engines` are the reachable engines of the run, `unreachable` the hosts of the others:
 * with any unreachable (or none reachable), which directories are unused is unknown (null), never guessed.
 */
export async function surveySandboxDirs(
  root: SandboxRoot,
  engines: readonly EngineClient[],
  unreachable: readonly string[],
  signal?: AbortSignal,
): Promise<SandboxDirsStatus> {
  const detail: SandboxDirsDetail = { from: root.from, source: root.source, used: null, unreadable: [], notEntered: [], usageUnknown: null, error: null };
  const refused = rootRefusal(root);
  if (refused)
    return { summary: unknownCounts(root.root), detail: { ...detail, error: refused.detail, refused: { reason: refused.reason, detail: refused.detail } } };
  let listing: TaskDirListing;
  try {
    listing = await listTaskDirs(root, { signal });
  } catch (err) {
    return { summary: unknownCounts(root.root), detail: { ...detail, error: errorMessage(err) } };
  }
  if (listing.capped !== undefined) detail.capped = listing.capped;
  const [dirs, usage] = await Promise.all([measure(listing, detail, signal), whoUses(listing, engines, unreachable, detail, signal)]);
  if (dirs === null) return { summary: unknownCounts(root.root), detail: { ...detail, error: 'measuring was cut short (--timeout): the numbers are unknown' } };
  if (dirs.length === 0) detail.usageUnknown = null; // none to be used: nothing unknown
  const used = dirs.length === 0 ? new Map<string, unknown>() : usage;
  if (used) detail.used = dirs.filter((d) => used.has(d.name)).length;
  return { summary: summarize(root.root, dirs, used), detail };
}

/** Every real directory under `<root>/docker`, measured; null when the signal cut it short. */
async function measure(listing: TaskDirListing, detail: SandboxDirsDetail, signal: AbortSignal | undefined): Promise<SurveyedDir[] | null> {
  const entries = listing.entries.filter((e) => e.kind === 'directory');
  if (entries.length === 0) return [];
  const place = { parentDev: listing.parentDev!, mountPoints: await readMountPoints() };
  const out: SurveyedDir[] = [];
  try {
    await forEachBounded(entries, SCAN_CONCURRENCY, async (e) => {
      const scan = await scanTaskDir(e.path, place, signal ? { signal } : {});
      if (scan.kind !== 'directory') return; // gone since the listing
      if (scan.mountPoint) detail.notEntered.push(e.path);
      detail.notEntered.push(...scan.mounts);
      detail.unreadable.push(...scan.unreadable.map((u) => ({ path: u.path, error: u.code })));
      out.push({ name: e.name, bytes: scan.bytes, shared: scan.shared, lastChangeMs: scan.unreadable.length || scan.mountPoint ? null : scan.lastChangeMs });
    });
  } catch (err) {
    if (signal?.aborted) return null;
    throw err;
  }
  detail.notEntered.sort();
  detail.unreadable.sort((a, b) => a.path.localeCompare(b.path));
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** Task directory names some container uses; null when not every engine answered. */
async function whoUses(
  listing: TaskDirListing,
  engines: readonly EngineClient[],
  unreachable: readonly string[],
  detail: SandboxDirsDetail,
  signal: AbortSignal | undefined,
): Promise<Map<string, unknown> | null> {
  const unknown = (why: string) => {
    detail.usageUnknown = why;
    return null;
  };
  if (unreachable.length > 0) return unknown(`engine ${unreachable.join(', ')} did not answer`);
  if (engines.length === 0) return unknown('no engine answered');
  const answer = await engineMounts(engines, signal).catch((err: unknown) => ({ mounts: [], unanswered: [{ host: '(all)', error: errorMessage(err) }] }));
  if (answer.unanswered.length > 0) return unknown(answer.unanswered.map((u) => `engine ${u.host} did not answer (${u.error})`).join('; '));
  return usageByTaskDir(listing.parentForms, answer.mounts);
}
