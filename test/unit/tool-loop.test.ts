import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, utimesSync, watch, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { FileToolLoopStore, MemoryToolLoopStore, createToolLoop, defaultToolLoopDir } from '../../src/breakers/tool-loop.js';
import {
  SESSION_FILE_PATTERN,
  type ToolLoopState,
  callSignature,
  canonicalJson,
  cycleLength,
  decidePost,
  decidePre,
  emptyState,
  inputDigest,
  isExpired,
  isFailure,
  parseToolLoopState,
  sessionFileName,
  sweepDue,
} from '../../src/core/tool-loop.js';
import { tempDir } from '../helpers/cli.js';
import { tryAcquireLock } from '../../src/adapters/file-lock.js';
import { denyAnswer } from '../../src/core/hook-answers.js';
import { readToolCall } from '../../src/core/hook-readings.js';
import { reapLockPath } from '../../src/adapters/janitor-files.js';
import { contextEndpoint } from '../../src/adapters/docker-context.js';

// The numbers these tests pin, stated here (not imported from the code under test): a change to one is a change this test must see.
/** Tool-loop remembers at most 64 call ids. */
const MAX_COUNTED_CALLS = 64;
/** Tool-loop tracks at most 32 failing tools. */
const MAX_TRACKED_TOOLS = 32;
/** A tool-loop session is forgotten after 24 h. */
const SESSION_TTL_MS = 24 * 60 * 60 * 1000;
/** Tool-loop sweeps expired sessions once an hour. */
const SWEEP_INTERVAL_MS = 60 * 60 * 1000;
/** A lock file left by a dead holder is taken over after 1 minute. */
const LEFTOVER_AGE_MS = 60_000;

const T0 = Date.parse('2026-11-22T10:00:00Z');

/** Runs calls through decidePre; returns the actions. */
function pre(calls: Array<[string, unknown]>, threshold = 5, state: ToolLoopState = emptyState('s', T0)) {
  const actions: string[] = [];
  for (const [tool, input] of calls) {
    const step = decidePre(state, { tool, input }, threshold, T0);
    actions.push(step.decision.action);
    state = step.next;
  }
  return { actions, state };
}

describe('tool-loop core: canonical signatures', () => {
  it('sorts keys at every depth and drops whitespace', () => {
    assert.equal(canonicalJson({ b: 2, a: 1 }), '{"a":1,"b":2}');
    assert.equal(canonicalJson({ z: { y: [3, { d: 1, c: 2 }], x: null }, a: 'é' }), '{"a":"é","z":{"x":null,"y":[3,{"c":2,"d":1}]}}');
    assert.equal(canonicalJson(JSON.parse('{ "b" : [ 1 , 2 ] ,\n "a" : true }')), '{"a":true,"b":[1,2]}');
    assert.equal(canonicalJson([undefined, Number.NaN, 1e21, -0]), '[null,null,1e+21,0]');
    assert.equal(canonicalJson({ u: undefined, d: new Date(0) }), '{"d":"1970-01-01T00:00:00.000Z"}');
    assert.equal(canonicalJson(undefined), 'null');
    assert.equal(canonicalJson('a"b'), '"a\\"b"');
  });

  it('gives {"a":1,"b":2} and {"b":2,"a":1} the same signature, and different tools or inputs different ones', () => {
    assert.equal(callSignature('Bash', { a: 1, b: 2 }), callSignature('Bash', { b: 2, a: 1 }));
    assert.notEqual(callSignature('Bash', { a: 1 }), callSignature('Read', { a: 1 }));
    assert.notEqual(callSignature('Bash', { a: 1 }), callSignature('Bash', { a: '1' }));
    assert.notEqual(callSignature('Bash', [1, 2]), callSignature('Bash', [2, 1]));
  });

  it('is the tool name and the SHA-256 of the canonical JSON', () => {
    const hex = createHash('sha256').update('{"a":1,"b":2}').digest('hex');
    assert.equal(inputDigest({ b: 2, a: 1 }), hex);
    assert.equal(callSignature('Bash', { b: 2, a: 1 }), `Bash:${hex}`);
  });
});

