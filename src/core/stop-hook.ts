/**
 * The stop-hook state machine: pure functions over the run marker and the Stop hook's input.
 * No I/O and no clock: the decision depends only on the marker and the input.
 */
import { type Dialect, type EventRole, HOST_STOP_CAP } from './hook-dialects.js';
import { type Parsed, isPlainObject } from './hook-readings.js';

export type { Parsed } from './hook-readings.js';
export { isPlainObject } from './hook-readings.js';

/** Default number of consecutive blocks without progress before the stop is allowed. */
export const DEFAULT_MAX_BLOCKS = 5;
/** Claude Code ends a turn itself after about this many consecutive Stop-hook blocks. */
export const HARNESS_BLOCK_CAP = 8;

/** The default cap for a dialect: 5, or one below the host's own cap when that is lower (Cursor 4, hermes 2). */
export function defaultMaxBlocks(dialect: Dialect): number {
  const cap = HOST_STOP_CAP[dialect];
  return cap === undefined ? DEFAULT_MAX_BLOCKS : Math.max(1, Math.min(DEFAULT_MAX_BLOCKS, cap - 1));
}

/** A warning when a chosen cap is not below the host's own (the host would end the turn first), else undefined. */
export function capWarning(dialect: Dialect, maxBlocks: number): string | undefined {
  const cap = HOST_STOP_CAP[dialect];
  if (cap === undefined || maxBlocks < cap) return undefined;
  return `max blocks ${maxBlocks} is not below ${dialect}'s own cap of ${cap}; it may end the turn first`;
}

/**
 * The run marker, `<home>/stop-hook/marker.json` by default. Fields this version does not know are kept when
 * the marker is rewritten.
 */
export interface StopMarker {
  /** Items the run still has to do; the hook never holds a session when this is 0 or below. */
  remaining: number;
  /** A counter the orchestrator advances after each verified step (`stop-hook heartbeat`). */
  heartbeat: number;
  /** When set, only this session is ever held; every other session may stop. */
  ownerSession?: string;
  /** Consecutive blocks since the last progress. */
  blocks: number;
  /** `heartbeat` at the last decision. */
  seenHeartbeat?: number;
  /** `remaining` at the last decision. */
  seenRemaining?: number;
  [field: string]: unknown;
}

/** The parts of a Stop hook's input the decision uses (see `readStop` in hook-readings.ts). */
export interface StopInput {
  sessionId?: string;
  /** `stop_hook_active` or its dialect's equivalent; missing counts as true. */
  stopHookActive?: boolean;
  /** The event's name, when given. */
  event?: string;
  /** What the event is: only a `stop` is decided; without a role, only a Claude `Stop` (or no event name) is. */
  role?: EventRole;
  /** A subagent's stop (its id): let through, and the main session's count of blocks left as it is. */
  subagent?: string;
}

export type StopDecision =
  /** Let the session stop and print nothing. */
  | { action: 'allow'; why: 'no-marker' | 'finished' | 'not-owner' | 'other-event' | 'subagent' }
  /** Keep the session working: save `next`, print `{"decision": "block", "reason"}`. */
  | { action: 'block'; why: 'blocked'; reason: string; next: StopMarker }
  /** The cap was reached: save `next` (blocks reset) and let the session stop with a `systemMessage`. */
  | { action: 'release'; why: 'cap-reached'; message: string; next: StopMarker };

function optionalInteger(obj: Record<string, unknown>, key: string, min?: number): number | undefined | Error {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || (min !== undefined && v < min)) {
    return new Error(`'${key}' must be ${min === 0 ? 'a whole number >= 0' : 'an integer'}`);
  }
  return v;
}

/**
 * Validates a marker read from disk. `remaining` is required; `heartbeat` and `blocks` default to 0; a null or
 * empty `ownerSession` means no owner. A wrongly typed known field makes the whole marker corrupt.
 */
