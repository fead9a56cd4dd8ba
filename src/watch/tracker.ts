/**
 * What an engine event means for the deadlines: a pure transition over the tracker's state, given a clock.
 * A container that exits (or is created) gets a deadline (its time + threshold); one that starts again loses it;
 * `destroy` forgets it; exec activity is recorded for the idle rule. Events older than the last one applied to a
 * container (out of order) are ignored; a duplicate changes nothing.
 *
 * With the idle rule on, a running container's deadline is its next idle check instead: soon after it starts and
 * after each exec ends (a fresh sample then moves its proof's `since` to the activity), and at since + idle
 * threshold after a check that kept it. The check itself is the sweep's, so the CPU-counter proof decides.
 */
import type { EngineEvent } from '../adapters/engine.js';
import { parseFinishedAt } from '../core/finished-at.js';
import type { IdleKeepReason } from '../core/idle.js';
import type { KeepReason, Rule } from '../core/policy.js';
import { DeadlineQueue } from './deadline-queue.js';
import { unreachable } from '../util/unreachable.js';

export interface TrackerState {
  deadlines: DeadlineQueue;
  /** Time of the last event applied per container (ms), to drop out-of-order events. */
  lastEventMs: Map<string, number>;
  /** Last exec activity per container (ms), for the idle rule. */
  lastActivityMs: Map<string, number>;
}

export function newTracker(): TrackerState {
  return { deadlines: new DeadlineQueue(), lastEventMs: new Map(), lastActivityMs: new Map() };
}

export type Transition =
  | { kind: 'scheduled'; id: string; at: number }
  | { kind: 'cancelled'; id: string }
  | { kind: 'forgotten'; id: string }
  /** Exec activity; `recheckAt`: the idle check it scheduled (idle rule on). */
  | { kind: 'activity'; id: string; at: number; recheckAt?: number }
  | { kind: 'ignored'; id: string; why: 'out-of-order' | 'not-tracked-action' };

/** The idle rule as the tracker needs it; absent or null when running containers are never stopped. */
export interface IdleTracking {
  idleAfterSeconds: number;
}

/**
 * How long after a start or an exec's end its idle check comes: long enough for the activity to be over (and
 * for a burst of execs to share one check), short enough that the proof's `since` is close to it.
 */
export const IDLE_SETTLE_MS = 1000;

const EXIT = new Set(['die', 'died', 'stop']);
const START = new Set(['start', 'restart', 'unpause']);
const GONE = new Set(['destroy', 'remove']);
/** An exec begins (Podman's compatible API says `exec`), or ends. */
const EXEC_BEGIN = new Set(['exec_create', 'exec_start', 'exec']);
const EXEC_END = new Set(['exec_die', 'exec_died']);

