/**
 * hermes' other session files in the directories where it puts them (`hermes/session-dirs.ts`): background jobs'
 * triplets, `execute_code`'s sandbox directories and their RPC sockets. Pure: names and file facts in, what each
 * entry is out; an entry is abandoned by the shell snapshots' proof (`passes/temp-dirs/rule.ts` `judgeSession`: changed
 * at least the threshold ago, and no living hermes-like process of its owner started before its last change).
 *
 * From hermes-agent's source:
 * - background jobs (`tools/environments/local.py`, `tools/process_registry.py`): `hermes_bg_<id>.log`, `.pid` and
 *   `.exit`, judged as one by the newest change among them, as hermes' own pruner judges them
 *   (`cleanup_terminal_temp_cache`, `_BG_GROUP_RE = ^(hermes_bg_[A-Za-z0-9_-]+)\.(log|pid|exit)$`: "a live server's
 *   .pid never changes mtime while its .log does");
 * - `execute_code` (`tools/code_execution_tool.py`, every release; hermes-agent #71521): a directory
 *   `tempfile.mkdtemp(prefix="hermes_sandbox_")` (eight characters of `[a-z0-9_]` after the prefix) holding
 *   `hermes_tools.py` and `script.py`, judged by the newest change anywhere in it, and its socket
 *   `hermes_rpc_<uuid4 hex>.sock`, judged by its own.
 */

/** The kinds of session file this pass removes (each its own in text, JSON and metrics). */
export type SessionFileKind = 'background-job' | 'code-sandbox' | 'rpc-socket';

export const SESSION_FILE_KINDS: readonly SessionFileKind[] = ['background-job', 'code-sandbox', 'rpc-socket'];

const BG = /^(hermes_bg_[A-Za-z0-9_-]+)\.(log|pid|exit)$/;
const SANDBOX = /^hermes_sandbox_[a-z0-9_]{8}$/;
const SOCKET = /^hermes_rpc_[0-9a-f]{32}\.sock$/;

/** What a name in a session directory is: the kind and the entry it belongs to (a triplet's stem), or null. */
export function sessionFileName(name: string): { kind: SessionFileKind; entry: string } | null {
  const bg = BG.exec(name);
  if (bg) return { kind: 'background-job', entry: bg[1]! };
  if (SANDBOX.test(name)) return { kind: 'code-sandbox', entry: name };
  if (SOCKET.test(name)) return { kind: 'rpc-socket', entry: name };
  return null;
}

/** The file type each kind must have: regular files, a directory, a socket. */
export const KIND_TYPE: Record<SessionFileKind, 'file' | 'directory' | 'socket'> = {
  'background-job': 'file',
  'code-sandbox': 'directory',
  'rpc-socket': 'socket',
};

/** One name of a session directory as `lstat` saw it. */
export interface SessionFileFacts {
  name: string;
  uid: number;
  mtimeMs: number;
  type: 'file' | 'directory' | 'socket' | 'symlink' | 'other';
}

/** One entry: a background job's files (by stem and owner), a sandbox directory, a socket. */
export interface SessionEntry {
  kind: SessionFileKind;
  /** The triplet's stem, the directory's or the socket's name. */
  entry: string;
  uid: number;
  /** Its names in the directory (a triplet's present files, `.log`, `.pid`, `.exit` in that order). */
  names: string[];
  /** The newest modification among its files (a sandbox directory's own; its insides are measured before judging). */
  lastChangeMs: number;
}

const SUFFIX_ORDER = ['.log', '.pid', '.exit'];
const suffixRank = (n: string) => SUFFIX_ORDER.findIndex((s) => n.endsWith(s));

/**
 * Groups a directory's names into entries; names of the wrong type for their kind (a symlink, a FIFO named like a
 * log, a file named like a sandbox directory) are set apart, never followed, never removed.
 */
export function groupSessionEntries<F extends SessionFileFacts>(files: readonly F[]): { entries: SessionEntry[]; wrongType: F[] } {
  const by = new Map<string, SessionEntry>();
  const wrongType: F[] = [];
  for (const f of files) {
    const n = sessionFileName(f.name);
    if (!n) continue;
    if (f.type !== KIND_TYPE[n.kind]) {
      wrongType.push(f);
      continue;
    }
    const key = `${n.kind}:${n.entry}:${f.uid}`;
    const e = by.get(key) ?? { kind: n.kind, entry: n.entry, uid: f.uid, names: [], lastChangeMs: 0 };
    e.names.push(f.name);
    e.lastChangeMs = Math.max(e.lastChangeMs, f.mtimeMs);
    by.set(key, e);
  }
  const entries = [...by.values()];
  for (const e of entries) e.names.sort((a, b) => suffixRank(a) - suffixRank(b));
  return { entries: entries.sort((a, b) => a.lastChangeMs - b.lastChangeMs || a.entry.localeCompare(b.entry)), wrongType };
}

/** How a kind is said: `background job`, `code sandbox`, `rpc socket` (and their plurals). */
export const KIND_NOUN: Record<SessionFileKind, [string, string]> = {
  'background-job': ['background job', 'background jobs'],
  'code-sandbox': ['code sandbox', 'code sandboxes'],
  'rpc-socket': ['rpc socket', 'rpc sockets'],
};
