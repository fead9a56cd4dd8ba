import os from 'node:os';
import { type LockInfo, pidAlive } from './file-lock.js';

/**
 * Whether a lock's holder is gone: recorded on this host and its pid no longer runs. A lock from another host,
 * or one whose record cannot be read, is never judged gone from here. The one place `status` decides staleness
 * (so a stricter liveness check, pid plus start time, replaces it here alone).
 */
export function lockHolderGone(info: Partial<LockInfo> | null): boolean {
  if (!info || typeof info.pid !== 'number') return false;
  return info.host === os.hostname() && !pidAlive(info.pid);
}
