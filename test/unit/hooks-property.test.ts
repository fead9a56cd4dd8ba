/**
 * Property tests: whatever arrives on stdin, in whatever order, the hooks exit 0 and print exactly the answer the
 * contract demands (computed by a reference model below: a block, a deny, a release, or nothing) and a warning
 * only for malformed input; the stop-hook never holds a session more than --max-blocks times in a row without
 * progress.
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
import { callSignature, canonicalJson } from '../../src/core/tool-loop.js';
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
  const text = Buffer.from(input).toString('utf8').replace(/^\uFEFF/, '').trim();
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
    for (const k of ['session_id', 'hook_event_name', 'transcript_path', 'cwd']) {
      if (!absent(payload[k]) && typeof payload[k] !== 'string') return { answer: undefined, malformed: true };
    }
    const active = payload.stop_hook_active;
    if (!absent(active) && typeof active !== 'boolean') return { answer: undefined, malformed: true };
    const quiet = { answer: undefined, malformed: false };
    if (typeof payload.hook_event_name === 'string' && payload.hook_event_name !== 'Stop') return quiet;
    if (this.remaining <= 0) return quiet;
    const session = typeof payload.session_id === 'string' && payload.session_id !== '' ? payload.session_id : undefined;
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

/** The tool-loop over one home: per session, the streak of identical calls and each tool's consecutive failures. */
class ToolLoopModel {
  private streaks = new Map<string, { signature: string; count: number }>();
  private failures = new Map<string, Map<string, number>>();
  constructor(
    readonly threshold: number,
    readonly failureThreshold: number,
  ) {}
  private call(payload: unknown) {
    if (!isObject(payload)) return undefined;
    const tool = payload.tool_name;
    const session = payload.session_id;
    if (typeof tool !== 'string' || tool === '' || (!absent(session) && typeof session !== 'string')) return undefined;
    return { session: (session as string | null | undefined) || 'default', tool, input: payload.tool_input ?? null, response: payload.tool_response };
  }
  pre(payload: unknown): { answer: Answer; malformed: boolean } {
    const c = this.call(payload);
    if (!c) return { answer: undefined, malformed: true };
    // Identical: the same tool and the same JSON value (object key order does not matter).
    const signature = `${c.tool}\u0000${JSON.stringify(sortKeys(c.input))}`;
    const prev = this.streaks.get(c.session);
    const count = prev?.signature === signature ? prev.count + 1 : 1;
    if (count >= this.threshold) {
      this.streaks.delete(c.session);
      const reason = `${c.tool} called ${count} times in a row with identical arguments; try a different approach`;
      return { answer: { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason } }, malformed: false };
    }
    this.streaks.set(c.session, { signature, count });
    return { answer: undefined, malformed: false };
  }
  post(payload: unknown): { answer: Answer; malformed: boolean } {
    const c = this.call(payload);
    if (!c) return { answer: undefined, malformed: true };
    const r = c.response;
    const failed = isObject(r) && (Boolean(r.error) || r.is_error === true || r.isError === true || r.success === false);
    const counts = this.failures.get(c.session) ?? new Map<string, number>();
    this.failures.set(c.session, counts);
    if (!failed) {
      counts.delete(c.tool);
      return { answer: undefined, malformed: false };
    }
    const count = (counts.get(c.tool) ?? 0) + 1;
    if (count >= this.failureThreshold) {
      counts.delete(c.tool);
      return { answer: { decision: 'block', reason: `${c.tool} failed ${count} times in a row; change strategy` }, malformed: false };
    }
    counts.set(c.tool, count);
    return { answer: undefined, malformed: false };
  }
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (isObject(v)) return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
  return v;
}

/** The same JSON value with object keys in another order, at every depth. */
function shuffleKeys(v: unknown, seed: number): unknown {
  if (Array.isArray(v)) return v.map((x, i) => shuffleKeys(x, seed + i));
  if (isObject(v)) {
    const entries = Object.entries(v);
    const k = seed % (entries.length || 1);
    return Object.fromEntries(entries.slice(k).concat(entries.slice(0, k)).reverse().map(([key, x], i) => [key, shuffleKeys(x, seed + i)]));
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
    const start = `hermes-janitor stop-hook: paused the run after ${maxBlocks} consecutive stops with no progress (no heartbeat, ${remaining} items still remain).`;
    assert.ok(String(got.systemMessage).startsWith(start), `${what}: ${stdout}`);
  } else {
    assert.deepEqual(got, expected.answer, what);
  }
}

