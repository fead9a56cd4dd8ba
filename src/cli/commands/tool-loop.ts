import type { Command } from 'commander';
import type { ToolLoopSessionStatus } from '../../breakers/tool-loop.js';
import type { Context } from '../../context.js';
import type { Dialect } from '../../core/hook-dialects.js';
import { ExitCode, errorMessage } from '../../errors.js';
import { TOOL_LOOP_POST_OPTIONS, TOOL_LOOP_PRE_OPTIONS } from '../hooks/hook-options.js';
import { runToolLoopHook } from '../hooks/run-tool-loop-hook.js';
import { type RunState, action, addOptions, homeFrom, requireVerb, warn, writeJson } from '../shared.js';
import { docsLine } from '../docs-page.js';
import { escapeControls } from '../../util/escape-controls.js';

/** pre and post: the hooks' exit codes. */
const HOOK_EXIT_HELP = `
Exit codes:
  0  the answer, if any, on stdout; also on the hook's own errors (a bad flag
     or value, a history it cannot write: one warning on stderr)
  2  only as post's answer where the agent's only channel is exit 2 with the
     text on stderr (Copilot CLI's postToolUseFailure)`;

/** reset and status. */
const VERB_EXIT_HELP = `
Exit codes:
  0  done (a history that cannot be read or deleted: one warning on stderr)
  2  usage error`;

const HELP = `
pre and post are hooks: they read the hook JSON on stdin, exit 0 and print
nothing unless they deny a repeated call or a repeating sequence of calls (pre)
or tell the model to change strategy (post). They speak each agent's dialect
(claude, codex, gemini, qwen, copilot, cursor, hermes), recognised from the
input or given with --dialect; where the agent's only answer is exit 2 with a
text on stderr (Copilot CLI's postToolUseFailure), post answers so. A mistyped
flag, a bad value or a history it cannot write lets the call run, with one
warning, recorded for 'status'. Histories live in <home>/tool-loop/, one file
per session, deleted after 24 h untouched.

.claude/settings.json:
  {"hooks": {
    "PreToolUse": [{"matcher": "*", "hooks": [
      {"type": "command", "command": "hermes-janitor tool-loop pre"}]}],
    "PostToolUse": [{"matcher": "*", "hooks": [
      {"type": "command", "command": "hermes-janitor tool-loop post"}]}],
    "PostToolUseFailure": [{"matcher": "*", "hooks": [
      {"type": "command", "command": "hermes-janitor tool-loop post"}]}]}}
${HOOK_EXIT_HELP}
  reset and status: 0 done (a history it cannot read or delete: one warning),
     2 usage error`;

function describe(s: ToolLoopSessionStatus): string {
  const name = s.session !== undefined ? `session ${JSON.stringify(s.session)}` : s.location;
  if (!s.state) return `${name}: ${s.problem ?? 'no history'}`;
  const streak = s.state.streak ? `last call ${s.state.streak.tool} x${s.state.streak.count} in a row` : 'no repeated call';
  const failures = s.state.failures.length ? `failing: ${s.state.failures.map((f) => `${f.tool} x${f.count}`).join(', ')}` : 'no failures';
  return `${name}: ${streak}; ${failures}; updated ${s.state.updatedAt}`;
}

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = requireVerb(program.command('tool-loop'))
    .description('tool-call hooks: stop repeated, cycling or failing tool calls (verbs: pre, post, reset, status)')
    .addHelpText('after', HELP + docsLine('docs/breakers.md'));

  const dirOf = async (c: Command) => (await import('../../breakers/tool-loop.js')).defaultToolLoopDir(homeFrom(c, ctx).home);

  addOptions(
    cmd
      .command('pre')
      .description('before a tool call: deny the call that would make --threshold identical calls, or --cycle-threshold repeats of a sequence, in a row'),
    TOOL_LOOP_PRE_OPTIONS,
  )
    .addHelpText('after', HOOK_EXIT_HELP + docsLine('docs/breakers.md'))
    .action(
      action(state, async (o: { threshold?: number; cycleThreshold?: number; dialect?: Dialect; json?: boolean }, c: Command) =>
        runToolLoopHook(ctx, { event: 'pre', home: homeFrom(c, ctx).home, ...o, json: o.json === true }),
      ),
    );

  addOptions(
    cmd.command('post').description('after a tool call: tell the model to change strategy after --failure-threshold failures of a tool in a row'),
    TOOL_LOOP_POST_OPTIONS,
  )
    .addHelpText('after', HOOK_EXIT_HELP + docsLine('docs/breakers.md'))
    .action(
      action(state, async (o: { failureThreshold?: number; dialect?: Dialect; json?: boolean }, c: Command) =>
        runToolLoopHook(ctx, { event: 'post', home: homeFrom(c, ctx).home, ...o, json: o.json === true }),
      ),
    );

  cmd
    .command('reset')
    .description("forget a session's history (default: every session's)")
    .option('--session <id>', 'only this session')
    .option('--json', 'print one JSON document describing what was reset')
    .addHelpText('after', VERB_EXIT_HELP + docsLine('docs/breakers.md'))
    .action(action(state, async (o: { session?: string; json?: boolean }, c: Command) => resetHistories(ctx, await dirOf(c), o)));

  cmd
    .command('status')
    .description("show a session's history (default: every session's)")
    .option('--session <id>', 'only this session')
    .option('--json', 'print one JSON document with the histories')
    .addHelpText('after', VERB_EXIT_HELP + docsLine('docs/breakers.md'))
    .action(action(state, async (o: { session?: string; json?: boolean }, c: Command) => showHistories(ctx, await dirOf(c), o)));
}

/** `reset`: deletes one session's history or every one (an I/O error is one warning: exit 0). */
async function resetHistories(ctx: Context, dir: string, o: { session?: string; json?: boolean }): Promise<number> {
  try {
    const { createToolLoop } = await import('../../breakers/tool-loop.js');
    const removed = await createToolLoop({ dir, now: () => ctx.now() }).reset(o.session);
    if (o.json) writeJson(ctx, { dir, session: o.session ?? null, removed });
    else ctx.stderr.write(`hermes-janitor: tool-loop reset: ${removed} session histor${removed === 1 ? 'y' : 'ies'} deleted (${escapeControls(dir)})\n`);
    return ExitCode.OK;
  } catch (err) {
    warn(ctx, `tool-loop reset: ${errorMessage(err)}`);
    return ExitCode.OK;
  }
}

/** `status`: one session's history or every one (an I/O error is one warning: exit 0). */
async function showHistories(ctx: Context, dir: string, o: { session?: string; json?: boolean }): Promise<number> {
  try {
    const { createToolLoop } = await import('../../breakers/tool-loop.js');
    const sessions = await createToolLoop({ dir, now: () => ctx.now() }).status(o.session);
    if (o.json) {
      const shown = sessions.map((s) => ({ session: s.session ?? null, file: s.location, state: s.state ?? null, problem: s.problem ?? null }));
      writeJson(ctx, { dir, sessions: shown });
    } else if (sessions.length === 0) {
      ctx.stdout.write(`${escapeControls(dir)}: no session histories\n`);
    } else {
      ctx.stdout.write(`${sessions.map((s) => escapeControls(describe(s))).join('\n')}\n`);
    }
    return ExitCode.OK;
  } catch (err) {
    warn(ctx, `tool-loop status: ${errorMessage(err)}`);
    return ExitCode.OK;
  }
}
