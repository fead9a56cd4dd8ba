/**
 * The record of the hooks' own mistakes (core/hook-errors.ts), what status says of it (core/status.ts), and which
 * command lines are hooks that must fail open rather than exit 2 (cli/hook-invocation.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hookInvocation } from '../../src/cli/hooks/hook-invocation.js';
import { hookErrorsFrom, withHookError } from '../../src/core/hook-errors.js';
import { attention, statusExitCode, type AttentionInput } from '../../src/core/status.js';

// The numbers these tests pin, stated here (not imported from the code under test): a change to one is a change this test must see.
/** A hook's own mistake is forgotten 24 h after it was last seen. */
const HOOK_ERROR_FORGET_MS = 24 * 3600 * 1000;
/** At most 16 hook mistakes are remembered. */
const MAX_HOOK_ERRORS = 16;

const T0 = new Date('2026-11-22T10:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

describe('hook error record', () => {
  it('counts the same mistake of the same hook, keeps others apart, most recent first', () => {
    let r: unknown = undefined;
    r = withHookError(r, 'stop-hook', "hook misconfigured: unknown option '--max-block'", T0);
    r = withHookError(r, 'tool-loop pre', "hook misconfigured: unknown option '--max-block'", at(1000));
    r = withHookError(r, 'stop-hook', "hook misconfigured: unknown option '--max-block'", at(2000));
    const errors = hookErrorsFrom(r, at(3000));
    assert.deepEqual(
      errors.map((e) => [e.hook, e.count, e.firstSeen, e.lastSeen]),
      [
        ['stop-hook', 2, T0.toISOString(), at(2000).toISOString()],
        ['tool-loop pre', 1, at(1000).toISOString(), at(1000).toISOString()],
      ],
    );
  });

  it('forgets a mistake 24 h after it was last seen, and keeps at most 16', () => {
    const once = withHookError(undefined, 'stop-hook', 'x', T0);
    assert.equal(hookErrorsFrom(once, at(HOOK_ERROR_FORGET_MS - 1)).length, 1);
    assert.equal(hookErrorsFrom(once, at(HOOK_ERROR_FORGET_MS)).length, 0);
    // Seen again after that: a new count.
    assert.equal(hookErrorsFrom(withHookError(once, 'stop-hook', 'x', at(HOOK_ERROR_FORGET_MS)), at(HOOK_ERROR_FORGET_MS))[0]!.count, 1);
    let r: unknown = undefined;
    for (let i = 0; i < MAX_HOOK_ERRORS + 5; i++) r = withHookError(r, 'stop-hook', `mistake ${i}`, at(i));
    const kept = hookErrorsFrom(r, at(100));
    assert.equal(kept.length, MAX_HOOK_ERRORS);
    assert.equal(kept[0]!.what, `mistake ${MAX_HOOK_ERRORS + 4}`, 'the most recent are kept');
  });

  it('leaves out what is not a record (a hand-edited or foreign file)', () => {
    for (const v of [
      null,
      3,
      'x',
      [],
      { errors: 'x' },
      { errors: [null, { hook: 1 }, { hook: 'h', what: 'w', count: 0, firstSeen: 'a', lastSeen: T0.toISOString() }] },
    ]) {
      assert.deepEqual(hookErrorsFrom(v, T0), [], JSON.stringify(v));
    }
  });

  it('status names each mistake, with its count and its age said by luxon, and needs attention', () => {
    const base: AttentionInput = {
      unreachableEngines: [],
      orphans: 0,
      oldestOrphanAgeSeconds: null,
      asOf: T0,
      inspectFailures: 0,
      timedOut: false,
      staleLocks: [],
      restartGuard: null,
      suspendedSessions: 0,
      stopHook: null,
      toolLoopLooping: [],
    };
    assert.deepEqual(attention(base), []);
    const errors = hookErrorsFrom(
      [0, 1, 2].reduce<unknown>((r) => withHookError(r, 'stop-hook', "hook misconfigured: unknown option '--max-block'", T0), undefined),
      at(120_000),
    );
    const facts = { ...base, hookErrors: errors, now: at(120_000) };
    const lines = attention(facts);
    assert.deepEqual(lines, ["stop-hook: hook misconfigured: unknown option '--max-block' (seen 3 times, last 2 minutes ago)"]);
    assert.equal(statusExitCode(facts, lines), 1);
  });
});

describe('which command lines are hooks (they fail open; the rest keep exit 2)', () => {
  const cases: Array<[string[], string | undefined]> = [
    [['stop-hook'], 'stop-hook'],
    [['stop-hook', '--max-block', '3'], 'stop-hook'],
    [['--home', '/h', 'stop-hook', '--max-blocks', '0'], 'stop-hook'],
    [['stop-hook', 'bogus'], 'stop-hook'],
    [['stop-hook', '--marker', 'arm'], 'stop-hook'], // 'arm' is --marker's value, not the verb
    [['tool-loop', 'pre', '--treshold', '3'], 'tool-loop pre'],
    [['tool-loop', 'post', '--dialect', 'vim'], 'tool-loop post'],
    [['--profile', '../x', 'tool-loop', 'pre'], 'tool-loop pre'],
    [['tool-loop', 'bogus'], 'tool-loop'],
    [['stop-hook', 'arm', '--remaining', 'x'], undefined],
    [['stop-hook', 'status', '--bogus'], undefined],
    [['tool-loop', 'status', '--bogus'], undefined],
    [['tool-loop', 'reset'], undefined],
    [['tool-loop'], undefined],
    [['stop-hook', '--help'], undefined],
    [['tool-loop', 'pre', '-h'], undefined],
    [['status', '--bogus'], undefined],
    [['help', 'stop-hook'], undefined],
    [['reap', '--label', 'stop-hook'], undefined],
  ];
  for (const [argv, hook] of cases) {
    it(`${argv.join(' ')}: ${hook ?? 'run by hand'}`, () => assert.equal(hookInvocation(argv), hook));
  }
});
