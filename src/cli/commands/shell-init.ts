import { Argument, type Command } from 'commander';
import path from 'node:path';
import type { Context } from '../../context.js';
import { ExitCode } from '../../errors.js';
import { parseDuration } from '../../core/parse-args.js';
import { resolveHermesHome } from '../../hermes/home.js';
import { selectionFrom } from '../../core/selection.js';
import { resolveEngines } from '../../adapters/docker-context.js';
import { ENV_HERMES_HOME } from '../../defaults.js';
import { type RunScope, fishQuote, scopeOf, shellQuote, suggest } from '../advice.js';
import { oncePerStamps } from '../once-per-stamps.js';
import { type RunState, action, optionParser } from '../shared.js';
import { docsLine } from '../docs-page.js';

const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

/**
 * What the shell tests before it starts node: the stamp `reap --once-per` would read, and the environment that stamp
 * was named for (`HOME`, `HERMES_HOME` unless `--home` was given, and the variables that choose the engine). In any
 * other environment the snippet lets hermes-janitor decide, as it would without the test.
 */
export interface StampTest {
  stamp: string;
  /** The docker CLI's config.json: newer than the stamp (a `docker context use` since), hermes-janitor decides. */
  dockerConfig: string;
  /** Each variable and the value it had (unset and empty alike: the janitor reads both as unset). */
  env: Array<[name: string, value: string]>;
  /** `--every`, in whole seconds. */
  everySeconds: number;
}

/** The engine variables the stamp's engine is chosen by (`adapters/docker-context.ts` `resolveEngines`). */
const ENGINE_VARIABLES = ['DOCKER_HOST', 'DOCKER_CONTEXT', 'DOCKER_CONFIG'];

/**
 * The stamp test for `--every` in this environment, or null where the shell cannot name the stamp (a relative
 * `$HERMES_HOME`, read against the directory the shell is in; an engine address that does not parse).
 */
export function stampTest(scope: RunScope, everyMs: number, ctx: Pick<Context, 'env' | 'homedir' | 'cwd'>): StampTest | null {
  const envHome = ctx.env[ENV_HERMES_HOME];
  if (scope.home === undefined && envHome && !path.isAbsolute(envHome) && !envHome.startsWith('~')) return null;
  try {
    const home = resolveHermesHome({ home: scope.home, profile: scope.profile, env: ctx.env, homedir: ctx.homedir, cwd: ctx.cwd });
    const selection = selectionFrom({ profile: home.profile });
    const [stamp] = oncePerStamps(home.home, selection, resolveEngines(undefined, undefined, ctx.env, ctx.homedir));
    const names = ['HOME', ...(scope.home === undefined ? [ENV_HERMES_HOME] : []), ...ENGINE_VARIABLES];
    return {
      stamp: stamp!,
      dockerConfig: path.join(ctx.env.DOCKER_CONFIG || path.join(ctx.homedir, '.docker'), 'config.json'),
      env: names.map((n) => [n, ctx.env[n] ?? '']),
      everySeconds: Math.floor(everyMs / 1000),
    };
  } catch {
    return null;
  }
}

const HEADER = (every: string) => `# hermes-janitor: reap orphaned hermes-agent containers at most once per ${every}, in the background.
# The shell reads the last sweep's stamp itself: hermes-janitor (node) starts only when a sweep is due.
`;

/**
 * bash and zsh: a function that answers whether a sweep is due (status 0) from the stamp's `completedAt`, read and
 * converted to epoch seconds with builtins only (no process is started); in doubt, due. Fresh is decided on whole
 * seconds with a second's margin at the old end, so the shell does not skip a run the janitor itself would make (a
 * stamp less than a second in the future, which the janitor takes as stale, is taken as fresh: it is not for long).
 */
function posixDue(shell: 'bash' | 'zsh', t: StampTest): string {
  const guard = t.env.map(([n, v]) => `\${${n}-} == ${shellQuote(v)}`).join(' && ');
  const now =
    shell === 'bash'
      ? `(( BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 2) )) || return 0
    printf -v now '%(%s)T' -1`
      : `zmodload -F zsh/datetime p:EPOCHSECONDS 2>/dev/null || return 0
    now=$EPOCHSECONDS`;
  const m = shell === 'bash' ? (i: number) => `\${BASH_REMATCH[${i}]}` : (i: number) => `\${match[${i}]}`;
  return `  __hermes_janitor_due() {${shell === 'zsh' ? '\n    emulate -L zsh' : ''}
    local stamp=${shellQuote(t.stamp)} line now y mo d era yoe doy at
    local re='"completedAt":"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})'
    [[ ${guard} ]] || return 0
    [[ -f $stamp && ! -L $stamp && ! ${shellQuote(t.dockerConfig)} -nt $stamp ]] || return 0
    IFS= read -r line < "$stamp"
    [[ $line =~ $re ]] || return 0
    ${now}
    y=$(( 10#${m(1)} )) mo=$(( 10#${m(2)} )) d=$(( 10#${m(3)} ))
    (( mo <= 2 )) && y=$(( y - 1 ))
    era=$(( y / 400 )) yoe=$(( y - y / 400 * 400 ))
    doy=$(( (153 * ((mo + 9) % 12) + 2) / 5 + d - 1 ))
    at=$(( (era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468) * 86400 + 10#${m(4)} * 3600 + 10#${m(5)} * 60 + 10#${m(6)} ))
    (( at <= now && now - at + 1 <= ${t.everySeconds} )) && return 1
    return 0
  }
`;
}

