/**
 * What the passes over hermes' temp directories (shell snapshots, session files) share: the refusal of a directory
 * another user controls, as the seam's `refused` hook reports it.
 */
import type { Pass } from './types.js';

/** A temp directory as these passes report it: refused when `reason` is set (`problem` says why). */
interface ReportedTempDir {
  dir: string;
  from: string;
  reason?: string | undefined;
  problem: string | null;
}

/** The refused temp directories of a run, one event each. */
export function refusedTempDirs(tempDirs: readonly ReportedTempDir[]): ReturnType<NonNullable<Pass['refused']>> {
  return tempDirs
    .filter((t) => t.reason)
    .map((t) => ({ event: 'refused-temp-dir', fields: { dir: t.dir, from: t.from, reason: t.reason, detail: t.problem }, line: t.problem ?? t.dir }));
}
