/**
 * The tool-loop breaker tells progress from a loop (issue #46): results decide, a warning comes before a stop, a
 * person's prompt starts the turn afresh, and each dialect is read as its agent sends it today. Through the CLI in
 * process, as a harness runs it, with the fixtures of test/fixtures/hook-dialects (each citing its agent's source).
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { main } from '../../src/cli/main.js';
import type { Context } from '../../src/context.js';
import type { Dialect } from '../../src/core/hook-dialects.js';
import { parseToolLoopState, sessionFileName } from '../../src/core/tool-loop.js';
import { EMPTY_RESULT, maskArguments, maskResult, resultDigest, resultIsEmpty } from '../../src/core/volatile.js';
import { FIXTURES, type HookFixture } from '../fixtures/hook-dialects/index.js';
import { tempDir } from '../helpers/cli.js';

const tmp = tempDir('hj-outcomes-');
after(tmp.cleanup);
let n = 0;
const freshHome = () => path.join(tmp.dir, `home-${n++}`);
const T0 = Date.parse('2026-11-22T10:00:00Z');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
  json: Record<string, unknown> | undefined;
}

/** Runs the CLI in process with `input` on stdin, at `at` (epoch ms), with `env` added. */
async function run(home: string, args: string[], input: unknown = '', at = T0, env: Record<string, string> = {}): Promise<Ran> {
  let stdout = '';
  let stderr = '';
  const ctx: Context = {
    argv: args,
    env: { HERMES_HOME: home, ...env },
    stdout: { write: (s: string) => ((stdout += s), true) },
    stderr: { write: (s: string) => ((stderr += s), true) },
    stdin: Readable.from([Buffer.from(typeof input === 'string' ? input : JSON.stringify(input))]),
    cwd: home,
    homedir: home,
    now: () => new Date(at),
  };
  const code = await main(args, ctx);
  let json: Record<string, unknown> | undefined;
  try {
    json = stdout.trim() === '' ? undefined : (JSON.parse(stdout) as Record<string, unknown>);
  } catch {
    json = undefined; // text output (status)
  }
  return { code, stdout, stderr, json };
}

const fixture = (dialect: Dialect, event: string) => {
  const f = FIXTURES.find((x) => x.dialect === dialect && x.reading.event === event);
  assert.ok(f, `${dialect} ${event} fixture`);
  return f;
};

/** A Claude Code session (the hooks reference's example fields) calling `command` with Bash. */
function claudeCall(session: string, command: string, id: string) {
  return { session_id: session, cwd: '/w', hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command }, tool_use_id: id };
}
function claudeResult(session: string, command: string, id: string, stdout: string) {
  return { ...claudeCall(session, command, id), hook_event_name: 'PostToolUse', tool_response: { stdout, stderr: '', interrupted: false, isImage: false } };
}

/** The fixture's own end-the-turn answer (from its agent's docs or source) for the reason given in `r`. */
function endTurnOf(f: HookFixture, reason: unknown): unknown {
  const want = f.answer.endTurn?.(String(reason));
  assert.ok(want && want !== 'none' && 'stdout' in want, `${f.dialect} ${f.name}: an end-the-turn answer`);
  return want.stdout;
}

const denied = (r: Ran) => (r.json?.hookSpecificOutput as { permissionDecision?: string } | undefined)?.permissionDecision === 'deny';

