/**
 * Property tests: whatever arrives on stdin, in whatever order, the hooks exit 0 and print exactly the answer the
 * contract demands (computed by a reference model below: a block, a deny, a release, or nothing) and a warning
 * only for malformed input; the stop-hook never holds a session more than --max-blocks times in a row without
 * progress. And the decisions are the same whatever the dialect the agent speaks: only the wire shape differs.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { MemoryStateStore } from '../../src/adapters/state-file.js';
import { createStopHook } from '../../src/breakers/stop-hook.js';
import { MemoryToolLoopStore, createToolLoop } from '../../src/breakers/tool-loop.js';
import { main } from '../../src/cli/main.js';
import type { Context } from '../../src/context.js';
import { DIALECTS, DIALECT_EVENTS, type Dialect } from '../../src/core/hook-dialects.js';
import { callSignature, canonicalJson } from '../../src/core/tool-loop.js';
import { EMPTY_RESULT, maskArguments, resultDigest } from '../../src/core/volatile.js';
import { FIXTURES, type FixtureAnswer } from '../fixtures/hook-dialects/index.js';
import { runCli, tempDir } from '../helpers/cli.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);

function makeCtx(home: string, input: Uint8Array | string) {
  let stdout = '';
  let stderr = '';
  const ctx: Context = {
    argv: [],
    env: { HERMES_HOME: home },
    stdout: { write: (s: string) => ((stdout += s), true) },
    stderr: { write: (s: string) => ((stderr += s), true) },
    stdin: Readable.from([Buffer.from(input)], { objectMode: false }),
    cwd: home,
    homedir: home,
    now: () => new Date(),
  };
  return { ctx, out: () => stdout, err: () => stderr };
}

/*
 * The reference model: what each hook must answer, computed from the documented contract (README, hooks
 * section) independently of the implementation. Inputs are sequences, so the properties see blocks, denials and
 * releases, not only the quiet cases.
 */
const UNPARSEABLE = Symbol('unparseable');