describe('tool-loop core: PreToolUse', () => {
  it('denies the 5th identical call in a row with the exact answer, then starts again', () => {
    const call: [string, unknown] = ['Bash', { command: 'make' }];
    const { actions, state } = pre(Array(5).fill(call));
    assert.deepEqual(actions, ['allow', 'allow', 'allow', 'allow', 'deny']);
    assert.equal(state.streak, null, 'the denied call does not count');
    assert.deepEqual(pre(Array(10).fill(call)).actions, ['allow', 'allow', 'allow', 'allow', 'deny', 'allow', 'allow', 'allow', 'allow', 'deny']);
    const d = decidePre(emptyState('s', T0), { tool: 'Bash', input: 1 }, 1 + 1, T0);
    assert.equal(d.decision.action, 'allow');
    const deny = decidePre(d.next, { tool: 'Bash', input: 1 }, 2, T0);
    assert.deepEqual(deny.decision, {
      action: 'deny',
      count: 2,
      kind: 'repeated',
      reason: 'Bash called 2 times in a row with identical arguments; try a different approach',
    });
    assert.deepEqual(denyAnswer('claude', 'r'), {
      stdout: { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'r' } },
    });
  });

  it('counts key order as the same call', () => {
    assert.equal(
      pre(
        [
          ['Bash', { a: 1, b: 2 }],
          ['Bash', { b: 2, a: 1 }],
          ['Bash', { a: 1, b: 2 }],
        ],
        3,
      ).actions[2],
      'deny',
    );
  });

  it('breaks the streak on any different call', () => {
    const x: [string, unknown] = ['Bash', { c: 'x' }];
    const y: [string, unknown] = ['Bash', { c: 'y' }];
    const r: [string, unknown] = ['Read', { c: 'x' }];
    assert.deepEqual(pre([x, x, y, x, x, r, x, x], 3).actions, Array(8).fill('allow'));
  });

  it('keeps only the last call (bounded)', () => {
    const { state } = pre(Array.from({ length: 50 }, (_, i) => ['Bash', { i }] as [string, unknown]));
    assert.deepEqual(Object.keys(state.streak ?? {}).sort(), ['blind', 'count', 'key', 'pending', 'signature', 'tool']);
    assert.equal(state.streak?.count, 1);
  });
});

describe('tool-loop core: PostToolUse', () => {
  it('classifies failures exactly', () => {
    for (const r of [{ error: 'boom' }, { error: 1 }, { error: {} }, { error: [] }, { is_error: true }, { isError: true }, { success: false }]) {
      assert.equal(isFailure(r), true, JSON.stringify(r));
    }
    for (const r of [
      null,
      undefined,
      'error',
      0,
      false,
      [],
      [{ error: 1 }],
      {},
      { error: '' },
      { error: 0 },
      { error: null },
      { error: false },
      { is_error: 'true' },
      { is_error: 1 },
      { isError: false },
      { success: 0 },
      { success: true },
      { success: 'false' },
    ]) {
      assert.equal(isFailure(r), false, JSON.stringify(r));
    }
  });

  it('blocks at the threshold with the exact reason, resets, and a success clears the count', () => {
    let state = emptyState('s', T0);
    const seen: string[] = [];
    const fail = { is_error: true };
    for (const response of [fail, fail, { ok: 1 }, fail, fail, fail, fail, fail, fail]) {
      const step = decidePost(state, { tool: 'Bash', response }, 5, T0);
      seen.push(step.decision.action === 'block' ? `block:${step.decision.reason}` : String(step.decision.failures));
      state = step.next;
    }
    assert.deepEqual(seen, ['1', '2', '0', '1', '2', '3', '4', 'block:Bash failed 5 times in a row; change strategy', '1']);
  });

  it('counts each tool separately within a session', () => {
    let state = emptyState('s', T0);
    for (const tool of ['A', 'B', 'A', 'B', 'A']) state = decidePost(state, { tool, response: { error: 'x' } }, 3, T0).next;
    assert.deepEqual(state.failures, [{ tool: 'B', count: 2 }]);
    const b = decidePost(state, { tool: 'B', response: { error: 'x' } }, 3, T0);
    assert.equal(b.decision.action, 'block');
  });

  it('keeps at most MAX_TRACKED_TOOLS failing tools, dropping the least recent', () => {
    let state = emptyState('s', T0);
    for (let i = 0; i < MAX_TRACKED_TOOLS + 10; i++) state = decidePost(state, { tool: `t${i}`, response: { error: 1 } }, 5, T0).next;
    assert.equal(state.failures.length, MAX_TRACKED_TOOLS);
    assert.equal(state.failures[0]!.tool, 't10');
  });
});

