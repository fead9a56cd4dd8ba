/**
 * The hook dialects: every fixture (an input as its agent sends it, cited in test/fixtures/hook-dialects) is
 * recognised as its own dialect and no other, read as its agent means it, and answered in exactly the shape its
 * agent accepts, through the CLI as a harness runs it.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { MemoryStateStore } from '../../src/adapters/state-file.js';
import { createStopHook } from '../../src/breakers/stop-hook.js';
import { MemoryToolLoopStore, createToolLoop } from '../../src/breakers/tool-loop.js';
import { main } from '../../src/cli/main.js';
import type { Context } from '../../src/context.js';
import { DIALECTS, DIALECT_EVENTS, type Dialect, recognizeDialect } from '../../src/core/hook-dialects.js';
import { readStop, readToolCall } from '../../src/core/hook-readings.js';
import { blockReason, defaultMaxBlocks, releaseMessage } from '../../src/core/stop-hook.js';
import { failureReason, repeatReason } from '../../src/core/tool-loop.js';
import { FIXTURES, type FixtureAnswer, type HookFixture } from '../fixtures/hook-dialects/index.js';
import { tempDir } from '../helpers/cli.js';

const tmp = tempDir('hj-dialects-');
after(tmp.cleanup);
let n = 0;
const freshHome = () => path.join(tmp.dir, `home-${n++}`);

/** The input with a tool-call id of its own (`<id>-<k>`), where the agent sends one. */
function withCallId(input: Record<string, unknown>, k: number): Record<string, unknown> {
  const out = { ...input };
  if (typeof out.tool_use_id === 'string') out.tool_use_id = `${out.tool_use_id}-${k}`;
  const extra = out.extra as Record<string, unknown> | undefined;
  if (extra && typeof extra.tool_call_id === 'string') out.extra = { ...extra, tool_call_id: `${extra.tool_call_id}-${k}` };
  return out;
}

/** Runs the CLI in process, as a harness would run the built one, with `input` on stdin. */
async function run(home: string, args: string[], input: unknown = '') {
  let stdout = '';
  let stderr = '';
  const ctx: Context = {
    argv: args,
    env: { HERMES_HOME: home },
    stdout: { write: (s: string) => ((stdout += s), true) },
    stderr: { write: (s: string) => ((stderr += s), true) },
    stdin: Readable.from([Buffer.from(typeof input === 'string' ? input : JSON.stringify(input))]),
    cwd: home,
    homedir: home,
    now: () => new Date('2026-11-22T10:00:00Z'),
  };
  const code = await main(args, ctx);
  return { code, stdout, stderr };
}

/** What the CLI must print for an expected answer. */
function assertAnswer(r: { code: number; stdout: string; stderr: string }, want: FixtureAnswer, what: string): void {
  if (want === 'none') {
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, '', ''], what);
  } else if ('stdout' in want) {
    assert.equal(r.code, 0, what);
    assert.equal(r.stderr, '', what);
    assert.equal(r.stdout, `${JSON.stringify(want.stdout)}\n`, `${what}: exactly one line of exactly this JSON`);
  } else {
    assert.deepEqual([r.code, r.stdout, r.stderr], [2, '', `${want.stderr}\n`], what);
  }
}

/** The same stop input, as a stop that follows a block (each dialect says so its own way). */
function followsBlock(f: HookFixture): Record<string, unknown> {
  const input = structuredClone(f.input);
  if (f.dialect === 'cursor') input.loop_count = 1;
  else if (f.dialect === 'hermes') (input.extra as Record<string, unknown>).attempt = 1;
  else if (f.dialect !== 'copilot' || input.stop_hook_active !== undefined) input.stop_hook_active = true;
  return input;
}

