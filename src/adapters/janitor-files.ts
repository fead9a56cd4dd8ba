import { sha256Hex } from '../util/sha256.js';
import { closeSync, constants, promises as fs, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { formatMatcher, type Selection } from '../core/selection.js';
import { IDLE_STATE_FILENAME, IMAGES_STATE_FILENAME } from '../defaults.js';
import { homeAccess } from './trust.js';

/**
 * Where the janitor keeps its own files for a hermes home: `<home>/janitor`, or, as root over a home another user
 * owns, root's state directory for it (adapters/trust.ts `homeAccess`: `/var/lib/hermes-janitor/<key>`), so that
 * nothing root acts on is read from a directory that user can write.
 */
export function janitorDir(home: string): string {
  return homeAccess(home).stateDir;
}
export function logFile(home: string): string {
  return path.join(home, 'logs', 'janitor.log');
}

/** The idle-observation state: per engine and running container, the last sample and `since` (see core/idle.ts). */
export function idleStatePath(home: string): string {
  return path.join(janitorDir(home), IDLE_STATE_FILENAME);
}

/** The images hermes used: per engine and image id, the last use (see passes/images/rule.ts, passes/images/uses.ts). */
export function imagesStatePath(home: string): string {
  return path.join(janitorDir(home), IMAGES_STATE_FILENAME);
}

const digest = (s: string) => sha256Hex(s).slice(0, 24);

/** One reap at a time per home and engine. */
export function reapLockPath(home: string, host: string): string {
  return path.join(janitorDir(home), `reap-${digest(host)}.lock`);
}

export async function ensureJanitorDir(home: string): Promise<void> {
  await fs.mkdir(janitorDir(home), { recursive: true, mode: 0o700 });
}

/** What a running `watch` records of itself for `status` (adapters/watch-record.ts). */
export function watchRecordPath(home: string): string {
  return path.join(janitorDir(home), 'watch.json');
}

/** Stamp of the last completed sweep, per home, engine and selection (`reap --once-per`). */
export interface SweepStamp {
  completedAt: string;
  host: string;
  selection: string;
  /**
   * How often its writer means to sweep, in seconds: `reap --once-per`'s duration, `watch`'s heartbeat (a connected
   * watch refreshes its stamps at each); absent when the writer does not know (a plain `reap` from cron).
   */
  scheduleSeconds?: number;
  /** Which command wrote it: `reap` or `watch` (absent in stamps of older versions: `reap`). */
  by?: 'reap' | 'watch';
}

function selectionKey(sel: Selection): string {
  return JSON.stringify({
    labels: sel.selectors.map(formatMatcher).sort(),
    profileLabel: sel.profileLabel,
    profile: sel.profile,
    exclude: sel.exclude.map(formatMatcher).sort(),
  });
}

/** `<home>/janitor/stamps/<digest of home, engine and selection>.json` */
export function stampPath(home: string, host: string, sel: Selection): string {
  return path.join(janitorDir(home), 'stamps', `${digest(JSON.stringify({ home, host, selection: selectionKey(sel) }))}.json`);
}

/**
 * True when the stamp records a completed sweep less than `maxAgeMs` before `now` (a future stamp is stale).
 * Synchronous and dependency-free: this is the shell start-up fast path.
 */
export function stampFresh(file: string, now: Date, maxAgeMs: number): boolean {
  const at = stampCompletedAt(file);
  const age = at === null ? NaN : now.getTime() - at;
  return Number.isFinite(age) && age >= 0 && age < maxAgeMs;
}

/** When the stamp says its sweep completed (ms since the epoch), or null: no stamp, not a file, not a stamp. */
export function stampCompletedAt(file: string): number | null {
  try {
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    let text: string;
    try {
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
    const at = Date.parse(String((JSON.parse(text) as Partial<SweepStamp> | null)?.completedAt ?? ''));
    return Number.isFinite(at) ? at : null;
  } catch {
    return null;
  }
}

export async function writeStamp(file: string, now: Date, host: string, sel: Selection, more: Pick<SweepStamp, 'scheduleSeconds' | 'by'> = {}): Promise<void> {
  const { FileStateStore } = await import('./state-file.js');
  // `completedAt` first: the shell start-up snippet reads it with a pattern (cli/commands/shell-init.ts).
  const stamp: SweepStamp = { completedAt: now.toISOString(), host, selection: selectionKey(sel), ...more };
  await new FileStateStore(file).update(() => ({ next: stamp, result: undefined }));
}
