import { type Command, InvalidArgumentError, Option } from 'commander';
import { existsSync } from 'node:fs';
import type { Context } from '../context.js';
import { homeDirectoryProblem } from '../adapters/home-directory.js';
import { dropToOwner, homeAccess, rootRules } from '../adapters/trust.js';
import { type HermesHome, homeSource, resolveHermesHome } from '../hermes/home.js';
import { ValueError } from '../core/parse-args.js';
import { UsageError } from '../errors.js';
import { escapeControls, escapeJsonText } from '../util/escape-controls.js';
import { type OptionDecl, commanderFlags } from './option-table.js';
import { COMPLETION_VALUES } from './completion-values.js';
import { versioned } from './json-schema.js';

/** What a command's action leaves behind for main(). */
export interface RunState {
  exitCode: number;
}

/** A subcommand module: defines its options and action on the program. */
export interface CommandModule {
  register(program: Command, ctx: Context, state: RunState): void;
}

export const EXIT_CODES_HELP = `Exit codes:
  reap/list:  0 done; 1 at least one removal or stop failed (the rest were
              processed); 2 bad usage or input; 3 engine unreachable, not a
              Docker engine, or the run timed out
  status:     0 nothing needs attention; 1 something does; 2 usage error;
              3 engine unreachable or not a Docker engine
  breakers:   0 proceed; 1 tripped (the caller should hold back); 2 usage
              error (internal and I/O errors fail open: exit 0 with a warning)
  hooks:      0 (the answer, if any, on stdout), also on the hook's own errors
              (a bad flag or value, a state file it cannot write: one warning,
              recorded for 'status'); 2 only as the answer itself where the
              agent's only channel is exit 2 with the text on stderr (tool-loop
              post for Copilot CLI's postToolUseFailure)`;

/** Wraps a pure value parser as a commander option parser (one-line "invalid argument" errors, exit 2). */
export function optionParser<T>(parse: (raw: string) => T): (raw: string) => T {
  return (raw: string) => {
    try {
      return parse(raw);
    } catch (err) {
      if (err instanceof ValueError) throw new InvalidArgumentError(err.message);
      throw err;
    }
  };
}

/**
 * Registers declared options (see option-table.ts) on a command: their value parsers (a repeatable option collects
 * its parsed values in order) and defaults.
 */
export function addOptions(cmd: Command, decls: readonly OptionDecl[]): Command {
  for (const d of decls) {
    const parse = d.parse ? optionParser(d.parse) : (raw: string) => raw;
    const opt = new Option(commanderFlags(d), d.description);
    if (d.repeatable) opt.argParser((raw: string, previous: unknown[] | undefined) => [...(previous ?? []), parse(raw)]);
    else if (d.parse) opt.argParser(parse);
    if (d.defaultValue !== undefined) opt.default(d.defaultValue, d.defaultDescription);
    // For the shell completions only: commander's own choices would replace the option's parser and its messages.
    if (d.values) Object.assign(opt, { [COMPLETION_VALUES]: d.values });
    cmd.addOption(opt);
  }
  return cmd;
}

/** Appends to a repeatable option's list. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** The global `--home`/`--profile` (accepted before or after the subcommand) resolved the hermes way. */
function resolveHome(cmd: Command, ctx: Context): HermesHome {
  const g = cmd.optsWithGlobals<{ home?: string; profile?: string }>();
  return resolveHermesHome({ home: g.home, profile: g.profile, env: ctx.env, homedir: ctx.homedir, cwd: ctx.cwd });
}

/**
 * The home of a breaker's command (`restart-guard`, `stuck-sessions`, `stop-hook`, `tool-loop`, `lifecycle-scan`).
 * Run as root over a home another user owns (adapters/trust.ts `homeAccess`), the rest of the process runs as that
 * user: what a breaker reads and writes there (hermes' own state, the hooks' state) is that user's, and it is done
 * with that user's rights, never root's. A home several users can change is a usage error naming them.
 */
export function homeFrom(cmd: Command, ctx: Context): HermesHome {
  const home = resolveHome(cmd, ctx);
  const access = homeAccess(home.home);
  if (access.owner && rootRules()) dropToOwner(access.owner);
  return home;
}

/**
 * The home of the commands that read the home as a whole (`reap`, `list`, `watch`, `status`): a home that exists
 * but is not a directory is a usage error (exit 2) naming it, not an empty home. These keep root's rights (the
 * engine, other users' files in sandboxes): as root over another user's home they read its files by the trust rules
 * (adapters/trust.ts) and keep their own state in root's state directory.
 */
export function homeDirFrom(cmd: Command, ctx: Context): HermesHome {
  const home = resolveHome(cmd, ctx);
  const g = cmd.optsWithGlobals<{ home?: string }>();
  const problem = homeDirectoryProblem(home.home, homeSource({ home: g.home, env: ctx.env }));
  if (problem) throw new UsageError(problem);
  homeAccess(home.home); // whose it is, decided once (a home several users can change: exit 2)
  return home;
}