/** The payload the CLI gets from stdin bytes: one JSON value; a leading BOM and surrounding whitespace ignored. */
function stdinPayload(input: Uint8Array | string): unknown {
  const text = Buffer.from(input)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trim();
  if (text === '') return UNPARSEABLE;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return UNPARSEABLE;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const absent = (v: unknown) => v === undefined || v === null;

type Answer = Record<string, unknown> | undefined;

/** The Claude Code events the generators below use; any other event name is one no dialect uses. */
const STOP_EVENTS = new Set(['Stop', 'SubagentStop']);
const TOOL_EVENTS: Record<string, 'pre' | 'post' | 'other'> = {
  PreToolUse: 'pre',
  PostToolUse: 'post',
  PostToolUseFailure: 'post',
  Stop: 'other',
  SubagentStop: 'other',
  SessionStart: 'other',
};
const CLAUDE_EVENTS = new Set([...STOP_EVENTS, ...Object.keys(TOOL_EVENTS)]);
/** Every event name some dialect uses: random names are drawn outside it (else they would be another dialect's). */
const ANY_DIALECT_EVENT = new Set(DIALECTS.flatMap((d) => [...DIALECT_EVENTS[d].keys()]));

/** The event of a Claude-style payload: the hook's own when absent, `undefined` when no dialect explains it. */
function eventRole(payload: Record<string, unknown>): 'absent' | 'known' | 'bad-type' | 'unknown' {
  const e = payload.hook_event_name;
  if (absent(e)) return 'absent';
  if (typeof e !== 'string') return 'bad-type';
  return CLAUDE_EVENTS.has(e) ? 'known' : 'unknown';
}

/** The stop-hook over one armed marker (`remaining`, optional owner), with `maxBlocks`. */
class StopModel {
  private blocks = 0;
  private progress = false;
  constructor(
    readonly remaining: number,
    readonly owner: string | undefined,
    readonly maxBlocks: number,
  ) {}
  heartbeat(): void {
    this.progress = true;
  }
  /** The answer, or undefined for no output; `malformed` says whether the input itself was rejected. */
  stop(payload: unknown): { answer: Answer; malformed: boolean } {
    if (!isObject(payload)) return { answer: undefined, malformed: true };
    const event = eventRole(payload);
    if (event === 'bad-type' || event === 'unknown') return { answer: undefined, malformed: true };
    for (const k of ['session_id', 'transcript_path', 'cwd']) {
      if (!absent(payload[k]) && typeof payload[k] !== 'string') return { answer: undefined, malformed: true };
    }
    const active = payload.stop_hook_active;
    if (!absent(active) && typeof active !== 'boolean') return { answer: undefined, malformed: true };
    // A subagent's stop is let through, and leaves the main session's blocks as they are.
    if (payload.hook_event_name === 'SubagentStop') return { answer: undefined, malformed: false };
    return this.decide(event === 'absent' || STOP_EVENTS.has(payload.hook_event_name as string), payload.session_id, active);
  }
  /** A valid stop input, read: whether it is a stop, its session, its `stop_hook_active`. */
  decide(isStop: boolean, sessionId: unknown, active: unknown): { answer: Answer; malformed: boolean } {
    const quiet = { answer: undefined, malformed: false };
    if (!isStop || this.remaining <= 0) return quiet;
    const session = typeof sessionId === 'string' && sessionId !== '' ? sessionId : undefined;
    if (this.owner !== undefined && session !== this.owner) return quiet;
    if (this.progress || active === false) this.blocks = 0;
    this.progress = false;
    if (this.blocks < this.maxBlocks) {
      this.blocks++;
      return { answer: { decision: 'block', reason: `${this.remaining} items remain: continue with the next one` }, malformed: false };
    }
    this.blocks = 0;
    return { answer: { systemMessage: RELEASE }, malformed: false };
  }
}
/** Stands for the release message, checked by its documented start (see `checkAnswer`). */
const RELEASE = Symbol('release');

/** A tool call, read: what the model decides on. */
interface ModelCall {
  session: string;
  tool: string;
  input: unknown;
  outcome?: 'success' | 'failure' | 'neutral';
  callId?: string;
  /**
   * After a call: what it returned, as a class of equal results (`cls`; `empty` when it says nothing), or undefined
   * where the agent gives nothing to compare.
   */
  result?: { cls: string; empty: boolean };
}

/** One call of a session's history since its last loop or prompt: its identity, and its result once known. */
interface ModelEntry {
  tool: string;
  key: string;
  result?: string;
  failed?: boolean;
}

/** What the model decides before a call: nothing, a warning (the deny), or the end of the turn. */
type PreVerdict = { reason: string; stop: boolean } | undefined;

const REPEAT = (tool: string, n: number) => `${tool} called ${n} times in a row with identical arguments; try a different approach`;
const SAME_RESULT = (tool: string, n: number) =>
  `${tool} called ${n} times in a row with identical arguments, and each of the last ${n - 1} gave the same result; try a different approach`;
const FAILING_AGAIN = (tool: string, n: number) => `${tool} failed ${n} times in a row with identical arguments; change strategy instead of retrying it`;
const NO_PROGRESS = (tool: string, n: number) =>
  `${tool} gave the same result ${n} times in a row although its arguments changed; nothing is progressing, try a different approach`;
/** The end-the-turn reason (the contract's text; the session id only where it is safe to paste). */
const STOP_REASON = (reason: string, session: string) =>
  `hermes-janitor tool-loop: a loop again after a warning in this turn (${reason}); the turn is ended. ` +
  `Run 'hermes-janitor tool-loop disarm --session ${/^[A-Za-z0-9_.:@-]{1,128}$/.test(session) ? session : '<id>'}' to let it run.`;

/** A session in the model: its calls since the last loop (newest last), what the last post found, its warning. */
interface ModelSession {
  calls: ModelEntry[];
  echo?: { tool: string; cls: string; count: number };
  warned: boolean;
  preIds: string[];
  counted: Set<string>;
  failures: Map<string, number>;
}

/**
 * The tool-loop over one home, from the documented contract: per session, the calls since the last loop, each with
 * its result once `post` reported one. Before a call: the call-only rule (threshold identical calls whose results are
 * unknown), identical calls that failed 3 times, identical calls whose last results were equal (the 4th), a poll past
 * 30, a cycle of 2 to 4 calls (cycleThreshold times) whose results at each position are equal, a tool whose
 * non-empty result repeated 4 times while its arguments changed. A second loop in a session (within 30 minutes)
 * ends the turn. After a call: each tool's consecutive failures, and the call ids already counted.
 */
class ToolLoopModel {
  private sessions = new Map<string, ModelSession>();
  constructor(
    readonly threshold: number,
    readonly failureThreshold: number,
    readonly cycleThreshold = 3,
  ) {}
  private session(id: string): ModelSession {
    let s = this.sessions.get(id);
    if (!s) this.sessions.set(id, (s = { calls: [], warned: false, preIds: [], counted: new Set(), failures: new Map() }));
    return s;
  }
  /** Reads a Claude-style payload; `other` for another event, `malformed` for one no dialect explains or a bad field. */
  private read(payload: unknown, hook: 'pre' | 'post'): ModelCall | 'other' | 'malformed' {
    if (!isObject(payload)) return 'malformed';
    const event = eventRole(payload);
    if (event === 'bad-type' || event === 'unknown') return 'malformed';
    const session = payload.session_id;
    if (!absent(session) && typeof session !== 'string') return 'malformed';
    const name = payload.hook_event_name as string;
    if (event === 'known' && TOOL_EVENTS[name] !== hook) return 'other';
    const tool = payload.tool_name;
    if (typeof tool !== 'string' || tool === '') return 'malformed';
    const r = payload.tool_response;
    const failed = isObject(r) && (Boolean(r.error) || r.is_error === true || r.isError === true || r.success === false);
    const failure = name === 'PostToolUseFailure';
    const outcome = failure ? (payload.is_interrupt === true ? 'neutral' : 'failure') : failed ? 'failure' : 'success';
    const callId = typeof payload.tool_use_id === 'string' && payload.tool_use_id !== '' ? payload.tool_use_id : undefined;
    const value = failure ? payload.error : payload.tool_response;
    const result = absent(value) ? undefined : { cls: resultDigest(value), empty: resultDigest(value) === EMPTY_RESULT };
    return { session: (session as string | null | undefined) || 'default', tool, input: payload.tool_input ?? null, outcome, callId, result };
  }
  pre(payload: unknown): { answer: Answer; malformed: boolean } {
    const c = this.read(payload, 'pre');
    if (c === 'malformed' || c === 'other') return { answer: undefined, malformed: c === 'malformed' };
    const v = this.decidePre(c);
    if (v === undefined) return { answer: undefined, malformed: false };
    const reason = v.stop ? STOP_REASON(v.reason, c.session) : v.reason;
    const deny = { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason } };
    return { answer: v.stop ? { continue: false, stopReason: reason, ...deny } : deny, malformed: false };
  }
  /** The key of a call: its tool and its arguments (key order and volatile parts do not matter). */
  private key(c: ModelCall): string {
    return `${c.tool}\u0000${maskArguments(JSON.stringify(sortKeys(c.input)) ?? 'null')}`;
  }
  /** The loop a call before it runs continues (its reason), or undefined. */
  private loop(s: ModelSession, c: ModelCall, key: string): string | undefined {
    const calls = [...s.calls, { tool: c.tool, key }];
    let streak = 0;
    while (streak < calls.length && calls[calls.length - 1 - streak]!.key === key && calls[calls.length - 1 - streak]!.tool === c.tool) streak++;
    const before = calls.slice(calls.length - streak, -1); // the streak's earlier calls, oldest first
    const last = before.at(-1);
    if (last !== undefined && last.result === undefined && streak >= this.threshold) return REPEAT(c.tool, streak);
    let failing = 0;
    while (failing < before.length && before[before.length - 1 - failing]!.failed === true) failing++;
    if (failing >= 3) return FAILING_AGAIN(c.tool, failing);
    let same = 0;
    const resultAt = (k: number) => before[before.length - 1 - k]!.result;
    while (same < before.length && resultAt(same) !== undefined && resultAt(same) === last?.result) same++;
    if (same > 0 && same + 1 >= 4) return SAME_RESULT(c.tool, streak);
    if (streak > 30)
      return (
        `${c.tool} called ${streak} times in a row with identical arguments: its result changed, but 30 polls in a row is the limit; ` +
        'wait differently or ask the user'
      );
    const recent = calls.slice(-4 * this.cycleThreshold);
    for (let len = 2; len <= 4; len++) {
      const tail = recent.slice(-len * this.cycleThreshold);
      if (tail.length < len * this.cycleThreshold || tail.slice(0, len).every((x) => x.key === tail[0]!.key)) continue;
      if (!tail.every((x, i) => x.key === tail[i % len]!.key)) continue;
      const known = tail.slice(0, -1);
      const atPosition = (p: number) => new Set(known.filter((x, i) => i % len === p && x.result !== undefined).map((x) => x.result));
      const changes = Array.from({ length: len }, (_, p) => atPosition(p)).some((set) => set.size > 1);
      if (changes) continue;
      const tools = tail.slice(-len).map((x) => x.tool);
      const withResults = known.some((x) => x.result !== undefined) ? ' with the same results' : '';
      return `the same ${len} calls (${tools.join(', ')}) repeated ${this.cycleThreshold} times in a row${withResults}; try a different approach`;
    }
    if (s.echo && s.echo.tool === c.tool && s.echo.count >= 4) return NO_PROGRESS(c.tool, s.echo.count);
    return undefined;
  }
  /** The verdict before a call, or undefined when the call is allowed. */
  decidePre(c: ModelCall): PreVerdict {
    const s = this.session(c.session || 'default');
    if (c.callId !== undefined && s.preIds.includes(c.callId)) return undefined; // the same call reported twice
    s.preIds = c.callId !== undefined ? [c.callId] : [];
    const key = this.key(c);
    const reason = this.loop(s, c, key);
    if (reason !== undefined) {
      const stop = s.warned;
      s.warned = true;
      s.calls = [];
      s.echo = undefined;
      return { reason, stop };
    }
    if (s.echo && s.echo.tool !== c.tool) s.echo = undefined;
    s.calls.push({ tool: c.tool, key });
    s.calls = s.calls.slice(-64);
    return undefined;
  }
  post(payload: unknown): { answer: Answer; malformed: boolean } {
    const c = this.read(payload, 'post');
    if (c === 'malformed' || c === 'other') return { answer: undefined, malformed: c === 'malformed' };
    const reason = this.decidePost(c);
    if (reason === undefined) return { answer: undefined, malformed: false };
    const event = isObject(payload) && payload.hook_event_name === 'PostToolUseFailure' ? 'PostToolUseFailure' : 'PostToolUse';
    const shape = { hookSpecificOutput: { hookEventName: event, additionalContext: reason } };
    return { answer: shape, malformed: false };
  }
  /** Keeps a finished call's result: on the streak's last call while it waits for one, and on the latest call of its key. */
  private keep(s: ModelSession, c: ModelCall, result: { cls: string; empty: boolean }): void {
    const key = this.key(c);
    const recent = s.calls.slice(-4 * this.cycleThreshold);
    const at = recent.map((x) => x.key).lastIndexOf(key);
    const entry = at >= 0 ? recent[at] : undefined;
    if (entry && entry.result === undefined) {
      entry.result = result.cls;
      entry.failed = c.outcome === 'failure';
    }
    // A tool that writes confirms each change alike: its successes never count as a result that stopped changing.
    const writes = /edit|write|replace|patch|create|insert|update|rename|move|delete|remove|mkdir|save/i.test(c.tool);
    if (result.empty || (writes && c.outcome !== 'failure')) s.echo = undefined;
    else
      s.echo =
        s.echo && s.echo.tool === c.tool && s.echo.cls === result.cls ? { ...s.echo, count: s.echo.count + 1 } : { tool: c.tool, cls: result.cls, count: 1 };
  }
  /** Whether a call id was already counted after its call (the same call reported twice). */
  hasCounted(session: string, callId: string): boolean {
    return this.session(session || 'default').counted.has(callId);
  }
  /** The failing reason, or undefined when there is nothing to say. */
  decidePost(c: ModelCall): string | undefined {
    const s = this.session(c.session || 'default');
    if (c.callId !== undefined) {
      if (s.counted.has(c.callId)) return undefined;
      s.counted.add(c.callId);
    }
    if (c.outcome === 'neutral') return undefined;
    if (c.result) this.keep(s, c, c.result);
    if (c.outcome === 'success') {
      s.failures.delete(c.tool);
      return undefined;
    }
    const count = (s.failures.get(c.tool) ?? 0) + 1;
    if (count >= this.failureThreshold) {
      s.failures.delete(c.tool);
      return `${c.tool} failed ${count} times in a row; change strategy`;
    }
    s.failures.set(c.tool, count);
    return undefined;
  }
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (isObject(v))
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys(v[k])]),
    );
  return v;
}

