/**
 * `status`: gathers engines, containers, janitor state and breakers into one report. Read-only: it never writes
 * a file, never takes a lock, never creates a directory.
 */
import type { ExecView } from '../passes/sweep-pass.js';
import type { IdleOptions } from '../reaper/sweep-types.js';
import { closeSync, promises as fs, readSync } from 'node:fs';
import path from 'node:path';
import { lockState } from '../adapters/file-lock.js';
import { janitorDir, logFile } from '../adapters/janitor-files.js';
import { untrustedSettings } from '../adapters/settings-worth.js';
import { homeAccess, openFileSafely, readFileSafely, refusals } from '../adapters/trust.js';
import { readDirSliced } from '../adapters/dir-slices.js';
import type { EngineClient, EngineStatusCalls } from '../adapters/engine.js';
import { type EngineEndpoint, whyEngine } from '../adapters/engine-host.js';
import { loadRestartGuardSettings, restartGuardState, restartLoopStore } from '../breakers/restart-guard.js';
import { createStopHook } from '../breakers/stop-hook.js';
import { stuckSessionsStatus, stuckSessionsStore } from '../breakers/stuck-sessions.js';
import { TOOL_LOOP_DIR_ENTRIES_CAP, createToolLoop } from '../breakers/tool-loop.js';
import { oneStepFromLoop } from '../core/tool-loop.js';
import { readHookErrors } from '../breakers/hook-errors.js';
import type { HookErrorEntry } from '../core/hook-errors.js';
import { type AttentionInput, type ContainerCounts, attentionItems, countContainers, statusExitCode, verdictLine } from '../core/status.js';
import { type SweepFreshness, type WatchFacts, staleSweepLine, sweepFreshness, watchProblem } from '../core/janitor-health.js';
import { liveness } from '../adapters/process-identity.js';
import { DEFAULT_SUSPEND_THRESHOLD } from '../core/stuck-sessions.js';
import type { Selection } from '../core/selection.js';
import { NotADockerEngineError, errorMessage } from '../errors.js';
import { acrossEngines } from '../reaper/run.js';
import { type ListedEntry, list } from '../reaper/sweep.js';
import { type ProcessTable, listHermesProcesses, procRootOf } from '../adapters/hermes-processes.js';
import type { HermesProcess } from '../hermes/process-facts.js';
import type { HermesInstallsStatus } from './hermes-installs.js';
import type { TiedRoot } from '../core/policy.js';
import type { Held } from '../hermes/judgement.js';
import type { Pass, PassSettingsInput, StatusContext } from '../passes/types.js';
import { pidNamespaceProblem } from '../adapters/pid-namespace.js';
import { userNames } from '../adapters/user-names.js';
import type { SandboxOwner } from '../core/owners.js';

export interface EngineStatus {
  /** The address (null when discovery found none). */
  host: string | null;
  /** Why this engine: how it was named, or what discovery tried. */
  chosenBy: string;
  reachable: boolean;
  /** `Docker` or `Podman`; null when unreachable. */
  kind: string | null;
  version: string | null;
  apiVersion: string | null;
  error: string | null;
}

export interface SweepStamp {
  host: string;
  profile: string | null;
  completedAt: string;
  ageSeconds: number | null;
  file: string;
  /** How often its writer means to sweep (`--once-per`, watch's heartbeat), seconds; null: not recorded. */
  scheduleSeconds: number | null;
  /** Which command wrote it (`reap` for stamps of older versions). */
  by: 'reap' | 'watch';
}

export interface LockStatus {
  path: string;
  pid: number | null;
  host: string | null;
  since: string | null;
  /** Holder gone (same host, pid not running). */
  stale: boolean;
}

export interface LogStatus {
  path: string;
  exists: boolean;
  sizeBytes: number;
  /** The last `--background` run recorded in the log. */
  lastRun: { startedAt: string; command: string; completed: boolean } | null;
}

/** A sandbox the idle rule would stop, and what the stop puts at stake. */
export interface StopCost {
  id: string;
  name: string;
  host: string;
  profile: string | null;
  idleSeconds: number | null;
  writableLayerBytes: number | null;
}

