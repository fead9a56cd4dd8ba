/**
 * The exec-tree step: run over each running sandbox before the idle rule. It lists the sandbox's running execs with
 * their age and process count (`surveyExecs`), and ends the trees past the bound (`endAbandonedTrees`): SIGTERM to
 * the exec's process and all its descendants, SIGKILL to those still there after the stop timeout, each signal only
 * after the re-check (exec still running, same pid and start time, still past the bound) and each to the very process
 * that was seen: its pid, start time and cgroup (the sandbox's) read again right before its kill, SIGKILL's as
 * SIGTERM's. The decisions are pure (`passes/exec-trees/rule.ts`).
 */
import type { ContainerDetails, EngineClient, ExecDetails } from '../../adapters/engine.js';
import { type ProcAccess, procAccess } from './proc-table.js';
import {
  type ExecKeepReason,
  type ProcIdentity,
  type ProcSnapshot,
  commandLine,
  execAgeSeconds,
  isAbandoned,
  recheckExec,
  signalTargets,
  startMs,
} from './rule.js';
import { processLimit } from '../../core/idle.js';
import { engineOnThisHost } from '../../core/engine-place.js';
import { EngineRequestError, errorMessage } from '../../errors.js';
import { type LocalCounters, readLocally } from '../../reaper/idle-stop.js';
import { abortableSleep } from '../../util/sleep.js';
import { type ClientReader, hostClients } from './clients.js';
import { type ClientTable, type ContainerRef, assignClients } from './rule-clients.js';
import type { ExecTreeOptions } from './settings.js';
import type { AbandonedLoad, ExecView } from '../sweep-pass.js';

/** `execTrees` of the JSON report. */
export interface EndedTree {
  container: string;
  execId: string;
  ageSeconds: number;
  /** Processes signalled (the exec's process and its descendants). */
  processes: number;
  /** How many of them were still there after the grace and got SIGKILL. */
  killed: number;
}
export interface KeptTree {
  container: string;
  execId: string;
  reason: ExecKeepReason;
}
export interface FailedTree {
  container: string;
  execId: string;
  error: string;
}
export interface ExecTreeReport {
  ended: EndedTree[];
  kept: KeptTree[];
  failed: FailedTree[];
}

/** One running exec as surveyed. */
interface Surveyed {
  view: ExecView;
  /** Its process on this host, where it is provably the container's. */
  root: ProcIdentity | null;
  /** Past the bound by its age alone (the client rule then decides whether it is abandoned). */
  pastBound: boolean;
  /** `ProcessConfig`: the entrypoint, then the arguments (what a client's arguments end with). */
  argv: string[];
}

/** What the survey of one sandbox found. */
export interface ExecSurvey {
  execs: Surveyed[];
  /** The engine's processes can be seen and signalled from here. */
  local: boolean;
  /** Why they cannot all be seen after all: the janitor's pid namespace is not the host's (null: they can). */
  pidNamespace?: string | null;
}

const procOf = (opts: ExecTreeOptions): ProcAccess => opts.proc ?? procAccess();

/** The exec's process identity on this host, where it is in the container's cgroup and in the snapshot. */
function rootOf(proc: ProcAccess, snap: ProcSnapshot | null, e: ExecDetails, containerId: string): ProcIdentity | null {
  if (!snap || e.pid <= 0) return null;
  const p = snap.procs.get(e.pid);
  if (!p || !proc.inContainer(e.pid, containerId)) return null;
  return { pid: p.pid, startTicks: p.startTicks };
}

/**
 * The sandbox's running execs: age (from `execStarts`, the engine's `exec_start` events where `watch` saw them, else
 * the process' start time on this host), process count, command, abandoned. Execs the engine no longer knows or that
 * have ended are left out; connection failures are thrown.
 */
export async function surveyExecs(
  engine: EngineClient,
  d: Pick<ContainerDetails, 'id' | 'execIds' | 'pid'> & Partial<Pick<ContainerDetails, 'name'>>,
  opts: ExecTreeOptions,
  at: { asOf: Date; signal?: AbortSignal | undefined; execStarts?: ReadonlyMap<string, number> | undefined },
): Promise<ExecSurvey> {
  const proc = procOf(opts);
  const local = engineOnThisHost(engine.host);
  const partial = local && d.execIds.length ? proc.pidNamespace(engine.host, { id: d.id, pid: d.pid }) : null;
  const snap = local && !partial && d.execIds.length ? proc.snapshot() : null;
  const execs: Surveyed[] = [];
  for (const id of d.execIds) {
    let e: ExecDetails | null;
    try {
      e = await engine.execInspect(id, at.signal);
    } catch (err) {
      if (err instanceof EngineRequestError) continue;
      throw err;
    }
    if (!e || !e.running) continue;
    const root = rootOf(proc, snap, e, d.id);
    const ageSeconds = execAgeSeconds(at.asOf, {
      eventMs: at.execStarts?.get(id),
      processStartMs: root && snap ? startMs(snap, root.startTicks) : null,
    });
    const tree = root && snap ? signalTargets(snap, root, d.pid) : null;
    const pastBound = isAbandoned(ageSeconds, opts.boundSeconds);
    execs.push({
      view: {
        id,
        ageSeconds,
        processes: tree ? tree.length : null,
        command: commandLine(e.entrypoint, e.arguments),
        // With a partial view (`partial`), an exec's client may be alive out of sight: none is abandoned (withClients).
        abandoned: !partial && pastBound,
        client: null,
        clientUnverifiable: null,
      },
      root,
      pastBound,
      argv: [e.entrypoint, ...e.arguments],
    });
  }
  const unseen = !local ? REMOTE_CLIENTS : partial;
  // Every process's command line only once an exec is past its bound (a renamed client must keep its stream).
  const every = execs.some((x) => x.pastBound);
  withClients(
    execs,
    { id: d.id, name: d.name ?? '' },
    unseen === null ? clientsOf(opts)(SURVEY_CLIENTS_MAX_AGE_MS, every) : { clients: [], unverifiable: unseen },
  );
  return { execs, local, pidNamespace: partial };
}