describe('tool-loop core: cycles of 2 to 4 calls', () => {
  const A: [string, unknown] = ['Bash', { command: 'make' }];
  const B: [string, unknown] = ['Read', { file_path: 'Makefile' }];
  const C: [string, unknown] = ['Edit', { file_path: 'Makefile' }];
  const D: [string, unknown] = ['Bash', { command: 'make test' }];
  /** Runs calls through decidePre with --threshold 5 and --cycle-threshold k; returns the actions and the last reason. */
  function run(calls: Array<[string, unknown]>, k = 3, state: ToolLoopState = emptyState('s', T0)) {
    const actions: string[] = [];
    let reason = '';
    for (const [tool, input] of calls) {
      const step = decidePre(state, { tool, input }, { threshold: 5, cycleThreshold: k }, T0);
      actions.push(step.decision.action);
      if (step.decision.action === 'deny') reason = step.decision.reason;
      state = step.next;
    }
    return { actions, reason, state };
  }
  const allow = (n: number) => Array<string>(n).fill('allow');

  it('finds the shortest sequence the last calls repeat k times in a row, never a run of one call', () => {
    const sig = (...xs: string[]) => xs;
    assert.equal(cycleLength(sig('a', 'b', 'a', 'b', 'a', 'b'), 3), 2);
    assert.equal(cycleLength(sig('x', 'a', 'b', 'a', 'b', 'a', 'b'), 3), 2);
    assert.equal(cycleLength(sig('a', 'b', 'a', 'b', 'a'), 3), 0);
    assert.equal(cycleLength(sig('a', 'a', 'a', 'a', 'a', 'a'), 3), 0, 'identical calls are a streak, not a cycle');
    assert.equal(cycleLength(sig('a', 'a', 'b', 'a', 'a', 'b', 'a', 'a', 'b'), 3), 3);
    assert.equal(cycleLength(sig('a', 'b', 'c', 'd', 'a', 'b', 'c', 'd'), 2), 4);
    assert.equal(cycleLength(sig('a', 'b', 'c', 'd', 'e', 'a', 'b', 'c', 'd', 'e'), 2), 0, 'longer than 4 calls is not a cycle');
  });

  it('denies the call that would repeat A B a 3rd time in a row, with the exact reason, like identical repeats', () => {
    const r = run([A, B, A, B, A, B]);
    assert.deepEqual(r.actions, [...allow(5), 'deny']);
    assert.equal(r.reason, 'the same 2 calls (Bash, Read) repeated 3 times in a row; try a different approach');
    assert.deepEqual(run([A, B, C, A, B, C, A, B, C]).actions, [...allow(8), 'deny']);
    assert.deepEqual(run([A, B, C, D, A, B, C, D, A, B, C, D]).actions, [...allow(11), 'deny']);
    assert.deepEqual(run([A, B, A, B], 2).actions, [...allow(3), 'deny'], '--cycle-threshold 2');
  });

  it('with interleaved distinct calls there is no cycle; an interleaved repeating call makes a longer one', () => {
    const distinct = (i: number): [string, unknown] => ['Bash', { command: `step ${i}` }];
    const interleaved = Array.from({ length: 6 }, (_, i) => [A, B, distinct(i)]).flat();
    assert.deepEqual(run(interleaved).actions, allow(18));
    assert.deepEqual(run([A, B, A, B, C, A, B, A, B, C]).actions, allow(10), 'one different call breaks "in a row"');
    assert.deepEqual(run([A, B, C, A, B, C, A, B, C]).actions.at(-1), 'deny');
  });

  it('starts again from zero after a denial (the denied call does not count), and after an identical-repeat denial', () => {
    const first = run([A, B, A, B, A, B]);
    assert.equal(first.state.recent, undefined, 'the history restarts');
    assert.equal(first.state.streak, null);
    assert.deepEqual(run([A, B, A, B, A, B], 3, first.state).actions, [...allow(5), 'deny']);
    const repeats = run([B, A, A, A, A, A]);
    assert.deepEqual(repeats.actions, [...allow(5), 'deny'], 'the 5th identical call');
    assert.equal(repeats.reason, 'Bash called 5 times in a row with identical arguments; try a different approach');
    assert.deepEqual(run([B, A, B], 3, repeats.state).actions, allow(3), 'the A B before the denial is forgotten');
  });

  it('keeps only the signatures a cycle needs (4 x --cycle-threshold)', () => {
    const r = run(Array.from({ length: 40 }, (_, i) => ['Bash', { i }] as [string, unknown]));
    assert.equal(r.state.recent?.length, 12);
  });
});

