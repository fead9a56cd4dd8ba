/**
 * hermes' sandbox directories: which are used (asked of every engine), and the removal pass `reap` and `watch`
 * run with `--sandbox-dirs-older-than`. Rules in rule.ts, files in files.ts and dir-trees/files.ts.
 */
import { lstatSync, promises as fs } from 'node:fs';
import type { EngineClient } from '../../adapters/engine.js';
import { readMountPoints, removeTaskDir, scanTaskDir } from '../dir-trees/files.js';
import { refusalLine, shownPath } from '../dir-trees/rule.js';
import { type TaskDirListing, listTaskDirs } from './files.js';
import { GONE, type Keep, type KeepReason, type MountRef, type SandboxRoot, keepByEngines, keepByFiles, cappedRootLine, usageByTaskDir } from './rule.js';
import { errorMessage } from '../../errors.js';
import { SANDBOX_DOCKER_DIRNAME } from '../../defaults.js';
import { UNTRUSTED_ROOT, untrustedRootLine } from '../../core/trust.js';
import { type CheckedDir, untrustedRoot } from '../../adapters/trust.js';

/** What the engines say about mounts: every container's mount sources, and the engines that did not answer. */
export interface EngineMounts {
  mounts: MountRef[];
  unanswered: Array<{ host: string; error: string }>;
}

/**
 * Asks every engine for every container's mounts (any state, any labels). A source is listed as given and, when it
 * resolves on this host to another path (symlinks in it), resolved too: either spelling inside a task directory
 * makes it used. `resolved` caches the resolution across calls of one run.
 */
export async function engineMounts(engines: readonly EngineClient[], signal?: AbortSignal, resolved = new Map<string, string | null>()): Promise<EngineMounts> {
  const out: EngineMounts = { mounts: [], unanswered: [] };
  await Promise.all(
    engines.map(async (engine) => {
      try {
        for (const c of await engine.listMounts(signal)) {
          for (const source of c.sources) {
            const ref = { host: engine.host, id: c.id, name: c.name, state: c.state };
            out.mounts.push({ ...ref, source });
            if (!resolved.has(source)) resolved.set(source, await fs.realpath(source).catch(() => null));
            const real = resolved.get(source);
            if (real && real !== source) out.mounts.push({ ...ref, source: real });
          }
        }
      } catch (err) {
        if (signal?.aborted) throw signal.reason ?? err;
        out.unanswered.push({ host: engine.host, error: errorMessage(err) });
      }
    }),
  );
  return out;
}

/** One engine of the run, and whether it answered the run's sweep. */
export interface SandboxDirsEngine {
  engine: EngineClient;
  /** False when it did not answer the run (unreachable, timed out): then nothing is removed. */
  answered: boolean;
  /** Why it did not answer (shown in the kept reason). */
  error?: string;
}

export interface SandboxDirsPassOptions {
  /** Sandbox roots (`sandboxRoot()` of each home of the run); the same directory given twice is handled once. */
  roots: readonly SandboxRoot[];
  /** Every engine of the run. A container on any of them may use a directory. */
  engines: readonly SandboxDirsEngine[];
  /** A task directory goes when nothing in it changed for at least this long (`--sandbox-dirs-older-than`). */
  olderThanMs: number;
  /** List what would go (with sizes), remove nothing. */
  dryRun: boolean;
  /** The clock: "changed for the duration" is judged against it. */
  now: () => Date;
  /** Stops starting new work (a removal already started finishes: half-removing on a timeout helps no one). */
  signal?: AbortSignal;
}

export interface RemovedSandboxDir {
  path: string;
  /** Size on disk it took (allocated blocks, as `du -sxB1`). */
  bytes: number;
  /** Its newest modification time (ISO 8601). */
  lastChange: string;
}

