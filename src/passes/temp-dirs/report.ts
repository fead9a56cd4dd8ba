/**
 * What the passes over hermes' temp directories (shell snapshots, session files) share: the refusal of a directory
 * another user controls, and a directory holding more of hermes' names than one run takes (its cap: the rest wait
 * for the next run), as the seam's `refused` hook reports them (a warning line, also with `--quiet`; an NDJSON event).
 */
import { SESSION_ENTRIES_CAP } from './files.js';
import type { TempDir } from './dirs.js';
import type { Pass, PassRunContext, StatusContext } from '../types.js';

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

/** What both passes' settings give their run: the directories, the threshold, where the process table is read. */
interface TempDirSettings {
  tempDirs: TempDir[];
  thresholdMs: number;
  procRoot: string;
}

/** The options of a pass's run over the temp directories (`shellSnapshotPass`, `sessionFilePass`), in a run. */
export const runOptions = (s: TempDirSettings, ctx: PassRunContext) => ({
  tempDirs: s.tempDirs,
  thresholdMs: s.thresholdMs,
  dryRun: ctx.dryRun,
  now: ctx.now,
  procRoot: s.procRoot,
  signal: ctx.signal,
});

/** The same for `status`: judged as a dry run would (nothing removed), by the process table `status` read. */
export const statusOptions = (s: TempDirSettings, ctx: StatusContext) => ({
  tempDirs: s.tempDirs,
  thresholdMs: s.thresholdMs,
  dryRun: true,
  now: () => ctx.now,
  processes: () => ctx.processes,
  signal: ctx.signal,
});

/** A temp directory as `status` shows it: refused when `reason` is set. */
type StatusTempDir = Pick<ReportedTempDir, 'dir' | 'reason' | 'problem' | 'capped'>;

/** `status`'s attention lines: each directory refused, each past the run's cap. */
export const attentionLines = (part: readonly StatusTempDir[]): string[] => [
  ...part.filter((s) => s.reason).map((s) => `refused: ${s.problem ?? s.dir}`),
  ...part.filter((s) => s.capped !== undefined).map(cappedLine),
];

/** `status`'s refused paths: each directory refused for the run. */
export const refusedPaths = (part: readonly StatusTempDir[]) =>
  part.filter((s) => s.reason).map((s) => ({ path: s.dir, what: 'temp directory', reason: s.reason!, detail: s.problem ?? s.dir, attention: true }));
