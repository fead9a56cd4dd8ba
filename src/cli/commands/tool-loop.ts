import type { Command } from 'commander';
import type { ToolLoopSessionStatus } from '../../breakers/tool-loop.js';
import type { Context } from '../../context.js';
import type { Dialect } from '../../core/hook-dialects.js';
import { ExitCode, errorMessage } from '../../errors.js';
import { TOOL_LOOP_POST_OPTIONS, TOOL_LOOP_PRE_OPTIONS, TOOL_LOOP_PROMPT_OPTIONS } from '../hooks/hook-options.js';
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
pre, post and prompt are hooks: they read the hook JSON on stdin, exit 0 and
print nothing unless they find a loop. post records what each call returned
(its volatile parts masked); pre denies the call that would continue a loop:
an identical call whose last results were the same (the 4th), an identical
call that failed 3 times, a poll past 30 calls, a cycle of 2 to 4 calls
repeating with the same results, a tool whose result stops changing while its
arguments change (identical calls alone, the 5th, where no result is known).
A second loop in the same turn ends the turn where the agent can be told so.
prompt (a person's prompt, or a scheduled one) starts the turn afresh. They
speak each agent's dialect (claude, codex, gemini, qwen, copilot, cursor,
hermes), recognised from the input or given with --dialect. A mistyped flag, a
bad value or a history it cannot write lets the call run, with one warning,
recorded for 'status'. HERMES_JANITOR_TOOL_LOOP_WARN_ONLY=1 warns only.
Histories live in <home>/tool-loop/, one file per session, deleted after 24 h
untouched.

.claude/settings.json:
  {"hooks": {
    "UserPromptSubmit": [{"hooks": [
      {"type": "command", "command": "hermes-janitor tool-loop prompt"}]}],
    "PreToolUse": [{"matcher": "*", "hooks": [
      {"type": "command", "command": "hermes-janitor tool-loop pre"}]}],
    "PostToolUse": [{"matcher": "*", "hooks": [
      {"type": "command", "command": "hermes-janitor tool-loop post"}]}],
    "PostToolUseFailure": [{"matcher": "*", "hooks": [
      {"type": "command", "command": "hermes-janitor tool-loop post"}]}]}}
