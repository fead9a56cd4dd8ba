import type { Command } from 'commander';
import type { StopHook, StopMarker } from '../../breakers/stop-hook.js';
import type { Context } from '../../context.js';
import type { Dialect } from '../../core/hook-dialects.js';
import { ExitCode, UsageError, errorMessage } from '../../errors.js';
import { STOP_HOOK_OPTIONS, countParser } from '../hooks/hook-options.js';
import { resolvePathArg } from '../path-arg.js';
import { maxBlocksFromEnv, runStopHook } from '../hooks/run-stop-hook.js';
import { type RunState, action, addOptions, homeFrom, optionParser, warn, writeJson } from '../shared.js';
import { docsLine } from '../docs-page.js';

const remaining = optionParser(countParser('--remaining'));

interface StopHookOpts {
  marker?: string;
  maxBlocks?: number;
  dialect?: Dialect;
  json?: boolean;
}

const HELP = `
With no verb this is the Stop hook: it reads the hook JSON on stdin and tells
the agent to keep going ({"decision": "block", "reason": ...} for Claude Code)
while a run marker says items remain, until --max-blocks stops in a row pass
with no progress (no heartbeat, 'remaining' not lower); then it lets the
session stop, with a systemMessage where the agent takes one. It lets the
session stop on any problem (no marker, a bystander session, bad input, a
marker it cannot save, a mistyped flag or a bad value: one warning, recorded
for 'status'). It speaks each agent's dialect (claude, codex, gemini, qwen,
copilot, cursor, hermes), recognised from the input or given with --dialect;
see the README for each agent's configuration.

.claude/settings.json:
  {"hooks": {"Stop": [{"hooks": [
    {"type": "command", "command": "hermes-janitor stop-hook"}]}]}}

Orchestrator:
  hermes-janitor stop-hook arm --remaining 12 --owner "$SESSION_ID"
  hermes-janitor stop-hook heartbeat --remaining 11   # after each step
  hermes-janitor stop-hook disarm                     # when the run ends

Exit codes:
  0  the hook: always (the answer on stdout); its own errors (a bad flag or
     value, a marker it cannot write) are one warning on stderr, and the
     session may stop
  the verbs: 0 done (a marker it cannot read or write: one warning), 2 usage
     error`;

/** The verbs' exit codes (their I/O errors fail open too; a usage error by hand is exit 2). */
const VERB_EXIT_HELP = `
Exit codes:
  0  done (a marker that cannot be read or written: one warning on stderr)
  2  usage error (a verb run by hand, not as the hook)`;

function describeMarker(m: StopMarker, maxBlocks: number): string[] {
  return [
    `remaining:  ${m.remaining}${m.remaining <= 0 ? ' (finished: stops are allowed)' : ''}`,
    `owner:      ${m.ownerSession ?? 'none (any session is held)'}`,
    `heartbeat:  ${m.heartbeat}${m.seenHeartbeat !== undefined ? ` (at the last stop: ${m.seenHeartbeat})` : ''}`,
    `blocks:     ${m.blocks} of ${maxBlocks} since the last progress`,
  ];
}

/** A verb's breaker and the options it was given (the parent's `--marker`/`--json` included). */
interface Opened {
  hook: StopHook;
  opts: StopHookOpts & Record<string, unknown>;
}

type Open = (c: Command) => Promise<Opened>;

function opener(ctx: Context): Open {
  return async (c) => {
    const opts = c.optsWithGlobals<StopHookOpts & Record<string, unknown>>();
    const home = homeFrom(c, ctx).home;
    const warnings: string[] = [];
    const maxBlocks = opts.maxBlocks ?? (await maxBlocksFromEnv(ctx.env, warnings));
    const { createStopHook, defaultMarkerPath } = await import('../../breakers/stop-hook.js');
    const marker = opts.marker !== undefined ? resolvePathArg(ctx, opts.marker) : defaultMarkerPath(home);
    for (const w of warnings) warn(ctx, `stop-hook: ${w}`);
    return { hook: createStopHook({ marker, maxBlocks, dialect: opts.dialect, now: () => ctx.now() }), opts };
  };
}

/** Verbs fail open: an I/O error is one warning line and exit 0. */
function failOpen(ctx: Context, verbName: string, err: unknown): number {
  warn(ctx, `stop-hook ${verbName}: ${errorMessage(err)}`);
  return ExitCode.OK;
}