/** Applies one event; `now` stands in for an event without a time. */
export function applyEvent(state: TrackerState, ev: EngineEvent, thresholdSeconds: number, now: () => number, idle?: IdleTracking | null): Transition {
  const t = Number.isFinite(ev.timeMs) ? ev.timeMs : now();
  const last = state.lastEventMs.get(ev.id);
  if (last !== undefined && t < last) return { kind: 'ignored', id: ev.id, why: 'out-of-order' };
  const a = ev.action;
  if (GONE.has(a)) {
    state.deadlines.delete(ev.id);
    state.lastEventMs.delete(ev.id);
    state.lastActivityMs.delete(ev.id);
    return { kind: 'forgotten', id: ev.id };
  }
  if (EXEC_BEGIN.has(a) || EXEC_END.has(a)) {
    state.lastEventMs.set(ev.id, t);
    state.lastActivityMs.set(ev.id, t);
    if (!idle) return { kind: 'activity', id: ev.id, at: t };
    // An exec in flight keeps it running: its end brings the check forward; until then, a check at the threshold.
    const recheckAt = Math.ceil(t) + (EXEC_END.has(a) ? IDLE_SETTLE_MS : idle.idleAfterSeconds * 1000);
    schedule(state, ev.id, recheckAt);
    return { kind: 'activity', id: ev.id, at: t, recheckAt };
  }
  if (START.has(a)) {
    state.lastEventMs.set(ev.id, t);
    if (!idle) {
      state.deadlines.delete(ev.id);
      return { kind: 'cancelled', id: ev.id };
    }
    // Its exit deadline is gone; its first idle sample comes right after the start.
    const at = Math.ceil(t) + IDLE_SETTLE_MS;
    schedule(state, ev.id, at);
    return { kind: 'scheduled', id: ev.id, at };
  }
  if (EXIT.has(a) || a === 'create') {
    state.lastEventMs.set(ev.id, t);
    const at = Math.ceil(t) + thresholdSeconds * 1000;
    const cur = state.deadlines.get(ev.id);
    // `stop` follows `die`: the earlier deadline stands. (`die` always sets its own: an idle check may be pending.)
    if (cur !== undefined && cur <= at && a === 'stop') return { kind: 'scheduled', id: ev.id, at: cur };
    schedule(state, ev.id, at);
    return { kind: 'scheduled', id: ev.id, at };
  }
  return { kind: 'ignored', id: ev.id, why: 'not-tracked-action' };
}

/**
 * Sets the deadline of a container whose event time was just recorded under `id`. A Map keeps the key it was
 * first given: an id first seen in a `start` event and scheduled by its `die` would be held twice (two equal
 * 64-character strings, one per event); re-keying the event time by this event's string makes the map and the
 * queue share one (about 8 MB fewer at 100k tracked containers).
 */
function schedule(state: TrackerState, id: string, at: number): void {
  if (!state.deadlines.has(id)) {
    const t = state.lastEventMs.get(id);
    if (t !== undefined) {
      state.lastEventMs.delete(id);
      state.lastEventMs.set(id, t);
    }
  }
  state.deadlines.set(id, at);
}

/** What a kept verdict says about when to look again (the fields of a sweep's kept entry that matter). */
export interface KeptVerdict {
  reason: KeepReason;
  finishedAt: string;
  rule?: Rule | null;
  /** Age as of the sweep's `asOf` (never-started: since Created). */
  ageSeconds?: number | null;
  idleSeconds?: number | null;
  idleReason?: IdleKeepReason;
  /** `stopped-retained`: when its retention ends (ISO 8601). */
  retainedUntil?: string;
}

/** When the sweep judged (`asOfMs`), and the idle rule (null: running containers are not stopped). */
export interface KeptContext {
  asOfMs: number;
  idle?: IdleTracking | null;
}

/**
 * The deadline of a container a sweep (or a deadline check) kept; null when it has none to wait for. The one
 * place a kept verdict becomes a deadline, one case per keep reason:
 * - exited, too young: FinishedAt + threshold, rounded up to the next millisecond;
 * - never-started, too young: Created + threshold (from its age as of the sweep);
 * - stopped by the janitor, within `--stopped-retention`: when the retention ends (the exited rule then removes it);
 * - running, with the idle rule on: when its proof could first hold (since + idle threshold, from its idle
 *   seconds as of the sweep), or one idle threshold later when there is no proof yet (one sample, activity just
 *   seen, no stats, an exec in flight). Never sooner than `IDLE_SETTLE_MS` after the sweep, so a container the
 *   proof keeps refusing is not re-checked in a loop. An owned one (`owner-alive`) one idle threshold after the sweep;
 * - gone, excluded, or a FinishedAt that is zero or unparseable: none (an event brings one if anything changes).
 */