/** The same JSON value with object keys in another order, at every depth. */
function shuffleKeys(v: unknown, seed: number): unknown {
  if (Array.isArray(v)) return v.map((x, i) => shuffleKeys(x, seed + i));
  if (isObject(v)) {
    const entries = Object.entries(v);
    const k = seed % (entries.length || 1);
    return Object.fromEntries(
      entries
        .slice(k)
        .concat(entries.slice(0, k))
        .reverse()
        .map(([key, x], i) => [key, shuffleKeys(x, seed + i)]),
    );
  }
  return v;
}

/**
 * stdout is exactly the expected answer (one line) or nothing; stderr is only warning lines, exactly one when the
 * input was rejected as malformed and none otherwise.
 */
function checkAnswer(stdout: string, stderr: string, expected: { answer: Answer; malformed: boolean }, what: string, maxBlocks = 0, remaining = 0): void {
  for (const line of stderr.split('\n').filter(Boolean)) assert.match(line, /^hermes-janitor: warning: /, what);
  assert.equal(stderr.split('\n').filter(Boolean).length, expected.malformed ? 1 : 0, `${what}: stderr ${JSON.stringify(stderr)}`);
  if (expected.answer === undefined) {
    assert.equal(stdout, '', `${what}: no answer expected`);
    return;
  }
  assert.ok(stdout.endsWith('\n') && stdout.indexOf('\n') === stdout.length - 1, `${what}: one line: ${JSON.stringify(stdout)}`);
  const got = JSON.parse(stdout) as Record<string, unknown>;
  if (expected.answer.systemMessage === RELEASE) {
    assert.deepEqual(Object.keys(got), ['systemMessage'], what);
    const start =
      `hermes-janitor stop-hook: paused the run after ${maxBlocks} consecutive stops with no progress ` + `(no heartbeat, ${remaining} items still remain).`;
    assert.ok(String(got.systemMessage).startsWith(start), `${what}: ${stdout}`);
  } else {
    assert.deepEqual(got, expected.answer, what);
  }
}