/** Inputs: random bytes, random JSON, and hook-shaped objects with random field values. */
const anyValue = fc.oneof(fc.jsonValue(), fc.constant(undefined), fc.string(), fc.boolean(), fc.integer());
const hookShaped = fc.record(
  {
    session_id: fc.oneof(fc.constantFrom('s', '../../etc', '', 'default'), anyValue),
    transcript_path: anyValue,
    cwd: anyValue,
    hook_event_name: fc.oneof(fc.constantFrom('Stop', 'PreToolUse', 'PostToolUse', 'SubagentStop'), anyValue),
    stop_hook_active: fc.oneof(fc.boolean(), anyValue),
    tool_name: fc.oneof(fc.constantFrom('Bash', 'Read', ''), anyValue),
    tool_input: anyValue,
    tool_response: fc.oneof(fc.constantFrom({ error: 'x' }, { is_error: true }, { success: false }, {}), anyValue),
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
    hook_event_name: fc.oneof({ arbitrary: fc.constant('Stop'), weight: 4 }, fc.constantFrom('SubagentStop', null), anyValue),
    stop_hook_active: fc.oneof({ arbitrary: fc.boolean(), weight: 4 }, fc.constant(null), anyValue),
    transcript_path: fc.oneof({ arbitrary: fc.constant('/tmp/t.jsonl'), weight: 4 }, anyValue),
    cwd: fc.oneof({ arbitrary: fc.constant('/work'), weight: 4 }, anyValue),
  },
  { requiredKeys: [] },
);
/** Mostly well-formed tool calls over a few sessions, tools, inputs and responses, so calls repeat and fail. */
const toolShaped = fc.record(
  {
    session_id: fc.oneof({ arbitrary: fc.constantFrom('s', 't', '', null), weight: 6 }, anyValue),
    tool_name: fc.oneof({ arbitrary: fc.constantFrom('Bash', 'Read'), weight: 6 }, fc.constant(''), anyValue),
    tool_input: fc.oneof({ arbitrary: fc.constantFrom({ command: 'make' }, { command: 'make', cwd: '/w' }, null), weight: 4 }, fc.jsonValue()),
    tool_response: fc.oneof(
      { arbitrary: fc.constantFrom({ error: 'x' }, { is_error: true }, { isError: true }, { success: false }, {}, { error: '' }, { success: true }), weight: 6 },
      anyValue,
    ),
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
    { arbitrary: fc.tuple(fc.nat(), fc.constantFrom({ error: 'x' }, { success: false }, {}, { success: true })).map(([seed, response]) => ({ kind: 'again' as const, seed, response })), weight: 4 },
    { arbitrary: fc.constant({ kind: 'heartbeat' as const }), weight: heartbeats ? 1 : 0 },
  );
  return fc.array(step, { maxLength: 14 }).map((steps) => {
    let last: unknown = { tool_name: 'Bash' };
    return steps.map((st): Send => {
      if (st.kind === 'heartbeat') return { heartbeat: true };
      if (st.kind === 'raw') return { stdin: st.b };
      if (st.kind === 'json') last = JSON.parse(JSON.stringify(st.v)) as unknown;
      if (st.kind === 'again' && isObject(last)) last = { ...last, tool_response: st.response };
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
    it(`tool-loop ${event}: ${event === 'pre' ? 'denies the threshold-th identical call in a row' : 'blocks at the threshold-th failure in a row'}, quiet otherwise`, async () => {
      let answered = 0;
      let quiet = 0;
      await fc.assert(
        fc.asyncProperty(sequence(toolShaped, false), fc.integer({ min: 2, max: 3 }), fc.integer({ min: 1, max: 3 }), async (sends, threshold, failureThreshold) => {
          const home = freshHome();
          const model = new ToolLoopModel(threshold, failureThreshold);
          for (const [i, send] of sends.entries()) {
            if (!('stdin' in send)) continue;
            const { ctx, out, err } = makeCtx(home, send.stdin);
            const args = event === 'pre' ? ['tool-loop', 'pre', '--threshold', String(threshold)] : ['tool-loop', 'post', '--failure-threshold', String(failureThreshold)];
            assert.equal(await main(args, ctx), 0);
            const expected = model[event](stdinPayload(send.stdin));
            checkAnswer(out(), err(), expected, `step ${i}: ${JSON.stringify(String(send.stdin)).slice(0, 200)}`);
            if (expected.answer) answered++;
            else quiet++;
          }
        }),
        { numRuns: RUNS },
      );
      assert.ok(answered > 0 && quiet > 0, `both outcomes exercised: ${answered} answered, ${quiet} quiet`);
    });
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
          if (want.answer?.systemMessage === RELEASE) assert.match(String((s.output as { systemMessage?: unknown })?.systemMessage), /^hermes-janitor stop-hook: paused the run after 2 /);
          else assert.deepEqual(s.output, want.answer);
          assert.deepEqual((await loop.pre(input as never)).output, tools.pre(input).answer);
          assert.deepEqual((await loop.post(input as never)).output, tools.post(input).answer);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe('hook properties', () => {
  it('the signature does not depend on key order, and canonical JSON round-trips', () => {
    const shuffle = (v: unknown, seed: number): unknown => {
      if (Array.isArray(v)) return v.map((x, i) => shuffle(x, seed + i));
      if (v && typeof v === 'object') {
        const entries = Object.entries(v);
        const rotated = entries.slice(seed % (entries.length || 1)).concat(entries.slice(0, seed % (entries.length || 1))).reverse();
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
    { stdin: '{"session_id":"s","hook_event_name":"Stop","tool_name":"Bash","tool_input":{"a":1,"b":2},"tool_response":{"error":"x"}}' },
    { stdin: '\uFEFF {"tool_response":{"error":"x"},"tool_input":{"b":2,"a":1},"tool_name":"Bash","hook_event_name":"Stop","session_id":"s"}\n' },
    { stdin: '{"session_id":"s","hook_event_name":"Stop","tool_name":"Bash","tool_input":{"a":1,"b":2},"tool_response":{"error":"x"}}' },
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
