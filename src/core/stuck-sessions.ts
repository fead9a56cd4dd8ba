/**
 * stuck-sessions, the pure part: counts how many restarts in a row found a session still active, so the
 * gateway can suspend it instead of replaying it again.
 *
 * State is hermes-agent's `<home>/.restart_failure_counts`: a flat JSON object `{"<session key>": <count>}`.
 * Newer hermes versions write `{"<session key>": {"count": n, ...}}`; both are read, and an entry keeps its
 * shape (and its other fields) when it is updated. Transitions are pure functions over plain values.
 */

export const DEFAULT_SUSPEND_THRESHOLD = 3;

/** One session's entry. */
export interface SessionEntry {
  count: number;
  /** Present when the entry is hermes' newer object form: its fields other than `count`, kept as they are. */
  fields?: Record<string, unknown>;
}

/** The state: entries by session key, in file order. */
export interface StuckSessionsState {
  entries: Map<string, SessionEntry>;
}

export function emptyState(): StuckSessionsState {
  return { entries: new Map() };
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Reads a parsed state document. Missing state is empty; a document that is not a JSON object is treated as
 * empty and described in `problem`. Entries that are neither a count nor an object are skipped (and counted
 * in `skipped`); an object entry without a usable `count` counts 0 and keeps its other fields.
 */
export function parseStuckSessions(value: unknown): { state: StuckSessionsState; problem?: string; skipped: number } {
  const state = emptyState();
  if (value === undefined) return { state, skipped: 0 };
  if (!isPlainObject(value)) {
    return { state, problem: 'is not a JSON object of session counts; it is treated as empty', skipped: 0 };
  }
  let skipped = 0;
  for (const [key, raw] of Object.entries(value)) {
    if (isCount(raw)) {
      state.entries.set(key, { count: raw });
    } else if (isPlainObject(raw)) {
      const fields: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(raw)) if (k !== 'count') defineField(fields, k, v);
      state.entries.set(key, { count: isCount(raw.count) ? raw.count : 0, fields });
    } else {
      skipped++;
    }
  }
  return { state, skipped };
}

/** Sets an own property, even one named `__proto__`. */
function defineField(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The document to write, or undefined when there is nothing left (the file is deleted). */
export function serializeStuckSessions(state: StuckSessionsState): Record<string, unknown> | undefined {
  if (state.entries.size === 0) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, entry] of state.entries) {
    if (entry.fields === undefined) {
      defineField(out, key, entry.count);
    } else {
      const obj: Record<string, unknown> = {};
      defineField(obj, 'count', entry.count);
      for (const [k, v] of Object.entries(entry.fields)) defineField(obj, k, v);
      defineField(out, key, obj);
    }
  }
  return out;
}

/** `{key: count}` for display and JSON output (an own property even for `__proto__`). */
export function countsOf(state: StuckSessionsState): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, entry] of state.entries) defineField(out, key, entry.count);
  return out;
}

/** The keys whose count has reached the threshold, in file order. */
export function keysAtThreshold(state: StuckSessionsState, threshold: number): string[] {
  return [...state.entries].filter(([, e]) => e.count >= threshold).map(([k]) => k);
}

/**
 * `record-shutdown KEY...`: each given key's count + 1 (a new key starts at 1); every key not given is
 * dropped. With no keys there is nothing to do: `next` is null and the state must be left untouched.
 */
export function recordShutdown(state: StuckSessionsState, keys: readonly string[]): { next: StuckSessionsState | null } {
  if (keys.length === 0) return { next: null };
  const entries = new Map<string, SessionEntry>();
  for (const key of keys) {
    if (entries.has(key)) continue; // a key given twice counts once
    const prev = state.entries.get(key);
    entries.set(key, prev ? { ...prev, count: prev.count + 1 } : { count: 1 });
  }
  return { next: { entries } };
}

/** `suspend`: the keys at or over the threshold; the state is then deleted. */
export function suspend(state: StuckSessionsState, threshold: number): { suspended: string[]; counts: Record<string, number> } {
  return { suspended: keysAtThreshold(state, threshold), counts: countsOf(state) };
}

/** `clear KEY...`: drops the keys (an empty result means: delete the file). */
export function clearKeys(state: StuckSessionsState, keys: readonly string[]): { next: StuckSessionsState; cleared: string[] } {
  const entries = new Map(state.entries);
  const cleared: string[] = [];
  for (const key of keys) if (entries.delete(key)) cleared.push(key);
  return { next: { entries }, cleared };
}