/** Inputs: random bytes, random JSON, and hook-shaped objects with random field values. */
const anyValue = fc.oneof(fc.jsonValue(), fc.constant(undefined), fc.string(), fc.boolean(), fc.integer());
/** An event name: Claude Code's (mostly), none, one no dialect uses, or not a string. */
const eventName = (...likely: string[]) =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...likely), weight: 6 },
    { arbitrary: fc.constantFrom(...CLAUDE_EVENTS, undefined, null), weight: 3 },
    { arbitrary: fc.string().filter((e) => !ANY_DIALECT_EVENT.has(e)), weight: 1 },
    { arbitrary: anyValue.filter((e) => typeof e !== 'string'), weight: 1 },
  );
const hookShaped = fc.record(
  {
    session_id: fc.oneof(fc.constantFrom('s', '../../etc', '', 'default'), anyValue),
    transcript_path: anyValue,
    cwd: anyValue,
    hook_event_name: eventName('Stop', 'PreToolUse', 'PostToolUse', 'PostToolUseFailure', 'SubagentStop'),
    stop_hook_active: fc.oneof(fc.boolean(), anyValue),
    tool_name: fc.oneof(fc.constantFrom('Bash', 'Read', ''), anyValue),
    tool_input: anyValue,
    tool_response: fc.oneof(fc.constantFrom({ error: 'x' }, { is_error: true }, { success: false }, {}), anyValue),
    tool_use_id: fc.oneof(fc.constantFrom('toolu_1', 'toolu_2'), anyValue),
    is_interrupt: fc.oneof(fc.boolean(), anyValue),
  },
  { requiredKeys: [] },
);
const stdinBytes = fc.oneof(
  fc.uint8Array({ maxLength: 600 }),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  hookShaped.map((v) => JSON.stringify(v)),
  hookShaped.map((v) => `\uFEFF ${JSON.stringify(v)}\n\n`),
  fc.constantFrom('', '\n', 'null', '[]', '{', '{"session_id":', '\u0000\u0000', '{}{}'),
);
/** Mostly well-formed Stop inputs (the owner 's', other sessions, other events, stop_hook_active in every form). */
const stopShaped = fc.record(
  {
    session_id: fc.oneof({ arbitrary: fc.constant('s'), weight: 4 }, fc.constantFrom('t', '', null), anyValue),
    hook_event_name: eventName('Stop', 'SubagentStop'),
    stop_hook_active: fc.oneof({ arbitrary: fc.boolean(), weight: 4 }, fc.constant(null), anyValue),
    transcript_path: fc.oneof({ arbitrary: fc.constant('/tmp/t.jsonl'), weight: 4 }, anyValue),
    cwd: fc.oneof({ arbitrary: fc.constant('/work'), weight: 4 }, anyValue),
  },
  { requiredKeys: [] },
);
/** Mostly well-formed tool calls over a few sessions, tools, inputs and responses, so calls repeat, cycle and fail. */
const toolShaped = fc.record(
  {
    session_id: fc.oneof({ arbitrary: fc.constantFrom('s', 't', '', null), weight: 6 }, anyValue),
    hook_event_name: fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, eventName('PreToolUse', 'PostToolUse', 'PostToolUseFailure')),
    tool_name: fc.oneof({ arbitrary: fc.constantFrom('Bash', 'Read'), weight: 6 }, fc.constant(''), anyValue),
    tool_input: fc.oneof({ arbitrary: fc.constantFrom({ command: 'make' }, { command: 'make', cwd: '/w' }, null), weight: 4 }, fc.jsonValue()),
    tool_response: fc.oneof(
      {
        arbitrary: fc.constantFrom({ error: 'x' }, { is_error: true }, { isError: true }, { success: false }, {}, { error: '' }, { success: true }),
        weight: 6,
      },
      anyValue,
    ),
    tool_use_id: fc.option(fc.constantFrom('toolu_1', 'toolu_2', 'toolu_3'), { nil: undefined }),
    is_interrupt: fc.option(fc.boolean(), { nil: undefined }),
  },
  { requiredKeys: ['tool_name'] },
);

type Send = { stdin: Uint8Array | string } | { heartbeat: true };
/** A sequence of stdin bodies: garbage, shaped payloads, and repeats of the last payload (keys reordered, other whitespace). */
function sequence(shaped: fc.Arbitrary<Record<string, unknown>>, heartbeats: boolean): fc.Arbitrary<Send[]> {
  const step = fc.oneof(
    { arbitrary: stdinBytes.map((b) => ({ kind: 'raw' as const, b })), weight: 1 },
    { arbitrary: shaped.map((v) => ({ kind: 'json' as const, v })), weight: 4 },
    { arbitrary: fc.nat().map((seed) => ({ kind: 'repeat' as const, seed })), weight: 4 },
    // The same call again with another outcome (a failure after a success, a success after failures, ...).
    {
      arbitrary: fc
        .tuple(fc.nat(), fc.constantFrom({ error: 'x' }, { success: false }, {}, { success: true }))
        .map(([seed, response]) => ({ kind: 'again' as const, seed, response })),
      weight: 4,
    },
    { arbitrary: fc.constant({ kind: 'heartbeat' as const }), weight: heartbeats ? 1 : 0 },
  );
  return fc.array(step, { maxLength: 14 }).map((steps) => {
    let last: unknown = { tool_name: 'Bash' };
    return steps.map((st): Send => {
      if (st.kind === 'heartbeat') return { heartbeat: true };
      if (st.kind === 'raw') return { stdin: st.b };
      if (st.kind === 'json') last = JSON.parse(JSON.stringify(st.v)) as unknown;
      // Another call, so another id when the host sends ids (a call id already counted is never counted again).
      if (st.kind === 'again' && isObject(last))
        last = { ...last, tool_response: st.response, ...(last.tool_use_id === undefined ? {} : { tool_use_id: `again-${st.seed}` }) };
      const seed = st.kind === 'json' ? 0 : st.seed;
      const body = JSON.stringify(seed ? shuffleKeys(last, seed) : last, null, seed % 2 ? 1 : undefined);
      return { stdin: seed % 3 === 1 ? `\uFEFF\n${body} ` : body };
    });
  });
}

