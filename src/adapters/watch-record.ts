/**
 * The record a running `watch` keeps of itself, for `status` (`<state dir>/watch.json`, beside its stamps and locks,
 * so as root over another user's home in root's state directory): who it is (pid, start time, boot id, pid namespace,
 * host name: pids are reused), when it started, the engines it watches, its last heartbeat and how often it beats, the
 * address of its `/healthz`, and once it stopped by a signal, when and by which. `watch` writes it when it has taken
 * its locks, at each heartbeat and when it stops; `status` only reads it.
 */
import { watchRecordPath } from './janitor-files.js';
import type { ProcessIdentity } from './process-identity.js';
import { readFileSafely } from './trust.js';

export interface WatchRecord extends ProcessIdentity {
  startedAt: string;
  /** The engines it watches. */
  hosts: string[];
  /** The profile it selects; null: every profile. */
  profile: string | null;
  /** How often it beats while every engine is connected (`HERMES_JANITOR_HEARTBEAT_EVERY`). */
  heartbeatSeconds: number;
  /** Its last heartbeat (null: none yet). */
  heartbeatAt: string | null;
  /** Where its `/healthz` answers (`--metrics-listen`), or null. */
  healthz: string | null;
  /** When it stopped on a signal, and which; absent while it runs (or when it ended otherwise: killed, crashed). */
  stoppedAt?: string;
  stoppedBy?: string;
}

/** Writes the record (a state file: atomic, mode 0600, never through a symlink). */
export async function writeWatchRecord(home: string, record: WatchRecord): Promise<void> {
  const { FileStateStore } = await import('./state-file.js');
  await new FileStateStore(watchRecordPath(home)).update(() => ({ next: record, result: undefined }));
}

/** What `status` found: the record, or why there is none it can use (absent: `record` null, no `problem`). */
export interface WatchRecordRead {
  file: string;
  record: WatchRecord | null;
  problem?: string;
}

const isRecord = (v: unknown): v is WatchRecord => {
  const r = v as Partial<WatchRecord> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.pid === 'number' &&
    typeof r.host === 'string' &&
    typeof r.startedAt === 'string' &&
    typeof r.heartbeatSeconds === 'number' &&
    Array.isArray(r.hosts)
  );
};

/** Reads the record of `home`'s watch, as a state file is read (never through a symlink, never a FIFO, 64 KiB at most). */
export function readWatchRecord(home: string): WatchRecordRead {
  const file = watchRecordPath(home);
  let text: string;
  try {
    text = readFileSafely(file, 64 * 1024, { noFollow: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { file, record: null };
    return { file, record: null, problem: `${file} cannot be read (${code ?? String(err)})` };
  }
  try {
    const v = JSON.parse(text) as unknown;
    return isRecord(v) ? { file, record: v } : { file, record: null, problem: `${file} is not a watch record` };
  } catch {
    return { file, record: null, problem: `${file} is not valid JSON` };
  }
}
