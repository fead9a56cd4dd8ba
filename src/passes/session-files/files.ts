/**
 * The files side of the session-file pass (rules in `passes/session-files/rule.ts`): listing a session directory's hermes
 * names and removing a background job's files or a socket, relative to the directory's open descriptor
 * (`passes/temp-dirs/files.ts`: `/proc/self/fd/<fd>/<name>`, a single component, never a symlink followed). A
 * sandbox directory is removed by the sandbox-directory pass's descriptor-relative remover (`passes/dir-trees/files.ts`
 * `removeTaskDir`), from this very directory (its device and inode checked). An entry hermes' own pruner removed
 * first is `gone`, never a failure.
 */
import fs, { type Stats } from 'node:fs';
import { type SessionFileFacts, sessionFileName } from './rule.js';
import { type EntriesBudget, type SnapshotFile, type TempDirHandle, type UnlinkOutcome, factsOf, readNames, unlinkIfUnchanged } from '../temp-dirs/files.js';

/** A hermes name of a session directory, with what `lstat` showed (what a removal checks again). */
export type SessionFile = SessionFileFacts & SnapshotFile;

const at = (h: TempDirHandle, name: string) => `/proc/self/fd/${h.fd}/${name}`;

function typeOf(st: Stats): SessionFileFacts['type'] {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  if (st.isSocket()) return 'socket';
  return 'other';
}

/** A directory's session files as listed: their facts, and whether the listing stopped at its cap or the run's abort. */
export interface SessionFilesRead {
  files: SessionFile[];
  /** More entries were there than the run had left (`SESSION_ENTRIES_CAP`): how many were taken. */
  capped?: number;
  cutShort?: boolean;
}

/**
 * The entries directly in the directory whose names are hermes' session files, with their `lstat` (gone ones left
 * out), read in slices (`readNames`: `pause` gives the event loop a turn, and is true once the run is aborted), at
 * most what `budget` has left (a background job's three files are one entry).
 */
export async function listSessionFiles(h: TempDirHandle, pause: () => Promise<boolean>, budget: EntriesBudget): Promise<SessionFilesRead> {
  const read = await readNames(h, (name) => sessionFileName(name)?.entry ?? null, { pause, budget });
  const capped = read.capped !== undefined ? { capped: read.capped } : {};
  const out: SessionFile[] = [];
  for (let i = 0; i < read.names.length; i++) {
    if (i % 256 === 255 && (await pause())) return { files: out, ...capped, cutShort: true };
    const f = sessionFileAt(h, read.names[i]!);
    if (f) out.push(f);
  }
  return { files: out, ...capped, ...(read.cutShort ? { cutShort: true } : {}) };
}

/** One name's facts (`lstat`), or null when it is not there. */
function sessionFileAt(h: TempDirHandle, name: string): SessionFile | null {
  let st: Stats;
  try {
    st = fs.lstatSync(at(h, name));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  return { ...factsOf(name, st), type: typeOf(st) };
}

/** Removes a background job's file if it is still the one judged (`unlinkIfUnchanged`). */
export const unlinkFileIfUnchanged = (h: TempDirHandle, f: SessionFile): UnlinkOutcome => unlinkIfUnchanged(h, f);

/** Removes an RPC socket if it is still the one judged (`unlinkIfUnchanged`). */
export const unlinkSocketIfUnchanged = (h: TempDirHandle, f: SessionFile): UnlinkOutcome => unlinkIfUnchanged(h, f, 'socket');