describe('hooks answer exactly what the contract says, for random stdin sequences (in process)', () => {
  const tmp = tempDir('hj-prop-');
  after(tmp.cleanup);
  let n = 0;
  const freshHome = () => path.join(tmp.dir, `home-${n++}`);

  it('stop-hook: blocks while armed and under the cap, releases at the cap, quiet otherwise', async () => {
    const seen = { block: 0, release: 0, quiet: 0 };
    await fc.assert(
      fc.asyncProperty(
        sequence(stopShaped, true),
        fc.integer({ min: 0, max: 3 }),
        fc.option(fc.constant('s'), { nil: undefined }),
        fc.integer({ min: 1, max: 4 }),
        async (sends, remaining, owner, maxBlocks) => {
          const home = freshHome();
          const armed = makeCtx(home, '');
          assert.equal(await main(['stop-hook', 'arm', '--remaining', String(remaining), ...(owner ? ['--owner', owner] : [])], armed.ctx), 0, armed.err());
          const model = new StopModel(remaining, owner, maxBlocks);
          for (const [i, send] of sends.entries()) {
            if ('heartbeat' in send) {
              const hb = makeCtx(home, '');
              assert.equal(await main(['stop-hook', 'heartbeat'], hb.ctx), 0, hb.err());
              model.heartbeat();
              continue;
            }
            const { ctx, out, err } = makeCtx(home, send.stdin);
            assert.equal(await main(['stop-hook', '--max-blocks', String(maxBlocks)], ctx), 0);
            const expected = model.stop(stdinPayload(send.stdin));
            checkAnswer(out(), err(), expected, `step ${i}: ${JSON.stringify(String(send.stdin)).slice(0, 200)}`, maxBlocks, remaining);
            seen[expected.answer === undefined ? 'quiet' : expected.answer.decision === 'block' ? 'block' : 'release']++;
          }
        },
      ),
      { numRuns: RUNS },
    );
    assert.ok(seen.block > 0 && seen.release > 0 && seen.quiet > 0, `every outcome exercised: ${JSON.stringify(seen)}`);
  });

  for (const event of ['pre', 'post'] as const) {
    it(
      `tool-loop ${event}: ${event === 'pre' ? 'denies the threshold-th identical call in a row' : 'blocks at the threshold-th failure in a row'}` +
        `, quiet otherwise`,
      async () => {
        let answered = 0;
        let quiet = 0;
        await fc.assert(
          fc.asyncProperty(
            sequence(toolShaped, false),
            fc.integer({ min: 2, max: 3 }),
            fc.integer({ min: 1, max: 3 }),
            async (sends, threshold, failureThreshold) => {
              const home = freshHome();
              const model = new ToolLoopModel(threshold, failureThreshold);
              for (const [i, send] of sends.entries()) {
                if (!('stdin' in send)) continue;
                const { ctx, out, err } = makeCtx(home, send.stdin);
                const args =
                  event === 'pre'
                    ? ['tool-loop', 'pre', '--threshold', String(threshold)]
                    : ['tool-loop', 'post', '--failure-threshold', String(failureThreshold)];
                assert.equal(await main(args, ctx), 0);
                const expected = model[event](stdinPayload(send.stdin));
                checkAnswer(out(), err(), expected, `step ${i}: ${JSON.stringify(String(send.stdin)).slice(0, 200)}`);
                if (expected.answer) answered++;
                else quiet++;
              }
            },
          ),
          { numRuns: RUNS },
        );
        assert.ok(answered > 0 && quiet > 0, `both outcomes exercised: ${answered} answered, ${quiet} quiet`);
      },
    );
  }

  it('the in-process breakers answer the same on any input value, and never throw', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(anyValue, hookShaped, stopShaped, toolShaped), { maxLength: 12 }), async (inputs) => {
        const hook = createStopHook({ store: new MemoryStateStore({ remaining: 2 }), maxBlocks: 2 });
        const loop = createToolLoop({ store: new MemoryToolLoopStore(), threshold: 2, failureThreshold: 1 });
        const stops = new StopModel(2, undefined, 2);
        const tools = new ToolLoopModel(2, 1);
        // Each value twice in a row, so repeats reach the threshold.
        for (const input of inputs.flatMap((v) => [v, v])) {
          const s = await hook.decide(input as never);
          const want = stops.stop(input);
          if (want.answer?.systemMessage === RELEASE)
            assert.match(String((s.output as { systemMessage?: unknown })?.systemMessage), /^hermes-janitor stop-hook: paused the run after 2 /);
          else assert.deepEqual(s.output, want.answer);
          assert.deepEqual((await loop.pre(input as never)).output, tools.pre(input).answer);
          assert.deepEqual((await loop.post(input as never)).output, tools.post(input).answer);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

/*
 * The same decisions whatever the dialect: a sequence of tool calls and stops, dialect-free, is sent as each agent
 * sends it (the shapes of test/fixtures/hook-dialects); each answer must be that agent's shape of the decision the
 * model above takes for the same calls. A step a dialect cannot express (Codex, Gemini, Copilot and Cursor send no
 * "interrupted" outcome; Copilot, Gemini and Cursor no call id; Copilot no "follows a block") is left out for it.
 */
type Step =
  | { kind: 'pre'; session: string; tool: string; input: unknown }
  | { kind: 'post'; session: string; tool: string; input: unknown; outcome: 'success' | 'failure' | 'neutral'; callId: string }
  | { kind: 'stop'; session: string; active?: boolean }
  | { kind: 'heartbeat' };

const CARRIES_CALL_ID = new Set<Dialect>(['claude', 'codex', 'qwen', 'hermes']);

/** An input as `dialect` sends it for a step (its event, when the answer depends on it), or undefined. */
function render(
  d: Dialect,
  st: Exclude<Step, { kind: 'heartbeat' }>,
  i: number,
): { payload: Record<string, unknown>; event: string; active?: boolean } | undefined {
  const ts = '2026-11-22T10:00:00.000Z';
  const extra = (d === 'codex' ? { model: 'gpt-5', turn_id: 'turn-1' } : d === 'qwen' ? { timestamp: ts } : {}) as Record<string, unknown>;
  if (st.kind === 'stop') {
    const active = st.active;
    switch (d) {
      case 'claude':
      case 'codex':
      case 'qwen':
        return {
          payload: { session_id: st.session, cwd: '/w', hook_event_name: 'Stop', ...extra, ...(active === undefined ? {} : { stop_hook_active: active }) },
          event: 'Stop',
          active,
        };
      case 'gemini':
        return {
          payload: {
            session_id: st.session,
            timestamp: ts,
            hook_event_name: 'AfterAgent',
            prompt: 'p',
            prompt_response: 'r',
            ...(active === undefined ? {} : { stop_hook_active: active }),
          },
          event: 'AfterAgent',
          active,
        };
      case 'copilot':
        return {
          payload: { sessionId: st.session, timestamp: 1, cwd: '/w', transcriptPath: '/t', stopReason: 'end_turn' },
          event: 'agentStop',
          active: undefined,
        };
      case 'cursor':
        return {
          payload: {
            conversation_id: st.session,
            hook_event_name: 'stop',
            status: 'completed',
            ...(active === undefined ? {} : { loop_count: active ? 1 : 0 }),
          },
          event: 'stop',
          active,
        };
      case 'hermes':
        return {
          payload: {
            hook_event_name: 'pre_verify',
            tool_name: null,
            tool_input: null,
            session_id: st.session,
            cwd: '/w',
            extra: active === undefined ? {} : { attempt: active ? 1 : 0 },
          },
          event: 'pre_verify',
          active,
        };
    }
  }
  const { session, tool, input } = st;
  const id = st.kind === 'post' ? st.callId : `pre-${i}`;
  if (st.kind === 'pre') {
    switch (d) {
      case 'claude':
      case 'codex':
      case 'qwen':
        return {
          payload: { session_id: session, hook_event_name: 'PreToolUse', tool_name: tool, tool_input: input, tool_use_id: id, ...extra },
          event: 'PreToolUse',
        };
      case 'gemini':
        return { payload: { session_id: session, timestamp: ts, hook_event_name: 'BeforeTool', tool_name: tool, tool_input: input }, event: 'BeforeTool' };
      case 'copilot':
        return { payload: { sessionId: session, timestamp: 1, cwd: '/w', toolName: tool, toolArgs: JSON.stringify(input) }, event: 'preToolUse' };
      case 'cursor':
        return {
          payload: { conversation_id: session, hook_event_name: 'beforeMCPExecution', tool_name: tool, tool_input: JSON.stringify(input) },
          event: 'beforeMCPExecution',
        };
      case 'hermes':
        return {
          payload: { hook_event_name: 'pre_tool_call', tool_name: tool, tool_input: input, session_id: session, extra: { tool_call_id: id } },
          event: 'pre_tool_call',
        };
    }
  }
  const { outcome } = st;
  switch (d) {
    case 'claude':
    case 'qwen': {
      if (outcome === 'success')
        return {
          payload: {
            session_id: session,
            hook_event_name: 'PostToolUse',
            tool_name: tool,
            tool_input: input,
            tool_response: { ok: 1 },
            tool_use_id: id,
            ...extra,
          },
          event: 'PostToolUse',
        };
      const payload = {
        session_id: session,
        hook_event_name: 'PostToolUseFailure',
        tool_name: tool,
        tool_input: input,
        tool_use_id: id,
        error: 'boom',
        is_interrupt: outcome === 'neutral',
        ...extra,
      };
      return { payload, event: 'PostToolUseFailure' };
    }
    case 'codex':
      if (outcome === 'neutral') return undefined;
      return {
        payload: {
          session_id: session,
          hook_event_name: 'PostToolUse',
          tool_name: tool,
          tool_input: input,
          tool_response: outcome === 'failure' ? { error: 'boom' } : 'ok',
          tool_use_id: id,
          ...extra,
        },
        event: 'PostToolUse',
      };
    case 'gemini':
      if (outcome === 'neutral') return undefined;
      return {
        payload: {
          session_id: session,
          timestamp: ts,
          hook_event_name: 'AfterTool',
          tool_name: tool,
          tool_input: input,
          tool_response: { llmContent: 'x', returnDisplay: 'x', ...(outcome === 'failure' ? { error: { message: 'boom' } } : {}) },
        },
        event: 'AfterTool',
      };
    case 'copilot':
      if (outcome === 'neutral') return undefined;
      if (outcome === 'failure')
        return {
          payload: { sessionId: session, timestamp: 1, cwd: '/w', toolName: tool, toolArgs: JSON.stringify(input), error: 'boom' },
          event: 'postToolUseFailure',
        };
      return {
        payload: {
          sessionId: session,
          timestamp: 1,
          cwd: '/w',
          toolName: tool,
          toolArgs: JSON.stringify(input),
          toolResult: { resultType: 'success', textResultForLlm: 'x' },
        },
        event: 'postToolUse',
      };
    case 'cursor':
      if (outcome === 'neutral') return undefined;
      return {
        payload: {
          conversation_id: session,
          hook_event_name: 'afterMCPExecution',
          tool_name: tool,
          tool_input: JSON.stringify(input),
          result_json: outcome === 'failure' ? '{"isError":true}' : '{"content":[]}',
        },
        event: 'afterMCPExecution',
      };
    case 'hermes':
      return {
        payload: {
          hook_event_name: 'post_tool_call',
          tool_name: tool,
          tool_input: input,
          session_id: session,
          extra: { tool_call_id: id, status: { success: 'ok', failure: 'error', neutral: 'blocked' }[outcome] },
        },
        event: 'post_tool_call',
      };
  }
}

/**
 * What each dialect's post reports of a step's result, as the model compares results: a class of equal results (and
 * whether it says nothing), or undefined where the agent gives nothing to compare (hermes' post_tool_call without
 * `extra.result`). Cursor's `{"content":[]}` and `{"isError":true}` both say nothing.
 */
function resultOfStep(d: Dialect, outcome: 'success' | 'failure' | 'neutral'): { cls: string; empty: boolean } | undefined {
  if (d === 'hermes') return undefined;
  if (d === 'cursor') return { cls: EMPTY_RESULT, empty: true };
  return { cls: `${outcome}`, empty: false };
}

/**
 * The answer before a call for a verdict of the model: nothing, the deny (a warning), or the end of the turn: the
 * dialect's end-the-turn answer where it has one before a call, else the deny with the stop reason (and, for Codex and
 * Copilot CLI, the end of the turn pending for the next event that can say it).
 */
function expectedBefore(d: Dialect, event: string, session: string, verdict: PreVerdict, pending: Map<string, string>): FixtureAnswer | undefined {
  if (verdict === undefined) return undefined;
  const shapes = shapeOf(d, 'pre', event);
  if (!verdict.stop) return shapes.deny!(verdict.reason);
  const reason = STOP_REASON(verdict.reason, session || 'default');
  const end = shapes.endTurn?.(reason);
  if (end !== undefined && end !== 'none') return end;
  if (d === 'codex' || d === 'copilot') pending.set(session || 'default', reason);
  return shapes.deny!(reason);
}

/** After a call: the turn ended here when it was pending for this session and the dialect can say it at this event. */
function endedAfter(d: Dialect, event: string, session: string, pending: Map<string, string>): FixtureAnswer | undefined {
  const reason = pending.get(session || 'default');
  if (reason === undefined) return undefined;
  const end = shapeOf(d, 'post', event).endTurn?.(reason);
  if (end === undefined || end === 'none') return undefined;
  pending.delete(session || 'default');
  return end;
}

/** The answer shape `dialect` accepts for a decision on `event` (from the fixtures). */
function shapeOf(d: Dialect, hook: 'pre' | 'post' | 'stop', event: string) {
  const f =
    FIXTURES.find((x) => x.dialect === d && x.hook === hook && (hook !== 'post' || x.reading.event === event)) ??
    FIXTURES.find((x) => x.dialect === d && x.hook === hook);
  assert.ok(f, `a ${d} ${hook} fixture`);
  return f.answer;
}

const canonicalStep = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('pre' as const),
      session: fc.constantFrom('s', 't'),
      tool: fc.constantFrom('Bash', 'Read'),
      input: fc.constantFrom({ command: 'make' }, { command: 'make test' }, null),
    }),
    weight: 5,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('post' as const),
      session: fc.constantFrom('s', 't'),
      tool: fc.constantFrom('Bash', 'Read'),
      input: fc.constant({ command: 'make' }),
      outcome: fc.constantFrom('success', 'failure', 'failure', 'failure', 'neutral'),
      callId: fc.constantFrom('c1', 'c2', 'c3', 'c4', 'c5', 'c6'),
    }),
    weight: 5,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('stop' as const),
      session: fc.constantFrom('s', 's', 't'),
      active: fc.constantFrom(true, true, undefined, false),
    }),
    weight: 6,
  },
  { arbitrary: fc.constant({ kind: 'heartbeat' as const }), weight: 1 },
);
/** Steps, each sent 1 to 3 times in a row (a call repeated; a failure again, as another call or reported twice). */
const canonicalSteps = fc
  .array(fc.tuple(canonicalStep, fc.integer({ min: 1, max: 3 }), fc.boolean()), { maxLength: 10 })
  .map((groups) =>
    groups.flatMap(([st, times, sameId]) =>
      Array.from({ length: times }, (_, k): Step => (st.kind === 'post' && !sameId ? { ...st, callId: `${st.callId}-${k}` } : st)),
    ),
  );