describe('tool-loop core: outcomes and tool-call ids', () => {
  it('counts a failure reported twice under one call id once, and a neutral outcome not at all', () => {
    let state = emptyState('s', T0);
    const seen: number[] = [];
    for (const call of [
      { tool: 'Bash', outcome: 'failure' as const, callId: 'c1' },
      { tool: 'Bash', outcome: 'failure' as const, callId: 'c1' },
      { tool: 'Bash', outcome: 'neutral' as const, callId: 'c2' },
      { tool: 'Bash', outcome: 'failure' as const, callId: 'c3' },
      { tool: 'Bash', outcome: 'failure' as const },
      { tool: 'Bash', outcome: 'failure' as const },
    ]) {
      const step = decidePost(state, call, 5, T0);
      seen.push(step.decision.failures);
      state = step.next;
    }
    assert.deepEqual(seen, [1, 1, 1, 2, 3, 4]);
    assert.deepEqual(state.counted, ['c1', 'c2', 'c3']);
  });

  it('remembers at most MAX_COUNTED_CALLS ids', () => {
    let state = emptyState('s', T0);
    for (let i = 0; i < MAX_COUNTED_CALLS + 10; i++) state = decidePost(state, { tool: 'Bash', outcome: 'success', callId: `c${i}` }, 5, T0).next;
    assert.equal(state.counted?.length, MAX_COUNTED_CALLS);
    assert.equal(state.counted?.[0], 'c10');
  });
});

