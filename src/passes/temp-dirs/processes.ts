/** The process table as the temp-directory passes' shared proof reads it (`rule.ts` `judgeSession`). */
import type { ProcessTable } from '../../adapters/hermes-processes.js';
import { type ProcessView, earliestPerUser } from './rule.js';

/** A process table as the rule reads it. */
export function viewOf(t: ProcessTable, selfUid: number): ProcessView {
  // No procfs at all: nobody's processes are known.
  if (!t.readable) return { processes: [], hidden: { why: t.hidden ?? 'no procfs', uids: 'all' }, selfUid };
  return {
    processes: t.processes,
    hidden: t.hidden === null ? null : { why: t.hidden, uids: t.blindUids ?? 'others' },
    selfUid,
    earliest: earliestPerUser(t.processes),
  };
}