/** What the CLI printed, against an expected answer; `release`: the systemMessage is checked by its start. */
function checkShape(r: { code: number; stdout: string; stderr: string }, want: FixtureAnswer | undefined, what: string, releaseStart?: string): void {
  if (want === undefined || want === 'none') {
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, '', ''], what);
  } else if ('exitCode' in want) {
    assert.deepEqual([r.code, r.stdout, r.stderr], [2, '', `${want.stderr}\n`], what);
  } else {
    assert.equal(r.code, 0, what);
    assert.equal(r.stderr, '', what);
    const got = JSON.parse(r.stdout) as Record<string, unknown>;
    if (releaseStart === undefined) {
      assert.equal(r.stdout, `${JSON.stringify(want.stdout)}\n`, what);
    } else {
      assert.deepEqual(Object.keys(got), Object.keys(want.stdout), what);
      assert.ok(String(got.systemMessage).startsWith(releaseStart), `${what}: ${r.stdout}`);
    }
  }
}

describe('the same decisions whatever the dialect; only the wire shape differs (in process)', () => {
  const tmp = tempDir('hj-prop-dialect-');
  after(tmp.cleanup);
  let n = 0;
  const seen = new Map<string, number>();
  const count = (key: string) => seen.set(key, (seen.get(key) ?? 0) + 1);

  /** Runs `hermes-janitor ARGS` in process with `payload` on stdin. */
  async function hook(home: string, args: string[], payload: unknown) {
    const { ctx, out, err } = makeCtx(home, JSON.stringify(payload));
    const code = await main(args, ctx);
    return { code, stdout: out(), stderr: err() };
  }

  it('every dialect: denies, reports failures, holds and releases exactly where the model does', async () => {
    await fc.assert(
      fc.asyncProperty(
        canonicalSteps,
        fc.integer({ min: 1, max: 3 }),
        fc.option(fc.constant('s'), { nil: undefined }),
        fc.boolean(),
        async (steps, remaining, owner, given) => {
          for (const d of DIALECTS) {
            const home = path.join(tmp.dir, `home-${n++}`);
            const { ctx } = makeCtx(home, '');
            assert.equal(await main(['stop-hook', 'arm', '--remaining', String(remaining), ...(owner ? ['--owner', owner] : [])], ctx), 0);
            const tools = new ToolLoopModel(2, 2, 2);
            const stops = new StopModel(remaining, owner, 2);
            const pendingStops = new Map<string, string>();
            const dialect = given ? ['--dialect', d] : [];
            for (const [i, st] of steps.entries()) {
              const what = `${d} step ${i} ${JSON.stringify(st)}`;
              if (st.kind === 'heartbeat') {
                assert.equal(await main(['stop-hook', 'heartbeat'], makeCtx(home, '').ctx), 0);
                stops.heartbeat();
                continue;
              }
              const sent = render(d, st, i);
              if (!sent) continue;
              if (st.kind === 'pre') {
                const verdict = tools.decidePre({ ...st, callId: CARRIES_CALL_ID.has(d) ? `pre-${i}` : undefined });
                const r = await hook(home, ['tool-loop', 'pre', '--threshold', '2', '--cycle-threshold', '2', ...dialect], sent.payload);
                checkShape(r, expectedBefore(d, sent.event, st.session, verdict, pendingStops), what);
                count(`${d} ${verdict ? (verdict.stop ? 'stop' : 'deny') : 'allow'}`);
              } else if (st.kind === 'post') {
                const callId = CARRIES_CALL_ID.has(d) ? st.callId : undefined;
                const again = callId !== undefined && tools.hasCounted(st.session, callId);
                const reason = tools.decidePost({ ...st, callId, result: resultOfStep(d, st.outcome) });
                const r = await hook(home, ['tool-loop', 'post', '--failure-threshold', '2', ...dialect], sent.payload);
                const ended = again ? undefined : endedAfter(d, sent.event, st.session, pendingStops);
                checkShape(r, ended ?? (reason === undefined ? undefined : shapeOf(d, 'post', sent.event).failing!(reason)), what);
                count(`${d} ${reason ? 'failing' : 'quiet'}`);
              } else {
                const want = stops.decide(true, st.session, sent.active);
                const r = await hook(home, ['stop-hook', '--max-blocks', '2', ...dialect], sent.payload);
                const answers = shapeOf(d, 'stop', sent.event);
                if (want.answer === undefined) checkShape(r, undefined, what);
                else if (want.answer.decision === 'block') checkShape(r, answers.keepGoing!(String(want.answer.reason)), what);
                else
                  checkShape(
                    r,
                    answers.release!('hermes-janitor stop-hook: '),
                    what,
                    `hermes-janitor stop-hook: paused the run after 2 consecutive stops with no progress (no heartbeat, ${remaining} items still remain).`,
                  );
                count(`${d} ${want.answer === undefined ? 'stops' : want.answer.decision === 'block' ? 'block' : 'release'}`);
              }
            }
          }
        },
      ),
      { numRuns: Math.max(25, Math.round(RUNS / 4)) },
    );
    for (const d of DIALECTS) {
      for (const outcome of ['deny', 'allow', 'failing', 'quiet', 'block', 'release'])
        assert.ok((seen.get(`${d} ${outcome}`) ?? 0) > 0, `${d} ${outcome} exercised: ${JSON.stringify([...seen])}`);
    }
  });
});