describe('tool-loop core: input, state and expiry', () => {
  it('validates the payload (Claude Code); a missing session_id reads as empty (the breaker counts it in the session default)', () => {
    assert.deepEqual(readToolCall({ tool_name: 'Bash', tool_input: { a: 1 } }, 'claude', 'pre'), {
      ok: true,
      value: { event: 'PreToolUse', role: 'pre', session: '', tool: 'Bash', input: { a: 1 } },
    });
    const post = readToolCall({ session_id: 's', tool_name: 'X', tool_response: { error: 'e' } }, 'claude', 'post');
    assert.ok(post.ok && post.value.input === null && post.value.outcome === 'failure');
    for (const bad of [null, [], 'x', {}, { tool_name: '' }, { tool_name: 3 }, { tool_name: 'X', session_id: 4 }]) {
      assert.equal(readToolCall(bad, 'claude', 'pre').ok, false, JSON.stringify(bad));
    }
  });

  it('reads back what it writes, and starts afresh on a wrong shape, another session or an expired history', () => {
    const state = pre([
      ['Bash', 1],
      ['Bash', 1],
    ]).state;
    const stored = JSON.parse(JSON.stringify(state)) as unknown;
    assert.deepEqual(parseToolLoopState(stored, 's', T0).state, state);
    assert.equal(parseToolLoopState(stored, 'other', T0).state.streak, null);
    assert.equal(parseToolLoopState(stored, 's', T0 + SESSION_TTL_MS).state.streak, null);
    assert.equal(parseToolLoopState(stored, 's', T0 + SESSION_TTL_MS - 1).state.streak?.count, 2);
    const bad = parseToolLoopState({ session: 's' }, 's', T0);
    assert.ok(bad.problem);
    assert.equal(bad.state.streak, null);
    // Wrongly typed entries are dropped, the rest kept.
    const mixed = parseToolLoopState({ ...state, failures: [{ tool: 'A', count: 2 }, { tool: 'B', count: 'x' }, 7] }, 's', T0);
    assert.deepEqual(mixed.state.failures, [{ tool: 'A', count: 2 }]);
  });

  it('expires 24 h after the last write (and far-future times)', () => {
    const at = new Date(T0).toISOString();
    assert.equal(isExpired(at, T0 + SESSION_TTL_MS - 1), false);
    assert.equal(isExpired(at, T0 + SESSION_TTL_MS), true);
    assert.equal(isExpired(at, T0 - SESSION_TTL_MS), true);
    assert.equal(isExpired('garbage', T0), true);
    assert.equal(sweepDue(undefined, T0), true);
    assert.equal(sweepDue(at, T0 + SWEEP_INTERVAL_MS - 1), false);
    assert.equal(sweepDue(at, T0 + SWEEP_INTERVAL_MS), true);
  });

  it('names session files safely: no separators, no dots, distinct for distinct ids', () => {
    for (const id of ['../../etc', '/etc/passwd', '..', '.', '', 'a/b', 'a\\b', '\u0000', 'x'.repeat(500), 'Ä', 'a b']) {
      const name = sessionFileName(id);
      assert.match(name, SESSION_FILE_PATTERN, id);
      assert.ok(!name.slice(0, -'.json'.length).includes('.'), name);
      assert.equal(path.basename(name), name);
      assert.ok(name.length <= 48 + 1 + 16 + 5);
    }
    assert.notEqual(sessionFileName('a/b'), sessionFileName('a_b'));
    assert.equal(sessionFileName('../../etc').startsWith('______etc-'), true);
  });
});

