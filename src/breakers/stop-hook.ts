/**
 * The stop-hook breaker, in process: reads and updates the run marker through a {@link StateStore} and applies
 * the pure rules of `core/stop-hook`. Both the CLI and library callers use this.
 */
import path from 'node:path';
import { FileStateStore, type StateStore } from '../adapters/state-file.js';
import {
  DEFAULT_MAX_BLOCKS,
  type StopMarker,
  armMarker,
  decideStop,
  heartbeatMarker,
  parseMarker,
  parseStopInput,
  stopHookOutput,
} from '../core/stop-hook.js';
import { errorMessage } from '../errors.js';
import { libraryHome } from './home.js';

export { DEFAULT_MAX_BLOCKS, HARNESS_BLOCK_CAP, type StopMarker } from '../core/stop-hook.js';

/** The Stop hook's input, as Claude Code sends it. Every field is validated at run time. */
export interface StopHookInput {
  session_id?: string;
  transcript_path?: string;
  cwd?: string;
  hook_event_name?: string;
  /** True when this stop follows a block; a missing value counts as true. */
  stop_hook_active?: boolean;
  [field: string]: unknown;
}

/** What to print for the harness: a block, a message that lets the session stop, or nothing. */
export type StopHookOutput = { decision: 'block'; reason: string } | { systemMessage: string };

/** Why a stop was decided the way it was. */
export type StopHookWhy =
  | 'blocked'
  | 'cap-reached'
  | 'no-marker'
  | 'finished'
  | 'not-owner'
  | 'other-event'
  | 'unusable-marker'
  | 'malformed-input'
  | 'save-failed'
  | 'internal-error';

/** The outcome of one Stop hook call. */
export interface StopHookResult {
  /** `block` keeps the session working; `allow` and `release` (the cap was reached) let it stop. */
  action: 'allow' | 'block' | 'release';
  why: StopHookWhy;
  /** The JSON to print on stdout, or undefined to print nothing. */
  output?: StopHookOutput;
  /** The marker after the decision (as saved), or as read when it was left alone; undefined when there is none. */
  marker?: StopMarker;
  /** One-line warnings (for stderr); empty when all went well. */
  warnings: string[];
}

/** What `status` reports. */
export interface StopHookStatus {
  /** Where the marker lives. */
  location: string;
  /** True when a valid marker with `remaining > 0` exists. */
  armed: boolean;
  marker?: StopMarker;
  /** Why the marker is unusable, when it is. */
  problem?: string;
  maxBlocks: number;
}

export interface StopHookOptions {
  /** Where the marker is kept. Default: a {@link FileStateStore} at `marker`. */
  store?: StateStore;
  /** Path of the marker file. Default: `<home>/stop-hook/marker.json`. */
  marker?: string;
  /** Hermes home for the default marker. Default: `$HERMES_HOME`, else `~/.hermes` (see `profile`). */
  home?: string;
  /** Hermes profile: selects `<root>/profiles/<name>` as the home when `home` is not given. */
  profile?: string;
  /** Environment for the home resolution. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /** Consecutive blocks without progress before a stop is let through (an integer >= 1; default 5). */
  maxBlocks?: number;
  /** The clock. The stop-hook's rules do not depend on time; accepted so every breaker takes the same options. */
  now?: () => Date;
}

/** The in-process stop-hook breaker. */
export interface StopHook {
  /** Where the marker lives (a path, or `memory:`). */
  readonly location: string;
  readonly maxBlocks: number;
  /** Decides one stop. Never throws: any failure lets the session stop (fail open) with a warning. */
  decide(input: StopHookInput): Promise<StopHookResult>;
  /** Writes a fresh marker (`blocks` 0). Throws when it cannot be saved. */
  arm(options: { remaining: number; owner?: string }): Promise<StopMarker>;
  /**
   * Records one verified step: the heartbeat counter + 1 (and `remaining` when given). Returns undefined, and
   * writes nothing, when no valid marker exists. Throws when the marker cannot be saved.
   */
  heartbeat(options?: { remaining?: number }): Promise<StopMarker | undefined>;
  /** Deletes the marker (serialised with concurrent decisions); true when there was one. */
  disarm(): Promise<boolean>;
  /** Reads the marker (never writes). */
  status(): Promise<StopHookStatus>;
}

/** `<home>/stop-hook/marker.json`. */
export function defaultMarkerPath(home: string): string {
  return path.join(home, 'stop-hook', 'marker.json');
}