describe('tool-loop: results decide (Claude Code)', () => {
  it('a poller whose result changes runs 30 calls with no deny; the 31st is the loop', async () => {
    const home = freshHome();
    const poll = 'curl -s localhost:8080/job/42/status';
    for (let i = 1; i <= 30; i++) {
      const pre = await run(home, ['tool-loop', 'pre'], claudeCall('poller', poll, `t${i}`), T0 + i * 10_000);
      assert.deepEqual([pre.code, pre.stdout, pre.stderr], [0, '', ''], `call ${i} allowed`);
      await run(home, ['tool-loop', 'post'], claudeResult('poller', poll, `t${i}`, `{"state":"running","progress":"${i * 3}%"}`), T0 + i * 10_000 + 500);
    }
    const last = await run(home, ['tool-loop', 'pre'], claudeCall('poller', poll, 't31'), T0 + 320_000);
    assert.ok(denied(last), last.stdout);
    assert.match(String(last.stdout), /Bash called 31 times in a row with identical arguments: its result changed, but 30 polls in a row is the limit/);
  });

  it('the same call with the same result is denied at the 4th; a timestamp or duration in the result changes nothing', async () => {
    const home = freshHome();
    for (let i = 1; i <= 3; i++) {
      assert.equal((await run(home, ['tool-loop', 'pre'], claudeCall('s', 'make', `t${i}`))).stdout, '');
      const out = `2026-11-22T10:0${i}:00Z build failed after ${i * 1.5}s (pid ${4000 + i}) see /tmp/build-${i}a9f/log`;
      await run(home, ['tool-loop', 'post'], claudeResult('s', 'make', `t${i}`, out));
    }
    const fourth = await run(home, ['tool-loop', 'pre'], claudeCall('s', 'make', 't4'));
    assert.equal(
      (fourth.json?.hookSpecificOutput as { permissionDecisionReason: string }).permissionDecisionReason,
      'Bash called 4 times in a row with identical arguments, and each of the last 3 gave the same result; try a different approach',
    );
  });

  it('an identical failing call is denied after 3 failures; a flaky call that succeeds on the 3rd try never is', async () => {
    const home = freshHome();
    const fail = (id: string) => ({
      ...claudeCall('f', 'npm ci', id),
      hook_event_name: 'PostToolUseFailure',
      error: `network timeout ${id}`,
      is_interrupt: false,
    });
    for (const id of ['a', 'b', 'c']) {
      assert.equal((await run(home, ['tool-loop', 'pre'], claudeCall('f', 'npm ci', id))).stdout, '');
      await run(home, ['tool-loop', 'post'], fail(id));
    }
    const fourth = await run(home, ['tool-loop', 'pre'], claudeCall('f', 'npm ci', 'd'));
    assert.match(fourth.stdout, /Bash failed 3 times in a row with identical arguments; change strategy instead of retrying it/);
    const flaky = freshHome();
    for (const [id, ok] of [
      ['a', false],
      ['b', false],
      ['c', true],
      ['d', true],
    ] as const) {
      assert.equal((await run(flaky, ['tool-loop', 'pre'], claudeCall('f', 'npm ci', id))).stdout, '', `flaky ${id}`);
      await run(flaky, ['tool-loop', 'post'], ok ? claudeResult('f', 'npm ci', id, `added ${id}`) : fail(id));
    }
  });

  it('a changing timestamp argument is the same call (the hermes #60084 shape), and changing arguments with one result are no progress', async () => {
    const home = freshHome();
    for (let i = 1; i <= 3; i++) {
      const cmd = `curl -s 'localhost:8080/queue?since=${1767225600 + i * 60}'`;
      assert.equal((await run(home, ['tool-loop', 'pre'], claudeCall('ts', cmd, `t${i}`))).stdout, '');
      await run(home, ['tool-loop', 'post'], claudeResult('ts', cmd, `t${i}`, '{"items":[]}'));
    }
    assert.ok(denied(await run(home, ['tool-loop', 'pre'], claudeCall('ts', `curl -s 'localhost:8080/queue?since=1767225900'`, 't4'))));
    const grep = freshHome();
    for (let i = 1; i <= 4; i++) {
      const cmd = `grep -rn handler${i} src/`;
      assert.equal((await run(grep, ['tool-loop', 'pre'], claudeCall('g', cmd, `t${i}`))).stdout, '', `grep ${i}`);
      await run(grep, ['tool-loop', 'post'], {
        ...claudeResult('g', cmd, `t${i}`, ''),
        tool_response: { stdout: '', stderr: 'grep: src/: Permission denied' },
      });
    }
    const fifth = await run(grep, ['tool-loop', 'pre'], claudeCall('g', 'grep -rn handler5 src/', 't5'));
    assert.match(fifth.stdout, /Bash gave the same result 4 times in a row although its arguments changed/);
  });

  it('calls whose results say nothing (git add a, b, c, ...) are never no progress', async () => {
    const home = freshHome();
    for (let i = 1; i <= 10; i++) {
      const cmd = `git add file${i}.ts`;
      assert.equal((await run(home, ['tool-loop', 'pre'], claudeCall('q', cmd, `t${i}`))).stdout, '', `git add ${i}`);
      await run(home, ['tool-loop', 'post'], claudeResult('q', cmd, `t${i}`, ''));
    }
  });

  it('a cycle whose results change is progress; with the same results it is denied at its 3rd round', async () => {
    const home = freshHome();
    const edit = (from: string, to: string, id: string) => ({
      session_id: 'c',
      hook_event_name: 'PreToolUse',
      tool_name: 'Edit',
      tool_input: { file_path: '/w/a.ts', old_string: from, new_string: to },
      tool_use_id: id,
    });
    // Claude Code's Edit result names the file and the strings it swapped (the hooks reference's PostToolUse example).
    const edited = (from: string, to: string, id: string) => ({
      ...edit(from, to, id),
      hook_event_name: 'PostToolUse',
      tool_response: { filePath: '/w/a.ts', oldString: from, newString: to },
    });
    const steps: Array<[string, string]> = [
      ['x', 'y'],
      ['y', 'x'],
      ['x', 'y'],
      ['y', 'x'],
      ['x', 'y'],
    ];
    for (const [i, [a, b]] of steps.entries()) {
      assert.equal((await run(home, ['tool-loop', 'pre'], edit(a, b, `e${i}`))).stdout, '', `edit ${i}`);
      await run(home, ['tool-loop', 'post'], edited(a, b, `e${i}`));
    }
    const sixth = await run(home, ['tool-loop', 'pre'], edit('y', 'x', 'e5'));
    assert.match(sixth.stdout, /the same 2 calls \(Edit, Edit\) repeated 3 times in a row with the same results/);
  });
});

