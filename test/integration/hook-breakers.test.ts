/**
 * The hook breakers as Claude Code runs them: real hook payloads piped into the built CLI
 * (`node bin/hermes-janitor.js`, built by `npm run build`) in a temporary HERMES_HOME.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FIXTURES, type HookFixture } from '../fixtures/hook-dialects/index.js';
import { BIN, REPO, assertFailsOpen, assertUsageError, runCli, tempDir } from '../helpers/cli.js';

const tmp = tempDir('hj-hooks-');
let n = 0;
/** A fresh hermes home (not created) and the environment that selects it. */
function freshHome(): { home: string; env: Record<string, string> } {
  const home = path.join(tmp.dir, `home-${n++}`);
  return { home, env: { HERMES_HOME: home, HOME: tmp.dir } };
}
const markerFile = (home: string) => path.join(home, 'stop-hook', 'marker.json');
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;

const SESSION = '9b2f6c1e-4d1a-4b8e-a7a2-3f7d2c1b0e55';
const stopPayload = (over: Record<string, unknown> = {}) =>
  JSON.stringify({ session_id: SESSION, transcript_path: '/tmp/t.jsonl', cwd: '/work', hook_event_name: 'Stop', stop_hook_active: true, ...over });
let calls = 0;
/** A PreToolUse call: each its own tool_use_id, as Claude Code sends them (the same id twice is one call reported twice). */
const prePayload = (input: unknown = { command: 'npm test' }, over: Record<string, unknown> = {}) =>
  JSON.stringify({
    session_id: SESSION,
    transcript_path: '/tmp/t.jsonl',
    cwd: '/work',
    hook_event_name: 'PreToolUse',
    tool_name: 'Bash',
    tool_input: input,
    tool_use_id: `toolu_${String(++calls).padStart(2, '0')}`,
    ...over,
  });
const postPayload = (response: unknown, over: Record<string, unknown> = {}) =>
  JSON.stringify({
    session_id: SESSION,
    hook_event_name: 'PostToolUse',
    tool_name: 'Bash',
    tool_input: { command: 'npm test' },
    tool_response: response,
    ...over,
  });

const BLOCK = (items: number) => `{"decision":"block","reason":"${items} items remain: continue with the next one"}\n`;
const DENY_REASON = (tool: string, times: number) => `${tool} called ${times} times in a row with identical arguments; try a different approach`;
const DENY = (tool: string, times: number) => {
  const reason = DENY_REASON(tool, times);
  return `${JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason } })}\n`;
};
/** Claude Code's end of the turn, for a second loop in the turn: the documented text of the reason. */
const STOP = (loop: string) => {
  const reason =
    `hermes-janitor tool-loop: a loop again after a warning in this turn (${loop}); the turn is ended. ` +
    `Run 'hermes-janitor tool-loop disarm --session ${SESSION}' to let it run.`;
  const deny = { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason };
  return `${JSON.stringify({ continue: false, stopReason: reason, hookSpecificOutput: deny })}\n`;
};

before(() => {
  assert.ok(existsSync(path.join(REPO, 'dist', 'fast-path.cjs')), "the CLI is not built: run 'npm run build' (or 'npx tsc -p tsconfig.json') first");
});
after(tmp.cleanup);