describe('tool-loop breaker (in process)', () => {
  const tmp = tempDir('hj-tool-unit-');
  after(tmp.cleanup);

  it('denies repeats and reports failures with a memory store', async () => {
    const loop = createToolLoop({ store: new MemoryToolLoopStore(), threshold: 3, failureThreshold: 2 });
    const call = { session_id: 's', tool_name: 'Bash', tool_input: { command: 'ls' } };
    assert.equal((await loop.pre(call)).action, 'allow');
    assert.equal((await loop.pre({ ...call, session_id: 'other' })).count, 1);
    assert.equal((await loop.pre(call)).count, 2);
    const denied = await loop.pre(call);
    assert.equal(denied.action, 'deny');
    assert.deepEqual({ stdout: denied.output }, denyAnswer('claude', 'Bash called 3 times in a row with identical arguments; try a different approach'));
    assert.equal((await loop.post({ ...call, tool_response: { error: 'x' } })).action, 'allow');
    const blocked = await loop.post({ ...call, tool_response: { success: false } });
    assert.deepEqual(blocked.output, {
      hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: 'Bash failed 2 times in a row; change strategy' },
    });
    const statuses = await loop.status();
    assert.deepEqual(statuses.map((s) => s.session).sort(), ['other', 's']);
    assert.equal(await loop.reset('s'), 1);
    assert.deepEqual(
      (await loop.status()).map((s) => s.session),
      ['other'],
    );
    assert.equal(await loop.reset(), 1);
    assert.deepEqual(await loop.status(), []);
  });

  it('fails open on malformed input and never throws', async () => {
    const loop = createToolLoop({ store: new MemoryToolLoopStore() });
    for (const bad of [null, 1, 'x', [], {}, { tool_name: 5 }]) {
      const r = await loop.pre(bad as never);
      assert.equal(r.action, 'allow');
      assert.equal(r.output, undefined);
      assert.equal(r.why, 'malformed-input');
      assert.equal(r.warnings.length, 1);
    }
    // Nested too deeply to fingerprint: allowed, with a warning.
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const r = await loop.pre({ tool_name: 'X', tool_input: deep });
    assert.equal(r.action, 'allow');
    assert.equal(r.why, 'malformed-input');
    assert.match(r.warnings[0]!, /cannot fingerprint tool_input/);
  });

  it('keeps each session in its own 0600 file inside the directory, whatever the id', async () => {
    const dir = path.join(tmp.dir, 'home', 'tool-loop');
    const loop = createToolLoop({ dir });
    for (const id of ['../../etc', '../escape', '/abs', 'ok']) await loop.pre({ session_id: id, tool_name: 'Bash', tool_input: {} });
    const names = readdirSync(dir).filter((n) => n.endsWith('.json') && !n.startsWith('.'));
    assert.equal(names.length, 4);
    assert.equal(existsSync(path.join(tmp.dir, 'escape.json')), false);
    for (const n of names) {
      assert.match(n, SESSION_FILE_PATTERN);
      assert.equal(statSync(path.join(dir, n)).mode & 0o777, 0o600);
    }
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    const stored = JSON.parse(readFileSync(path.join(dir, sessionFileName('../../etc')), 'utf8')) as ToolLoopState;
    assert.equal(stored.session, '../../etc');
    assert.equal(stored.streak?.tool, 'Bash');
    assert.equal(defaultToolLoopDir('/h'), '/h/tool-loop');
  });

  it('fails open when the state directory cannot be written (its path is a regular file)', async () => {
    const dir = path.join(tmp.dir, 'blocked');
    writeFileSync(dir, 'not a directory');
    const loop = createToolLoop({ dir, threshold: 2 });
    for (let i = 0; i < 3; i++) {
      const r = await loop.pre({ session_id: 's', tool_name: 'Bash', tool_input: {} });
      assert.equal(r.action, 'allow');
      assert.equal(r.why, 'state-error');
      assert.equal(r.output, undefined);
      assert.match(r.warnings[0]!, /cannot update the tool-loop history/);
    }
  });

  it('forgets a history after 24 h untouched and deletes its file in the hourly sweep', async () => {
    const dir = path.join(tmp.dir, 'sweep', 'tool-loop');
    let now = T0;
    const loop = createToolLoop({ dir, threshold: 3, now: () => new Date(now) });
    const call = { session_id: 'old', tool_name: 'Bash', tool_input: { x: 1 } };
    await loop.pre(call);
    await loop.pre(call);
    const oldFile = path.join(dir, sessionFileName('old'));
    assert.ok(existsSync(oldFile));
    // 23 h later: still counted, and no sweep deletes it.
    now = T0 + 23 * 3600_000;
    assert.equal((await loop.pre({ ...call, session_id: 'other' })).action, 'allow');
    assert.ok(existsSync(oldFile));
    // The 24 h run from the last write (T0), so at T0 + 24 h the history is forgotten ...
    now = T0 + SESSION_TTL_MS;
    assert.equal((await loop.status('old'))[0]!.state, undefined);
    // ... and the next hook call (any session) deletes the file, since the last sweep was 23 h ago.
    await loop.pre({ ...call, session_id: 'other' });
    assert.equal(existsSync(oldFile), false);
    // A fresh history for 'old' starts at 1.
    assert.equal((await loop.pre(call)).count, 1);
  });

  it('sweeps at most hourly, and deletes unusable files too', async () => {
    const dir = path.join(tmp.dir, 'sweep2');
    mkdirSync(dir, { recursive: true });
    let now = T0;
    const loop = createToolLoop({ dir, now: () => new Date(now) });
    await loop.pre({ session_id: 'a', tool_name: 'X' }); // sweeps now, records T0
    const corrupt = path.join(dir, sessionFileName('b'));
    writeFileSync(corrupt, '{not json');
    const stale = path.join(dir, sessionFileName('c'));
    writeFileSync(stale, JSON.stringify({ session: 'c', updatedAt: new Date(T0 - SESSION_TTL_MS).toISOString(), streak: null, failures: [] }));
    now = T0 + SWEEP_INTERVAL_MS - 1;
    await loop.pre({ session_id: 'a', tool_name: 'X' });
    assert.ok(existsSync(corrupt) && existsSync(stale), 'not swept within the hour');
    now = T0 + SWEEP_INTERVAL_MS;
    await loop.pre({ session_id: 'a', tool_name: 'X' });
    assert.ok(!existsSync(corrupt) && !existsSync(stale));
    assert.ok(existsSync(path.join(dir, sessionFileName('a'))));
    assert.equal(await loop.sweep(), 0);
    // Files that are not session histories are left alone.
    writeFileSync(path.join(dir, 'notes.txt'), 'mine');
    now += SESSION_TTL_MS * 2;
    assert.equal(await loop.sweep(), 1);
    assert.ok(existsSync(path.join(dir, 'notes.txt')));
  });

  it("leaves killed hooks' temporary files to the hourly sweep, which removes them", async () => {
    const dir = path.join(tmp.dir, 'leftovers');
    mkdirSync(dir, { recursive: true });
    let now = T0;
    const loop = createToolLoop({ dir, now: () => new Date(now) });
    await loop.pre({ session_id: 'a', tool_name: 'X' }); // sweeps now, records T0
    const leftovers = [`${sessionFileName('a')}.4242.0badc0de.tmp`, `${sessionFileName('a')}.lock.77.deadbeef.tmp`].map((n) => path.join(dir, n));
    const old = new Date(Date.now() - LEFTOVER_AGE_MS - 5000);
    for (const f of leftovers) {
      writeFileSync(f, '{"session":');
      utimesSync(f, old, old);
    }
    now = T0 + SWEEP_INTERVAL_MS - 1;
    await loop.pre({ session_id: 'a', tool_name: 'X' });
    assert.deepEqual(
      leftovers.filter((f) => existsSync(f)),
      leftovers,
      'a hook call within the hour leaves them',
    );
    now = T0 + SWEEP_INTERVAL_MS;
    await loop.pre({ session_id: 'b', tool_name: 'X' });
    assert.deepEqual(
      leftovers.filter((f) => existsSync(f)),
      [],
      'the sweep removes them',
    );
    assert.equal(JSON.parse(readFileSync(path.join(dir, sessionFileName('a')), 'utf8')).session, 'a');
  });

  it('counts every one of concurrent calls of a session', async () => {
    const dir = path.join(tmp.dir, 'concurrent');
    const loop = createToolLoop({ dir, threshold: 100 });
    await Promise.all(Array.from({ length: 15 }, () => loop.pre({ session_id: 's', tool_name: 'Bash', tool_input: { a: 1 } })));
    const state = JSON.parse(readFileSync(path.join(dir, sessionFileName('s')), 'utf8')) as ToolLoopState;
    assert.equal(state.streak?.count, 15);
  });

  it('rejects invalid thresholds', () => {
    assert.throws(() => createToolLoop({ store: new MemoryToolLoopStore(), threshold: 1 }), RangeError);
    assert.throws(() => createToolLoop({ store: new MemoryToolLoopStore(), failureThreshold: 0 }), RangeError);
    assert.throws(() => createToolLoop({ store: new MemoryToolLoopStore(), threshold: 2.5 }), RangeError);
  });

  /**
   * Resolves when another taker first tries `file`'s lock: each try writes its record to a temporary file beside the
   * lock (`<file>.lock.<pid>.<random>.tmp`) before linking it, so the directory shows the try itself.
   */
  function lockTried(file: string): Promise<void> {
    const prefix = `${path.basename(file)}.lock.`;
    return new Promise((resolve) => {
      const watcher = watch(path.dirname(file), (_event, name) => {
        if (typeof name === 'string' && name.startsWith(prefix)) {
          watcher.close();
          resolve();
        }
      });
    });
  }

  it('a history file is replaced by removing it first; reset still forgets one caught in that moment', async () => {
    const dir = path.join(tmp.dir, 'replacing');
    const loop = createToolLoop({ dir, threshold: 5 });
    const call = { session_id: 's', tool_name: 'Bash', tool_input: { a: 1 } };
    const file = path.join(dir, sessionFileName('s'));
    for (const reset of [() => loop.reset('s'), () => loop.reset()]) {
      await loop.pre(call);
      const inode = statSync(file).ino;
      await loop.pre(call);
      assert.notEqual(statSync(file).ino, inode, 'a new file each call');
      // A hook between removing the history and renaming the new one in: the file is missing, its lock held.
      const writer = tryAcquireLock(`${file}.lock`, { staleMs: 30_000, refresh: false });
      assert.ok(writer);
      renameSync(file, `${file}.1.0badc0de.tmp`);
      const tried = lockTried(file);
      const resetting = reset();
      // Reset has looked (the file missing, its lock there) and now waits for the lock: the hook's rename completes.
      await Promise.race([tried, resetting.then(() => assert.fail('reset ended without waiting for the lock'))]);
      renameSync(`${file}.1.0badc0de.tmp`, file);
      await writer.release();
      assert.equal(await resetting, 1, 'the history the hook was writing is forgotten');
      assert.equal(existsSync(file), false);
      assert.deepEqual(await loop.status(), []);
    }
    // Nothing there, no lock: nothing to forget, and nothing made.
    assert.equal(await loop.reset('s'), 0);
    assert.equal(await createToolLoop({ dir: path.join(tmp.dir, 'none') }).reset('s'), 0);
    assert.equal(existsSync(path.join(tmp.dir, 'none')), false);
  });

  it('lists only session files from a file store', async () => {
    const dir = path.join(tmp.dir, 'list');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'random.json'), '{}');
    const store = new FileToolLoopStore(dir);
    await store.session('x').update(() => ({ next: { session: 'x' }, result: 0 }));
    assert.deepEqual(
      (await store.sessions()).map((s) => path.basename(s.location)),
      [sessionFileName('x')],
    );
    assert.deepEqual(await new FileToolLoopStore(path.join(tmp.dir, 'missing')).sessions(), []);
  });
});

