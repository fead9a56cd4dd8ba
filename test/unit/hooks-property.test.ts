/**
 * Property tests: the hooks never crash, always exit 0 and only ever print a valid answer, whatever arrives on
 * stdin; the stop-hook never holds a session more than --max-blocks times in a row without progress.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { MemoryStateStore } from '../../src/adapters/state-file.js';
import { createStopHook } from '../../src/breakers/stop-hook.js';
import { MemoryToolLoopStore, createToolLoop } from '../../src/breakers/tool-loop.js';
import { main } from '../../src/cli/main.js';
import type { Context } from '../../src/context.js';
import { callSignature, canonicalJson } from '../../src/core/tool-loop.js';
import { BIN, runCli, tempDir } from '../helpers/cli.js';

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

/** stdout is nothing, or exactly one line holding one of the allowed answers. */
function checkOutput(stdout: string, allowed: (v: Record<string, unknown>) => boolean): void {
  if (stdout === '') return;
  assert.ok(stdout.endsWith('\n') && stdout.indexOf('\n') === stdout.length - 1, `one line: ${JSON.stringify(stdout)}`);
  const v = JSON.parse(stdout) as Record<string, unknown>;
  assert.ok(allowed(v), `unexpected answer ${stdout}`);
}

function checkStderr(stderr: string): void {
  for (const line of stderr.split('\n').filter(Boolean)) assert.match(line, /^hermes-janitor: warning: /);
}

const isStopAnswer = (v: Record<string, unknown>) =>
  (v.decision === 'block' && typeof v.reason === 'string' && /^-?\d+ items remain: continue with the next one$/.test(v.reason) && Object.keys(v).length === 2) ||
  (typeof v.systemMessage === 'string' && Object.keys(v).length === 1);
const isPreAnswer = (v: Record<string, unknown>) => {
  const h = v.hookSpecificOutput as Record<string, unknown> | undefined;
  return Object.keys(v).length === 1 && h?.hookEventName === 'PreToolUse' && h.permissionDecision === 'deny' && typeof h.permissionDecisionReason === 'string';
};
const isPostAnswer = (v: Record<string, unknown>) => v.decision === 'block' && typeof v.reason === 'string' && / failed \d+ times in a row; change strategy$/.test(v.reason);

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

describe('hooks never crash and always exit 0 (in process, arbitrary stdin)', () => {
  const tmp = tempDir('hj-prop-');
  after(tmp.cleanup);
  const home = path.join(tmp.dir, 'home');

  before(async () => {
    // An armed run, so that the stop-hook also exercises its blocking path.
    const { ctx } = makeCtx(home, '');
    assert.equal(await main(['stop-hook', 'arm', '--remaining', '3'], ctx), 0);
  });

  it('stop-hook', async () => {
    await fc.assert(
      fc.asyncProperty(stdinBytes, async (input) => {
        const { ctx, out, err } = makeCtx(home, input);
        assert.equal(await main(['stop-hook', '--max-blocks', '3'], ctx), 0);
        checkOutput(out(), isStopAnswer);
        checkStderr(err());
      }),
      { numRuns: RUNS },
    );
    assert.ok(existsSync(path.join(home, 'stop-hook', 'marker.json')));
  });

  it('tool-loop pre', async () => {
    await fc.assert(
      fc.asyncProperty(stdinBytes, async (input) => {
        const { ctx, out, err } = makeCtx(home, input);
        assert.equal(await main(['tool-loop', 'pre', '--threshold', '2'], ctx), 0);
        checkOutput(out(), isPreAnswer);
        checkStderr(err());
      }),
      { numRuns: RUNS },
    );
  });

  it('tool-loop post', async () => {
    await fc.assert(
      fc.asyncProperty(stdinBytes, async (input) => {
        const { ctx, out, err } = makeCtx(home, input);
        assert.equal(await main(['tool-loop', 'post', '--failure-threshold', '1'], ctx), 0);
        checkOutput(out(), isPostAnswer);
        checkStderr(err());
      }),
      { numRuns: RUNS },
    );
  });

  it('the in-process breakers never throw on any input value', async () => {
    const hook = createStopHook({ store: new MemoryStateStore({ remaining: 2 }), maxBlocks: 2 });
    const loop = createToolLoop({ store: new MemoryToolLoopStore(), threshold: 2, failureThreshold: 1 });
    await fc.assert(
      fc.asyncProperty(fc.oneof(anyValue, hookShaped), async (input) => {
        const s = await hook.decide(input as never);
        assert.ok(s.output === undefined || isStopAnswer(s.output as Record<string, unknown>));
        const p = await loop.pre(input as never);
        assert.ok(p.output === undefined || isPreAnswer(p.output as Record<string, unknown>));
        const q = await loop.post(input as never);
        assert.ok(q.output === undefined || isPostAnswer(q.output as Record<string, unknown>));
      }),
      { numRuns: RUNS * 3 },
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

describe('hooks never crash (spawned, built CLI)', () => {
  const tmp = tempDir('hj-prop-cli-');
  after(tmp.cleanup);

  it('exit 0 with a valid answer or nothing, for random stdin', { skip: !existsSync(BIN) && 'the CLI is not built' }, async () => {
    const samples = fc.sample(stdinBytes, { numRuns: 6, seed: 42 });
    samples.push('\u00ff\u00fe garbage', '{"session_id": 1}');
    for (const input of samples) {
      for (const [args, allowed] of [
        [['stop-hook'], isStopAnswer],
        [['tool-loop', 'pre'], isPreAnswer],
        [['tool-loop', 'post'], isPostAnswer],
      ] as const) {
        const r = await runCli([...args], { input: typeof input === 'string' ? input : Buffer.from(input), env: { HERMES_HOME: tmp.dir } });
        assert.equal(r.code, 0, `${args.join(' ')} exit ${r.code}: ${r.stderr}`);
        checkOutput(r.stdout, allowed);
        checkStderr(r.stderr);
      }
    }
  });
});
