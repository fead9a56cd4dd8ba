import { readFileSync } from 'node:fs';
import { requirePackage } from '../util/require-package.js';
import type { Command, CommanderError } from 'commander';
import { type Context, processContext } from '../context.js';
import { ENV_DEBUG } from '../defaults.js';
import { JanitorError, UsageError, errorMessage, ExitCode } from '../errors.js';
import { GLOBAL_OPTIONS, GLOBAL_VALUE_FLAGS } from './global-options.js';
import { commanderFlags } from './option-table.js';
import type { CommandModule, RunState } from './shared.js';
import { docsLine } from './docs-page.js';
import { escapeControls } from '../util/escape-controls.js';

/** A subcommand, loaded only when it is the one being run (so a hook never loads the engine client). */
interface CommandEntry {
  name: string;
  aliases?: string[];
  summary: string;
  load: () => Promise<CommandModule>;
}

const COMMANDS: CommandEntry[] = [
  {
    name: 'list',
    aliases: ['ls'],
    summary: 'list labelled containers with the verdict reap would reach (reap, stop or keep)',
    load: () => import('./commands/list.js'),
  },
  {
    name: 'reap',
    summary: 'remove exited and never-started orphans older than the threshold; stop sandboxes proven idle',
    load: () => import('./commands/reap.js'),
  },
  {
    name: 'watch',
    summary: 'run as a service: remove each orphan at its deadline and stop each idle sandbox, following engine events',
    load: () => import('./commands/watch.js'),
  },
  { name: 'restart-guard', summary: 'rolling-window breaker for restart-interrupted gateway boots', load: () => import('./commands/restart-guard.js') },
  { name: 'lifecycle-scan', summary: 'refuse scheduled commands that restart or kill the gateway', load: () => import('./commands/lifecycle-scan.js') },
  { name: 'stuck-sessions', summary: 'suspend sessions that stay active across restarts', load: () => import('./commands/stuck-sessions.js') },
  { name: 'stop-hook', summary: 'Stop hook: keep a multi-step run going, never spin forever', load: () => import('./commands/stop-hook.js') },
  {
    name: 'status',
    summary: 'engines, containers, janitor state, sandbox directories and breakers on one screen (read-only)',
    load: () => import('./commands/status.js'),
  },
  { name: 'shell-init', summary: 'print the shell start-up snippet (bash, zsh, fish)', load: () => import('./commands/shell-init.js') },
  { name: 'tool-loop', summary: 'tool-call hooks: stop repeated, cycling or failing tool calls', load: () => import('./commands/tool-loop.js') },
  { name: 'completion', summary: 'print a shell completion script (bash, zsh, fish)', load: () => import('./commands/completion.js') },
];

/** The first word of argv that is not an option: the subcommand to load. */
function findCommand(argv: string[]): CommandEntry | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return undefined;
    if (GLOBAL_VALUE_FLAGS.has(a)) {
      i++;
      continue;
    }
    if (a.startsWith('-')) continue;
    const name = a === 'help' ? argv[i + 1] : a;
    return COMMANDS.find((c) => c.name === name || c.aliases?.includes(name ?? ''));
  }
  return undefined;
}