function checkCount(value: number, what: string, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${what} must be an integer >= ${min}, got ${value}`);
  return value;
}

/**
 * Creates a stop-hook breaker.
 *
 * @example
 * const hook = createStopHook({ store: new MemoryStateStore() });
 * await hook.arm({ remaining: 3, owner: sessionId });
 * const { output } = await hook.decide({ session_id: sessionId, hook_event_name: 'Stop' });
 * // output: { decision: 'block', reason: '3 items remain: continue with the next one' }
 */
export function createStopHook(options: StopHookOptions = {}): StopHook {
  const maxBlocks = checkCount(options.maxBlocks ?? DEFAULT_MAX_BLOCKS, 'maxBlocks', 1);
  const store =
    options.store ??
    new FileStateStore(
      options.marker ??
        defaultMarkerPath(
          libraryHome(options),
        ),
    );

  async function readMarker(): Promise<{ marker?: StopMarker; problem?: string }> {
    const read = await store.read();
    if (read.value === undefined) return read.problem ? { problem: read.problem } : {};
    const parsed = parseMarker(read.value);
    return parsed.ok ? { marker: parsed.value } : { problem: `${parsed.problem} (${store.location})` };
  }

  async function decide(payload: StopHookInput): Promise<StopHookResult> {
    const input = parseStopInput(payload);
    if (!input.ok) return { action: 'allow', why: 'malformed-input', warnings: [`${input.problem}; allowing the stop`] };
    let seen: { marker?: StopMarker; problem?: string };
    try {
      seen = await readMarker();
    } catch (err) {
      return { action: 'allow', why: 'unusable-marker', warnings: [`cannot read the run marker ${store.location}: ${errorMessage(err)}; allowing the stop`] };
    }
    if (seen.problem) return { action: 'allow', why: 'unusable-marker', warnings: [`${seen.problem}; allowing the stop`] };
    // A first, lock-free look: a stop that changes nothing (no run, finished, a bystander) never touches the disk.
    const first = decideStop(seen.marker, input.value, maxBlocks);
    if (first.action === 'allow') return { action: 'allow', why: first.why, marker: seen.marker, warnings: [] };
    try {
      // Decide again on what is read under the lock, so concurrent stops and heartbeats are never lost.
      return await store.update((current) => {
        const parsed = current.value === undefined ? undefined : parseMarker(current.value);
        const marker = parsed?.ok ? parsed.value : undefined;
        const decision = decideStop(marker, input.value, maxBlocks);
        if (decision.action === 'allow') {
          return { next: current.value, result: { action: 'allow', why: decision.why, marker, warnings: [] } as StopHookResult };
        }
        const output = stopHookOutput(decision);
        return { next: decision.next, result: { action: decision.action, why: decision.why, output, marker: decision.next, warnings: [] } as StopHookResult };
      });
    } catch (err) {
      const why = errorMessage(err);
      const remaining = seen.marker?.remaining ?? 0;
      return {
        action: 'allow',
        why: 'save-failed',
        output: {
          systemMessage:
            `hermes-janitor stop-hook: could not save the run marker ${store.location} (${why}), so the session may stop ` +
            `rather than risk being held forever; ${remaining} items remain. Fix the marker's directory, then ask the agent to continue.`,
        },
        marker: seen.marker,
        warnings: [`cannot save the run marker ${store.location}: ${why}; allowing the stop`],
      };
    }
  }

  return {
    location: store.location,
    maxBlocks,
    async decide(input) {
      try {
        return await decide(input);
      } catch (err) {
        return { action: 'allow', why: 'internal-error', warnings: [`internal error: ${errorMessage(err)}; allowing the stop`] };
      }
    },
    async arm({ remaining, owner }) {
      const marker = armMarker(checkCount(remaining, 'remaining', 0), owner);
      await store.update(() => ({ next: marker, result: undefined }));
      return marker;
    },
    async heartbeat({ remaining } = {}) {
      if (remaining !== undefined) checkCount(remaining, 'remaining', 0);
      const before = await readMarker();
      if (!before.marker) return undefined;
      return store.update((current) => {
        const parsed = current.value === undefined ? undefined : parseMarker(current.value);
        if (!parsed?.ok) return { next: current.value, result: undefined };
        const next = heartbeatMarker(parsed.value, remaining);
        return { next, result: next };
      });
    },
    async disarm() {
      const before = await store.read().catch(() => ({ value: undefined, problem: 'unreadable' }));
      if (before.value === undefined && before.problem === undefined) return false;
      // Under the lock, so a Stop hook deciding at this moment cannot write the marker back afterwards.
      return store.update((current) => ({ next: undefined, result: current.value !== undefined || current.problem !== undefined }));
    },
    async status() {
      const seen = await readMarker();
      const status: StopHookStatus = { location: store.location, armed: (seen.marker?.remaining ?? 0) > 0, maxBlocks };
      if (seen.marker) status.marker = seen.marker;
      if (seen.problem) status.problem = seen.problem;
      return status;
    },
  };
}
