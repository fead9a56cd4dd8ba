/**
 * The files side of the session-file pass (rules in `core/session-files.ts`): listing a session directory's hermes
 * names and removing a background job's files or a socket, relative to the directory's open descriptor
 * (`adapters/shell-snapshots.ts`: `/proc/self/fd/<fd>/<name>`, a single component, never a symlink followed). A
 * sandbox directory is removed by the sandbox-directory pass's descriptor-relative remover (`adapters/sandbox-dirs.ts`
 * `removeTaskDir`), from this very directory (its device and inode checked). An entry hermes' own pruner removed
 * first is `gone`, never a failure.
 */
import fs, { type Stats } from 'node:fs';
import { type SessionFileFacts, sessionFileName } from '../core/session-files.js';
import { type SnapshotFile, type TempDirHandle, type UnlinkOutcome, unlinkIfUnchanged } from './shell-snapshots.js';

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

/** The entries directly in the directory whose names are hermes' session files, with their `lstat` (gone ones left out). */
export function listSessionFiles(h: TempDirHandle): SessionFile[] {
  const out: SessionFile[] = [];
  for (const name of fs.readdirSync(at(h, '.'))) {
    if (!sessionFileName(name)) continue;
    let st: Stats;
    try {
      st = fs.lstatSync(at(h, name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    out.push({
      name,
      uid: st.uid,
      dev: st.dev,
      ino: st.ino,
      mtimeMs: st.mtimeMs,
      size: st.size,
      allocated: st.blocks * 512,
      type: typeOf(st),
      regular: st.isFile(),
      symlink: st.isSymbolicLink(),
    });
  }
  return out;
}

/** Removes a background job's file if it is still the one judged (`unlinkIfUnchanged`). */
export const unlinkFileIfUnchanged = (h: TempDirHandle, f: SessionFile): UnlinkOutcome => unlinkIfUnchanged(h, f);

/** Removes an RPC socket if it is still the one judged (`unlinkIfUnchanged`). */
export const unlinkSocketIfUnchanged = (h: TempDirHandle, f: SessionFile): UnlinkOutcome => unlinkIfUnchanged(h, f, 'socket');