describe('hook properties', () => {
  it('the signature does not depend on key order, and canonical JSON round-trips', () => {
    const shuffle = (v: unknown, seed: number): unknown => {
      if (Array.isArray(v)) return v.map((x, i) => shuffle(x, seed + i));
      if (v && typeof v === 'object') {
        const entries = Object.entries(v);
        const rotated = entries
          .slice(seed % (entries.length || 1))
          .concat(entries.slice(0, seed % (entries.length || 1)))
          .reverse();
        return Object.fromEntries(rotated.map(([k, x], i) => [k, shuffle(x, seed + i)]));
      }
      return v;
    };
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), (v, seed) => {
        assert.equal(callSignature('T', shuffle(v, seed)), callSignature('T', v));
        assert.deepEqual(JSON.parse(canonicalJson(v)), JSON.parse(JSON.stringify(v)));
        assert.ok(!/\n/.test(canonicalJson(v)));
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it('stop-hook never holds a session more than maxBlocks times in a row without progress, and holds it again after progress', async () => {
    const event = fc.oneof(
      fc.record({ kind: fc.constant('stop' as const), active: fc.option(fc.boolean(), { nil: undefined }) }),
      fc.record({ kind: fc.constant('beat' as const), fewer: fc.boolean() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.array(event, { maxLength: 40 }), async (maxBlocks, events) => {
        const hook = createStopHook({ store: new MemoryStateStore(), maxBlocks });
        await hook.arm({ remaining: 1000 });
        let streak = 0; // blocks since the last progress or fresh stop
        let progress = false;
        for (const e of events) {
          if (e.kind === 'beat') {
            const m = await hook.heartbeat(e.fewer ? { remaining: 999 - streak } : {});
            assert.ok(m);
            progress = true;
            continue;
          }
          const r = await hook.decide({ session_id: 's', ...(e.active === undefined ? {} : { stop_hook_active: e.active }) });
          if (progress || e.active === false) streak = 0;
          progress = false;
          if (r.action === 'block') {
            streak++;
            assert.ok(streak <= maxBlocks, `blocked ${streak} times in a row with max ${maxBlocks}`);
          } else {
            assert.equal(r.action, 'release');
            assert.equal(streak, maxBlocks, 'released only at the cap');
            streak = 0;
          }
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe('hooks answer exactly what the contract says (spawned, built CLI)', () => {
  const tmp = tempDir('hj-prop-cli-');
  after(tmp.cleanup);
  const body = (b: Uint8Array | string) => (typeof b === 'string' ? b : Buffer.from(b));
  const fixed: Send[] = [
    { stdin: '\u00ff\u00fe garbage' },
    { stdin: '{"session_id": 1}' },
    { stdin: '{"session_id":"s","tool_name":"Bash","tool_input":{"a":1,"b":2},"tool_response":{"error":"x"}}' },
    { stdin: '\uFEFF {"tool_response":{"error":"x"},"tool_input":{"b":2,"a":1},"tool_name":"Bash","session_id":"s"}\n' },
    { stdin: '{"session_id":"s","tool_name":"Bash","tool_input":{"a":1,"b":2},"tool_response":{"error":"x"}}' },
    { stdin: '{"session_id":"s","hook_event_name":"Banana","tool_name":"Bash"}' },
  ];

  it('stop-hook over a random and a fixed sequence (arm --remaining 2 --owner s, --max-blocks 2)', async () => {
    const seqs = [...fc.sample(sequence(stopShaped, true), { numRuns: 1, seed: 42 }), fixed];
    for (const [k, seq] of seqs.entries()) {
      const env = { HERMES_HOME: path.join(tmp.dir, `stop-${k}`) };
      const arm = await runCli(['stop-hook', 'arm', '--remaining', '2', '--owner', 's'], { env });
      assert.equal(arm.code, 0, arm.stderr);
      const model = new StopModel(2, 's', 2);
      for (const [i, send] of seq.entries()) {
        if ('heartbeat' in send) {
          assert.equal((await runCli(['stop-hook', 'heartbeat'], { env })).code, 0);
          model.heartbeat();
          continue;
        }
        const r = await runCli(['stop-hook', '--max-blocks', '2'], { input: body(send.stdin), env });
        assert.equal(r.code, 0, r.stderr);
        checkAnswer(r.stdout, r.stderr, model.stop(stdinPayload(send.stdin)), `sequence ${k} step ${i}`, 2, 2);
      }
    }
  });

  for (const event of ['pre', 'post'] as const) {
    it(`tool-loop ${event} over a random and a fixed sequence (thresholds 2)`, async () => {
      const seqs = [...fc.sample(sequence(toolShaped, false), { numRuns: 1, seed: 42 }), fixed];
      for (const [k, seq] of seqs.entries()) {
        const env = { HERMES_HOME: path.join(tmp.dir, `${event}-${k}`) };
        const model = new ToolLoopModel(2, 2);
        for (const [i, send] of seq.entries()) {
          if (!('stdin' in send)) continue;
          const args = event === 'pre' ? ['tool-loop', 'pre', '--threshold', '2'] : ['tool-loop', 'post', '--failure-threshold', '2'];
          const r = await runCli(args, { input: body(send.stdin), env });
          assert.equal(r.code, 0, r.stderr);
          checkAnswer(r.stdout, r.stderr, model[event](stdinPayload(send.stdin)), `sequence ${k} step ${i}`);
        }
      }
    });
  }
});
