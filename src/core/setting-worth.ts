/**
 * What a home's settings are worth (pure: facts in, verdicts out; the engine's socket is looked at in
 * `adapters/settings-worth.ts`). A user's settings are worth that user's rights: as root over a home another user owns,
 * what that user wrote applies as written only if that user could act on the engine directly (owns its socket, or is
 * in the socket's group; a rootless engine of theirs is theirs). Otherwise it may only make the janitor keep more than
 * hermes' defaults would: each setting declares which way that is (`KeepsMore`, in its declaration: `HERMES_SETTINGS`,
 * every `janitor.*` key of the sweep and of each pass), and a value the other way is refused for the run
 * (`untrusted-setting`), the default used instead.
 */
import { escapeControls } from '../util/escape-controls.js';

/** The reason a setting is refused for a run. */
export const UNTRUSTED_SETTING = 'untrusted-setting';

/**
 * How far a home's settings go: `as-written` (the janitor's own user, a home only root controls, or an owner who can
 * act on the engine), or `keep-more` (an owner who cannot: only values that keep more than the defaults are taken).
 */
export type SettingsWorth = { worth: 'as-written'; why: string } | { worth: 'keep-more'; who: string; why: string };

export const AS_WRITTEN: SettingsWorth = { worth: 'as-written', why: "the janitor's own rights" };

/**
 * Which values of a setting keep more than its default (a value read as its kind reads it):
 * - `longer`: a number (seconds, or ms for a duration) at least `than`; null (`never`) is the longest;
 * - `fewer`: a number at most `than` (a stricter in-use rule);
 * - `switch`: the value that keeps more, and the default (a switch's other value, when it is not the default, is refused);
 * - `nothing`: every value removes what the defaults keep (a pass off by default), or lets root run a pattern of theirs;
 * - `empty`: only an empty value (hermes' default: a shared container identity of another's is not theirs to claim);
 * - `owner-rule`: any value: a path, bounded by the owner rule of the roots it names (`untrusted-root`, core/trust.ts).
 */
export type KeepsMore =
  | { readonly more: 'longer'; readonly than: number }
  | { readonly more: 'fewer'; readonly than: number }
  | { readonly more: 'switch'; readonly keeps: boolean; readonly default: boolean }
  | { readonly more: 'nothing' }
  | { readonly more: 'empty' }
  | { readonly more: 'owner-rule' };

/** Whether `value` keeps at least as much as the default would (so a user without engine rights may set it). */
export function keepsMore(k: KeepsMore, value: unknown): boolean {
  switch (k.more) {
    case 'longer':
      return value === null || (typeof value === 'number' && value >= k.than);
    case 'fewer':
      return typeof value === 'number' && value <= k.than;
    case 'switch':
      return value === k.keeps || value === k.default;
    case 'nothing':
      return false;
    case 'empty':
      return value === '' || value === undefined;
    case 'owner-rule':
      return true;
  }
}

/** One setting refused for a run: whose, where, what it said and what is used instead. */
export interface UntrustedSetting {
  /** The hermes home (profile home) it was read for. */
  home: string;
  /** The file it was read from. */
  file: string;
  /** The key as written (`terminal.lifetime_seconds`, `janitor.idle_max_processes`, `TERMINAL_LIFETIME_SECONDS`). */
  setting: string;
  /** The value as read, for a person. */
  value: string;
  /** What the run uses instead, for a person (`300`, `the default`). */
  used: string;
  reason: typeof UNTRUSTED_SETTING;
  /** The one line (text output, status). */
  detail: string;
}

/** The one line for a setting refused for a run. */
export function untrustedSettingLine(u: Omit<UntrustedSetting, 'reason' | 'detail'>, worth: Extract<SettingsWorth, { worth: 'keep-more' }>): string {
  return (
    `${escapeControls(u.setting)} ${escapeControls(u.value)} in ${escapeControls(u.file)} refused (${UNTRUSTED_SETTING}): ${worth.who} cannot act on ` +
    `the engine (${worth.why}), so their settings may only keep more than hermes' defaults; ${escapeControls(u.used)} is used`
  );
}

/** A value for a person: durations in ms as seconds where the setting is a duration (`unit`), others as they read. */
export function shownValue(value: unknown, unit?: 'ms'): string {
  if (value === null) return 'never';
  if (typeof value === 'number' && unit === 'ms') return `${value / 1000}s`;
  if (value instanceof RegExp) return value.source;
  if (Array.isArray(value)) return value.map((v) => shownValue(v)).join(', ');
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return String(value);
}