function readVersion(): string {
  try {
    // Only read when --version is asked for: no start-up cost otherwise.
    const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    return (JSON.parse(text) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

type Commander = typeof import('commander');

/**
 * `capture`: a hook's usage error is kept for its warning (hook-fail-open.ts) instead of printed as a usage error.
 */
function buildProgram(ctx: Context, { Command }: Commander, exitCodesHelp: string, capture?: (message: string) => void): Command {
  const program = new Command('hermes-janitor');
  program.description('Reaps orphaned hermes-agent containers and breaks agent loops.');
  for (const o of GLOBAL_OPTIONS) program.option(commanderFlags(o), o.description);
  program
    .configureHelp({ showGlobalOptions: true })
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.stdout.write(s),
      writeErr: (s) => ctx.stderr.write(s),
      // The terminal's width, else 80 (the help texts of the commands are written to fit 80 columns).
      getOutHelpWidth: () => helpWidth(ctx.stdout),
      getErrHelpWidth: () => helpWidth(ctx.stderr),
      outputError: (s, write) => {
        // One line, always: commander puts its "(Did you mean ...?)" hint on a line of its own.
        const line = s
          .replace(/^error: /, '')
          .trim()
          .replace(/\s*\n\s*/g, ' ');
        if (capture) capture(line);
        else write(`hermes-janitor: ${line} (see 'hermes-janitor --help')\n`);
      },
    })
    .addHelpText('after', `\n${exitCodesHelp}${docsLine('README.md')}`);
  return program;
}

/** The width help is wrapped to: a terminal's own, else 80. */
function helpWidth(stream: Context['stdout']): number {
  const s = stream as { isTTY?: boolean; columns?: number };
  return s.isTTY && s.columns ? s.columns : 80;
}

export interface MainOptions {
  /** bin/ already ran the start-up fast path (dist/fast-path.cjs) and it did not apply. */
  fastPathTried?: boolean;
}

/** Runs the CLI and returns the exit code. The only place that decides how the process ends. */
export async function main(argv: string[], context?: Context, options: MainOptions = {}): Promise<number> {
  const ctx = context ?? processContext(argv);
  const state: RunState = { exitCode: ExitCode.OK };
  let commander: Commander | undefined;
  // A hook an agent runs fails open on its own usage errors (see hook-fail-open.ts); commander's message is kept for it.
  const hook = argv.includes('stop-hook') || argv.includes('tool-loop') ? (await import('./hooks/hook-invocation.js')).hookInvocation(argv) : undefined;
  let usage: string | undefined;
  try {
    const selected = findCommand(argv);
    // `watch` in the CLI's own process: its work in a Worker under a supervisor that ends a run past its deadline
    // whatever it is doing, and carries on (watch-supervisor.ts). Help and version need none.
    if (selected?.name === 'watch' && ctx.ownsProcess && !argv.some((a) => a === '--help' || a === '-h' || a === '--version' || a === '-V')) {
      const { supervises, superviseWatch } = await import('./watch-supervisor.js');
      if (supervises(ctx)) return await superviseWatch(argv, ctx);
    }
    if (!options.fastPathTried) {
      const code = await (await import('./fast-path.js')).runFastPath(argv, context);
      if (code !== undefined) return code;
    }
    commander = requirePackage('commander') as Commander;
    const capture = hook ? (line: string) => void (usage = line) : undefined;
    const program = buildProgram(ctx, commander, (await import('./shared.js')).EXIT_CODES_HELP, capture);
    if (argv.includes('--version') || argv.includes('-V')) program.version(readVersion(), '-V, --version');
    // `completion` walks the whole tree: every command is registered in full for it (nothing else is run).
    const whole = selected?.name === 'completion';
    for (const entry of COMMANDS) {
      if (entry === selected || whole) (await entry.load()).register(program, ctx, state);
      else
        program
          .command(entry.name)
          .aliases(entry.aliases ?? [])
          .description(entry.summary);
    }
    if (argv.length === 0) {
      program.outputHelp({ error: true });
      return ExitCode.USAGE;
    }
    await program.parseAsync(argv, { from: 'user' });
    return state.exitCode;
  } catch (err) {
    const helpShown = commander && err instanceof commander.CommanderError && err.exitCode === 0;
    if (hook && !helpShown) return hookFailed(argv, ctx, hook, err, usage);
    return report(err, ctx, commander?.CommanderError);
  }
}

/** A hook's own error: a usage error (commander's, or the command's) is a misconfigured hook; anything else internal. */
async function hookFailed(argv: string[], ctx: Context, hook: string, err: unknown, usage: string | undefined): Promise<number> {
  const what = usage !== undefined || err instanceof UsageError ? `hook misconfigured: ${usage ?? errorMessage(err)}` : `internal error: ${errorMessage(err)}`;
  const [{ failOpen }, { hookHome }] = await Promise.all([import('./hooks/hook-fail-open.js'), import('./hooks/hook-invocation.js')]);
  return failOpen(ctx, hook, what, hookHome(argv, ctx));
}

function report(err: unknown, ctx: Context, commanderError?: typeof CommanderError): number {
  if (commanderError && err instanceof commanderError) {
    // Commander has already printed its one line (or the help/version text).
    return err.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
  }
  if (err instanceof JanitorError) {
    ctx.stderr.write(`hermes-janitor: ${escapeControls(err.message)}\n`);
    return err.exitCode;
  }
  ctx.stderr.write(`hermes-janitor: unexpected error: ${escapeControls(errorMessage(err))}\n`);
  if (ctx.env[ENV_DEBUG]) ctx.stderr.write(`${(err as Error)?.stack ?? ''}\n`);
  return ExitCode.FAILED;
}