describe('tool-loop: a warning, then a stop', () => {
  /** Runs `rounds` loops of 4 identical calls with the same result in `dialect`'s own shapes; returns the answers. */
  async function loops(home: string, pre: HookFixture, post: HookFixture, rounds: number, at = T0) {
    const answers: Ran[] = [];
    let id = 0;
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < 4; i++) {
        const k = ++id;
        const call = withId(pre.input, k);
        const a = await run(home, ['tool-loop', 'pre'], call, at + k * 1000);
        if (a.stdout !== '') {
          answers.push(a);
          break;
        }
        const done: Record<string, unknown> = { ...withId(post.input, k), tool_name: pre.input.tool_name, tool_input: pre.input.tool_input };
        if (typeof call.tool_use_id === 'string') done.tool_use_id = call.tool_use_id;
        await run(home, ['tool-loop', 'post'], done, at + k * 1000 + 100);
      }
    }
    return answers;
  }
  let ids = 0;
  /** The input with a call id of its own (each call its own, across rounds), where the agent sends one. */
  function withId(input: Record<string, unknown>, k: number): Record<string, unknown> {
    const out = { ...input };
    if (typeof out.tool_use_id === 'string') out.tool_use_id = `id-${k}-${++ids}`;
    return out;
  }

  it('Claude Code: the first loop is denied, the second in the turn ends it (continue: false, stopReason); status counts both', async () => {
    const home = freshHome();
    const [warn, stop] = await loops(home, fixture('claude', 'PreToolUse'), fixture('claude', 'PostToolUseFailure'), 2);
    assert.ok(denied(warn!) && warn!.json?.continue === undefined, warn!.stdout);
    assert.equal(stop!.json?.continue, false, stop!.stdout);
    assert.deepEqual(stop!.json, endTurnOf(fixture('claude', 'PreToolUse'), stop!.json?.stopReason));
    assert.match(
      String(stop!.json?.stopReason),
      /^hermes-janitor tool-loop: a loop again after a warning in this turn \(Bash failed 3 times .*disarm --session abc123/,
    );
    const status = await run(home, ['tool-loop', 'status', '--json']);
    const s = (status.json?.sessions as Array<Record<string, unknown>>)[0]!;
    assert.deepEqual([s.warnings, s.stops], [1, 1]);
    assert.match((await run(home, ['tool-loop', 'status'])).stdout, /loops: 1 warned, 1 stopped/);
  });

  it("a second loop after the window, or after a person's prompt, is a warning again", async () => {
    const home = freshHome();
    const pre = fixture('claude', 'PreToolUse');
    const post = fixture('claude', 'PostToolUseFailure');
    const [first] = await loops(home, pre, post, 1);
    const [late] = await loops(home, pre, post, 1, T0 + 31 * 60_000);
    assert.ok(denied(first!) && denied(late!) && late!.json?.continue === undefined, late!.stdout);
    await loops(home, pre, post, 1, T0 + 32 * 60_000);
    await run(home, ['tool-loop', 'prompt'], fixture('claude', 'UserPromptSubmit').input, T0 + 33 * 60_000);
    const [afterPrompt] = await loops(home, pre, post, 1, T0 + 34 * 60_000);
    assert.equal(afterPrompt!.json?.continue, undefined, 'a new turn starts with a warning');
  });

  it('Gemini CLI: continue: false on BeforeTool', async () => {
    const home = freshHome();
    const [, stop] = await loops(home, fixture('gemini', 'BeforeTool'), FIXTURES.find((f) => f.name.startsWith('AfterTool after a failed npm test'))!, 2);
    assert.deepEqual(stop!.json, endTurnOf(fixture('gemini', 'BeforeTool'), stop!.json?.stopReason));
    assert.equal(stop!.json?.continue, false);
  });

  it('Codex: denied again before the call (PreToolUse takes no continue: false), the turn ended at the next PostToolUse', async () => {
    const home = freshHome();
    const pre = fixture('codex', 'PreToolUse');
    const post = { ...fixture('codex', 'PostToolUse'), input: { ...fixture('codex', 'PostToolUse').input, tool_response: { error: 'exit 1' } } };
    const [warn, again] = await loops(home, pre, post, 2);
    assert.ok(denied(warn!) && denied(again!));
    assert.match(String((again!.json?.hookSpecificOutput as Record<string, unknown>).permissionDecisionReason), /the turn is ended/);
    const next = await run(home, ['tool-loop', 'post'], { ...post.input, tool_use_id: 'other', tool_name: 'Read' });
    const reason = (again!.json?.hookSpecificOutput as Record<string, unknown>).permissionDecisionReason;
    assert.deepEqual(next.json, endTurnOf(fixture('codex', 'PostToolUse'), reason));
  });

  it('Copilot CLI: denied again at preToolUse, the turn ended at the next PermissionRequest (interrupt)', async () => {
    const home = freshHome();
    const pre = fixture('copilot', 'preToolUse');
    const post = fixture('copilot', 'postToolUseFailure');
    const [, again] = await loops(home, pre, post, 2);
    assert.equal(again!.json?.permissionDecision, 'deny');
    const ask = await run(home, ['tool-loop', 'pre'], fixture('copilot', 'PermissionRequest').input);
    assert.deepEqual(ask.json, endTurnOf(fixture('copilot', 'PermissionRequest'), ask.json?.message));
    assert.deepEqual([ask.json?.behavior, ask.json?.interrupt], ['deny', true]);
    assert.equal((await run(home, ['tool-loop', 'pre'], fixture('copilot', 'PermissionRequest').input)).stdout, '', 'once');
  });

  it('warn only (HERMES_JANITOR_TOOL_LOOP_WARN_ONLY=1): never denies; the loop is told after the call and counted', async () => {
    const home = freshHome();
    const env = { HERMES_JANITOR_TOOL_LOOP_WARN_ONLY: '1' };
    for (let i = 1; i <= 8; i++) {
      const pre = await run(home, ['tool-loop', 'pre'], claudeCall('w', 'make', `t${i}`), T0, env);
      assert.equal(pre.stdout, '', `call ${i}`);
      const post = await run(home, ['tool-loop', 'post'], claudeResult('w', 'make', `t${i}`, 'same'), T0, env);
      if (i === 4) assert.match(String((post.json?.hookSpecificOutput as Record<string, unknown>).additionalContext), /Bash called 4 times/);
    }
    const status = await run(home, ['tool-loop', 'status', '--json', '--session', 'w']);
    assert.equal((status.json?.sessions as Array<Record<string, unknown>>)[0]!.stops, 0);
  });

  it('disarm --session lets that session through until arm; disarm without a session, every session of the home', async () => {
    const home = freshHome();
    assert.equal((await run(home, ['tool-loop', 'disarm', '--session', 'd'])).code, 0);
    for (let i = 1; i <= 6; i++) assert.equal((await run(home, ['tool-loop', 'pre'], claudeCall('d', 'make', `t${i}`))).stdout, '');
    assert.match((await run(home, ['tool-loop', 'status', '--session', 'd'])).stdout, /DISARMED since/);
    assert.equal((await run(home, ['tool-loop', 'arm', '--session', 'd'])).code, 0);
    await run(home, ['tool-loop', 'disarm']);
    for (let i = 1; i <= 6; i++) assert.equal((await run(home, ['tool-loop', 'pre'], claudeCall('e', 'make', `u${i}`))).stdout, '');
    assert.match((await run(home, ['tool-loop', 'status'])).stdout, /DISARMED for every session/);
    await run(home, ['tool-loop', 'arm']);
    const answers = [];
    for (let i = 1; i <= 5; i++) answers.push((await run(home, ['tool-loop', 'pre'], claudeCall('e', 'make', `v${i}`))).stdout !== '');
    assert.deepEqual(answers, [false, false, false, false, true], 'armed again: the call-only rule (no post) denies the 5th');
  });
});