describe('hook dialects: recognition and reading of every fixture', () => {
  it('has fixtures for every dialect and each of its hooks, each citing its source', () => {
    for (const d of DIALECTS) {
      for (const hook of ['pre', 'post', 'stop', 'prompt'] as const) {
        assert.ok(
          FIXTURES.some((f) => f.dialect === d && f.hook === hook),
          `${d} ${hook}`,
        );
      }
    }
    // A citation names a page (https://...) or a file in a repository (owner/repo path/to/file.ext).
    const citation = /https:\/\/[\w.-]+\/\S+|\b[\w-]+\/[\w.-]+ [\w./-]+\.(?:ts|rs|py|md|json)\b/;
    for (const f of FIXTURES) assert.match(f.source, citation, `${f.dialect} ${f.name}: cite the source`);
  });

  it('recognises each fixture as its own dialect, never another one', () => {
    for (const f of FIXTURES) assert.equal(recognizeDialect(f.input), f.dialect, `${f.dialect}: ${f.name}`);
  });

  it('reads each fixture as its agent means it', () => {
    for (const f of FIXTURES) {
      const what = `${f.dialect}: ${f.name}`;
      if (f.hook === 'stop') {
        const r = readStop(f.input, f.dialect);
        assert.ok(r.ok, what);
        const want: Record<string, unknown> = { event: f.reading.event, role: 'stop', sessionId: f.reading.session };
        if (f.reading.stopHookActive !== undefined) want.stopHookActive = f.reading.stopHookActive;
        if (f.reading.subagent !== undefined) want.subagent = f.reading.subagent;
        assert.deepEqual(r.value, want, what);
      } else {
        const r = readToolCall(f.input, f.dialect, f.hook === 'permission' ? 'pre' : f.hook);
        assert.ok(r.ok, what);
        const { event, session, tool, input, callId, outcome } = f.reading;
        assert.deepEqual(
          { event: r.value.event, role: r.value.role, session: r.value.session, tool: r.value.tool },
          { event, role: f.hook, session, tool },
          what,
        );
        if (input !== undefined) assert.deepEqual(r.value.input, input, what);
        assert.equal(r.value.callId, callId, what);
        assert.equal(r.value.outcome, outcome, what);
        if (f.reading.noResult) assert.equal(r.value.result, undefined, `${what}: no result to compare`);
        if (f.reading.result !== undefined) assert.deepEqual(r.value.result, { value: f.reading.result }, `${what}: the result compared`);
        if (f.reading.source !== undefined) assert.equal(r.value.source, f.reading.source, what);
      }
    }
  });

  it('never shares an event the breakers decide between dialects, outside the PascalCase family (told apart by fields)', () => {
    const owners = new Map<string, Dialect[]>();
    for (const d of DIALECTS) {
      for (const [e, role] of DIALECT_EVENTS[d]) if (role !== 'other') owners.set(e, [...(owners.get(e) ?? []), d]);
    }
    for (const [event, ds] of owners) {
      const family = ds.every((d) => ['claude', 'codex', 'qwen', 'copilot'].includes(d));
      assert.ok(ds.length === 1 || family, `${event} is shared by ${ds.join(', ')} outside the PascalCase family`);
    }
  });
});

describe('hook dialects: each answer in exactly its agent shape (CLI)', () => {
  for (const f of FIXTURES.filter((x) => x.hook === 'pre')) {
    it(`${f.dialect}: ${f.name}: the second identical call is denied`, async () => {
      for (const dialect of [[], ['--dialect', f.dialect]]) {
        const home = freshHome();
        // Each call its own tool-call id, where the agent sends one (the same id twice is one call reported twice).
        const first = await run(home, ['tool-loop', 'pre', '--threshold', '2', ...dialect], withCallId(f.input, 1));
        assert.deepEqual([first.code, first.stdout, first.stderr], [0, '', ''], 'the first call is allowed, silently');
        const second = await run(home, ['tool-loop', 'pre', '--threshold', '2', ...dialect], withCallId(f.input, 2));
        assertAnswer(second, f.answer.deny!(repeatReason(f.reading.tool!, 2)), `${f.dialect} deny ${dialect.join(' ')}`);
      }
    });
  }

  for (const f of FIXTURES.filter((x) => x.hook === 'post')) {
    it(`${f.dialect}: ${f.name}: answered when the tool keeps failing`, async () => {
      const home = freshHome();
      // Another call (its own id, when the dialect sends ids: a call counted once is never counted again).
      const another = f.reading.callId === undefined ? {} : { tool_use_id: `${f.reading.callId}-2` };
      const failing = f.reading.outcome === 'failure' ? f.input : { ...f.input, ...another, tool_response: { is_error: true } };
      if (f.reading.outcome !== 'failure') {
        const quiet = await run(home, ['tool-loop', 'post', '--failure-threshold', '1'], f.input);
        assert.deepEqual([quiet.code, quiet.stdout, quiet.stderr], [0, '', ''], 'not a failure: nothing to say');
      }
      // A breaker's failure rule reaches every dialect that can carry it; dialects that cannot stay quiet.
      const r = await run(home, ['tool-loop', 'post', '--failure-threshold', '1', '--dialect', f.dialect], failing);
      const canFail = f.reading.outcome === 'failure' || ['claude', 'codex', 'qwen', 'gemini'].includes(f.dialect);
      assertAnswer(r, canFail ? f.answer.failing!(failureReason(f.reading.tool!, 1)) : 'none', `${f.dialect} failing`);
    });
  }

  for (const f of FIXTURES.filter((x) => x.hook === 'stop')) {
    it(`${f.dialect}: ${f.name}: held while items remain, let go at the cap`, async () => {
      const home = freshHome();
      assert.equal((await run(home, ['stop-hook', 'arm', '--remaining', '3'])).code, 0);
      const held = await run(home, ['stop-hook', '--max-blocks', '1'], f.input);
      assertAnswer(held, f.answer.keepGoing!(blockReason(3)), `${f.dialect} keep going`);
      const released = await run(home, ['stop-hook', '--max-blocks', '1', '--dialect', f.dialect], followsBlock(f));
      const message = releaseMessage({ remaining: 3, heartbeat: 0, blocks: 1 }, 1);
      assertAnswer(released, f.answer.release!(message), `${f.dialect} release`);
    });
  }
});

