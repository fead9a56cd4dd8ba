/**
 * A hook's own mistakes, recorded so that `status` can name them: an agent shows nobody a hook's stderr, and a hook
 * that fails open on a mistyped flag would otherwise do nothing, silently, on every call. One record per breaker
 * (`<home>/hook-errors/<breaker>.json`): `{"errors": [{"hook", "what", "count", "firstSeen", "lastSeen"}]}`, one
 * entry per hook and mistake. Pure: the caller reads and writes the file and gives the clock.
 */

/** One mistake of one hook command, and how often it was seen. */
export interface HookErrorEntry {
  /** The hook command: `stop-hook`, `tool-loop pre`, `tool-loop post` (or `tool-loop` with a verb it does not know). */
  hook: string;
  /** What went wrong, one line: `hook misconfigured: unknown option '--max-block'`. */
  what: string;
  count: number;
  /** RFC 3339 instants. */
  firstSeen: string;
  lastSeen: string;
}

/** A mistake not seen for this long is forgotten: no longer shown, dropped at the next recording. */
export const HOOK_ERROR_FORGET_MS = 24 * 3600 * 1000;
/** At most this many mistakes are kept per breaker (the most recently seen). */
export const MAX_HOOK_ERRORS = 16;
/** A recorded `what` is cut to this many characters. */
const MAX_WHAT = 500;

const isEntry = (e: unknown): e is HookErrorEntry => {
  const v = e as Partial<HookErrorEntry> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.hook === 'string' &&
    typeof v.what === 'string' &&
    Number.isSafeInteger(v.count) &&
    (v.count ?? 0) >= 1 &&
    typeof v.firstSeen === 'string' &&
    typeof v.lastSeen === 'string' &&
    Number.isFinite(Date.parse(v.lastSeen))
  );
};

/** The record's entries still remembered at `now`, most recently seen first; anything malformed is left out. */
export function hookErrorsFrom(value: unknown, now: Date): HookErrorEntry[] {
  const list = (value as { errors?: unknown } | null)?.errors;
  if (!Array.isArray(list)) return [];
  return list
    .filter(isEntry)
    .filter((e) => now.getTime() - Date.parse(e.lastSeen) < HOOK_ERROR_FORGET_MS)
    .sort((a, b) => Date.parse(b.lastSeen) - Date.parse(a.lastSeen));
}

/** The record after one more sighting of `what` in `hook` at `now`. */
export function withHookError(value: unknown, hook: string, what: string, now: Date): { errors: HookErrorEntry[] } {
  const at = now.toISOString();
  const cut = what.length > MAX_WHAT ? `${what.slice(0, MAX_WHAT)}...` : what;
  const kept = hookErrorsFrom(value, now);
  const same = kept.find((e) => e.hook === hook && e.what === cut);
  const seen: HookErrorEntry = same ? { ...same, count: same.count + 1, lastSeen: at } : { hook, what: cut, count: 1, firstSeen: at, lastSeen: at };
  return { errors: [seen, ...kept.filter((e) => e !== same)].slice(0, MAX_HOOK_ERRORS) };
}