export interface StatusReport {
  home: string;
  profile: string | null;
  asOf: string;
  thresholdSeconds: number;
  engines: EngineStatus[];
  containers: (ContainerCounts & { failed: number; timedOut: boolean }) | null;
  /** A run over several homes: the profile labels of containers kept because no home of the run has them (`unknown-profile`). */
  unknownProfiles?: string[];
  /**
   * Each running sandbox with its running `docker exec` sessions (`execs: [{id, ageSeconds, processes, command,
   * abandoned, client, clientUnverifiable}]`); empty when no engine answered.
   */
  runningSandboxes: Array<{ id: string; name: string; host: string; execs: ExecView[]; owner?: SandboxOwner }>;
  /**
   * The cost of the stops a `reap` would make now: each running sandbox the idle rule would stop, with the size of its
   * writable layer (`writableLayerBytes`, `SizeRw`; null when the engine gave none), which hermes' own reaper removes
   * with the sandbox at its next start once it has been stopped for 2 x its lifetime (unless
   * `terminal.docker_orphan_reaper` is off). Empty when none would be stopped or no engine answered.
   */
  stopCosts: StopCost[];
  /**
   * `freshness`: each engine's last completed sweep against its schedule (`stale` past twice it); `watch`: the home's
   * recorded `watch`, its process, heartbeat and `/healthz` (null: none recorded), and what is wrong with it.
   */
  janitor: {
    sweeps: SweepStamp[];
    locks: LockStatus[];
    log: LogStatus;
    freshness: SweepFreshness[];
    watch: (WatchFacts & { problem: string | null }) | null;
  };
  breakers: {
    restartGuard: { location: string; bootsInWindow: number; max: number; windowSeconds: number; tripped: boolean; problem: string | null };
    stuckSessions: { location: string; threshold: number; sessions: number; suspended: string[]; problem: string | null };
    stopHook: {
      location: string;
      armed: boolean;
      owner: string | null;
      remaining: number | null;
      blocks: number;
      maxBlocks: number;
      stalled: boolean;
      problem: string | null;
      /** The stop hook's own mistakes it failed open on (a bad flag, a marker it cannot write), most recent first. */
      hookErrors: HookErrorEntry[];
    };
    toolLoop: {
      location: string;
      /**
       * Identical calls in a row and the most consecutive failures of one tool, per session; `warnings` and `stops`: the
       * loops found in the session, answered with a warning (a deny) and with the end of the turn.
       */
      sessions: Array<{
        session: string | null;
        streak: number;
        failures: number;
        looping: boolean;
        warnings: number;
        stops: number;
        disarmed: boolean;
        problem: string | null;
      }>;
      /**
       * Sessions one step from the breaker (the next identical call is denied, or the next failure blocked), judged
       * with the default thresholds. A trip itself resets the history, so this is what the state can show.
       */
      looping: string[];
      /** Loops found in every session on record: warned (denied) and stopped (the turn ended). */
      warnings: number;
      stops: number;
      /** Since when every session is disarmed (`tool-loop disarm`), or null. */
      disarmed: string | null;
      /** The tool hooks' own mistakes they failed open on, most recent first. */
      hookErrors: HookErrorEntry[];
      /**
       * The histories' directory holds more than `TOOL_LOOP_DIR_ENTRIES_CAP` entries: that cap (the sessions shown are
       * those among the entries read); absent otherwise.
       */
      capped?: number;
    };
  };
  /** This host has no engine at all (not an unreachable one): the line saying so. */
  noEngine?: string;
  /**
   * Running sandboxes owned (a living hermes on this host may serve their profile) and abandoned, exited ones kept as
   * `stopped-retained`; `blind`: engines whose owners cannot be seen, and why (every sandbox on them is owned).
   */
  sandboxOwners?: { owned: number; abandoned: number; stoppedRetained: number; blind: string[] };
  /**
   * The living processes of this host that could be hermes, and the profile each serves (null: every profile);
   * `hidden`: why some may be missing (hidepid, unreadable command lines, a pid namespace that is not the host's).
   */
  hermesProcesses?: { processes: HermesProcessStatus[]; hidden: string | null };
  /** Why this janitor's view of processes is partial (its pid namespace is not the host's), or null. */
  pidNamespace?: string | null;
  /**
   * The hermes installs found on this host (behind each living hermes process, and the `hermes` on PATH), each with
   * its version and commit, against the newest hermes this janitor was checked against.
   */
  hermesInstalls?: HermesInstallsStatus;
  /**
   * Whose home this is to the janitor (`owner`: set when it runs as root over another user's home, whose files it then
   * reads with that user's rights and never through a symlink), where its own state for the home lives, and every path
   * refused this run, with why (`untrusted-root` roots, symlinked or FIFO files, files too large).
   */
  trust: {
    owner: { uid: number; name: string | null } | null;
    stateDir: string;
    refused: TrustRefusal[];
    /** What the home's settings are worth on the engines (core/setting-worth.ts): as written, or only what keeps more. */
    settings?: { worth: 'as-written' | 'keep-more'; why: string };
  };
  /** What needs attention, one line each (with the command that fixes it), the worst first. */
  attention: string[];
  exitCode: 0 | 1 | 3;
  /** The answer first: `line` is the report's first line (`OK: ...` or `ATTENTION: N things, the worst first: ...`). */
  verdict: { ok: boolean; count: number; line: string; worst: string | null };
  /**
   * Each pass's keys (`Pass.status.json`, docs/status.md names them): those working on what the engines have after
   * `janitor`, those on this host's files alone after `hermesProcesses`.
   */
  readonly [passKey: string]: unknown;
}

