import { Argument, type Command } from 'commander';
import type { Context } from '../../context.js';
import { ExitCode } from '../../errors.js';
import { type RunState, action } from '../shared.js';
import { docsLine } from '../docs-page.js';

const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

const HELP = `
Install, then start a new shell:
  bash  hermes-janitor completion bash \\
          > ~/.local/share/bash-completion/completions/hermes-janitor
        or in ~/.bashrc: source <(hermes-janitor completion bash)
  zsh   hermes-janitor completion zsh > "\${fpath[1]}/_hermes-janitor"
        or in ~/.zshrc, after compinit: source <(hermes-janitor completion zsh)
  fish  hermes-janitor completion fish \\
          > ~/.config/fish/completions/hermes-janitor.fish

The script is static: it completes commands, verbs, flags and the values of the
enumerated ones without starting node.

Exit codes: 0 printed; 2 unknown shell`;

export function register(program: Command, ctx: Context, state: RunState): void {
  program
    .command('completion')
    .description('Print a shell completion script for bash, zsh or fish: commands, verbs, flags and their values.')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(SHELLS))
    .addHelpText('after', HELP + docsLine('docs/operations.md'))
    .action(
      action(state, async (shell: Shell, _opts: unknown, cmd: Command) => {
        const scripts = await import('../completion.js');
        // main registers every command in full for `completion`: the tree is the program's own.
        const whole = cmd.parent!;
        const make = { bash: scripts.bashScript, zsh: scripts.zshScript, fish: scripts.fishScript }[shell];
        ctx.stdout.write(make(whole));
        return ExitCode.OK;
      }),
    );
}