export interface KeptSandboxDir {
  path: string;
  /**
   * Why: `in-use`, `changed-recently`, `engine-unanswered`, `symlink`, `not-a-directory`, `mount-point`,
   * `mount-inside`, `gone`, `being-removed` (another run claimed it), `cut-short`.
   */
  reason: KeepReason;
  /** The same in one human line (names the container, the mount, the engine, the change time). */
  detail: string;
  /** Its newest modification time (ISO 8601) when it was measured, else null. */
  lastChange: string | null;
}

export interface FailedSandboxDir {
  path: string;
  /** One line: the directory, the first file refused, the fix, and whether anything was removed. */
  error: string;
  /** Something was removed before the refusal: half-removed (never reported as removed). */
  partial: boolean;
  /** Entries replaced (by a symlink or another directory) while the removal ran: skipped, never followed. */
  swapped?: string[];
}

/** A sandbox root not used for the run: `untrusted-root` (core/trust.ts `rootChainProblem`). */
export interface RefusedSandboxRoot {
  path: string;
  reason: typeof UNTRUSTED_ROOT;
  /** One line: which directory, and why. */
  detail: string;
}

/** A sandbox root whose `<root>/docker` holds more entries than a run takes (`TASK_DIRS_CAP`). */
export interface CappedSandboxRoot {
  /** `<root>/docker`. */
  path: string;
  /** How many of its entries were taken and judged this run (the first read); the others were not. */
  capped: number;
  /** One line saying so. */
  detail: string;
}

/**
 * The pass's outcome: the `sandboxDirs` object of `reap --json` (keys `removed`, `kept`, `failed`; `refused` when a
 * root was refused for the run; `capped` when a root held more task directories than a run takes).
 */
export interface SandboxDirsResult {
  removed: RemovedSandboxDir[];
  kept: KeptSandboxDir[];
  failed: FailedSandboxDir[];
  refused?: RefusedSandboxRoot[];
  capped?: CappedSandboxRoot[];
}

interface Pass {
  opts: SandboxDirsPassOptions;
  out: SandboxDirsResult;
  /** Engines that did not answer so far (the run's, then any that fails a re-check): nothing more is removed. */
  unanswered: Array<{ host: string; error: string }>;
  resolved: Map<string, string | null>;
  uid: number | null;
  /**
   * The engines' first answer in the pass (asked for the first directory old enough to go), and the directories it
   * finds in use, per listing: a directory it finds in use is kept on it, without asking every engine again.
   */
  first?: { answer: EngineMounts; use: Map<TaskDirListing, Map<string, MountRef[]>> };
}

function keep(p: Pass, path: string, k: Keep, lastChangeMs: number | null): void {
  p.out.kept.push({ path, reason: k.reason, detail: k.detail, lastChange: lastChangeMs === null ? null : new Date(lastChangeMs).toISOString() });
}

/**
 * Removes the task directories no container uses and nothing changed in for `olderThanMs`, under each sandbox root.
 *
 * Callers hold the reap lock (`reap` and `watch` take it before calling; a second caller on another engine of the
 * same home is still safe: a directory is claimed by renaming it before anything in it is removed, so it is
 * removed once). For each entry directly under `<root>/docker`, in name order, right before acting:
 * 1. it must be a real directory (not a symlink, not a mount point), with no other filesystem mounted inside, and
 *    its newest modification time (any entry, directories included) at least `olderThanMs` before `now()`;
 * 2. every engine is asked again (`GET /containers/json?all=1`): it must have answered, now and in the run, and
 *    list no container with a mount whose source is the directory or inside it (a directory the pass's first answer
 *    finds in use is kept on that answer, without asking again; a dry run judges by that answer);
 * 3. this process must be able to read and remove everything in it (else a failure naming the first file refused,
 *    nothing removed);
 * 4. then it is removed (`dryRun`: listed only). A refusal half-way is a failure marked `partial`.
 * Throws `UsageError` (before anything is removed) when a root or its `docker` directory exists and is not a
 * directory. Never throws for a directory: each ends in `removed`, `kept` or `failed`.
 */