/** A pass's part of a status report, for its section of the text. */
export interface PassPart {
  pass: Pass;
  part: unknown;
}

/** A path refused this run: what it is (`sandbox root`, `temp directory`, `file`), the reason, and the one line why. */
export interface TrustRefusal {
  path: string;
  what: string;
  reason: string;
  detail: string;
}

/** One living hermes process as `status` shows it. */
export interface HermesProcessStatus {
  pid: number;
  uid: number;
  /** Its user's name on this system (null: no such entry in /etc/passwd). */
  user: string | null;
  /** Why it counts as hermes (its entry point, module, checkout, venv...). */
  why: string;
  /** Running sandboxes it makes owned (it is the first living hermes that may serve their profile). */
  owns: number;
  /** The profile it serves; null: every profile (`profileUnknown` says why). */
  profile: string | null;
  profileUnknown: string | null;
  /** When it started (ISO 8601). */
  since: string;
  command: string;
  /** What it serves (`all-profiles` also when that cannot be verified), the label values it owns (null: all), and why. */
  serves: HermesProcess['serves'];
  labels: string[] | null;
  ownsWhy: string;
}

export interface StatusRequest {
  home: string;
  /** The commands `attention` advises, with the selection and engine of this status (`AttentionInput.commands`). */
  commands?: { reap: string; restartGuardClear: string };
  selection: Selection;
  /** Endpoints after discovery; `discoveryError` when discovery found none. */
  endpoints: EngineEndpoint[];
  discoveryError?: string;
  connect: (endpoints: EngineEndpoint[]) => Promise<EngineClient[]>;
  thresholdSeconds: number;
  /** Each label's own threshold (`SweepRequest.thresholdByProfile`). */
  thresholdByProfile?: Record<string, number>;
  /** Labels nothing is removed or stopped for (`SweepRequest.held`). */
  held?: Record<string, Held>;
  /** A run over several homes: the labels some home has (`SweepRequest.knownProfiles`). */
  knownProfiles?: ReadonlySet<string>;
  /** A run over several homes: each home's sandbox roots (`SweepRequest.tiedRoots`). */
  tiedRoots?: readonly TiedRoot[];
  asOf: Date;
  now: Date;
  concurrency: number;
  signal?: AbortSignal;
  env: Record<string, string | undefined>;
  maxStopBlocks?: number;
  /** The idle rule as `reap` would apply it; its store must not write (status never writes). */
  idle?: IdleOptions;
  /** The passes (`passes/index.ts`) and what their parts are measured from (each as a dry run would: nothing removed). */
  passes: readonly Pass[];
  passInput: PassSettingsInput;
  /** This host has no engine at all (said once; not an unreachable engine: exit 0). */
  noEngine?: string;
  /** `status --schedule`, in seconds: how often the janitor is meant to sweep here (else each stamp's own, else 1 h). */
  scheduleSeconds?: number;
}

const hasStatusCalls = (e: EngineClient): e is EngineClient & EngineStatusCalls => typeof (e as Partial<EngineStatusCalls>).version === 'function';

async function engineStatus(engine: EngineClient, endpoint: EngineEndpoint, signal: AbortSignal | undefined): Promise<EngineStatus> {
  const base = { host: engine.host, chosenBy: whyEngine(endpoint) };
  try {
    await engine.ping(signal);
    const v = hasStatusCalls(engine) ? await engine.version(signal) : null;
    return { ...base, reachable: true, kind: v?.kind ?? null, version: v?.version || null, apiVersion: v?.apiVersion || null, error: null };
  } catch (err) {
    return { ...base, reachable: false, kind: null, version: null, apiVersion: null, error: errorMessage(err) };
  }
}

