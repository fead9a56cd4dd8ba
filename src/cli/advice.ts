/**
 * Advice that can be pasted: a command the CLI suggests (`status`'s "run hermes-janitor reap ...", `list`'s, an
 * error's) repeats the selection and the engine the suggesting command was run with (`--home`, `--profile` or
 * `--all-profiles`, `--homes` or `--all-homes`, `--label`, `--exclude-label`, `--profile-label`, `--host` or `--context`), each value quoted for
 * a POSIX shell, so that pasted it acts on what was shown, not on the default profile of the default engine.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { ENGINE_OPTIONS, OUTPUT_OPTIONS } from './engine-option-table.js';
import { escapeControls, hasControls } from '../util/escape-controls.js';

/** The flags of a run that choose what it acts on. */
export interface RunScope {
  /** `--home` as given, made absolute (a relative one would name another directory pasted elsewhere). */
  home?: string;
  profile?: string;
  allProfiles?: boolean;
  /** `--homes` as given (each made absolute), `--all-homes`: a run over several homes. */
  homes?: readonly string[];
  allHomes?: boolean;
  labels?: readonly string[];
  excludeLabels?: readonly string[];
  profileLabel?: string;
  hosts?: readonly string[];
  context?: string;
}

/** Characters a POSIX shell takes literally in a word. */
const PLAIN = /^[A-Za-z0-9_./:=@%+,-]+$/;

/**
 * `s` as one word of a POSIX shell: as is when it holds nothing special, else in single quotes (`'\''` for a quote);
 * a value holding control characters (or what the one escaper escapes) as `$'...'` with `\xNN`/`\uXXXX` escapes
 * (bash, zsh, ksh and POSIX.1-2024 shells), so the advice stays on one line and cannot move the cursor.
 */
export function shellQuote(s: string): string {
  if (s !== '' && PLAIN.test(s)) return s;
  if (!hasControls(s)) return `'${s.replace(/'/g, `'\\''`)}'`;
  return `$'${escapeControls(s, { bytes: true, backslash: true }).replace(/'/g, "\\'")}'`;
}

/**
 * `s` as one word of fish: a plain word as it is (as `shellQuote` leaves it: the start-up snippet then reads as the
 * POSIX shells' does), anything else as `fishQuoted` quotes it. The fish start-up snippet quotes with this one function.
 */
export function fishQuote(s: string): string {
  return s !== '' && PLAIN.test(s) && !s.startsWith('%') ? s : fishQuoted(s); // `%` leads a process expansion in fish 2
}

/**
 * `s` as one word of fish, always quoted: single quotes, inside which fish reads `\\` and `\'` as escapes (so both are
 * escaped; the POSIX `'\''` would end the word early in fish); a control character (or what the one escaper escapes)
 * outside the quotes as fish's `\uXXXX`, so the word stays on one line. Completion scripts quote with it (`fishQuote`
 * too, for a word that is not plain).
 */
export function fishQuoted(s: string): string {
  let out = '';
  let open = false;
  for (const ch of s) {
    if (hasControls(ch)) {
      if (open) out += "'";
      open = false;
      out += escapeControls(ch);
      continue;
    }
    if (!open) out += "'";
    open = true;
    out += ch === '\\' || ch === "'" ? `\\${ch}` : ch;
  }
  return open ? `${out}'` : out || "''";
}

/** How a value is quoted for the shell the advice is pasted in: POSIX shells by default, or fish. */
export type Quote = (s: string) => string;

/** The scope's flags, in the order the help lists them, each value quoted (`quote`: for a POSIX shell by default). */
export function scopeFlags(scope: RunScope, quote: Quote = shellQuote): string[] {
  const out: string[] = [];
  const add = (flag: string, value?: string) => out.push(value === undefined ? flag : `${flag} ${quote(value)}`);
  if (scope.home !== undefined) add('--home', scope.home);
  if (scope.allProfiles) add('--all-profiles');
  else if (scope.profile !== undefined) add('--profile', scope.profile);
  for (const h of scope.homes ?? []) add('--homes', h);
  if (scope.allHomes) add('--all-homes');
  for (const l of scope.labels ?? []) add('--label', l);
  for (const l of scope.excludeLabels ?? []) add('--exclude-label', l);
  if (scope.profileLabel !== undefined) add('--profile-label', scope.profileLabel);
  if (scope.context !== undefined) add('--context', scope.context);
  for (const h of scope.hosts ?? []) add('--host', h);
  return out;
}

