import type { Command } from 'commander';
import type { Context } from '../../context.js';
import { UsageError } from '../../errors.js';
import { type RunState, action } from '../shared.js';

// Placeholder: replaced by the real command.
export function register(program: Command, _ctx: Context, state: RunState): void {
  program
    .command('stuck-sessions')
    .allowUnknownOption()
    .allowExcessArguments()
    .action(action(state, async () => {
      throw new UsageError('stuck-sessions is not implemented yet');
    }));
}