export function deadlineOfKept(kept: KeptVerdict, thresholdSeconds: number, ctx?: KeptContext): number | null {
  switch (kept.reason) {
    case 'too-recent':
      return tooRecentDeadline(kept, thresholdSeconds, ctx);
    case 'future-finished-at':
      // It finished after the run's as-of instant, which is taken before the inspect, so a container that exits while
      // it is being re-checked looks finished in the future. Its deadline is that of any exited container (and a
      // FinishedAt that is truly ahead of the clock gets the same, as `reap` would judge it).
      return kept.rule === 'exited' ? tooRecentDeadline(kept, thresholdSeconds, ctx) : null;
    case 'stopped-retained': {
      const end = kept.retainedUntil === undefined ? NaN : Date.parse(kept.retainedUntil);
      if (!Number.isFinite(end)) return null;
      // ISO 8601 keeps milliseconds: the retention has ended at `end` (`isRetained` keeps it while now < end).
      return ctx ? Math.max(end, ctx.asOfMs + 1) : end;
    }
    case 'running':
      return runningDeadline(kept, ctx);
    case 'zero-finished-at':
    case 'unparseable-finished-at':
    case 'gone':
    case 'excluded':
    // A profile it belongs to is refused by hermes or has its reaper off: looked at again at the next event about it,
    // or the next full sweep (after a reconnect).
    case 'settings-refused':
    case 'reaper-off':
    // No home of the run has its profile (`--homes`): the same, until a home's settings that have it are taken.
    case 'unknown-profile':
      return null;
    default:
      return unreachable(kept.reason, 'keep reason');
  }
}

function tooRecentDeadline(kept: KeptVerdict, thresholdSeconds: number, ctx: KeptContext | undefined): number | null {
  if (kept.rule === 'never-started') {
    if (!ctx || typeof kept.ageSeconds !== 'number') return null;
    return ctx.asOfMs + Math.ceil((thresholdSeconds - kept.ageSeconds) * 1000);
  }
  const p = parseFinishedAt(kept.finishedAt);
  if (p.kind !== 'time') return null;
  return p.epochMs + (p.subMsNanos > 0 ? 1 : 0) + thresholdSeconds * 1000;
}

function runningDeadline(kept: KeptVerdict, ctx: KeptContext | undefined): number | null {
  if (kept.rule !== 'idle' || !ctx?.idle || kept.idleReason === 'stop-idle-off') return null;
  const afterMs = ctx.idle.idleAfterSeconds * 1000;
  // Owned (a living hermes may serve its profile): looked at again one idle threshold later (its owner may be gone
  // by then, and it then goes by the usual threshold), not at once in a loop.
  if (kept.idleReason === 'owner-alive') return ctx.asOfMs + Math.max(afterMs, IDLE_SETTLE_MS);
  const proven = typeof kept.idleSeconds === 'number' && kept.idleReason !== 'exec-in-flight';
  const at = ctx.asOfMs + (proven ? Math.ceil(afterMs - kept.idleSeconds! * 1000) : afterMs);
  return Math.max(at, ctx.asOfMs + IDLE_SETTLE_MS);
}

/**
 * Drops the deadline of a container a sweep (started at `sweepStartMs`) found nothing more to do about, unless an
 * event since then knows better (a `die` during the re-check brings its own deadline).
 */
export function forgetFromSweep(state: TrackerState, id: string, sweepStartMs: number): boolean {
  if (eventSince(state, id, sweepStartMs)) return false;
  return state.deadlines.delete(id);
}

/** Seeds a deadline found by a sweep that started at `sweepStartMs`, unless an event since then knows better. */
export function seedFromSweep(state: TrackerState, id: string, at: number, sweepStartMs: number): boolean {
  if (eventSince(state, id, sweepStartMs)) return false;
  state.deadlines.set(id, at);
  return true;
}

/** An event about `id` was applied at or after `sinceMs` (it then knows better than a sweep begun at `sinceMs`). */
function eventSince(state: TrackerState, id: string, sinceMs: number): boolean {
  const last = state.lastEventMs.get(id);
  return last !== undefined && last >= sinceMs;
}
