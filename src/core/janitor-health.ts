/**
 * Is the janitor running here? The pure part of `status`'s answer (docs/status.md, "Is the janitor running"): each
 * engine's last completed sweep against the schedule it is meant to keep, and the `watch` recorded for the home
 * against its process, its heartbeat and its `/healthz`.
 */
import { agoSeconds, spanSeconds } from './ages.js';

/** Whether a recorded process still runs (`adapters/process-identity.ts` judges it): `unknown` when it cannot be told here. */
export type Liveness = 'alive' | 'dead' | 'unknown';

/** The schedule when nothing says another: the shell start-up's `--once-per 1h` (and the documented alert's 2 h). */
export const DEFAULT_SCHEDULE_SECONDS = 3600;

/** Where a schedule came from. */
export type ScheduleFrom = 'status --schedule' | 'reap --once-per' | 'watch heartbeat' | 'default';

/** One sweep stamp as `status` read it (`status/gather.ts`). */
export interface StampFact {
  host: string;
  completedAt: string;
  ageSeconds: number | null;
  /** What its writer recorded: `--once-per`, or watch's heartbeat (seconds); null: nothing. */
  scheduleSeconds: number | null;
  by: 'reap' | 'watch';
}

/** An engine's last completed sweep, judged. */
export interface SweepFreshness {
  host: string;
  /** Its freshest stamp's completion (null: none recorded). */
  completedAt: string | null;
  ageSeconds: number | null;
  scheduleSeconds: number;
  scheduleFrom: ScheduleFrom;
  /** Older than twice the schedule, or none at all while a schedule was given (`--schedule`). */
  stale: boolean;
}

/**
 * For each engine of `hosts`: its freshest stamp (any selection: a one-off `reap --label x` of long ago never makes an
 * engine look forgotten while another sweep is fresh), judged against `given` (status --schedule), else the schedule
 * that stamp's writer recorded, else the default. No stamp: stale only when a schedule was given.
 */
export function sweepFreshness(stamps: readonly StampFact[], hosts: readonly string[], given?: number): SweepFreshness[] {
  return hosts.map((host) => {
    const mine = stamps.filter((s) => s.host === host && s.ageSeconds !== null);
    const last = mine.reduce<StampFact | null>((a, b) => (a === null || b.ageSeconds! < a.ageSeconds! ? b : a), null);
    const [scheduleSeconds, scheduleFrom]: [number, ScheduleFrom] =
      given !== undefined
        ? [given, 'status --schedule']
        : last && last.scheduleSeconds !== null && last.scheduleSeconds > 0
          ? [last.scheduleSeconds, last.by === 'watch' ? 'watch heartbeat' : 'reap --once-per']
          : [DEFAULT_SCHEDULE_SECONDS, 'default'];
    const age = last?.ageSeconds ?? null;
    return {
      host,
      completedAt: last?.completedAt ?? null,
      ageSeconds: age,
      scheduleSeconds,
      scheduleFrom,
      stale: age === null ? given !== undefined : age > 2 * scheduleSeconds,
    };
  });
}

/** The attention line of a stale engine; `reap`: the command that sweeps it now. */
export function staleSweepLine(f: SweepFreshness, asOf: Date, reap: string): string {
  const every = `${spanSeconds(f.scheduleSeconds, asOf)} (${f.scheduleFrom})`;
  const since = f.ageSeconds === null ? 'no completed sweep recorded' : `no completed sweep for ${spanSeconds(f.ageSeconds, asOf)}`;
  return `${since} on ${f.host}, more than twice the schedule of every ${every}: run ${reap}, then check the timer, cron line or watch that should sweep`;
}

/** What `status` found of the home's `watch`. */
export interface WatchFacts {
  file: string;
  pid: number;
  startedAt: string;
  hosts: string[];
  heartbeatSeconds: number;
  heartbeatAt: string | null;
  /** Seconds since its last heartbeat (since its start when it never beat), as of the report. */
  heartbeatAgeSeconds: number;
  /** Its process, as the lock module judges a holder: `unknown` on another host or in another pid namespace. */
  process: Liveness;
  stoppedAt: string | null;
  stoppedBy: string | null;
  /** Its `/healthz` and what it answered, when it serves one and its process runs (or cannot be checked). */
  healthz: { url: string; status: number | null; error: string | null } | null;
}

/** A watch whose heartbeat is this many intervals old is not healthy (one lost beat is not yet a problem). */
const MISSED_BEATS = 2;
/** Seconds of slack on top: a beat written under load, clocks that read a second apart. */
const BEAT_SLACK_SECONDS = 5;

/** The verdict on a recorded `watch`: running and healthy (null), not running, or not healthy, with why. */
export function watchProblem(w: WatchFacts, now: Date): { kind: 'not-running' | 'not-healthy'; line: string } | null {
  const who = `watch (pid ${w.pid}, started ${agoSeconds(secondsSince(w.startedAt, now), now)})`;
  const beat =
    w.heartbeatAt === null ? 'no heartbeat yet' : `last heartbeat ${agoSeconds(w.heartbeatAgeSeconds, now)} (it beats every ${w.heartbeatSeconds} s)`;
  const retire = `or remove ${w.file} if it is retired`;
  if (w.process === 'dead') {
    const how = w.stoppedAt
      ? `stopped ${agoSeconds(secondsSince(w.stoppedAt, now), now)} by ${w.stoppedBy ?? 'a signal'}`
      : 'ended without stopping (killed or crashed)';
    return { kind: 'not-running', line: `${who} is not running: it ${how}; ${beat}: start it again (its service or container), ${retire}` };
  }
  if (w.healthz && w.healthz.status !== 200) {
    const said = w.healthz.status !== null ? `answered ${w.healthz.status}` : `did not answer (${w.healthz.error ?? 'no answer'})`;
    const line = `${who} is not healthy: its /healthz (${w.healthz.url}) ${said}; ${beat}`;
    return { kind: w.healthz.status === null && w.process === 'unknown' ? 'not-running' : 'not-healthy', line };
  }
  if (w.heartbeatAgeSeconds > MISSED_BEATS * w.heartbeatSeconds + BEAT_SLACK_SECONDS) {
    const running = w.process === 'unknown' ? ' (its process cannot be checked from here)' : '';
    return {
      kind: 'not-healthy',
      line: `${who} is not healthy${running}: ${beat}; it beats only while every engine is connected: see its log and /healthz`,
    };
  }
  return null;
}

function secondsSince(iso: string, now: Date): number {
  const at = Date.parse(iso);
  return Number.isFinite(at) ? Math.max(0, Math.round((now.getTime() - at) / 1000)) : 0;
}
