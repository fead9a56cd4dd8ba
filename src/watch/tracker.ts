/**
 * What an engine event means for the deadlines: a pure transition over the tracker's state, given a clock.
 * A container that exits (or is created) gets a deadline (its time + threshold); one that starts again loses it;
 * `destroy` forgets it; exec activity is recorded for the idle rule. Events older than the last one applied to a
 * container (out of order) are ignored; a duplicate changes nothing.
 */
import type { EngineEvent } from '../adapters/engine.js';
import { parseFinishedAt } from '../core/finished-at.js';
import { DeadlineQueue } from './deadline-queue.js';

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
  | { kind: 'activity'; id: string; at: number }
  | { kind: 'ignored'; id: string; why: 'out-of-order' | 'not-tracked-action' };

const EXIT = new Set(['die', 'died', 'stop']);
const START = new Set(['start', 'restart', 'unpause']);
const GONE = new Set(['destroy', 'remove']);
const EXEC = new Set(['exec_create', 'exec_start', 'exec_die', 'exec_died']);

/** Applies one event; `now` stands in for an event without a time. */
export function applyEvent(state: TrackerState, ev: EngineEvent, thresholdSeconds: number, now: () => number): Transition {
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
  if (EXEC.has(a)) {
    state.lastEventMs.set(ev.id, t);
    state.lastActivityMs.set(ev.id, t);
    return { kind: 'activity', id: ev.id, at: t };
  }
  if (START.has(a)) {
    state.lastEventMs.set(ev.id, t);
    state.deadlines.delete(ev.id);
    return { kind: 'cancelled', id: ev.id };
  }
  if (EXIT.has(a) || a === 'create') {
    state.lastEventMs.set(ev.id, t);
    const at = Math.ceil(t) + thresholdSeconds * 1000;
    const cur = state.deadlines.get(ev.id);
    // `stop` follows `die`: the earlier deadline stands.
    if (cur !== undefined && cur <= at && a !== 'create') return { kind: 'scheduled', id: ev.id, at: cur };
    state.deadlines.set(ev.id, at);
    return { kind: 'scheduled', id: ev.id, at };
  }
  return { kind: 'ignored', id: ev.id, why: 'not-tracked-action' };
}

/**
 * The deadline of a container a sweep (or a deadline check) kept because it is too young: its FinishedAt plus
 * the threshold, rounded up to the next millisecond; null when it has none to wait for. The one place a kept
 * verdict becomes a deadline (rules judged by another time, such as Created, extend it here).
 */
export function deadlineOfKept(kept: { reason: string; finishedAt: string }, thresholdSeconds: number): number | null {
  if (kept.reason !== 'too-recent') return null;
  const p = parseFinishedAt(kept.finishedAt);
  if (p.kind !== 'time') return null;
  return p.epochMs + (p.subMsNanos > 0 ? 1 : 0) + thresholdSeconds * 1000;
}

/** Seeds a deadline found by a sweep that started at `sweepStartMs`, unless an event since then knows better. */
export function seedFromSweep(state: TrackerState, id: string, at: number, sweepStartMs: number): boolean {
  const last = state.lastEventMs.get(id);
  if (last !== undefined && last >= sweepStartMs) return false;
  state.deadlines.set(id, at);
  return true;
}