export async function removeUnusedSandboxDirs(opts: SandboxDirsPassOptions): Promise<SandboxDirsResult> {
  const listings: Array<TaskDirListing & { owner?: number }> = [];
  const refused: RefusedSandboxRoot[] = [];
  const capped: CappedSandboxRoot[] = [];
  const seen = new Set<string>();
  for (const r of opts.roots) {
    const trusted = checkedRoot(r);
    if ('refused' in trusted) {
      refused.push(trusted.refused);
      continue;
    }
    const listing = await listTaskDirs(r, { signal: opts.signal });
    if (trusted.docker && listing.parentIno !== null && (listing.parentIno !== trusted.docker.ino || listing.parentDev !== trusted.docker.dev)) {
      refused.push(refusedRoot(r, `${shownPath(listing.parent)} changed since it was checked`));
      continue;
    }
    const key = listing.parentForms.at(-1)!;
    if (!seen.has(key)) {
      listings.push({ ...listing, ...(r.owner !== undefined ? { owner: r.owner } : {}) });
      if (listing.capped !== undefined) capped.push({ path: listing.parent, capped: listing.capped, detail: cappedRootLine(listing.parent, listing.capped) });
    }
    seen.add(key);
  }
  const p: Pass = {
    opts,
    out: { removed: [], kept: [], failed: [], ...(refused.length ? { refused } : {}), ...(capped.length ? { capped } : {}) },
    unanswered: opts.engines.filter((e) => !e.answered).map((e) => ({ host: e.engine.host, error: e.error ?? 'no answer' })),
    resolved: new Map(),
    uid: process.geteuid?.() ?? null,
  };
  if (opts.engines.length === 0) p.unanswered.push({ host: '(none)', error: 'no engine was found' });
  for (const listing of listings) {
    for (const entry of listing.entries) await oneDir(p, listing, entry);
  }
  return p.out;
}

async function oneDir(p: Pass, listing: TaskDirListing & { owner?: number }, entry: TaskDirListing['entries'][number]): Promise<void> {
  const { opts } = p;
  if (opts.signal?.aborted) return keep(p, entry.path, { reason: 'cut-short', detail: 'the run was cut short before this directory' }, null);
  if (p.unanswered.length > 0 && entry.kind === 'directory') return keep(p, entry.path, keepByEngines([], p.unanswered)!, null);
  const notOwners = listing.owner === undefined ? null : notOwnersDir(entry.path, listing.owner);
  if (notOwners) return keep(p, entry.path, notOwners, null);
  const place = { parentDev: listing.parentDev!, mountPoints: await readMountPoints() };
  let scan;
  try {
    // Read-only, dry run or not: a dry run predicts the refusals too.
    scan = await scanTaskDir(entry.path, place, { checkRemovable: true, ...(opts.signal ? { signal: opts.signal } : {}) });
  } catch (err) {
    if (opts.signal?.aborted) return keep(p, entry.path, { reason: 'cut-short', detail: 'the run was cut short while measuring it' }, null);
    p.out.failed.push({ path: entry.path, error: `cannot measure ${shownPath(entry.path)}: ${errorMessage(err)}`, partial: false });
    return;
  }
  const byFiles = keepByFiles(scan, opts.now().getTime(), opts.olderThanMs);
  if (byFiles) return keep(p, entry.path, byFiles, scan.kind === 'directory' ? scan.lastChangeMs : null);
  // Right before acting: every engine, again. The pass's first answer serves the directory it was asked for, keeps
  // every later one it finds in use (keeping needs no fresher proof: a directory in use costs no question to every
  // engine), and is a dry run's answer; any other directory is asked about again, now.
  const asked = p.first === undefined;
  if (p.first === undefined) p.first = { answer: await askEngines(p), use: new Map() };
  const first = p.first;
  const firstUse = first.use.get(listing) ?? first.use.set(listing, usageByTaskDir(listing.parentForms, first.answer.mounts)).get(listing)!;
  const known = first.answer.unanswered.length === 0 ? (firstUse.get(entry.name) ?? []) : [];
  if (!asked && known.length > 0) return keep(p, entry.path, keepByEngines(known, [])!, scan.lastChangeMs);
  const answer = asked || opts.dryRun ? first.answer : await askEngines(p);
  if (opts.signal?.aborted)
    return keep(p, entry.path, { reason: 'cut-short', detail: 'the run was cut short while asking the engines about it' }, scan.lastChangeMs);
  if (answer !== first.answer || asked) p.unanswered.push(...answer.unanswered);
  const users = answer === first.answer ? known : (usageByTaskDir(listing.parentForms, answer.mounts).get(entry.name) ?? []);
  const byEngines = keepByEngines(users, p.unanswered);
  if (byEngines) return keep(p, entry.path, byEngines, scan.lastChangeMs);
  const lastChange = new Date(scan.lastChangeMs).toISOString();
  const refusal = scan.unreadable[0] ?? scan.refused;
  if (refusal) {
    p.out.failed.push({ path: entry.path, error: refusalLine(entry.path, refusal, p.uid, { partial: false, leftAt: entry.path }), partial: false });
    return;
  }
  if (opts.dryRun) {
    p.out.removed.push({ path: entry.path, bytes: scan.bytes, lastChange });
    return;
  }
  const outcome = await removeTaskDir(entry.path, place.parentDev, {
    parentIno: listing.parentIno!,
    ...(listing.owner !== undefined ? { owner: listing.owner } : {}),
  });
  if (outcome.status === 'removed') p.out.removed.push({ path: entry.path, bytes: scan.bytes, lastChange });
  else if (outcome.status === 'gone') keep(p, entry.path, GONE, scan.lastChangeMs);
  else
    p.out.failed.push({
      path: entry.path,
      error: refusalLine(entry.path, outcome.refusal, p.uid, outcome),
      partial: outcome.partial,
      swapped: outcome.swapped,
    });
}