/** A verb: its command, and what it does with the opened breaker. */
function verb(cmd: Command, state: RunState, ctx: Context, open: Open, run: (o: Opened) => Promise<void>): void {
  cmd.addHelpText('after', VERB_EXIT_HELP + docsLine('docs/breakers.md'));
  cmd.action(
    action(state, async (_o: unknown, c: Command) => {
      const opened = await open(c);
      try {
        await run(opened);
        return ExitCode.OK;
      } catch (err) {
        return failOpen(ctx, cmd.name(), err);
      }
    }),
  );
}

function armVerb(parent: Command, state: RunState, ctx: Context, open: Open): void {
  const cmd = parent
    .command('arm')
    .description('write a fresh run marker (blocks 0)')
    .requiredOption('--remaining <n>', 'items the run still has to do, a whole number', remaining)
    .option('--owner <session-id>', 'hold only this session (others may always stop)');
  verb(cmd, state, ctx, open, async ({ hook, opts }) => {
    const marker = await hook.arm({ remaining: opts.remaining as number, owner: opts.owner as string | undefined });
    if (opts.json) writeJson(ctx, { action: 'arm', marker: hook.location, state: marker });
    else
      ctx.stderr.write(
        `hermes-janitor: stop-hook armed: ${marker.remaining} items remain, holding ` +
          `${marker.ownerSession ? `session ${marker.ownerSession}` : 'any session'} (${hook.location})\n`,
      );
  });
}

function heartbeatVerb(parent: Command, state: RunState, ctx: Context, open: Open): void {
  const cmd = parent
    .command('heartbeat')
    .description('record one verified step (the heartbeat counter + 1), optionally with the new remaining count')
    .option('--remaining <n>', 'items the run still has to do now, a whole number', remaining);
  verb(cmd, state, ctx, open, async ({ hook, opts }) => {
    const marker = await hook.heartbeat({ remaining: opts.remaining as number | undefined });
    if (opts.json) writeJson(ctx, { action: 'heartbeat', recorded: marker !== undefined, marker: hook.location, state: marker ?? null });
    if (!marker) warn(ctx, `stop-hook heartbeat: no run is armed (${hook.location} is missing or unusable); nothing recorded`);
    else if (!opts.json) ctx.stderr.write(`hermes-janitor: stop-hook heartbeat ${marker.heartbeat}: ${marker.remaining} items remain\n`);
  });
}

function disarmVerb(parent: Command, state: RunState, ctx: Context, open: Open): void {
  const cmd = parent.command('disarm').description('delete the run marker: every stop is allowed again');
  verb(cmd, state, ctx, open, async ({ hook, opts }) => {
    const removed = await hook.disarm();
    if (opts.json) writeJson(ctx, { action: 'disarm', removed, marker: hook.location });
    else ctx.stderr.write(`hermes-janitor: stop-hook ${removed ? 'disarmed' : 'was not armed'} (${hook.location})\n`);
  });
}

function statusVerb(parent: Command, state: RunState, ctx: Context, open: Open): void {
  const cmd = parent.command('status').description('show the run marker (read-only)');
  verb(cmd, state, ctx, open, async ({ hook, opts }) => {
    const s = await hook.status();
    if (opts.json) {
      writeJson(ctx, { marker: s.location, armed: s.armed, state: s.marker ?? null, problem: s.problem ?? null, maxBlocks: s.maxBlocks });
      return;
    }
    const lines = [`marker:     ${s.location}`];
    if (s.marker) lines.push(`state:      ${s.armed ? 'armed' : 'finished'}`, ...describeMarker(s.marker, s.maxBlocks));
    else lines.push(`state:      ${s.problem ? `unusable (${s.problem}): every stop is allowed` : 'not armed: every stop is allowed'}`);
    ctx.stdout.write(`${lines.join('\n')}\n`);
  });
}

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = addOptions(
    program.command('stop-hook').description('Stop hook: keep a multi-step run going, never spin forever (verbs: arm, heartbeat, disarm, status)'),
    STOP_HOOK_OPTIONS,
  )
    .addHelpText('after', HELP + docsLine('docs/breakers.md'))
    .argument('[verb]')
    .action(
      action(state, async (given: string | undefined, opts: StopHookOpts, c: Command) => {
        if (given !== undefined) {
          throw new UsageError(
            `unknown stop-hook verb '${given}': use arm, heartbeat, disarm or status, or no verb for the Stop hook itself (see 'hermes-janitor ` +
              `stop-hook --help')`,
          );
        }
        const { marker, maxBlocks, dialect } = opts;
        return runStopHook(ctx, { home: homeFrom(c, ctx).home, marker, maxBlocks, dialect, json: opts.json === true });
      }),
    );
  const open = opener(ctx);
  for (const add of [armVerb, heartbeatVerb, disarmVerb, statusVerb]) add(cmd, state, ctx, open);
}