describe('tool-loop: each dialect read as its agent sends it today', () => {
  it('six failing Gemini CLI shell runs (no error: the shapes of its own shell.ts) count as failures; a cancel is neutral', async () => {
    const home = freshHome();
    const runs = FIXTURES.filter((f) => f.dialect === 'gemini' && f.hook === 'post' && f.reading.outcome === 'failure');
    const failed = runs.filter((f) => (f.input.tool_response as Record<string, unknown>).error === undefined);
    assert.equal(failed.length, 6, failed.map((f) => f.name).join('; '));
    const answers = [];
    for (const f of failed.slice(0, 4)) answers.push(await run(home, ['tool-loop', 'post'], f.input));
    assert.match((await run(home, ['tool-loop', 'status'])).stdout, /failing: run_shell_command x4/);
    // A person's cancel neither counts nor clears the count.
    const cancelled = FIXTURES.find((f) => f.dialect === 'gemini' && f.reading.outcome === 'neutral')!;
    assert.equal((await run(home, ['tool-loop', 'post'], cancelled.input)).stdout, '');
    for (const f of failed.slice(4)) answers.push(await run(home, ['tool-loop', 'post'], f.input));
    assert.deepEqual(
      answers.map((a) => (a.json?.hookSpecificOutput as Record<string, unknown> | undefined)?.additionalContext ?? ''),
      ['', '', '', '', 'run_shell_command failed 5 times in a row; change strategy', ''],
    );
    assert.match((await run(home, ['tool-loop', 'status'])).stdout, /failing: run_shell_command x1/);
    assert.equal(fixture('gemini', 'AfterTool').reading.outcome, 'failure', 'the first AfterTool fixture is the failed run');
  });

  it('a Gemini CLI result of another tool is not judged by an Exit Code line in its content (a log file read)', async () => {
    const home = freshHome();
    const read = {
      ...fixture('gemini', 'AfterTool').input,
      tool_name: 'read_file',
      tool_input: { absolute_path: '/w/build.log' },
      tool_response: { llmContent: 'Output: 1 failing\nExit Code: 1', returnDisplay: '' },
    };
    for (let i = 0; i < 6; i++) assert.equal((await run(home, ['tool-loop', 'post', '--failure-threshold', '1'], read)).stdout, '');
  });

  it("Cursor: one call reported by its own hooks and by .claude/settings.json's (same generation, or same tool_use_id) is counted once", async () => {
    const home = freshHome();
    const shell = fixture('cursor', 'beforeShellExecution');
    const generic = fixture('cursor', 'preToolUse');
    for (let i = 0; i < 3; i++) {
      const a = await run(home, ['tool-loop', 'pre'], shell.input);
      const b = await run(home, ['tool-loop', 'pre'], { ...generic.input, tool_use_id: `toolu_${i}` });
      const c = await run(home, ['tool-loop', 'pre'], { ...generic.input, tool_use_id: `toolu_${i}` });
      assert.deepEqual([a.stdout, b.stdout, c.stdout], ['', '', ''], `call ${i + 1} (three reports of one call)`);
    }
    const status = await run(home, ['tool-loop', 'status', '--json']);
    const state = (status.json?.sessions as Array<{ state: { streak: { count: number } } }>)[0]!.state;
    assert.equal(state.streak.count, 3, 'three calls, not nine');
  });

  it("Cursor: after a call, its own afterShellExecution and both hook sets' postToolUseFailure count its failure once, in either order", async () => {
    for (const shellFirst of [true, false]) {
      const home = freshHome();
      const shell = fixture('cursor', 'afterShellExecution');
      const failed = fixture('cursor', 'postToolUseFailure');
      for (let i = 0; i < 3; i++) {
        const generic = { ...failed.input, tool_use_id: `toolu_f${i}` };
        const order = shellFirst ? [shell.input, generic, generic] : [generic, shell.input, generic];
        for (const input of order) assert.equal((await run(home, ['tool-loop', 'post'], input)).stdout, '');
      }
      const status = await run(home, ['tool-loop', 'status', '--json']);
      const state = (status.json?.sessions as Array<{ state: { failures: Array<{ tool: string; count: number }> } }>)[0]!.state;
      assert.deepEqual(state.failures, [{ tool: 'Shell', count: 3 }], `three failures, not six (${shellFirst ? 'shell first' : 'generic first'})`);
    }
  });

  it('Cursor: the same result of changing calls, reported by both hook sets, is counted once per call (no progress still seen)', async () => {
    const home = freshHome();
    const shell = fixture('cursor', 'afterShellExecution');
    const ok = fixture('cursor', 'postToolUse');
    for (let i = 0; i < 4; i++) {
      const command = `grep -rn TODO src/module-${i}`;
      await run(home, ['tool-loop', 'post'], { ...shell.input, command, output: 'no matches' });
      const generic = { ...ok.input, tool_input: { command }, tool_use_id: `toolu_g${i}`, tool_output: '{"exitCode":1,"stdout":"no matches"}' };
      await run(home, ['tool-loop', 'post'], generic);
      await run(home, ['tool-loop', 'post'], generic);
    }
    const status = await run(home, ['tool-loop', 'status', '--json']);
    const state = (status.json?.sessions as Array<{ state: { echo?: { count: number } } }>)[0]!.state;
    assert.equal(state.echo?.count, 4, 'four calls with one result, each reported three times');
  });

  it("a subagent's stop neither resets nor spends the main session's blocks, and gets no orchestrator text", async () => {
    const home = freshHome();
    await run(home, ['stop-hook', 'arm', '--remaining', '4']);
    const main_ = fixture('claude', 'Stop').input;
    const sub = fixture('claude', 'SubagentStop').input;
    const answers: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await run(home, ['stop-hook', '--max-blocks', '5'], i % 2 === 0 ? main_ : sub);
      answers.push(r.json ? (r.json.decision === 'block' ? 'block' : 'release') : '-');
    }
    assert.deepEqual(answers, ['block', '-', 'block', '-', 'block', '-', 'block', '-', 'block', '-', 'release', '-']);
    assert.match((await run(home, ['stop-hook', 'status'])).stdout, /blocks: {5}0 of 5/);
  });

  it('a history an earlier version wrote still reads (its streak and failures kept), and is written back extended', async () => {
    const home = freshHome();
    const dir = path.join(home, 'tool-loop');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const old = {
      session: 'old',
      updatedAt: new Date(T0 - 60_000).toISOString(),
      streak: { tool: 'Bash', signature: 'Bash:aaaa', count: 2 },
      failures: [{ tool: 'Bash', count: 2 }],
      recent: ['Bash:aaaa', 'Bash:aaaa'],
      counted: ['x'],
    };
    writeFileSync(path.join(dir, sessionFileName('old')), JSON.stringify(old), { mode: 0o600 });
    const parsed = parseToolLoopState(old, 'old', T0);
    assert.equal(parsed.problem, undefined);
    assert.deepEqual(parsed.state.streak, old.streak);
    await run(home, ['tool-loop', 'post'], { ...claudeCall('old', 'x', 'y'), hook_event_name: 'PostToolUseFailure', error: 'e' });
    const file = readdirSync(dir).find((f) => f.startsWith('old-'))!;
    const written = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(written.failures, [{ tool: 'Bash', count: 3 }]);
  });
});