/**
 * A mistyped `--profile` reads as an empty profile: the warning naming the path (its label is selected all the same),
 * when `--profile` (without `--home`) names a home that does not exist; undefined otherwise.
 */
export function missingProfileHome(cmd: Command, home: HermesHome): string | undefined {
  const g = cmd.optsWithGlobals<{ home?: string; profile?: string }>();
  if (g.profile === undefined || g.home !== undefined || existsSync(home.home)) return undefined;
  return (
    `--profile ${escapeControls(g.profile)}: there is no hermes home at ${escapeControls(home.home)} (a mistyped profile?); its containers ` +
    `(label value ${home.profile}) are selected all the same`
  );
}

/**
 * Writes `JSON.stringify(value, null, 2)` and a newline, byte for byte, in pieces of about 64 KB: the report of a
 * 100k-container sweep is never one ~35 MB string (plus its encoded copy) on top of the entries themselves. Every
 * `--json` document goes through here and so carries `schemaVersion` first (json-schema.ts).
 */
export function writeJson(ctx: Context, value: unknown): void {
  for (const piece of jsonPieces(versioned(value))) ctx.stdout.write(escapeJsonText(piece));
}

/** The text of `JSON.stringify(value, null, 2) + '\n'`, top-level arrays of a plain object one element at a time. */
export function* jsonPieces(value: unknown): Generator<string> {
  const plain = value !== null && typeof value === 'object' && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
  if (!plain || typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    yield `${JSON.stringify(value, null, 2)}\n`;
    return;
  }
  const obj = value as Record<string, unknown>;
  // The keys JSON.stringify keeps (not undefined, a function or a symbol), decided without serializing the values:
  // stringifying a 100k-entry `removed` only to test it made a ~35 MB string at the end of a run.
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined && typeof obj[k] !== 'function' && typeof obj[k] !== 'symbol');
  if (keys.length === 0) {
    yield '{}\n';
    return;
  }
  let buf = '{\n';
  for (const [i, k] of keys.entries()) {
    const v = obj[k];
    buf += `  ${JSON.stringify(k)}: `;
    if (Array.isArray(v) && v.length > 0) {
      buf += '[\n';
      for (let j = 0; j < v.length; j++) {
        buf += `    ${(JSON.stringify(v[j], null, 2) ?? 'null').replace(/\n/g, '\n    ')}${j < v.length - 1 ? ',' : ''}\n`;
        if (buf.length >= 65_536) {
          yield buf;
          buf = '';
        }
      }
      buf += '  ]';
    } else {
      buf += JSON.stringify(v, null, 2)!.replace(/\n/g, '\n  ');
    }
    buf += i < keys.length - 1 ? ',\n' : '\n';
  }
  yield `${buf}}\n`;
}

export function warn(ctx: Context, message: string): void {
  ctx.stderr.write(`hermes-janitor: warning: ${escapeControls(message)}\n`);
}

/** 'a, b or c' */
function orList(items: string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

/**
 * A command that only groups verbs: run without one, or with an unknown one, it is a one-line usage error (exit 2)
 * naming what was given and the verbs there are, rather than commander's whole help text.
 */
export function requireVerb(cmd: Command): Command {
  return cmd.argument('[verb]').action((verb: string | undefined) => {
    const verbs = orList(cmd.commands.map((c) => c.name()));
    const name = cmd.name();
    throw new UsageError(
      verb === undefined
        ? `'${name}' needs a verb: ${verbs} (see 'hermes-janitor ${name} --help')`
        : `unknown ${name} verb '${verb}': use ${verbs} (see 'hermes-janitor ${name} --help')`,
    );
  });
}

/**
 * A command that takes options only: a stray word (`reap extra`, or an option's value split off from it) is a
 * one-line usage error (exit 2) that names it, instead of commander's "Expected 0 arguments but got 1".
 */
export function optionsOnly(cmd: Command): Command {
  return cmd.allowExcessArguments(true).hook('preAction', (_cmd, actionCmd) => {
    const extra = actionCmd.args;
    if (extra.length === 0) return;
    // Control characters would break the one line.
    const quoted = extra.map((a) => `'${escapeControls(a)}'`).join(', ');
    const name = actionCmd.name();
    throw new UsageError(
      `unexpected argument${extra.length > 1 ? 's' : ''} ${quoted} for ${name}: it takes options only; remove ${extra.length > 1 ? 'them' : 'it'} ` +
        `or put the value right after its option (see 'hermes-janitor ${name} --help')`,
    );
  });
}

/** Runs an action and records its exit code. */
export function action<A extends unknown[]>(state: RunState, fn: (...args: A) => Promise<number>) {
  return async (...args: A): Promise<void> => {
    state.exitCode = await fn(...args);
  };
}