/** A client table this old at most serves the surveys of a sweep (each re-check before a signal reads afresh). */
const SURVEY_CLIENTS_MAX_AGE_MS = 1000;

const clientsOf = (opts: ExecTreeOptions): ClientReader => opts.clients ?? hostClients;

/** Why an engine's clients cannot be seen: it is on another host (or its place is not known). */
const REMOTE_CLIENTS = 'the engine is not on this host: its clients cannot be seen from here';

/**
 * Each exec's client (`passes/exec-trees/rule-clients.ts`), and whether it is abandoned: past the bound, no living client, and
 * clients that can be seen (`table.unverifiable` says why not: an engine on another host, a pid namespace of the
 * janitor's own, hidepid, ...). An exec whose command the engine did not give cannot be matched to a client:
 * unverifiable.
 */
function withClients(execs: Surveyed[], c: ContainerRef, table: ClientTable): void {
  const known = execs.filter((x) => x.argv[0] !== '');
  const verdicts = assignClients(
    c,
    known.map((x) => ({ id: x.view.id, command: x.argv, ageSeconds: x.view.ageSeconds })),
    table,
  );
  for (const x of execs) {
    const v = verdicts.get(x.view.id);
    x.view.client = v?.client ?? null;
    x.view.clientUnverifiable = v ? v.unverifiable : 'the engine gives no command for it: its clients cannot be matched';
    x.view.abandoned = x.pastBound && x.view.client === null && x.view.clientUnverifiable === null;
  }
}

/**
 * The client rule again, right before a signal: a fresh table, and the exec's sandbox's running execs of the same
 * command as surveyed (the newest keep the clients). Null when the exec still has no client; else why it is kept.
 */
function clientNow(survey: ExecSurvey, x: Surveyed, c: ContainerRef, opts: ExecTreeOptions): 'client-alive' | 'client-unverifiable' | null {
  const same = survey.execs.filter((y) => JSON.stringify(y.argv) === JSON.stringify(x.argv));
  const v = assignClients(
    c,
    same.map((y) => ({ id: y.view.id, command: y.argv, ageSeconds: y.view.ageSeconds })),
    clientsOf(opts)(0, true),
  ).get(x.view.id);
  if (!v || v.unverifiable !== null) return 'client-unverifiable';
  return v.client ? 'client-alive' : null;
}

/**
 * Whether the sandbox may be running an exec at all: false only when its cgroup, read on this host, holds no more
 * than its init and its command (an exec is one more process at least). Spares the survey's exec inspects, which
 * Podman would need for every finished exec it keeps listed (one per command hermes ever ran there).
 */
export function mayRunExecs(local: LocalCounters | undefined, d: Pick<ContainerDetails, 'id' | 'pid' | 'init'>): boolean {
  const pids = readLocally(local, d.id, d.pid)?.pids;
  return pids === undefined || pids === null || pids > processLimit(d.init);
}

/** The abandoned execs of a survey and their processes (what the idle rule leaves out while they run). */
export function abandonedLoad(survey: ExecSurvey, except: ReadonlySet<string> = new Set()): AbandonedLoad {
  const left = survey.execs.filter((x) => x.view.abandoned && !except.has(x.view.id));
  return { execIds: new Set(left.map((x) => x.view.id)), processes: left.reduce((n, x) => n + (x.view.processes ?? 0), 0) };
}

/** How one call of `endAbandonedTrees` runs. */
export interface EndContext {
  dryRun: boolean;
  stopTimeoutSeconds: number;
  now: () => Date;
  signal?: AbortSignal | undefined;
  /** Name of the container in reports. */
  container: string;
}

/**
 * Ends the survey's abandoned trees (or reports why not). An engine on another host gets every running exec reported
 * as kept (`engine-not-local`): its processes cannot be seen from here, so none is judged abandoned, none ended; so
 * does a janitor whose pid namespace is not the host's (`pid-namespace`): exec clients cannot all be seen from there.
 */
