/**
 * hermes' shell snapshots in the temp directory: which files are ones, which names in them look like secrets, and
 * which sessions they make. Pure: names and file facts in, decisions out (files in `files.ts`, the pass in `run.ts`;
 * when a session is abandoned is the temp-directory passes' shared proof, `temp-dirs/rule.ts`).
 *
 * How hermes-agent makes them (NousResearch/hermes-agent, `tools/environments/base.py` `BaseEnvironment.__init__`
 * and `_wrap_command`, `tools/environments/local.py` `get_temp_dir` and `cleanup`): a terminal session's id is
 * `uuid4().hex[:12]`; its shell state is `<temp dir>/hermes-snap-<id>.sh`, an `export -p` dump rewritten after every
 * command through `mktemp <snapshot>.tmp.XXXXXXXXXX` and `mv -f` under `umask 077`; older versions also wrote
 * `<temp dir>/hermes-cwd-<id>.txt`. They are removed on a graceful exit only. The temp directory is hermes'
 * `get_temp_dir`, every directory any release uses (`hermes/session-dirs.ts`).
 */
import path from 'node:path';

const ID = '[0-9a-f]{12}';
/** `hermes-snap-<12 hex>.sh`, its `.tmp.<10 mktemp characters>`, and `hermes-cwd-<12 hex>.txt`: nothing else. */
const SNAPSHOT = new RegExp(`^hermes-snap-(${ID})\\.sh$`);
const SNAPSHOT_TMP = new RegExp(`^hermes-snap-(${ID})\\.sh\\.tmp\\.[A-Za-z0-9]{10}$`);
const CWD_FILE = new RegExp(`^hermes-cwd-(${ID})\\.txt$`);

export type SnapshotFileKind = 'snapshot' | 'snapshot-tmp' | 'cwd';

/** What a file name says: a snapshot file of session `id`, or null when it is not exactly one. */
export function snapshotName(name: string): { id: string; kind: SnapshotFileKind } | null {
  let m = SNAPSHOT.exec(name);
  if (m) return { id: m[1]!, kind: 'snapshot' };
  m = SNAPSHOT_TMP.exec(name);
  if (m) return { id: m[1]!, kind: 'snapshot-tmp' };
  m = CWD_FILE.exec(name);
  return m ? { id: m[1]!, kind: 'cwd' } : null;
}

/** Names that look like secrets: `*_KEY`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`, `*_CREDENTIALS` (any case). */
export function isSecretName(name: string): boolean {
  const n = name.toUpperCase();
  return n.endsWith('_KEY') || n.endsWith('_TOKEN') || n.includes('SECRET') || n.includes('PASSWORD') || n.endsWith('_CREDENTIALS');
}

const DECLARATION = /^(?:declare\s+-[-A-Za-z]+|export)\s+([A-Za-z_][A-Za-z0-9_]*)(?==|\s*$)/;

/**
 * The variable names an `export -p` dump declares whose names look like secrets (sorted, each once). Only names
 * leave this function: a value is never kept, and a line inside a multi-line value that looks like a declaration
 * can at worst add a name.
 */
export function secretNamesIn(text: string): string[] {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const m = DECLARATION.exec(line);
    if (m && isSecretName(m[1]!)) out.add(m[1]!);
  }
  return [...out].sort();
}

/** One session's files in the temp directory, as found: one owner, the newest change among them. */
export interface SnapshotSession {
  id: string;
  uid: number;
  /** Names (directly in the temp directory), the snapshot first when there is one. */
  names: string[];
  /** The newest modification time among them (ms). */
  lastChangeMs: number;
}

/** Groups snapshot files into sessions by id and owner. */
export function groupSessions(files: ReadonlyArray<{ name: string; uid: number; mtimeMs: number }>): SnapshotSession[] {
  const by = new Map<string, SnapshotSession>();
  for (const f of files) {
    const n = snapshotName(f.name);
    if (!n) continue;
    const key = `${n.id}:${f.uid}`;
    const s = by.get(key) ?? { id: n.id, uid: f.uid, names: [], lastChangeMs: 0 };
    if (n.kind === 'snapshot') s.names.unshift(f.name);
    else s.names.push(f.name);
    s.lastChangeMs = Math.max(s.lastChangeMs, f.mtimeMs);
    by.set(key, s);
  }
  return [...by.values()].sort((a, b) => a.lastChangeMs - b.lastChangeMs || a.id.localeCompare(b.id));
}

/** A path in a temp directory, as shown. */
export const inTempDir = (dir: string, name: string): string => path.join(dir, name);
