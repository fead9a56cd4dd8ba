import { Argument, type Command } from 'commander';
import type { Context } from '../../context.js';
import { ExitCode } from '../../errors.js';
import { parseDuration } from '../../core/parse-args.js';
import { type RunState, action, optionParser } from '../shared.js';
import { docsLine } from '../docs-page.js';

const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

/** The start-up snippet: a fresh stamp returns at once; otherwise the sweep detaches and never blocks the shell. */
export function shellSnippet(shell: Shell, every: string): string {
  const run = `hermes-janitor reap --once-per ${every} --background --fail-open --quiet`;
  if (shell === 'fish') {
    return `# hermes-janitor: reap orphaned hermes-agent containers at most once per ${every}, in the background
if status is-interactive; and command -q hermes-janitor
    ${run} </dev/null >/dev/null 2>&1
end
`;
  }
  return `# hermes-janitor: reap orphaned hermes-agent containers at most once per ${every}, in the background
if [[ $- == *i* ]] && command -v hermes-janitor >/dev/null 2>&1; then
  ${run} </dev/null >/dev/null 2>&1
fi
`;
}

export function register(program: Command, ctx: Context, state: RunState): void {
  program
    .command('shell-init')
    .description('Print the snippet to add to a shell start-up file (bash: ~/.bashrc, zsh: ~/.zshrc, fish: ~/.config/fish/config.fish).')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(SHELLS))
    .option('--every <duration>', 'how often to sweep at most (default 1h)', optionParser((v) => (parseDuration(v, '--every'), v)), '1h')
    .addHelpText('after', `\nExample: hermes-janitor shell-init bash >> ~/.bashrc\nExit codes: 0 printed; 2 unknown shell or bad --every${docsLine('docs/operations.md')}`)
    .action(
      action(state, async (shell: Shell, opts: { every: string }) => {
        ctx.stdout.write(shellSnippet(shell, opts.every));
        return ExitCode.OK;
      }),
    );
}