export async function endAbandonedTrees(
  engine: EngineClient,
  d: Pick<ContainerDetails, 'id' | 'pid'> & Partial<Pick<ContainerDetails, 'name'>>,
  survey: ExecSurvey,
  opts: ExecTreeOptions,
  ctx: EndContext,
): Promise<ExecTreeReport> {
  const out: ExecTreeReport = { ended: [], kept: [], failed: [] };
  const keep = (execId: string, reason: ExecKeepReason) => out.kept.push({ container: ctx.container, execId, reason });
  for (const x of survey.execs) {
    if (!survey.local || survey.pidNamespace) {
      keep(x.view.id, survey.local ? 'pid-namespace' : 'engine-not-local');
      continue;
    }
    if (!x.pastBound) continue;
    // The client rule: past the bound, an exec a living client holds is in use, one whose clients cannot be seen kept.
    if (x.view.client) keep(x.view.id, 'client-alive');
    else if (x.view.clientUnverifiable !== null) keep(x.view.id, 'client-unverifiable');
    else if (!x.root) keep(x.view.id, 'process-not-found');
    else if (!opts.end) keep(x.view.id, 'keep-exec-trees');
    else if (ctx.dryRun) keep(x.view.id, 'dry-run');
    else {
      try {
        const client = () => clientNow(survey, x, { id: d.id, name: d.name ?? '' }, opts);
        const r = await endTree(engine, d, { root: x.root, execId: x.view.id, client }, opts, ctx);
        if ('reason' in r) keep(x.view.id, r.reason);
        else out.ended.push({ container: ctx.container, execId: x.view.id, ageSeconds: Math.round(x.view.ageSeconds ?? 0), ...r });
      } catch (err) {
        out.failed.push({ container: ctx.container, execId: x.view.id, error: errorMessage(err) });
      }
    }
  }
  return out;
}

/** The re-check right before signalling, then the signals, each to a process re-proved right before it. */
async function endTree(
  engine: EngineClient,
  d: Pick<ContainerDetails, 'id' | 'pid'>,
  seen: { root: ProcIdentity; execId: string; client: () => ExecKeepReason | null },
  opts: ExecTreeOptions,
  ctx: EndContext,
): Promise<{ processes: number; killed: number } | { reason: ExecKeepReason }> {
  const proc = procOf(opts);
  const { root, execId } = seen;
  const fresh = await engine.execInspect(execId, ctx.signal);
  const snap = proc.snapshot();
  const now = fresh && snap ? snap.procs.get(fresh.pid) : undefined;
  const why = recheckExec(
    root,
    {
      running: Boolean(fresh?.running),
      pid: fresh?.pid ?? 0,
      startTicks: now ? now.startTicks : null,
      ageSeconds: now && snap ? execAgeSeconds(ctx.now(), { processStartMs: startMs(snap, now.startTicks) }) : null,
    },
    opts.boundSeconds,
  );
  if (why) return { reason: why };
  const targets = signalTargets(snap!, root, d.pid);
  if (!targets) return { reason: 'not-an-exec-tree' };
  if (!targets.length || !proc.inContainer(root.pid, d.id)) return { reason: 'process-changed' };
  // Right before the signals: still no living client (a fresh read of this host's processes).
  const held = seen.client();
  if (held) return { reason: held };
  const termed = targets.filter((p) => proc.signal(p, 'SIGTERM', d.id) === 'sent');
  const survivors = await waitGone(proc, termed, ctx.stopTimeoutSeconds * 1000, ctx.signal);
  // Right before the SIGKILLs: a client that came meanwhile spares what is left of the tree.
  return { processes: targets.length, killed: survivors.length && seen.client() === null ? killSurvivors(proc, survivors, d) : 0 };
}

/**
 * SIGKILL to the survivors and whatever they started since (their descendants now, never init or anything under
 * it), each found by the identity seen (pid and start time: a survivor whose pid another process took has no tree
 * here) and re-proved right before its signal (start time and the sandbox's cgroup). A survivor reparented under
 * init since its parent ended is signalled alone.
 */
function killSurvivors(proc: ProcAccess, survivors: readonly ProcIdentity[], d: Pick<ContainerDetails, 'id' | 'pid'>): number {
  const again = proc.snapshot();
  const done = new Set<number>();
  let killed = 0;
  for (const s of survivors) {
    for (const p of (again ? signalTargets(again, s, d.pid) : null) ?? [s]) {
      if (done.has(p.pid)) continue;
      done.add(p.pid);
      if (proc.signal(p, 'SIGKILL', d.id) === 'sent') killed++;
    }
  }
  return killed;
}

/** Waits up to `ms` for the processes to end (checked every 100 ms); those still there. */
async function waitGone(proc: ProcAccess, ps: ProcIdentity[], ms: number, signal?: AbortSignal): Promise<ProcIdentity[]> {
  const until = Date.now() + ms;
  let left = ps.filter((p) => proc.alive(p));
  while (left.length && Date.now() < until && !signal?.aborted) {
    await abortableSleep(Math.min(100, Math.max(1, until - Date.now())), signal);
    left = left.filter((p) => proc.alive(p));
  }
  return left;
}