async function readStamps(home: string, now: Date): Promise<SweepStamp[]> {
  const dir = path.join(janitorDir(home), 'stamps');
  let names: string[];
  try {
    // Only the stamps' names kept, a slice at a time (dir-slices.ts); no cap: the state directory is the run's own
    // (as root over another user's home, root's: adapters/trust.ts `homeAccess`), never a directory another user fills.
    names = (await readDirSliced(dir, { max: Infinity, keep: (e) => (e.name.endsWith('.json') ? e.name : null) })).kept;
  } catch {
    return [];
  }
  const out: SweepStamp[] = [];
  for (const name of names.sort()) {
    const file = path.join(dir, name);
    try {
      const v = JSON.parse(readFileSafely(file, 64 * 1024, { noFollow: true })) as {
        completedAt?: unknown;
        host?: unknown;
        selection?: unknown;
        scheduleSeconds?: unknown;
        by?: unknown;
      };
      if (typeof v.completedAt !== 'string' || typeof v.host !== 'string') continue;
      let profile: string | null = null;
      try {
        const sel = JSON.parse(String(v.selection)) as { profile?: unknown };
        profile = typeof sel.profile === 'string' ? sel.profile : null;
      } catch {
        /* no selection recorded */
      }
      const at = Date.parse(v.completedAt);
      out.push({
        host: v.host,
        profile,
        completedAt: v.completedAt,
        ageSeconds: Number.isFinite(at) ? Math.round((now.getTime() - at) / 1000) : null,
        file,
        scheduleSeconds: typeof v.scheduleSeconds === 'number' && v.scheduleSeconds > 0 ? v.scheduleSeconds : null,
        by: v.by === 'watch' ? 'watch' : 'reap',
      });
    } catch {
      /* unreadable stamp: not a sweep */
    }
  }
  return out.sort((a, b) => a.host.localeCompare(b.host) || b.completedAt.localeCompare(a.completedAt));
}

async function readLocks(home: string): Promise<LockStatus[]> {
  let names: string[];
  try {
    // As readStamps reads: the locks' names only, a slice at a time, in the run's own state directory.
    names = (await readDirSliced(janitorDir(home), { max: Infinity, keep: (e) => (/^reap-[0-9a-f]+\.lock$/.test(e.name) ? e.name : null) })).kept;
  } catch {
    return [];
  }
  const out: LockStatus[] = [];
  for (const name of names.sort()) {
    const file = path.join(janitorDir(home), name);
    // The lock module's own judgement: stale when the next reap would take it over (its holder is gone).
    const state = await lockState(file).catch(() => null);
    const info = state?.holder;
    out.push({
      path: file,
      pid: typeof info?.pid === 'number' ? info.pid : null,
      host: typeof info?.host === 'string' ? info.host : null,
      since: typeof info?.acquiredAt === 'string' ? info.acquiredAt : null,
      stale: state?.stale ?? false,
    });
  }
  return out;
}

/**
 * The log's size and its last `--background` run (its tail only: the log is capped at 1 MiB anyway). Opened as a
 * state file is (adapters/trust.ts): never through a symlink, never a FIFO (which would hang `status`), and as root
 * over another user's home with that user's rights.
 */