${HOOK_EXIT_HELP}
  reset, status, disarm and arm: 0 done (a history it cannot read or write: one
     warning), 2 usage error`;

function describe(s: ToolLoopSessionStatus): string {
  const name = s.session !== undefined ? `session ${JSON.stringify(s.session)}` : s.location;
  if (!s.state) return `${name}: ${s.problem ?? 'no history'}`;
  const st = s.state;
  const streak = st.streak ? `last call ${st.streak.tool} x${st.streak.count} in a row` : 'no repeated call';
  const same = st.streak?.same ? ` (last ${st.streak.same} with the same result)` : '';
  const failures = st.failures.length ? `failing: ${st.failures.map((f) => `${f.tool} x${f.count}`).join(', ')}` : 'no failures';
  const loops = `loops: ${st.warnings ?? 0} warned, ${st.stops ?? 0} stopped`;
  const disarmed = st.disarmed ? `; DISARMED since ${st.disarmed}` : '';
  return `${name}: ${streak}${same}; ${failures}; ${loops}${disarmed}; updated ${st.updatedAt}`;
}

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = requireVerb(program.command('tool-loop'))
    .description('tool-call hooks: stop a model that loops, let one that progresses go on (verbs: pre, post, prompt, disarm, arm, reset, status)')
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

  addOptions(cmd.command('prompt').description("at a person's (or a scheduled) prompt: the session's turn starts afresh"), TOOL_LOOP_PROMPT_OPTIONS)
    .addHelpText('after', HOOK_EXIT_HELP + docsLine('docs/breakers.md'))
    .action(
      action(state, async (o: { dialect?: Dialect; json?: boolean }, c: Command) =>
        runToolLoopHook(ctx, { event: 'prompt', home: homeFrom(c, ctx).home, ...o, json: o.json === true }),
      ),
    );

  for (const [name, what] of [
    ['disarm', 'let every call through: one session (--session), or every session of this home'],
    ['arm', "undo 'disarm': one session (--session), or this home's switch"],
  ] as const) {
    cmd
      .command(name)
      .description(what)
      .option('--session <id>', 'only this session')
      .option('--json', 'print one JSON document describing what was done')
      .addHelpText('after', VERB_EXIT_HELP + docsLine('docs/breakers.md'))
      .action(action(state, async (o: { session?: string; json?: boolean }, c: Command) => switchBreaker(ctx, await dirOf(c), name, o)));
  }

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

/** `disarm` and `arm`: one session, or the host (an I/O error is one warning: exit 0). */
async function switchBreaker(ctx: Context, dir: string, verb: 'disarm' | 'arm', o: { session?: string; json?: boolean }): Promise<number> {
  try {
    const { createToolLoop } = await import('../../breakers/tool-loop.js');
    const loop = createToolLoop({ dir, now: () => ctx.now() });
    const where = o.session === undefined ? `every session in ${dir}` : `session ${JSON.stringify(o.session)}`;
    if (verb === 'disarm') {
      const file = await loop.disarm(o.session);
      if (o.json) writeJson(ctx, { action: 'disarm', dir, session: o.session ?? null, file });
      else ctx.stderr.write(`hermes-janitor: tool-loop disarmed for ${where}: every call is let through until 'tool-loop arm'\n`);
    } else {
      const was = await loop.arm(o.session);
      if (o.json) writeJson(ctx, { action: 'arm', dir, session: o.session ?? null, wasDisarmed: was });
      else ctx.stderr.write(`hermes-janitor: tool-loop ${was ? 'armed again' : 'was not disarmed'} for ${where}\n`);
    }
    return ExitCode.OK;
  } catch (err) {
    warn(ctx, `tool-loop ${verb}: ${errorMessage(err)}`);
    return ExitCode.OK;
  }
}

/** `status`: one session's history or every one (an I/O error is one warning: exit 0). */
async function showHistories(ctx: Context, dir: string, o: { session?: string; json?: boolean }): Promise<number> {
  try {
    const [{ createToolLoop, TOOL_LOOP_DIR_ENTRIES_CAP }, { toolLoopCappedLine }] = await Promise.all([
      import('../../breakers/tool-loop.js'),
      import('../../core/tool-loop.js'),
    ]);
    const loop = createToolLoop({ dir, now: () => ctx.now() });
    const sessions = await loop.status(o.session);
    const cappedLine = toolLoopCappedLine(TOOL_LOOP_DIR_ENTRIES_CAP);
    const hostDisarmed = (await loop.hostDisarmed().catch(() => undefined)) ?? null;
    if (o.json) {
      const shown = sessions.map((s) => ({
        session: s.session ?? null,
        file: s.location,
        state: s.state ?? null,
        warnings: s.state?.warnings ?? 0,
        stops: s.state?.stops ?? 0,
        problem: s.problem ?? null,
      }));
      writeJson(ctx, { dir, disarmed: hostDisarmed, sessions: shown, ...(sessions.more ? { capped: TOOL_LOOP_DIR_ENTRIES_CAP } : {}) });
      return ExitCode.OK;
    }
    // Text goes through the one escaper: a session key, a tool name or the directory prints no control character.
    if (hostDisarmed) ctx.stdout.write(`${escapeControls(`${dir}: DISARMED for every session since ${hostDisarmed} ('tool-loop arm' undoes it)`)}\n`);
    if (sessions.length === 0) ctx.stdout.write(`${escapeControls(dir)}: no session histories\n`);
    else ctx.stdout.write(`${sessions.map((s) => escapeControls(describe(s))).join('\n')}\n`);
    if (sessions.more) ctx.stdout.write(`${escapeControls(`${dir} ${cappedLine}`)}\n`);
    return ExitCode.OK;
  } catch (err) {
    warn(ctx, `tool-loop status: ${errorMessage(err)}`);
    return ExitCode.OK;
  }
}
