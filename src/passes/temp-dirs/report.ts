/**
 * What the passes over hermes' temp directories (shell snapshots, session files) share: the refusal of a directory
 * another user controls, and a directory holding more of hermes' names than one run takes (its cap: the rest wait
 * for the next run), as the seam's `refused` hook reports them (a warning line, also with `--quiet`; an NDJSON event).
 */
import { SESSION_ENTRIES_CAP } from './files.js';
import type { Pass } from '../types.js';

/** A temp directory as these passes report it: refused when `reason` is set (`problem` says why). */
interface ReportedTempDir {
  dir: string;
  from: string;
  reason?: string | undefined;
  problem: string | null;
  /** It held more of hermes' names than the run had left to take (`SESSION_ENTRIES_CAP` a run): how many were. */
  capped?: number | undefined;
}

/** The line of a directory past the run's cap. */
export const cappedLine = (t: { dir: string; capped?: number | undefined }): string =>
  `${t.dir} holds more of hermes' files than one run takes (${SESSION_ENTRIES_CAP} a run): ${t.capped} of them were judged, the others not this run`;

/** The refused temp directories of a run, one event each. */
export function refusedTempDirs(tempDirs: readonly ReportedTempDir[]): ReturnType<NonNullable<Pass['refused']>> {
  return [
    ...tempDirs
      .filter((t) => t.reason)
      .map((t) => ({ event: 'refused-temp-dir', fields: { dir: t.dir, from: t.from, reason: t.reason, detail: t.problem }, line: t.problem ?? t.dir })),
    ...tempDirs
      .filter((t) => t.capped !== undefined)
      .map((t) => ({ event: 'capped-temp-dir', fields: { dir: t.dir, from: t.from, capped: t.capped }, line: cappedLine(t) })),
  ];
}