describe('stop-hook (built CLI)', () => {
  it('holds an armed run with the exact answer, releases at the cap, and keeps the marker 0600', async () => {
    const { home, env } = freshHome();
    const arm = await runCli(['stop-hook', 'arm', '--remaining', '2', '--owner', SESSION], { env });
    assert.equal(arm.code, 0, arm.stderr);
    assert.equal(arm.stdout, '');
    assert.deepEqual(readJson(markerFile(home)), { remaining: 2, heartbeat: 0, blocks: 0, seenHeartbeat: 0, seenRemaining: 2, ownerSession: SESSION });
    assert.equal(statSync(markerFile(home)).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(markerFile(home))).mode & 0o777, 0o700);

    for (let i = 1; i <= 3; i++) {
      const r = await runCli(['stop-hook', '--max-blocks', '3'], { env, input: stopPayload() });
      assert.equal(r.code, 0);
      assert.equal(r.stdout, BLOCK(2));
      assert.equal(r.stderr, '');
      assert.equal(readJson(markerFile(home)).blocks, i);
    }
    const released = await runCli(['stop-hook', '--max-blocks', '3'], { env, input: stopPayload() });
    assert.equal(released.code, 0);
    const answer = JSON.parse(released.stdout) as { systemMessage: string };
    assert.deepEqual(Object.keys(answer), ['systemMessage']);
    assert.match(answer.systemMessage, /paused the run after 3 consecutive stops with no progress/);
    assert.match(answer.systemMessage, /stop-hook heartbeat/);
    assert.equal(readJson(markerFile(home)).blocks, 0);

    // Progress resets the count: a heartbeat with fewer items remaining.
    assert.equal((await runCli(['stop-hook', 'heartbeat', '--remaining', '1'], { env })).code, 0);
    const marker = readJson(markerFile(home));
    assert.equal(marker.heartbeat, 1);
    assert.equal(marker.remaining, 1);
    const afterBeat = await runCli(['stop-hook'], { env, input: stopPayload() });
    assert.equal(afterBeat.stdout, BLOCK(1));
    assert.equal(readJson(markerFile(home)).seenHeartbeat, 1);

    // Finished: remaining 0 lets the session stop.
    await runCli(['stop-hook', 'heartbeat', '--remaining', '0'], { env });
    const done = await runCli(['stop-hook'], { env, input: stopPayload() });
    assert.equal(done.code, 0);
    assert.equal(done.stdout, '');
  });

  it('never holds a bystander session, and allows with no marker (touching nothing)', async () => {
    const { home, env } = freshHome();
    const none = await runCli(['stop-hook'], { env, input: stopPayload() });
    assert.deepEqual([none.code, none.stdout, none.stderr], [0, '', '']);
    assert.equal(existsSync(home), false, 'no directory is created for a stop with no run');
    await runCli(['stop-hook', 'arm', '--remaining', '5', '--owner', 'the-owner'], { env });
    const bystander = await runCli(['stop-hook'], { env, input: stopPayload() });
    assert.deepEqual([bystander.code, bystander.stdout], [0, '']);
    assert.equal(readJson(markerFile(home)).blocks, 0);
  });

  it('treats stop_hook_active false as a fresh stop, and a missing one as true', async () => {
    const { home, env } = freshHome();
    await runCli(['stop-hook', 'arm', '--remaining', '4'], { env });
    await runCli(['stop-hook', '--max-blocks', '1'], { env, input: stopPayload() });
    const missing = JSON.stringify({ session_id: SESSION, hook_event_name: 'Stop' });
    const capped = await runCli(['stop-hook', '--max-blocks', '1'], { env, input: missing });
    assert.ok('systemMessage' in JSON.parse(capped.stdout));
    await runCli(['stop-hook', '--max-blocks', '1'], { env, input: stopPayload() }); // blocks (1 of 1)
    const fresh = await runCli(['stop-hook', '--max-blocks', '1'], { env, input: stopPayload({ stop_hook_active: false }) });
    assert.equal(fresh.stdout, BLOCK(4));
    assert.equal(readJson(markerFile(home)).blocks, 1);
  });

  it('keeps unknown marker fields and honours --marker', async () => {
    const { env } = freshHome();
    const custom = path.join(tmp.dir, 'custom-marker', 'run.json');
    mkdirSync(path.dirname(custom), { recursive: true });
    writeFileSync(custom, JSON.stringify({ remaining: 3, heartbeat: 7, blocks: 0, seenHeartbeat: 7, seenRemaining: 3, plan: 'docs/plan.md' }));
    const r = await runCli(['stop-hook', '--marker', custom], { env, input: stopPayload() });
    assert.equal(r.stdout, BLOCK(3));
    assert.deepEqual(readJson(custom), { remaining: 3, heartbeat: 7, blocks: 1, seenHeartbeat: 7, seenRemaining: 3, plan: 'docs/plan.md' });
    const status = await runCli(['stop-hook', 'status', '--json', '--marker', custom], { env });
    assert.equal(status.code, 0);
    assert.deepEqual(JSON.parse(status.stdout), { schemaVersion: 1, marker: custom, armed: true, state: readJson(custom), problem: null, maxBlocks: 5 });
  });

  it('allows the stop and warns on garbage, empty or wrongly typed stdin', async () => {
    const { env } = freshHome();
    await runCli(['stop-hook', 'arm', '--remaining', '3'], { env });
    for (const input of [
      '',
      'not json',
      '{"session_id":',
      '[1,2]',
      '"Stop"',
      '{"stop_hook_active":"yes"}',
      '{"session_id":42}',
      Buffer.from([0xff, 0xfe, 0x00]),
    ]) {
      const r = await runCli(['stop-hook'], { env, input });
      assert.equal(r.code, 0, String(input));
      assert.equal(r.stdout, '', String(input));
      assert.equal(r.stderr.split('\n').filter(Boolean).length, 1, r.stderr);
      assert.match(r.stderr, /^hermes-janitor: warning: stop-hook: .*allowing the stop\n$/);
    }
  });

  it('allows the stop with a systemMessage when the marker cannot be saved (never blocks without counting)', async () => {
    const { home, env } = freshHome();
    await runCli(['stop-hook', 'arm', '--remaining', '3'], { env });
    // Root ignores file modes, so make the update impossible another way: its lock path is a directory.
    mkdirSync(`${markerFile(home)}.lock`);
    const r = await runCli(['stop-hook'], { env, input: stopPayload() });
    assert.equal(r.code, 0);
    const answer = JSON.parse(r.stdout) as { systemMessage?: string; decision?: string };
    assert.equal(answer.decision, undefined);
    assert.match(answer.systemMessage ?? '', /could not save the run marker/);
    assert.match(r.stderr, /^hermes-janitor: warning: stop-hook: cannot save the run marker/);
    assert.equal(readJson(markerFile(home)).blocks, 0);
  });

  it('fails open when the marker directory is a regular file: arm warns and exits 0, the hook allows', async () => {
    const { home, env } = freshHome();
    mkdirSync(home, { recursive: true });
    writeFileSync(path.join(home, 'stop-hook'), 'a file where the directory should be');
    const arm = await runCli(['stop-hook', 'arm', '--remaining', '3'], { env });
    assert.equal(arm.code, 0);
    assert.match(arm.stderr, /^hermes-janitor: warning: stop-hook arm: /);
    const hook = await runCli(['stop-hook'], { env, input: stopPayload() });
    assert.deepEqual([hook.code, hook.stdout], [0, '']);
  });

  it('allows with a warning on a corrupt marker, and arm replaces it', async () => {
    const { home, env } = freshHome();
    mkdirSync(path.dirname(markerFile(home)), { recursive: true });
    writeFileSync(markerFile(home), '{"remaining": 3,');
    const r = await runCli(['stop-hook'], { env, input: stopPayload() });
    assert.deepEqual([r.code, r.stdout], [0, '']);
    assert.match(r.stderr, /not valid JSON.*allowing the stop/);
    await runCli(['stop-hook', 'arm', '--remaining', '1'], { env });
    assert.equal(readJson(markerFile(home)).remaining, 1);
  });

  it('takes --max-blocks (>= 1, else a warning and the stop allowed) and HERMES_JANITOR_MAX_STOP_BLOCKS (invalid: warning, default 5)', async () => {
    const { home, env } = freshHome();
    await runCli(['stop-hook', 'arm', '--remaining', '2'], { env });
    for (const bad of ['0', '-1', 'x', '1.5']) {
      const r = await runCli(['stop-hook', '--max-blocks', bad], { env, input: stopPayload() });
      assertFailsOpen(r, [`'${bad}'`, /stop-hook: hook misconfigured: .*--max-blocks must be a whole number >= 1.*; allowing the stop/], bad);
    }
    const viaEnv = { ...env, HERMES_JANITOR_MAX_STOP_BLOCKS: '1' };
    assert.equal((await runCli(['stop-hook'], { env: viaEnv, input: stopPayload() })).stdout, BLOCK(2));
    assert.ok('systemMessage' in JSON.parse((await runCli(['stop-hook'], { env: viaEnv, input: stopPayload() })).stdout));
    // The flag wins over the environment.
    assert.equal((await runCli(['stop-hook', '--max-blocks', '2'], { env: viaEnv, input: stopPayload() })).stdout, BLOCK(2));
    const badEnv = await runCli(['stop-hook'], { env: { ...env, HERMES_JANITOR_MAX_STOP_BLOCKS: 'lots' }, input: stopPayload() });
    assert.equal(badEnv.code, 0);
    assert.equal(badEnv.stdout, BLOCK(2));
    assert.match(badEnv.stderr, /HERMES_JANITOR_MAX_STOP_BLOCKS must be a whole number >= 1, got 'lots'; using the default/);
    assert.equal(readJson(markerFile(home)).blocks, 2);
  });

  it('parses the hook and its verbs alike through commander (options before, after, repeated)', async () => {
    const { home, env } = freshHome();
    // `stop-hook arm --remaining 2` and `stop-hook --max-blocks 3` (no verb) both work, with --home anywhere.
    const arm = await runCli(['stop-hook', 'arm', '--remaining', '2', '--home', home], { env: { HOME: tmp.dir } });
    assert.equal(arm.code, 0, arm.stderr);
    const plain = await runCli(['--home', home, 'stop-hook', '--max-blocks', '3'], { env: { HOME: tmp.dir }, input: stopPayload() });
    assert.equal(plain.stdout, BLOCK(2));
    // A repeated option is left to commander (the last one wins): the same answer.
    const viaCommander = await runCli(['stop-hook', '--max-blocks', '9', '--max-blocks=3', '--home', home], { env: { HOME: tmp.dir }, input: stopPayload() });
    assert.equal(viaCommander.code, 0, viaCommander.stderr);
    assert.equal(viaCommander.stdout, BLOCK(2));
    assert.equal(readJson(markerFile(home)).blocks, 2);
    const json = await runCli(['stop-hook', '--json'], { env, input: '{}' });
    assert.equal(json.code, 0);
    // A word that is no verb is the hook, misconfigured: it fails open. The verbs, run by hand, keep usage errors.
    assertFailsOpen(await runCli(['stop-hook', 'bogus'], { env, input: stopPayload() }), ["unknown stop-hook verb 'bogus'"]);
    assertUsageError(await runCli(['stop-hook', 'arm'], { env }), ["required option '--remaining"], '--remaining is required');
    assertFailsOpen(await runCli(['--profile', '../x', 'stop-hook'], { env, input: stopPayload() }), ["invalid profile '../x'"]);
    assertUsageError(await runCli(['--profile', '../x', 'stop-hook', 'status'], { env }), ["invalid profile '../x'"]);
    const help = await runCli(['stop-hook', '--help'], { env });
    assert.equal(help.code, 0);
    assert.match(help.stdout, /settings\.json/);
  });

  it('selects the profile home with --profile', async () => {
    const { home, env } = freshHome();
    await runCli(['stop-hook', 'arm', '--remaining', '1', '--profile', 'work'], { env });
    assert.ok(existsSync(markerFile(path.join(home, 'profiles', 'work'))));
    const r = await runCli(['--profile', 'work', 'stop-hook'], { env, input: stopPayload() });
    assert.equal(r.stdout, BLOCK(1));
  });

  it('reports with --json on every verb, and disarms', async () => {
    const { home, env } = freshHome();
    const arm = JSON.parse((await runCli(['stop-hook', 'arm', '--remaining', '2', '--json'], { env })).stdout);
    assert.deepEqual(arm, { schemaVersion: 1, action: 'arm', marker: markerFile(home), state: readJson(markerFile(home)) });
    const hook = JSON.parse((await runCli(['stop-hook', '--json'], { env, input: stopPayload() })).stdout);
    assert.equal(hook.action, 'block');
    assert.deepEqual(hook.output, JSON.parse(BLOCK(2)));
    assert.equal(hook.state.blocks, 1);
    const beat = JSON.parse((await runCli(['stop-hook', 'heartbeat', '--json'], { env })).stdout);
    assert.equal(beat.recorded, true);
    assert.equal(beat.state.heartbeat, 1);
    const status = await runCli(['stop-hook', 'status'], { env });
    assert.match(status.stdout, /remaining: +2/);
    const dis = JSON.parse((await runCli(['stop-hook', 'disarm', '--json'], { env })).stdout);
    assert.deepEqual(dis, { schemaVersion: 1, action: 'disarm', removed: true, marker: markerFile(home) });
    assert.equal(existsSync(markerFile(home)), false);
    const noRun = await runCli(['stop-hook', 'heartbeat'], { env });
    assert.equal(noRun.code, 0);
    assert.match(noRun.stderr, /no run is armed/);
  });

  it('counts every one of 20 concurrent stops', async () => {
    const { home, env } = freshHome();
    await runCli(['stop-hook', 'arm', '--remaining', '9'], { env });
    const results = await Promise.all(Array.from({ length: 20 }, () => runCli(['stop-hook', '--max-blocks', '50'], { env, input: stopPayload() })));
    for (const r of results) assert.deepEqual([r.code, r.stdout], [0, BLOCK(9)]);
    assert.equal(readJson(markerFile(home)).blocks, 20);
  });
});