/** Every engine's mounts, asked now (one that throws: every engine counted as not answering). */
const askEngines = (p: Pass): Promise<EngineMounts> =>
  engineMounts(
    p.opts.engines.map((e) => e.engine),
    p.opts.signal,
    p.resolved,
  ).catch((err: unknown) => ({ mounts: [], unanswered: [{ host: '(all)', error: errorMessage(err) }] }));

/**
 * A root with an owner (root over another user's home) is used only when it and its `docker` directory belong to that
 * user, are no symlinks and are on one filesystem (adapters/trust.ts `untrustedRoot`); `docker` is then what the
 * listing must find. Null for a root without an owner, or one that may be used.
 */
export function rootRefusal(r: SandboxRoot): RefusedSandboxRoot | null {
  const c = checkedRoot(r);
  return 'refused' in c ? c.refused : null;
}

function checkedRoot(r: SandboxRoot): { docker: CheckedDir | null } | { refused: RefusedSandboxRoot } {
  if (r.owner === undefined) return { docker: null };
  const { line, chain } = untrustedRoot('sandbox root', r.root, r.owner, [SANDBOX_DOCKER_DIRNAME]);
  return line !== null ? { refused: { path: r.root, reason: UNTRUSTED_ROOT, detail: line } } : { docker: chain[1] ?? null };
}

function refusedRoot(r: SandboxRoot, why: string): RefusedSandboxRoot {
  return { path: r.root, reason: UNTRUSTED_ROOT, detail: untrustedRootLine('sandbox root', r.root, why) };
}

/** A task directory that is not the owner's (or not a directory of theirs at all), as a reason to keep it. */
function notOwnersDir(dir: string, owner: number): Keep | null {
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    return null; // gone: the scan says so
  }
  if (!st.isDirectory() || st.uid === owner) return null;
  return { reason: UNTRUSTED_ROOT, detail: `belongs to uid ${st.uid}, not to the home's owner (uid ${owner}): not removed as root` };
}