describe('hook dialects: input no dialect explains, and each host cap', () => {
  it('fails open with one warning on an event no dialect uses, or one the given dialect does not', async () => {
    const home = freshHome();
    await run(home, ['stop-hook', 'arm', '--remaining', '3']);
    const cases: Array<[string[], unknown, RegExp]> = [
      [['stop-hook'], { hook_event_name: 'Banana', session_id: 's' }, /event "Banana" is not one any hook dialect uses .*; allowing the stop$/],
      [
        ['stop-hook', '--dialect', 'codex'],
        { hook_event_name: 'AfterAgent', session_id: 's' },
        /event "AfterAgent" is not a codex hook event \(check --dialect\); allowing the stop$/,
      ],
      [
        ['tool-loop', 'pre'],
        { hook_event_name: 'beforeTool', tool_name: 'Bash' },
        /event "beforeTool" is not one any hook dialect uses .*; the call is not counted$/,
      ],
      [
        ['tool-loop', 'post', '--dialect', 'hermes'],
        { hook_event_name: 'PostToolUse', tool_name: 'Bash' },
        /not a hermes hook event .*; the call is not counted$/,
      ],
    ];
    for (const [args, input, message] of cases) {
      const r = await run(home, args, input);
      assert.equal(r.code, 0, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
      const lines = r.stderr.split('\n').filter(Boolean);
      assert.equal(lines.length, 1, r.stderr);
      assert.match(lines[0]!, /^hermes-janitor: warning: (stop-hook|tool-loop (pre|post)): /);
      assert.match(lines[0]!, message);
    }
  });

  it("lets another dialect's other events through quietly (a known event this hook does not decide)", async () => {
    const home = freshHome();
    await run(home, ['stop-hook', 'arm', '--remaining', '3']);
    for (const [args, input] of [
      [['stop-hook'], { hook_event_name: 'SessionStart', session_id: 's', source: 'startup' }],
      [['stop-hook'], { hook_event_name: 'subagent_stop', session_id: 's', cwd: '/', extra: {} }],
      [['tool-loop', 'pre'], { hook_event_name: 'PostToolUse', session_id: 's', tool_name: 'Bash', tool_input: {} }],
      [['tool-loop', 'post'], { hook_event_name: 'BeforeTool', session_id: 's', tool_name: 'x', tool_input: {}, timestamp: 't' }],
    ] as Array<[string[], unknown]>) {
      const r = await run(home, args, input);
      assert.deepEqual([r.code, r.stdout, r.stderr], [0, '', ''], JSON.stringify(input));
    }
  });

  it('keeps the default cap below each host cap: 4 for Cursor (5 follow-ups), 2 for hermes (3 nudges), else 5', async () => {
    assert.deepEqual(
      DIALECTS.map((d) => [d, defaultMaxBlocks(d)]),
      [
        ['claude', 5],
        ['codex', 5],
        ['gemini', 5],
        ['qwen', 5],
        ['copilot', 5],
        ['cursor', 4],
        ['hermes', 2],
      ],
    );
    for (const f of [FIXTURES.find((x) => x.dialect === 'cursor' && x.hook === 'stop')!, FIXTURES.find((x) => x.dialect === 'hermes' && x.hook === 'stop')!]) {
      const home = freshHome();
      await run(home, ['stop-hook', 'arm', '--remaining', '3']);
      const answers: string[] = [];
      for (let i = 0; i < defaultMaxBlocks(f.dialect) + 1; i++) {
        const r = await run(home, ['stop-hook', '--json'], i === 0 ? f.input : followsBlock(f));
        const doc = JSON.parse(r.stdout) as { action: string; maxBlocks: number; dialect: string };
        assert.equal(doc.maxBlocks, defaultMaxBlocks(f.dialect));
        assert.equal(doc.dialect, f.dialect);
        answers.push(doc.action);
      }
      assert.deepEqual(answers, [...Array(defaultMaxBlocks(f.dialect)).fill('block'), 'release'], f.dialect);
    }
  });

  it("warns when a chosen cap is not below the host's own, and not when it is", async () => {
    const stop = FIXTURES.find((x) => x.dialect === 'cursor' && x.hook === 'stop')!;
    const home = freshHome();
    await run(home, ['stop-hook', 'arm', '--remaining', '3']);
    const over = await run(home, ['stop-hook', '--max-blocks', '5'], stop.input);
    assert.equal(over.stderr, "hermes-janitor: warning: stop-hook: max blocks 5 is not below cursor's own cap of 5; it may end the turn first\n");
    assert.equal(JSON.parse(over.stdout).followup_message, blockReason(3));
    const under = await run(home, ['stop-hook', '--max-blocks', '5'], FIXTURES.find((x) => x.dialect === 'codex' && x.hook === 'stop')!.input);
    assert.equal(under.stderr, '', 'Codex has no cap of its own');
  });

  it('fails open on an unknown --dialect, with one warning naming the choices (a hook never blocks on its own mistake)', async () => {
    const r = await run(freshHome(), ['tool-loop', 'pre', '--dialect', 'vim'], {});
    assert.equal(r.code, 0);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      new RegExp(
        /^hermes-janitor: warning: tool-loop pre: hook misconfigured: .*--dialect must be one of claude, codex, gemini, qwen, copilot, cursor, hermes/.source +
          /, got 'vim'[^\n]*; the call is allowed[^\n]*\n$/.source,
      ),
    );
  });
});