describe('tool-loop (built CLI)', () => {
  const sessionFiles = (home: string) => readdirSync(path.join(home, 'tool-loop')).filter((f) => /\.json$/.test(f) && !f.startsWith('.'));

  it('denies the 5th identical call in a row with the exact answer and resets the streak', async () => {
    const { home, env } = freshHome();
    const outs: string[] = [];
    for (let i = 0; i < 10; i++) {
      // Same arguments in a different key order: the same call.
      const input = i % 2 ? { command: 'npm test', description: 'run' } : { description: 'run', command: 'npm test' };
      const r = await runCli(['tool-loop', 'pre'], { env, input: prePayload(input) });
      assert.equal(r.code, 0);
      assert.equal(r.stderr, '');
      outs.push(r.stdout);
    }
    // The second loop in the turn (within 30 minutes of the warning) ends the turn: continue: false, beside the deny.
    assert.deepEqual(outs, ['', '', '', '', DENY('Bash', 5), '', '', '', '', STOP(DENY_REASON('Bash', 5))]);
    const [file] = sessionFiles(home);
    const state = readJson(path.join(home, 'tool-loop', file!));
    assert.equal(state.session, SESSION);
    assert.equal(state.streak, null);
    assert.equal(statSync(path.join(home, 'tool-loop', file!)).mode & 0o777, 0o600);
  });

  it('counts per session, uses the session default without session_id, and honours --threshold', async () => {
    const { home, env } = freshHome();
    const noSession = JSON.stringify({ tool_name: 'Read', tool_input: { file_path: '/a' } });
    assert.equal((await runCli(['tool-loop', 'pre', '--threshold', '2'], { env, input: noSession })).stdout, '');
    assert.equal((await runCli(['tool-loop', 'pre', '--threshold', '2'], { env, input: prePayload() })).stdout, '');
    assert.equal((await runCli(['tool-loop', 'pre', '--threshold', '2'], { env, input: noSession })).stdout, DENY('Read', 2));
    const status = JSON.parse((await runCli(['tool-loop', 'status', '--json', '--session', 'default'], { env })).stdout);
    assert.equal(status.sessions[0].session, 'default');
    assert.equal(status.sessions[0].state.streak, null);
    assertFailsOpen(await runCli(['tool-loop', 'pre', '--threshold', '1'], { env, input: noSession }), ["'1'", '--threshold must be a whole number >= 2']);
    assert.equal(sessionFiles(home).length, 2);
  });

  it('status prints no raw C1 or bidi control of a session key or tool name: the one escaper, as --json (#47)', async () => {
    const { env } = freshHome();
    const session = 'evil\u202eGNP.exe\u009b2J';
    const input = JSON.stringify({ session_id: session, tool_name: 'Ba\u202esh\u009b31m', tool_input: { a: 1 } });
    for (let i = 0; i < 2; i++) assert.equal((await runCli(['tool-loop', 'pre'], { env, input })).code, 0);
    for (const args of [
      ['tool-loop', 'status'],
      ['tool-loop', 'status', '--session', session],
      ['tool-loop', 'status', '--json'],
    ]) {
      const r = await runCli(args, { env });
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stdout, /[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/, `${args.join(' ')}: ${JSON.stringify(r.stdout)}`);
      assert.match(r.stdout, /\\u202e/, args.join(' '));
    }
    const text = (await runCli(['tool-loop', 'status'], { env })).stdout;
    assert.match(text, /last call Ba\\u202esh\\u009b31m x2 in a row/);
  });

  it('keeps ../../etc inside <home>/tool-loop', async () => {
    const { home, env } = freshHome();
    const r = await runCli(['tool-loop', 'pre'], { env, input: prePayload({ a: 1 }, { session_id: '../../etc' }) });
    assert.equal(r.code, 0);
    const files = sessionFiles(home);
    assert.equal(files.length, 1);
    assert.match(files[0]!, /^______etc-[0-9a-f]{16}\.json$/);
    assert.deepEqual(readdirSync(home), ['tool-loop']);
    assert.equal(existsSync(path.join(tmp.dir, 'etc')), false);
  });

  it('blocks after --failure-threshold failures of a tool in a row; a success resets', async () => {
    const { env } = freshHome();
    const post = (response: unknown, tool = 'Bash') =>
      runCli(['tool-loop', 'post', '--failure-threshold', '3'], { env, input: postPayload(response, { tool_name: tool }) });
    const seen: string[] = [];
    for (const response of [{ is_error: true }, { error: 'exit 1' }, { stdout: 'ok' }, { isError: true }, { success: false }])
      seen.push((await post(response)).stdout);
    assert.deepEqual(seen, ['', '', '', '', '']);
    assert.equal((await post({ error: 'x' }, 'Read')).stdout, '', 'counted per tool');
    const blocked = await post({ error: { message: 'boom' } });
    assert.equal(blocked.code, 0);
    // Added beside the call's own output (its error text), never in its place.
    assert.equal(
      blocked.stdout,
      '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"Bash failed 3 times in a row; change strategy"}}\n',
    );
    assert.equal((await post({ error: 'x' })).stdout, '', 'the count starts again');
  });

  it('prints nothing and warns on garbage stdin', async () => {
    const { home, env } = freshHome();
    for (const verb of ['pre', 'post']) {
      for (const input of ['', 'garbage', '[]', '{"tool_name": 7}', '{"session_id": {}, "tool_name": "Bash"}']) {
        const r = await runCli(['tool-loop', verb], { env, input });
        assert.deepEqual([r.code, r.stdout], [0, ''], `${verb} ${input}`);
        assert.match(r.stderr, new RegExp(`^hermes-janitor: warning: tool-loop ${verb}: .*the call is not counted\\n$`));
      }
    }
    assert.equal(existsSync(home), false);
  });

  it('fails open when <home>/tool-loop cannot be written (it is a regular file)', async () => {
    const { home, env } = freshHome();
    mkdirSync(home, { recursive: true });
    writeFileSync(path.join(home, 'tool-loop'), 'not a directory');
    for (let i = 0; i < 6; i++) {
      const r = await runCli(['tool-loop', 'pre'], { env, input: prePayload() });
      assert.deepEqual([r.code, r.stdout], [0, '']);
      assert.match(r.stderr, /^hermes-janitor: warning: tool-loop pre: cannot update the tool-loop history/);
    }
    const post = await runCli(['tool-loop', 'post'], { env, input: postPayload({ error: 'x' }) });
    assert.deepEqual([post.code, post.stdout], [0, '']);
    assert.equal((await runCli(['tool-loop', 'status'], { env })).code, 0);
  });

  it('deletes a history untouched for 24 h on a later hook call', async () => {
    const { home, env } = freshHome();
    const dir = path.join(home, 'tool-loop');
    await runCli(['tool-loop', 'pre'], { env, input: prePayload({}, { session_id: 'old' }) });
    const [oldFile] = sessionFiles(home);
    const old = readJson(path.join(dir, oldFile!));
    writeFileSync(path.join(dir, oldFile!), JSON.stringify({ ...old, updatedAt: new Date(Date.now() - 25 * 3600_000).toISOString() }));
    writeFileSync(path.join(dir, '.sweep.json'), JSON.stringify({ lastSweep: new Date(Date.now() - 2 * 3600_000).toISOString() }));
    await runCli(['tool-loop', 'pre'], { env, input: prePayload({}, { session_id: 'new' }) });
    assert.equal(existsSync(path.join(dir, oldFile!)), false);
    assert.equal(sessionFiles(home).length, 1);
  });

  it('resets and reports sessions', async () => {
    const { env } = freshHome();
    for (const s of ['a', 'b']) await runCli(['tool-loop', 'pre'], { env, input: prePayload({}, { session_id: s }) });
    const human = await runCli(['tool-loop', 'status'], { env });
    assert.match(human.stdout, /session "a": last call Bash x1 in a row; no failures/);
    assert.match(human.stdout, /session "b"/);
    const one = JSON.parse((await runCli(['tool-loop', 'reset', '--session', 'a', '--json'], { env })).stdout);
    assert.equal(one.removed, 1);
    const left = JSON.parse((await runCli(['tool-loop', 'status', '--json'], { env })).stdout);
    assert.deepEqual(
      left.sessions.map((s: { session: string }) => s.session),
      ['b'],
    );
    const all = await runCli(['tool-loop', 'reset'], { env });
    assert.equal(all.code, 0);
    assert.match(all.stderr, /1 session history deleted/);
    assert.match((await runCli(['tool-loop', 'status'], { env })).stdout, /no session histories/);
  });

  it('prints a JSON document with --json; bad usage by hand is exit 2, a misconfigured hook fails open', async () => {
    const { env } = freshHome();
    const r = JSON.parse((await runCli(['tool-loop', 'pre', '--json'], { env, input: prePayload() })).stdout);
    assert.equal(r.action, 'allow');
    assert.equal(r.count, 1);
    assert.equal(r.session, SESSION);
    assert.equal(r.state.streak.tool, 'Bash');
    assertUsageError(await runCli(['tool-loop'], { env }), ["'tool-loop' needs a verb: pre, post, prompt, disarm, arm, reset or status"]);
    assertUsageError(await runCli(['tool-loop', 'status', '--bogus'], { env }), ["unknown option '--bogus'"]);
    assertFailsOpen(await runCli(['tool-loop', 'bogus'], { env }), ["unknown tool-loop verb 'bogus'"]);
    assertFailsOpen(await runCli(['tool-loop', 'pre', '--failure-threshold', '2'], { env, input: prePayload() }), ["unknown option '--failure-threshold'"]);
    assertFailsOpen(await runCli(['tool-loop', 'post', '--failure-threshold', '0'], { env, input: prePayload() }), [
      "'0'",
      '--failure-threshold must be a whole number >= 1',
    ]);
  });

  it('counts every one of 20 concurrent calls', async () => {
    const { home, env } = freshHome();
    const results = await Promise.all(Array.from({ length: 20 }, () => runCli(['tool-loop', 'pre', '--threshold', '100'], { env, input: prePayload() })));
    for (const r of results) assert.deepEqual([r.code, r.stdout], [0, '']);
    const [file] = sessionFiles(home);
    assert.equal((readJson(path.join(home, 'tool-loop', file!)).streak as { count: number }).count, 20);
  });
});