/** The start-up snippet for `shell`: `run` when a sweep is due (always, where `test` is null). */
export function shellSnippet(shell: Shell, every: string, run: string, test: StampTest | null): string {
  const quiet = `${run} </dev/null >/dev/null 2>&1`;
  if (shell === 'fish') return fishSnippet(every, quiet, test);
  if (!test) {
    return `${HEADER(every)}if [[ $- == *i* ]] && command -v hermes-janitor >/dev/null 2>&1; then
  ${quiet}
fi
`;
  }
  return `${HEADER(every)}if [[ $- == *i* ]] && command -v hermes-janitor >/dev/null 2>&1; then
${posixDue(shell, test)}  if __hermes_janitor_due; then
    ${quiet}
  fi
  unset -f __hermes_janitor_due
fi
`;
}

/**
 * fish (3.5 and later have `path mtime`; older ones always start hermes-janitor): the stamp's age from its mtime. Every
 * path and value is quoted for fish (`advice.ts` `fishQuote`), never the POSIX way.
 */
function fishSnippet(every: string, quiet: string, t: StampTest | null): string {
  if (!t) {
    return `${HEADER(every)}if status is-interactive; and command -q hermes-janitor
    ${quiet}
end
`;
  }
  const stamp = fishQuote(t.stamp);
  const guard = t.env.map(([n, v]) => `test "$${n}" = ${fishQuote(v)}`).join('; and ');
  return `${HEADER(every)}if status is-interactive; and command -q hermes-janitor
    set -l __hermes_janitor_due 1
    if ${guard}; and type -q path; and test -f ${stamp}; and not test -L ${stamp}
        set -l stamped (path mtime ${stamp} 2>/dev/null)
        set -l config (path mtime ${fishQuote(t.dockerConfig)} 2>/dev/null)
        set -l age (path mtime --relative ${stamp} 2>/dev/null)
        if test -n "$stamped"; and test -n "$age"; and begin; test -z "$config"; or test "$config" -lt "$stamped"; end; \\
            and test "$age" -ge 0; and test (math "$age + 2") -le ${t.everySeconds}
            set __hermes_janitor_due 0
        end
    end
    if test $__hermes_janitor_due = 1
        ${quiet}
    end
end
`;
}

export function register(program: Command, ctx: Context, state: RunState): void {
  program
    .command('shell-init')
    .description(
      'Print the snippet to add to a shell start-up file (bash: ~/.bashrc, zsh: ~/.zshrc, fish: ~/.config/fish/config.fish). ' +
        'It takes --home and --profile (before or after shell-init) into the reap it runs.',
    )
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(SHELLS))
    .option(
      '--every <duration>',
      'how often to sweep at most',
      optionParser((v) => (parseDuration(v, '--every'), v)),
      '1h',
    )
    .addHelpText(
      'after',
      `\nExample: hermes-janitor --profile work shell-init bash >> ~/.bashrc\n\nExit codes: 0 printed; 2 unknown shell or bad ` +
        `--every${docsLine('docs/operations.md')}`,
    )
    .action(
      action(state, async (shell: Shell, opts: { every: string }, cmd: Command) => {
        const scope = scopeOf(cmd, ctx);
        // fish reads quotes its own way (`\'` inside single quotes): every value of its snippet is quoted for fish.
        const quote = shell === 'fish' ? fishQuote : shellQuote;
        const run = suggest(
          'reap',
          { ...(scope.home !== undefined ? { home: scope.home } : {}), ...(scope.profile !== undefined ? { profile: scope.profile } : {}) },
          ['--once-per', quote(opts.every), '--background', '--fail-open', '--quiet'],
          quote,
        );
        ctx.stdout.write(shellSnippet(shell, opts.every, run, stampTest(scope, parseDuration(opts.every, '--every'), ctx)));
        return ExitCode.OK;
      }),
    );
}
