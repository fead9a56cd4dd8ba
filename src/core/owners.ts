/**
 * Owned and abandoned sandboxes (pure). A sandbox is **owned** while a living hermes process on the engine's host
 * owns its `hermes-profile` label (`hermes/processes.ts`, `hermes/owned-profiles.ts`: a surface serves every profile
 * of its root or its allowlist, `-p NAME` owns NAME, any other hermes process the profile its home names, each with
 * its container identities; a process whose profile cannot be told owns every label); else it is **abandoned**. An
 * engine that is not on this host (tcp, ssh) has its owners out of sight: every sandbox on it is owned.
 */
import { type HermesProcess, type Serves, mayServe } from '../hermes/process-facts.js';
import { engineOnThisHost } from './engine-place.js';

/** What `list --json` shows of a sandbox's owner. */
export interface SandboxOwner {
  /** The owning process, or null when owners cannot be seen (every sandbox owned). */
  pid: number | null;
  /** Its command line, or why every sandbox counts as owned. */
  command: string;
  /** When it started (ISO 8601), or null. */
  since: string | null;
  /** What it serves: every profile of its root (or everything, unverifiable), its root's allowlist, or one profile. */
  serves: Serves;
  /** Why it owns this sandbox's profile. */
  why: string;
}

/** The owners of one engine's sandboxes as seen from here. */
export interface OwnerView {
  /** Why owners cannot be seen (the engine is not on this host, the process table is hidden); null: they can. */
  blind: string | null;
  /** `blind` is this: the janitor's pid namespace is not the host's (said once per run, not per sandbox). */
  pidNamespace?: string;
  /** The living processes of this host that are hermes (command line), oldest first. */
  processes: readonly HermesProcess[];
}

/** The owner of a sandbox of `profile` (its label value; null: no label), or null when it is abandoned. */
export function ownerOf(view: OwnerView, profile: string | null): SandboxOwner | null {
  if (view.blind) return { pid: null, command: `(${view.blind}: every sandbox counts as owned)`, since: null, serves: 'all-profiles', why: view.blind };
  const p = view.processes.find((x) => x.hermes && (profile === null ? x.owns === null : mayServe(x, profile)));
  return p ? { pid: p.pid, command: p.command, since: new Date(p.startedAtMs).toISOString(), serves: p.serves, why: p.ownsWhy } : null;
}

/** The view for an engine: blind when it is not on this host, or when other users' processes are hidden from here. */
export function ownerViewOf(
  table: { processes: readonly HermesProcess[]; hidden: string | null; blindUids: ReadonlySet<number> | null; readable: boolean },
  engineHost: string,
): OwnerView {
  if (!engineOnThisHost(engineHost)) return { blind: `engine ${engineHost} is not on this host: its owners cannot be seen`, processes: [] };
  if (!table.readable) return { blind: `the process table cannot be read (${table.hidden ?? 'no procfs'})`, processes: [] };
  // hidepid hides whole users: any of them may run hermes. (Processes listed with an unreadable command line are
  // listed as hermes serving every profile already.)
  if (table.hidden && table.blindUids === null) return { blind: table.hidden, processes: [] };
  return { blind: null, processes: table.processes.filter((p) => p.hermes) };
}

/** `never` for the owned threshold: an owned sandbox is never stopped. */
export const NEVER = null;

/**
 * The idle threshold of one sandbox: the owned one (`--idle-after-owned`; null: never) while it is owned, else the
 * usual one (`--idle-after`).
 */
export function idleThresholdFor(owned: boolean, idleAfterSeconds: number, idleAfterOwnedSeconds: number | null): number {
  if (!owned) return idleAfterSeconds;
  return idleAfterOwnedSeconds === null ? Infinity : idleAfterOwnedSeconds;
}