describe('start-up (built CLI)', () => {
  it("loads each bundle with V8's code cache the build made for it (not rejected by this Node.js)", async () => {
    type Loaded = { script: { cachedDataRejected?: boolean }; exports: Record<string, unknown> };
    const { loadFastPath, BUNDLES } = (await import(path.join(REPO, 'bin', 'hermes-janitor.js'))) as {
      loadFastPath: (name: string) => Loaded;
      BUNDLES: string[];
    };
    assert.deepEqual(BUNDLES, ['fast-path', 'fast-path-tool-loop', 'fast-path-stop-hook']);
    for (const name of BUNDLES) {
      const { script, exports } = loadFastPath(name);
      assert.equal(script.cachedDataRejected, false, name);
      assert.equal(typeof exports.runFastPath, 'function', name);
    }
  });

  it('runs the hooks and the CLI where Node.js has no process.getBuiltinModule (before 20.16): through require', async () => {
    const t = tempDir('hj-no-getbuiltin-');
    try {
      const preload = path.join(t.dir, 'no-getbuiltin.cjs');
      writeFileSync(preload, 'delete process.getBuiltinModule;\nif (process.getBuiltinModule) throw new Error("process.getBuiltinModule is still there");\n');
      const { home, env } = freshHome();
      const old = { ...env, NODE_OPTIONS: `--require ${preload}` };
      const call = (i: number) =>
        JSON.stringify({ session_id: 's', hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command: 'make' }, tool_use_id: `t${i}` });
      const outs: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await runCli(['tool-loop', 'pre'], { env: old, input: call(i) });
        assert.deepEqual([r.code, r.stderr], [0, '']);
        outs.push(r.stdout);
      }
      assert.deepEqual(outs.slice(0, 4), ['', '', '', '']);
      assert.match(outs[4]!, /"permissionDecision":"deny"/);
      assert.equal(readdirSync(path.join(home, 'tool-loop')).filter((f) => f.endsWith('.json') && !f.startsWith('.')).length, 1);
      const version = await runCli(['--version'], { env: old });
      assert.deepEqual([version.code, version.stderr], [0, '']);
      assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
    } finally {
      t.cleanup();
    }
  });
});