export function parseMarker(value: unknown): Parsed<StopMarker> {
  if (!isPlainObject(value)) return { ok: false, problem: 'the run marker is not a JSON object' };
  const remaining = optionalInteger(value, 'remaining');
  if (remaining === undefined) return { ok: false, problem: "the run marker has no 'remaining' count" };
  const heartbeat = optionalInteger(value, 'heartbeat');
  const blocks = optionalInteger(value, 'blocks', 0);
  const seenHeartbeat = optionalInteger(value, 'seenHeartbeat');
  const seenRemaining = optionalInteger(value, 'seenRemaining');
  for (const v of [remaining, heartbeat, blocks, seenHeartbeat, seenRemaining]) {
    if (v instanceof Error) return { ok: false, problem: `the run marker is invalid: ${v.message}` };
  }
  const owner = value.ownerSession;
  if (owner !== undefined && owner !== null && typeof owner !== 'string') {
    return { ok: false, problem: "the run marker is invalid: 'ownerSession' must be a string" };
  }
  const marker: StopMarker = {
    ...value,
    remaining: remaining as number,
    heartbeat: (heartbeat as number | undefined) ?? 0,
    blocks: (blocks as number | undefined) ?? 0,
  };
  if (seenHeartbeat === undefined) delete marker.seenHeartbeat;
  if (seenRemaining === undefined) delete marker.seenRemaining;
  if (typeof owner !== 'string' || owner === '') delete marker.ownerSession;
  return { ok: true, value: marker };
}

/** The reason shown to the model when the stop is blocked. */
export function blockReason(remaining: number): string {
  return `${remaining} items remain: continue with the next one`;
}

/** The message shown when the cap releases the stop: why it paused and how to resume. */
export function releaseMessage(marker: StopMarker, maxBlocks: number): string {
  return (
    `hermes-janitor stop-hook: paused the run after ${maxBlocks} consecutive stops with no progress ` +
    `(no heartbeat, ${marker.remaining} items still remain). To resume, ask the agent to continue ` +
    `(the hook holds it again) or run 'hermes-janitor stop-hook heartbeat' after the next verified step; ` +
    `'hermes-janitor stop-hook disarm' ends the run.`
  );
}

/** True when the orchestrator reported progress since the last decision. */
export function madeProgress(marker: StopMarker): boolean {
  return (
    (marker.seenHeartbeat !== undefined && marker.heartbeat !== marker.seenHeartbeat) ||
    (marker.seenRemaining !== undefined && marker.remaining < marker.seenRemaining)
  );
}

/**
 * Decides one stop. `marker` is the validated marker (undefined when there is none or it is unusable).
 * Rules, in order: a subagent's stop, no marker, `remaining <= 0` or another session than the owner: allow; progress since the last
 * decision or `stop_hook_active: false`: blocks restart at 0; `blocks < maxBlocks`: block (blocks + 1);
 * otherwise release the stop with a message and reset blocks.
 */
export function decideStop(marker: StopMarker | undefined, input: StopInput, maxBlocks: number): StopDecision {
  const isStop = input.role !== undefined ? input.role === 'stop' : input.event === undefined || input.event === 'Stop';
  if (!isStop) return { action: 'allow', why: 'other-event' };
  // A subagent's stop (Claude Code's SubagentStop carries the parent's session_id): the orchestrator's "items remain"
  // is no instruction for it, and its stop_hook_active says nothing of the main session's blocks.
  if (input.subagent !== undefined) return { action: 'allow', why: 'subagent' };
  if (!marker) return { action: 'allow', why: 'no-marker' };
  if (marker.remaining <= 0) return { action: 'allow', why: 'finished' };
  if (marker.ownerSession !== undefined && marker.ownerSession !== input.sessionId) {
    return { action: 'allow', why: 'not-owner' };
  }
  const reset = madeProgress(marker) || input.stopHookActive === false;
  const blocks = reset ? 0 : marker.blocks;
  const seen = { seenHeartbeat: marker.heartbeat, seenRemaining: marker.remaining };
  if (blocks < maxBlocks) {
    return { action: 'block', why: 'blocked', reason: blockReason(marker.remaining), next: { ...marker, blocks: blocks + 1, ...seen } };
  }
  return { action: 'release', why: 'cap-reached', message: releaseMessage(marker, maxBlocks), next: { ...marker, blocks: 0, ...seen } };
}

/** A fresh marker for `stop-hook arm`: counters at 0, nothing seen yet but the current values. */
export function armMarker(remaining: number, ownerSession?: string): StopMarker {
  const marker: StopMarker = { remaining, heartbeat: 0, blocks: 0, seenHeartbeat: 0, seenRemaining: remaining };
  if (ownerSession !== undefined && ownerSession !== '') marker.ownerSession = ownerSession;
  return marker;
}

/** `stop-hook heartbeat`: the counter + 1, and the new `remaining` when given. Other fields are kept. */
export function heartbeatMarker(marker: StopMarker, remaining?: number): StopMarker {
  return { ...marker, heartbeat: marker.heartbeat + 1, remaining: remaining ?? marker.remaining };
}