async function readLog(home: string): Promise<LogStatus> {
  const file = logFile(home);
  let fd: number | undefined;
  try {
    const opened = openFileSafely(file, { noFollow: true });
    fd = opened.fd;
    const size = opened.st.size;
    const len = Math.min(size, 64 * 1024);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    const lines = buf.toString('utf8').split('\n');
    let lastRun: LogStatus['lastRun'] = null;
    for (let i = lines.length - 1; i >= 0; i--) {
      const m = /^--- (\S+) hermes-janitor (.*)$/.exec(lines[i]!);
      if (!m) continue;
      const after = lines.slice(i + 1);
      // The summary line of a reap that ran to its end (older versions said no `stopped` count).
      const summary = /^(Removed|Would remove) \d+, ((stopped|would stop) \d+, )?kept \d+, failed \d+/;
      lastRun = { startedAt: m[1]!, command: m[2]!, completed: after.some((l) => summary.test(l)) };
      break;
    }
    return { path: file, exists: true, sizeBytes: size, lastRun };
  } catch {
    return { path: file, exists: false, sizeBytes: 0, lastRun: null };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The home's recorded `watch` (adapters/watch-record.ts): its process as the lock module judges a holder (pid, start
 * time, boot id, pid namespace, host name), its heartbeat's age, and, when it serves one and may be running, what its
 * `/healthz` answers (within 2 s and the run's --timeout). Null when none is recorded.
 */
async function readWatch(home: string, now: Date, signal: AbortSignal | undefined): Promise<WatchFacts | null> {
  const { readWatchRecord } = await import('../adapters/watch-record.js');
  const { record: r, file } = readWatchRecord(home);
  if (!r) return null;
  const process = r.stoppedAt ? 'dead' : liveness(r);
  const beat = Date.parse(r.heartbeatAt ?? r.startedAt);
  const healthz = r.healthz && process !== 'dead' ? await (await import('../adapters/healthz.js')).probeHealthz(r.healthz, 2000, signal) : null;
  return {
    file,
    pid: r.pid,
    startedAt: r.startedAt,
    hosts: r.hosts,
    heartbeatSeconds: r.heartbeatSeconds,
    heartbeatAt: r.heartbeatAt,
    heartbeatAgeSeconds: Number.isFinite(beat) ? Math.max(0, Math.round((now.getTime() - beat) / 1000)) : Number.POSITIVE_INFINITY,
    process,
    stoppedAt: r.stoppedAt ?? null,
    stoppedBy: r.stoppedBy ?? null,
    healthz,
  };
}

/** The janitor's own state: sweeps (each engine's against its schedule), locks, its log, its `watch`. */
async function janitorState(req: StatusRequest, hosts: readonly string[]): Promise<StatusReport['janitor']> {
  const [sweeps, locks, log, watch] = await Promise.all([
    readStamps(req.home, req.now),
    readLocks(req.home),
    readLog(req.home),
    readWatch(req.home, req.now, req.signal),
  ]);
  const freshness = sweepFreshness(sweeps, hosts, req.scheduleSeconds);
  return { sweeps, locks, log, freshness, watch: watch ? { ...watch, problem: watchProblem(watch, req.now)?.line ?? null } : null };
}

async function breakers(
  home: string,
  now: Date,
  env: Record<string, string | undefined>,
  maxStopBlocks: number | undefined,
): Promise<StatusReport['breakers']> {
  const { settings } = await loadRestartGuardSettings(home);
  const rg = await restartGuardState(restartLoopStore(home), () => now, settings);
  const stuck = await stuckSessionsStatus(stuckSessionsStore(home), DEFAULT_SUSPEND_THRESHOLD);
  const stop = createStopHook({ home, env, ...(maxStopBlocks !== undefined ? { maxBlocks: maxStopBlocks } : {}) });
  const st = await stop
    .status()
    .catch((err: unknown) => ({ location: stop.location, armed: false, maxBlocks: stop.maxBlocks, problem: errorMessage(err), marker: undefined }));
  const loop = createToolLoop({ home, env, now: () => now });
  const sessions = await loop.status().catch(() => []);
  const hostDisarmed = (await loop.hostDisarmed().catch(() => undefined)) ?? null;
  const loopRows = sessions.map((s) => {
    const streak = s.state?.streak?.count ?? 0;
    const failures = Math.max(0, ...(s.state?.failures ?? []).map((f) => f.count));
    return {
      session: s.session ?? null,
      streak,
      failures,
      looping: s.state ? oneStepFromLoop(s.state, loop) : false,
      warnings: s.state?.warnings ?? 0,
      stops: s.state?.stops ?? 0,
      disarmed: s.state?.disarmed !== undefined,
      problem: s.problem ?? null,
    };
  });
  const blocks = st.marker?.blocks ?? 0;
  const [stopErrors, loopErrors] = await Promise.all([readHookErrors(home, 'stop-hook', now), readHookErrors(home, 'tool-loop', now)]);
  return {
    restartGuard: {
      location: rg.location,
      bootsInWindow: rg.verdict?.count ?? 0,
      max: settings.max,
      windowSeconds: settings.windowSeconds,
      tripped: rg.tripped,
      problem: rg.problem ?? rg.error ?? null,
    },
    stuckSessions: {
      location: stuck.location,
      threshold: DEFAULT_SUSPEND_THRESHOLD,
      sessions: Object.keys(stuck.counts).length,
      suspended: stuck.atThreshold,
      problem: stuck.error ?? (stuck.warnings[0] || null),
    },
    stopHook: {
      location: st.location,
      armed: st.armed,
      owner: st.marker?.ownerSession ?? null,
      remaining: st.marker?.remaining ?? null,
      blocks,
      maxBlocks: st.maxBlocks,
      stalled: st.armed && blocks >= st.maxBlocks,
      problem: st.problem ?? null,
      hookErrors: stopErrors.errors,
    },
    toolLoop: {
      location: loop.location,
      sessions: loopRows,
      looping: loopRows.filter((r) => r.looping).map((r) => r.session ?? '?'),
      warnings: loopRows.reduce((sum, r) => sum + r.warnings, 0),
      stops: loopRows.reduce((sum, r) => sum + r.stops, 0),
      disarmed: hostDisarmed,
      hookErrors: loopErrors.errors,
      ...('more' in sessions && sessions.more ? { capped: TOOL_LOOP_DIR_ENTRIES_CAP } : {}),
    },
  };
}

/**
 * The living hermes processes of this host (from the table every pass that judges by them is given too): who each is
 * (user, pid, command, why it counts as hermes), what it serves and owns (resolved from the files of what it serves)
 * and how many running sandboxes it makes owned; `partial`: why the table shows only some (a pid namespace that is not
 * the host's). With them the hermes installs behind them and on PATH.
 */
async function hermesProcesses(
  table: ProcessTable,
  running: StatusReport['runningSandboxes'],
  partial: string | null,
  env: Record<string, string | undefined>,
): Promise<Pick<StatusReport, 'hermesProcesses' | 'hermesInstalls'>> {
  const { resolveOwnership } = await import('../hermes/owned-profiles.js');
  const owned = await resolveOwnership(table, { env, cwd: process.cwd() });
  const names = userNames();
  const owns = (pid: number) => running.filter((r) => r.owner?.pid === pid).length;
  const hermes: HermesProcessStatus[] = owned.processes
    .filter((p) => p.hermes)
    .map((p) => ({
      pid: p.pid,
      uid: p.uid,
      user: names.get(p.uid) ?? null,
      why: p.why ?? 'its command line names hermes',
      owns: owns(p.pid),
      profile: p.profile,
      profileUnknown: p.profileUnknown ?? null,
      since: new Date(p.startedAtMs).toISOString(),
      command: p.command,
      serves: p.serves,
      labels: p.owns,
      ownsWhy: p.ownsWhy,
    }));
  const { hermesInstalls } = await import('./hermes-installs.js');
  return { hermesProcesses: { processes: hermes, hidden: partial ?? table.hidden }, hermesInstalls: hermesInstalls(owned.processes, env.PATH) };
}

/**
 * The trust section: the home's owner as the janitor runs, root's state directory, and every path refused this run
 * (each pass's, `Pass.status.refused`, then the files refused while reading).
 */
function trustOf(req: StatusRequest, parts: readonly PassPart[]): StatusReport['trust'] & { unsaid: string[] } {
  const access = homeAccess(req.home);
  const all: Array<TrustRefusal & { attention: boolean }> = parts.flatMap((p) => p.pass.status!.refused?.(p.part) ?? []);
  // A path two passes refused (the session directories are both session passes'): once.
  const refused = all.filter((r, i) => all.findIndex((x) => x.path === r.path && x.what === r.what && x.reason === r.reason) === i);
  for (const f of refusals()) refused.push({ path: f.path, what: 'file', reason: f.reason, detail: f.detail, attention: false });
  // Settings of a user who cannot act on the engine that would remove, stop or end sooner (`untrusted-setting`).
  for (const u of untrustedSettings()) refused.push({ path: u.file, what: 'setting', reason: u.reason, detail: u.detail, attention: false });
  return {
    owner: access.owner ? { uid: access.owner.uid, name: access.owner.name } : null,
    stateDir: access.stateDir,
    refused: refused.map(({ attention: _, ...r }) => r),
    // What needs attention and no pass says itself: the files.
    unsaid: refused.filter((r) => r.what === 'file' || r.what === 'setting').map((r) => r.detail),
  };
}

/** The containers of the live engines as `list` judges them: the counts, running sandboxes' execs, owners. */
async function surveyContainers(
  req: StatusRequest,
  live: EngineClient[],
  engines: EngineStatus[],
): Promise<Pick<StatusReport, 'containers' | 'runningSandboxes' | 'stopCosts' | 'sandboxOwners' | 'unknownProfiles'>> {
  const across = await acrossEngines(live, (engine) =>
    list({
      engine,
      selection: req.selection,
      thresholdSeconds: req.thresholdSeconds,
      asOf: req.asOf,
      concurrency: req.concurrency,
      ...(req.thresholdByProfile ? { thresholdByProfile: req.thresholdByProfile } : {}),
      ...(req.held ? { held: req.held } : {}),
      ...(req.knownProfiles ? { knownProfiles: req.knownProfiles } : {}),
      ...(req.tiedRoots ? { tiedRoots: req.tiedRoots } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
      ...(req.idle ? { idle: req.idle } : {}),
    }),
  );
  for (const h of across.hosts.filter((x) => !x.reachable)) {
    const e = engines.find((x) => x.host === h.host);
    if (e) Object.assign(e, { reachable: false, error: h.error });
  }
  const entries: ListedEntry[] = across.results.flatMap((r) => r.containers);
  const running = entries.filter((e) => e.state.toLowerCase() === 'running');
  return {
    runningSandboxes: running.map((e) => ({ id: e.id, name: e.name, host: e.host, execs: e.execs ?? [], ...(e.owner ? { owner: e.owner } : {}) })),
    stopCosts: entries
      .filter((e) => e.verdict === 'stop')
      .map((e) => ({
        id: e.id,
        name: e.name,
        host: e.host,
        profile: e.profile,
        idleSeconds: e.idleSeconds ?? null,
        writableLayerBytes: e.writableLayerBytes ?? null,
      })),
    sandboxOwners: {
      owned: running.filter((e) => e.owner).length,
      abandoned: running.filter((e) => !e.owner).length,
      stoppedRetained: entries.filter((e) => e.reason === 'stopped-retained').length,
      // Each reason once (a partial view of processes is the same for every engine).
      blind: req.idle?.owners
        ? [...new Set((await Promise.all(live.map(async (e) => (await req.idle!.owners!(e.host)).blind))).filter((b): b is string => b !== null))]
        : [],
    },
    containers: { ...countContainers(entries), failed: across.results.reduce((n, r) => n + r.failed.length, 0), timedOut: across.timedOut },
    ...unknownOf(entries),
  };
}

/** A run over several homes: the profile labels no home has, their containers kept (`unknown-profile`), each once. */
function unknownOf(entries: readonly ListedEntry[]): Pick<StatusReport, 'unknownProfiles'> {
  const labels = [...new Set(entries.filter((e) => e.reason === 'unknown-profile').map((e) => e.profile ?? '(no profile label)'))].sort();
  return labels.length ? { unknownProfiles: labels } : {};
}

/** What the attention lines are made from: the gathered parts of the report. */
function attentionInput(
  req: StatusRequest,
  g: {
    unsaid: AttentionInput['refused'];
    engines: EngineStatus[];
    unreachable: string[];
    containers: StatusReport['containers'];
    janitor: StatusReport['janitor'];
    brk: StatusReport['breakers'];
    partList: PassPart[];
    partial: AttentionInput['pidNamespace'];
  },
): AttentionInput {
  const { unsaid, engines, unreachable, containers, janitor, brk, partList, partial } = g;
  const reap = req.commands?.reap ?? 'hermes-janitor reap';
  const watch = janitor.watch ? watchProblem(janitor.watch, req.now) : null;
  return {
    refused: unsaid,
    unreachableEngines: unreachable,
    notEngines: engines.filter((e) => e.host !== null && !e.reachable && NotADockerEngineError.says(e.host, e.error)).map((e) => e.host!),
    orphans: containers?.orphans ?? 0,
    oldestOrphanAgeSeconds: containers?.oldestOrphan?.ageSeconds ?? null,
    asOf: req.asOf,
    inspectFailures: containers?.failed ?? 0,
    timedOut: containers?.timedOut ?? false,
    staleLocks: janitor.locks.filter((l) => l.stale).map((l) => ({ path: l.path, pid: l.pid })),
    ...(containers
      ? {
          removable: { count: containers.wouldRemove.total, oldest: containers.oldestRemovable },
          idleSandboxes: { count: containers.wouldStop.total, longestIdleSeconds: containers.longestIdle?.ageSeconds ?? null },
        }
      : {}),
    staleSweeps: janitor.freshness.filter((f) => f.stale).map((f) => staleSweepLine(f, req.now, reap)),
    watch,
    restartGuard: {
      tripped: brk.restartGuard.tripped,
      count: brk.restartGuard.bootsInWindow,
      max: brk.restartGuard.max,
      windowSeconds: brk.restartGuard.windowSeconds,
    },
    suspendedSessions: brk.stuckSessions.suspended.length,
    stopHook: { stalled: brk.stopHook.stalled, blocks: brk.stopHook.blocks, maxBlocks: brk.stopHook.maxBlocks, problem: brk.stopHook.problem },
    toolLoopLooping: brk.toolLoop.looping,
    passProblems: [...new Set(partList.flatMap((p) => p.pass.status!.attention?.(p.part) ?? []))],
    pidNamespace: partial,
    hookErrors: [...brk.stopHook.hookErrors, ...brk.toolLoop.hookErrors],
    now: req.now,
    ...(req.commands ? { commands: req.commands } : {}),
  };
}

/** The whole report; never throws for an unreachable engine (it is reported, exit 3). */
export async function gatherStatus(req: StatusRequest): Promise<{ report: StatusReport; parts: PassPart[] }> {
  const engines: EngineStatus[] = [];
  const noneFound = req.discoveryError ?? req.noEngine;
  const connected = noneFound ? [] : await req.connect(req.endpoints);
  if (noneFound) {
    engines.push({ host: null, chosenBy: 'discovery', reachable: false, kind: null, version: null, apiVersion: null, error: noneFound });
  }
  engines.push(...(await Promise.all(connected.map((e, i) => engineStatus(e, req.endpoints[i]!, req.signal)))));
  const live = connected.filter((_, i) => engines[engines.length - connected.length + i]!.reachable);
  const { containers, runningSandboxes, stopCosts, sandboxOwners, unknownProfiles } =
    live.length > 0
      ? await surveyContainers(req, live, engines)
      : { containers: null, runningSandboxes: [], stopCosts: [], sandboxOwners: undefined, unknownProfiles: undefined };
  // No engine at all on this host is not an unreachable one.
  const unreachable = engines.filter((e) => !e.reachable && !(req.noEngine && e.host === null)).map((e) => e.host ?? '(none found)');
  const table = listHermesProcesses({ python: true, procRoot: procRootOf(req.env) });
  // After the sweep: a running sandbox's State.Pid may have proved the janitor's pid namespace the engine's.
  const partial = pidNamespaceProblem({ engineHost: null, procRoot: procRootOf(req.env) });
  const passCtx: StatusContext = {
    engines: live.filter((e) => !unreachable.includes(e.host)),
    unreachable,
    now: req.now,
    signal: req.signal,
    processes: table,
  };
  const withStatus = req.passes.filter((p) => p.status);
  const hosts = engines.flatMap((e) => (e.host === null ? [] : [e.host]));
  const [host, partList, janitor, brk] = await Promise.all([
    hermesProcesses(table, runningSandboxes, partial, req.env),
    Promise.all(withStatus.map(async (pass): Promise<PassPart> => ({ pass, part: await pass.status!.gather(req.passInput, passCtx) }))),
    janitorState(req, hosts),
    breakers(req.home, req.now, req.env, req.maxStopBlocks),
  ]);
  const { unsaid, ...trust } = trustOf(req, partList);
  const facts = attentionInput(req, { unsaid, engines, unreachable, containers, janitor, brk, partList, partial });

  const items = attentionItems(facts);
  const lines = items.map((i) => i.line);
  const keys = (place: Pass['place']) =>
    Object.assign({}, ...partList.filter((p) => p.pass.place === place).map((p) => p.pass.status!.json(p.part))) as Record<string, unknown>;
  const report: StatusReport = {
    home: req.home,
    profile: req.selection.profile,
    asOf: req.asOf.toISOString(),
    thresholdSeconds: req.thresholdSeconds,
    engines,
    containers,
    ...(unknownProfiles ? { unknownProfiles } : {}),
    runningSandboxes,
    stopCosts,
    janitor,
    ...keys('engine'),
    ...(req.noEngine ? { noEngine: req.noEngine } : {}),
    ...(sandboxOwners ? { sandboxOwners } : {}),
    ...host,
    pidNamespace: partial,
    ...keys('host'),
    breakers: brk,
    trust,
    attention: lines,
    exitCode: statusExitCode(facts, lines),
    verdict: { ok: items.length === 0, count: items.length, line: verdictLine(items), worst: items[0]?.title ?? null },
  };
  return { report, parts: partList };
}