describe('hook dialects (built CLI)', () => {
  const fixture = (dialect: string, event: string) => FIXTURES.find((f) => f.dialect === dialect && f.reading.event === event)!;
  /** The i-th of several calls: the same input, its own call id where the dialect sends one. */
  function nth(f: HookFixture, i: number): Record<string, unknown> {
    const input = structuredClone(f.input);
    if (typeof input.tool_use_id === 'string') input.tool_use_id = `${input.tool_use_id}-${i}`;
    const extra = input.extra as Record<string, unknown> | undefined;
    if (typeof extra?.tool_call_id === 'string') extra.tool_call_id = `${extra.tool_call_id}-${i}`;
    return input;
  }
  const printed = (r: { code: number | null; stdout: string; stderr: string }) => (r.code === 2 ? `exit 2: ${r.stderr}` : r.stdout);

  it('trips at the fifth of six failed calls as Claude Code reports them (PostToolUseFailure), as PostToolUse with tool_response.is_error does', async () => {
    const failure = fixture('claude', 'PostToolUseFailure');
    const reason = 'Bash failed 5 times in a row; change strategy';
    for (const [what, make, answer] of [
      [
        'PostToolUseFailure',
        (i: number) => nth(failure, i),
        JSON.stringify({ hookSpecificOutput: { hookEventName: 'PostToolUseFailure', additionalContext: reason } }),
      ],
      [
        'PostToolUse with tool_response.is_error',
        (i: number) => ({ ...nth(failure, i), hook_event_name: 'PostToolUse', tool_response: { is_error: true } }),
        JSON.stringify({ hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: reason } }),
      ],
    ] as const) {
      const { env } = freshHome();
      const outs: string[] = [];
      for (let i = 1; i <= 6; i++) {
        const r = await runCli(['tool-loop', 'post'], { env, input: JSON.stringify(make(i)) });
        assert.equal(r.stderr, '', what);
        outs.push(printed(r));
      }
      assert.deepEqual(outs, ['', '', '', '', `${answer}\n`, ''], what);
    }
  });

  it('counts a failure its host reports twice (one tool_use_id) once', async () => {
    const { env } = freshHome();
    const failure = fixture('claude', 'PostToolUseFailure');
    const outs: string[] = [];
    for (const i of [1, 1, 2, 2, 3, 4, 5]) outs.push(printed(await runCli(['tool-loop', 'post'], { env, input: JSON.stringify(nth(failure, i)) })));
    assert.equal(
      outs.findIndex((o) => o !== ''),
      6,
      'the fifth distinct call trips, not the fifth report',
    );
  });

  for (const [dialect, event] of [
    ['qwen', 'PostToolUseFailure'],
    ['copilot', 'postToolUseFailure'],
    ['gemini', 'AfterTool'],
    ['hermes', 'post_tool_call'],
  ] as const) {
    it(`trips at the fifth of six failed calls as ${dialect} reports them (${event})`, async () => {
      const { env } = freshHome();
      const f = fixture(dialect, event);
      const outs: string[] = [];
      for (let i = 1; i <= 6; i++) outs.push(printed(await runCli(['tool-loop', 'post'], { env, input: JSON.stringify(nth(f, i)) })));
      const answer = f.answer.failing!(`${f.reading.tool} failed 5 times in a row; change strategy`);
      const fifth = answer === 'none' ? '' : 'stdout' in answer ? `${JSON.stringify(answer.stdout)}\n` : `exit 2: ${answer.stderr}\n`;
      assert.deepEqual(outs, ['', '', '', '', fifth, '']);
    });
  }

  it('denies the call that repeats a sequence of calls --cycle-threshold times in a row (default 3), not one broken by other calls', async () => {
    const a = prePayload({ command: 'make' });
    const b = prePayload({ file_path: 'Makefile' }, { tool_name: 'Read' });
    const reason = 'the same 2 calls (Bash, Read) repeated 3 times in a row; try a different approach';
    const deny = `${JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason } })}\n`;
    const run = async (env: Record<string, string>, inputs: string[], args: string[] = []) => {
      const outs: string[] = [];
      for (const input of inputs) outs.push((await runCli(['tool-loop', 'pre', ...args], { env, input })).stdout);
      return outs;
    };
    assert.deepEqual(await run(freshHome().env, [a, b, a, b, a, b, a, b]), ['', '', '', '', '', deny, '', '']);
    const two = await run(freshHome().env, [a, b, a, b], ['--cycle-threshold', '2']);
    assert.deepEqual(
      two.map((o) => JSON.parse(o || 'null')?.hookSpecificOutput?.permissionDecisionReason ?? ''),
      ['', '', '', 'the same 2 calls (Bash, Read) repeated 2 times in a row; try a different approach'],
    );
    const interleaved = [0, 1, 2, 3].flatMap((i) => [a, b, prePayload({ command: `step ${i}` })]);
    assert.deepEqual(await run(freshHome().env, interleaved), Array(12).fill(''));
    assertFailsOpen(await runCli(['tool-loop', 'pre', '--cycle-threshold', '1'], { env: freshHome().env, input: a }), [
      "'1'",
      '--cycle-threshold must be a whole number >= 2',
    ]);
  });

  it("answers Copilot CLI's postToolUseFailure only with exit 2 and the reason alone on stderr", async () => {
    const { env } = freshHome();
    const f = fixture('copilot', 'postToolUseFailure');
    const r = await runCli(['tool-loop', 'post', '--failure-threshold', '1'], { env, input: JSON.stringify(f.input) });
    assert.deepEqual([r.code, r.stdout, r.stderr], [2, '', 'bash failed 1 times in a row; change strategy\n']);
    const json = await runCli(['tool-loop', 'post', '--failure-threshold', '1', '--json'], { env, input: JSON.stringify(f.input) });
    assert.equal(json.code, 0, '--json describes the decision instead of answering');
    assert.deepEqual(JSON.parse(json.stdout).exit, { code: 2, stderr: 'bash failed 1 times in a row; change strategy' });
  });
});

