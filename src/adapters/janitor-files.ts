import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { formatMatcher, type Selection } from '../core/selection.js';
import { FileStateStore } from './state-file.js';

/** The janitor's own files under a hermes home. */
export function janitorDir(home: string): string {
  return path.join(home, 'janitor');
}
export function logFile(home: string): string {
  return path.join(home, 'logs', 'janitor.log');
}

const digest = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 24);

/** One reap at a time per home and engine. */
export function reapLockPath(home: string, host: string): string {
  return path.join(janitorDir(home), `reap-${digest(host)}.lock`);
}

export async function ensureJanitorDir(home: string): Promise<void> {
  await fs.mkdir(janitorDir(home), { recursive: true, mode: 0o700 });
}

/** Stamp of the last completed sweep, per home, engine and selection (`reap --once-per`). */
export interface SweepStamp {
  completedAt: string;
  host: string;
  selection: string;
}

function selectionKey(sel: Selection): string {
  return JSON.stringify({
    labels: sel.selectors.map(formatMatcher).sort(),
    profileLabel: sel.profileLabel,
    profile: sel.profile,
    exclude: sel.exclude.map(formatMatcher).sort(),
  });
}

export function stampStore(home: string, host: string, sel: Selection): FileStateStore {
  const key = digest(JSON.stringify({ home, host, selection: selectionKey(sel) }));
  return new FileStateStore(path.join(janitorDir(home), 'stamps', `${key}.json`));
}

/** True when the stamp records a completed sweep less than `maxAgeMs` before `now` (a future stamp is stale). */
export async function stampFresh(store: FileStateStore, now: Date, maxAgeMs: number): Promise<boolean> {
  try {
    const { value } = await store.read();
    const at = Date.parse(String((value as Partial<SweepStamp> | undefined)?.completedAt ?? ''));
    const age = now.getTime() - at;
    return Number.isFinite(age) && age >= 0 && age < maxAgeMs;
  } catch {
    return false;
  }
}

export async function writeStamp(store: FileStateStore, now: Date, host: string, sel: Selection): Promise<void> {
  const stamp: SweepStamp = { completedAt: now.toISOString(), host, selection: selectionKey(sel) };
  await store.update(() => ({ next: stamp, result: undefined }));
}