describe('hook dialects: the library forms (createToolLoop, createStopHook)', () => {
  const fixture = (dialect: Dialect, event: string) => FIXTURES.find((f) => f.dialect === dialect && f.reading.event === event)!;

  it('createToolLoop({ dialect }) reads every input in that dialect and answers in its shape', async () => {
    const loop = createToolLoop({ store: new MemoryToolLoopStore(), threshold: 2, failureThreshold: 1, dialect: 'gemini' });
    const before = fixture('gemini', 'BeforeTool');
    assert.equal((await loop.pre(before.input)).action, 'allow');
    const denied = await loop.pre(before.input);
    assert.deepEqual([denied.action, denied.dialect, denied.output], ['deny', 'gemini', { decision: 'deny', reason: repeatReason('run_shell_command', 2) }]);
    // A Claude Code input is not read as Gemini's: let through with one warning.
    const claude = await loop.pre(fixture('claude', 'PreToolUse').input);
    assert.equal(claude.action, 'allow');
    assert.equal(claude.output, undefined);
    assert.deepEqual(claude.warnings, ['the hook input\'s event "PreToolUse" is not a gemini hook event (check --dialect); the call is not counted']);
  });

  it('createToolLoop() without a dialect recognises each input, and gives exit 2 where that is the only answer', async () => {
    const loop = createToolLoop({ store: new MemoryToolLoopStore(), threshold: 2, failureThreshold: 1 });
    const pre = fixture('copilot', 'preToolUse');
    await loop.pre(pre.input);
    const denied = await loop.pre(pre.input);
    assert.deepEqual([denied.dialect, denied.output], ['copilot', { permissionDecision: 'deny', permissionDecisionReason: repeatReason('bash', 2) }]);
    const failed = await loop.post(fixture('copilot', 'postToolUseFailure').input);
    assert.deepEqual([failed.action, failed.output, failed.exit], ['block', undefined, { code: 2, stderr: failureReason('bash', 1) }]);
  });

  it('createStopHook({ dialect }) uses its cap and answers in its shape', async () => {
    const hook = createStopHook({ store: new MemoryStateStore(), dialect: 'cursor' });
    assert.equal(hook.maxBlocks, 4, "one below Cursor's 5 follow-ups");
    await hook.arm({ remaining: 2 });
    const held = await hook.decide(fixture('cursor', 'stop').input);
    assert.deepEqual([held.action, held.dialect, held.output], ['block', 'cursor', { followup_message: blockReason(2) }]);
    const other = await hook.decide(fixture('claude', 'Stop').input);
    assert.equal(other.action, 'allow');
    assert.deepEqual(other.warnings, ['the hook input\'s event "Stop" is not a cursor hook event (check --dialect); allowing the stop']);
  });

  it('rejects a dialect it does not know, as it rejects a bad threshold', () => {
    assert.throws(() => createToolLoop({ store: new MemoryToolLoopStore(), dialect: 'vim' as Dialect }), {
      name: 'RangeError',
      message: "dialect must be one of claude, codex, gemini, qwen, copilot, cursor, hermes, got 'vim'",
    });
    assert.throws(() => createStopHook({ store: new MemoryStateStore(), dialect: 'vim' as Dialect }), RangeError);
  });
});