describe('SHA-256 at its call sites (src/util/sha256.ts) matches node:crypto', () => {
  const ref = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
  // Strings whose UTF-8 form crosses SHA-256's block and padding edges (55/56/64 bytes...), multi-byte text, a lone
  // surrogate (U+FFFD, as Buffer.from writes it) and a large input.
  const texts = [
    ...[0, 1, 53, 54, 55, 61, 62, 63, 117, 118, 125, 126, 998, 100_000].map((n) => 'x'.repeat(n)),
    'é',
    '日本語',
    '\u{1F600}',
    'a\u0000b',
    '\uD800',
    'ab\uDC00c',
  ];

  it('the tool input digest and the call signature', () => {
    assert.equal(inputDigest(''), ref('""'));
    for (const t of texts) {
      assert.equal(inputDigest(t), ref(JSON.stringify(t)), `length ${t.length}`);
      assert.equal(callSignature('Bash', { command: t }), `Bash:${ref(canonicalJson({ command: t }))}`);
    }
  });

  it('the session file name', () => {
    for (const t of texts.filter((text) => text.length > 0)) assert.ok(sessionFileName(t).endsWith(`-${ref(t).slice(0, 16)}.json`), t.slice(0, 8));
  });

  it('the reap lock name', () => {
    for (const t of texts) assert.equal(path.basename(reapLockPath('/h', t)), `reap-${ref(t).slice(0, 24)}.lock`);
  });

  it('the docker context directory', () => {
    const tmp = tempDir('hj-sha-unit-');
    after(tmp.cleanup);
    const cfg = path.join(tmp.dir, 'docker-config');
    for (const name of ['ctx', 'prod-ü', 'x'.repeat(200)]) {
      const dir = path.join(cfg, 'contexts', 'meta', ref(name));
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'meta.json'), JSON.stringify({ Endpoints: { docker: { Host: 'tcp://10.0.0.1:2375' } } }));
      assert.equal(contextEndpoint(name, { DOCKER_CONFIG: cfg }, tmp.dir).host, 'tcp://10.0.0.1:2375');
    }
  });
});