/**
 * The policy flags of `argv` (a list's `--older-than 1h`, ...) as given, each value quoted: advice to act on what a
 * list showed repeats them, so the pasted command judges as the list did. `flags`: the long flags to repeat.
 */
export function givenFlags(argv: readonly string[], flags: ReadonlyMap<string, boolean>): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    const eq = a.indexOf('=');
    const flag = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    const takesValue = flags.get(flag);
    if (takesValue === undefined) continue;
    if (!takesValue) out.push(flag);
    else if (eq > 0 && flag !== a) out.push(`${flag} ${shellQuote(a.slice(eq + 1))}`);
    else if (i + 1 < argv.length) out.push(`${flag} ${shellQuote(argv[++i]!)}`);
  }
  return out;
}

/** The options that change a verdict, by flag (whether each takes a value). */
const POLICY_FLAGS: ReadonlyMap<string, boolean> = new Map(
  [...ENGINE_OPTIONS, ...OUTPUT_OPTIONS]
    .filter((d) =>
      [
        '--lifetime',
        '--older-than',
        '--force-threshold',
        '--as-of',
        '--idle-after',
        '--idle-after-owned',
        '--stopped-retention',
        '--stop-idle',
        '--no-stop-idle',
        '--idle-max-processes',
        '--exec-max-age',
      ].includes(d.flag),
    )
    .map((d) => [d.flag, d.value !== undefined]),
);

/** The options of `argv` that change a verdict, as given: the `reap` that `list` and `status` advise judges as they did. */
export function policyFlags(argv: readonly string[]): string[] {
  return givenFlags(argv, POLICY_FLAGS);
}

/** `hermes-janitor <words> <the scope's flags> <extra>`: a command to paste (`quote`: for a POSIX shell by default). */
export function suggest(words: string, scope: RunScope, extra: readonly string[] = [], quote: Quote = shellQuote): string {
  return ['hermes-janitor', words, ...scopeFlags(scope, quote), ...extra].join(' ');
}

/** The home part of a scope only (the breakers' commands take no engine or selection). */
export function homeScope(scope: RunScope): RunScope {
  return { ...(scope.home !== undefined ? { home: scope.home } : {}), ...(scope.profile !== undefined ? { profile: scope.profile } : {}) };
}

/**
 * The scope a command was run with, from its options and the global ones (values given on the command line); `--home`
 * made absolute (`~` is the user's home), so the advice names the same directory wherever it is pasted. `resolved`: the
 * home the run used, named as `--home` when none was given (it came from `HERMES_HOME`, `--profile` or the default
 * `~/.hermes`): pasted by another user, root above all, the advice then acts on the same home, not on theirs.
 */
export function scopeOf(cmd: Command, ctx: { cwd: string; homedir: string }, resolved?: { home: string }): RunScope {
  const o = cmd.optsWithGlobals<{
    home?: string;
    profile?: string;
    allProfiles?: boolean;
    homes?: string[];
    allHomes?: boolean;
    label?: string[];
    excludeLabel?: string[];
    profileLabel?: string;
    host?: string[];
    context?: string;
  }>();
  const scope: RunScope = {};
  if (o.home !== undefined) scope.home = o.home === '~' || o.home.startsWith('~/') ? path.join(ctx.homedir, o.home.slice(1)) : path.resolve(ctx.cwd, o.home);
  else if (resolved && !o.homes?.length && !o.allHomes) scope.home = resolved.home; // a run over several homes names them instead
  if (o.profile !== undefined) scope.profile = o.profile;
  if (o.allProfiles) scope.allProfiles = true;
  if (o.homes?.length) scope.homes = o.homes.map((h) => path.resolve(ctx.cwd, h));
  if (o.allHomes) scope.allHomes = true;
  if (o.label?.length) scope.labels = o.label;
  if (o.excludeLabel?.length) scope.excludeLabels = o.excludeLabel;
  if (o.profileLabel !== undefined) scope.profileLabel = o.profileLabel;
  if (o.host?.length) scope.hosts = o.host;
  if (o.context !== undefined) scope.context = o.context;
  return scope;
}