describe('hook input on every kind of stdin (built CLI)', () => {
  /** Runs `tool-loop pre --threshold 2` twice with stdin from `open()` (the second call is denied). */
  function twice(open: () => number, env: Record<string, string>): string[] {
    return [0, 1].map(() => {
      const fd = open();
      try {
        const r = spawnSync(process.execPath, [BIN, 'tool-loop', 'pre', '--threshold', '2'], {
          stdio: [fd, 'pipe', 'pipe'],
          env: { PATH: process.env.PATH ?? '', ...env },
          encoding: 'utf8',
        });
        assert.deepEqual([r.status, r.stderr], [0, '']);
        return r.stdout;
      } finally {
        closeSync(fd);
      }
    });
  }

  it('reads a regular file (hook < payload.json), a pipe (Codex, hermes) and a socket (Node.js harnesses) alike', async () => {
    const payload = prePayload(undefined, { tool_use_id: undefined }); // the same payload twice, no call id: two calls
    const file = path.join(tmp.dir, 'payload.json');
    writeFileSync(file, payload);
    assert.deepEqual(
      twice(() => openSync(file, 'r'), freshHome().env),
      ['', DENY('Bash', 2)],
      'a regular file',
    );
    // A pipe whose writer sends the input in two parts, a moment apart, then closes it.
    const piped = (env: Record<string, string>) =>
      spawnSync(
        'sh',
        [
          '-c',
          `{ printf '%s' "$1"; sleep 0.2; printf '%s' "$2"; } | "$0" "$3" tool-loop pre --threshold 2`,
          process.execPath,
          payload.slice(0, 20),
          payload.slice(20),
          BIN,
        ],
        { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' },
      );
    const { env } = freshHome();
    assert.deepEqual([piped(env).stdout, piped(env).stdout], ['', DENY('Bash', 2)], 'a pipe');
    const socket = freshHome().env; // runCli's stdin is a socket pair, as every Node.js parent gives
    assert.deepEqual(
      [
        (await runCli(['tool-loop', 'pre', '--threshold', '2'], { env: socket, input: payload })).stdout,
        (await runCli(['tool-loop', 'pre', '--threshold', '2'], { env: socket, input: payload })).stdout,
      ],
      ['', DENY('Bash', 2)],
    );
  });
});