describe('volatile parts and results', () => {
  it('masks timestamps, clock times, durations, ids, pids and temp paths in results; numbers stay', () => {
    assert.equal(maskResult('done at 2026-11-22T10:01:02.123Z in 1.52s (pid 4711)'), 'done at <time> in <duration> (<pid>)');
    assert.equal(maskResult('req 3f2a9c1e-1b2d-4c3e-8f9a-0b1c2d3e4f5a at 12:01:02 wrote /tmp/x.1234/out'), 'req <id> at <time> wrote <tmp>');
    assert.equal(maskResult('progress 10%'), 'progress 10%');
    assert.notEqual(resultDigest('progress 10%'), resultDigest('progress 20%'));
    assert.equal(resultDigest('ok in 1s'), resultDigest('ok in 2s'));
    assert.equal(maskArguments('sleep 30 && curl ?t=1767225600'), 'sleep 30 && curl ?t=<time>');
  });

  it('a result that says nothing is empty: never evidence that nothing progresses', () => {
    assert.equal(resultIsEmpty({ stdout: '', stderr: '', interrupted: false, isImage: false }), true);
    assert.equal(resultIsEmpty('Output: (empty)\nProcess Group PGID: 4500'), true);
    assert.equal(resultIsEmpty('Output: (empty)\nExit Code: 1\nProcess Group PGID: 4500'), false);
    assert.equal(resultDigest(''), EMPTY_RESULT);
    assert.equal(resultIsEmpty({ stdout: 'x' }), false);
  });
});
