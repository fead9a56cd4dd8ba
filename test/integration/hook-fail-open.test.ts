/**
 * A hook's own error never blocks the agent it guards (issue #25): for every dialect and every hook it calls, a hook
 * command with an unknown flag, with a bad value, with a bad --dialect, and with a state directory it cannot write
 * each answers "allow" (exit 0, no decision printed) with exactly one warning line; `status` then names each
 * mistake and exits 1 (attention). A hermes home that is a regular file is one warning and "allow" too. Run
 * through the built CLI (`npm run build`), against the engine the suite runs on (status asks it for containers).
 */
import assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Dialect } from '../../src/core/hook-dialects.js';
import { DIALECTS } from '../../src/core/hook-dialects.js';
import { FIXTURES, type HookFixture } from '../fixtures/hook-dialects/index.js';
import { NOBODY, REPO, assertFailsOpen, assertUsageError, fastPathOnly, runCli, tempDir } from '../helpers/cli.js';

const tmp = tempDir('hj-fail-open-');
// Traversable by the unprivileged runs (nobody), which write their mistakes into the homes below.
chmodSync(tmp.dir, 0o755);
after(tmp.cleanup);
before(() => {
  assert.ok(existsSync(path.join(REPO, 'dist', 'fast-path.cjs')), "the CLI is not built: run 'npm run build' first");
});

const run = Math.random().toString(36).slice(2, 8);
let n = 0;
/** A fresh profile home (its profile name random, so status selects no other test's containers), writable by anyone. */
/**
 * A home of nobody's (the user the unprivileged runs are), so that its hooks and root's runs share it. Run as root
 * over it, the hooks run with nobody's rights and `status` reads it by the rules for another user's home (#34); root's
 * own state for it goes to a state directory of this run's.
 */
function freshHome(): { home: string; env: Record<string, string> } {
  const home = path.join(tmp.dir, 'profiles', `hj-fo-${run}-${n++}`);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  if (process.getuid?.() === 0) chownSync(home, NOBODY, NOBODY);
  chmodSync(path.join(tmp.dir, 'profiles'), 0o755);
  return { home, env: { HERMES_HOME: home, HOME: tmp.dir, HERMES_JANITOR_STATE_DIR: path.join(tmp.dir, 'state') } };
}

const HOOKS = { pre: ['tool-loop', 'pre'], post: ['tool-loop', 'post'], stop: ['stop-hook'] } as const;
const NAME = { pre: 'tool-loop pre', post: 'tool-loop post', stop: 'stop-hook' } as const;
const LET_THROUGH = { pre: 'the call is allowed', post: 'the call is allowed', stop: 'allowing the stop' } as const;
/** A mistyped flag, and a value its flag refuses, per hook. */
const MISTYPED = { pre: ['--treshold', '3'], post: ['--failure-treshold', '3'], stop: ['--max-block', '3'] } as const;
const BAD_VALUE = { pre: ['--threshold', '1'], post: ['--failure-threshold', '0'], stop: ['--max-blocks', '0'] } as const;

type ClassicFixture = HookFixture & { hook: 'pre' | 'post' | 'stop' };

/** Each dialect's first fixture of each hook. */
function fixturesOf(dialect: Dialect): ClassicFixture[] {
  return (['pre', 'post', 'stop'] as const).flatMap((hook) =>
    FIXTURES.filter((f): f is ClassicFixture => f.dialect === dialect && f.hook === hook).slice(0, 1),
  );
}

/**
 * The state directory of the fixture's breaker, made so the hook (run as another user) can read but not write it:
 * the stop hook finds an armed run it must save a block of, the tool hooks a history directory they cannot lock.
 */
async function unwritableState(home: string, env: Record<string, string>, hook: 'pre' | 'post' | 'stop'): Promise<void> {
  if (hook === 'stop') {
    assert.equal((await runCli(['stop-hook', 'arm', '--remaining', '3'], { env })).code, 0);
    chmodSync(path.join(home, 'stop-hook', 'marker.json'), 0o644);
    chmodSync(path.join(home, 'stop-hook'), 0o555);
  } else {
    mkdirSync(path.join(home, 'tool-loop'), { recursive: true });
    chmodSync(path.join(home, 'tool-loop'), 0o555);
  }
}

interface StatusJson {
  exitCode: number;
  attention: string[];
  breakers: {
    stopHook: { hookErrors: Array<{ hook: string; what: string; count: number }> };
    toolLoop: { hookErrors: Array<{ hook: string; what: string; count: number }> };
  };
}

describe('hooks fail open on their own errors, every dialect (built CLI)', () => {
  for (const dialect of DIALECTS) {
    it(`${dialect}: an unknown flag, a bad value, a bad --dialect: allow, one warning each; status names each`, async () => {
      const { env } = freshHome();
      const expected: Array<{ hook: string; what: RegExp }> = [];
      for (const f of fixturesOf(dialect)) {
        const words = [...HOOKS[f.hook], '--dialect', dialect];
        const input = JSON.stringify(f.input);
        const what = `${dialect} ${f.name}`;
        const flag = MISTYPED[f.hook][0];
        assertFailsOpen(
          await runCli([...words, ...MISTYPED[f.hook]], { env, input }),
          [`${NAME[f.hook]}: hook misconfigured: unknown option '${flag}'`, LET_THROUGH[f.hook]],
          `${what}, ${flag}`,
        );
        const [bad, value] = BAD_VALUE[f.hook];
        assertFailsOpen(
          await runCli([...words, bad, value], { env, input }),
          [`${bad} must be a whole number`, `'${value}'`, LET_THROUGH[f.hook]],
          `${what}, ${bad} ${value}`,
        );
        assertFailsOpen(
          await runCli([...HOOKS[f.hook], '--dialect', `${dialect}x`], { env, input }),
          [`got '${dialect}x'`, LET_THROUGH[f.hook]],
          `${what}, --dialect ${dialect}x`,
        );
        expected.push(
          { hook: NAME[f.hook], what: new RegExp(`^hook misconfigured: unknown option '${flag}'`) },
          { hook: NAME[f.hook], what: new RegExp(`${bad} must be a whole number >= \\d+, got '${value}'$`) },
          { hook: NAME[f.hook], what: new RegExp(`--dialect must be one of .*got '${dialect}x'$`) },
        );
      }
      // Twice: the second sighting is counted, not listed again.
      const first = fixturesOf(dialect)[0]!;
      await runCli([...HOOKS[first.hook], ...MISTYPED[first.hook]], { env, input: JSON.stringify(first.input) });

      const status = await runCli(['status', '--json'], { env });
      const report = JSON.parse(status.stdout) as StatusJson;
      assert.equal(status.code, 1, `status says attention is needed; ${status.stderr}`);
      assert.equal(report.exitCode, 1);
      const recorded = [...report.breakers.stopHook.hookErrors, ...report.breakers.toolLoop.hookErrors];
      for (const e of expected) {
        const hit = recorded.filter((r) => r.hook === e.hook && e.what.test(r.what));
        assert.equal(hit.length, 1, `${e.hook} ${e.what} recorded once: ${JSON.stringify(recorded)}`);
        assert.ok(
          report.attention.some((line) => line.startsWith(`${e.hook}: ${hit[0]!.what} (seen `)),
          `status names ${e.hook}: ${hit[0]!.what}`,
        );
      }
      assert.equal(recorded.find((r) => r.hook === NAME[first.hook] && r.what.includes(MISTYPED[first.hook][0]))!.count, 2);
    });

    it(`${dialect}: a state directory the hook cannot write: allow, one warning; status names it`, async () => {
      const { home, env } = freshHome();
      for (const f of fixturesOf(dialect)) {
        await unwritableState(home, env, f.hook);
        const r = await runCli([...HOOKS[f.hook], '--dialect', dialect], { env, input: JSON.stringify(f.input), unprivileged: true });
        const stop = f.hook === 'stop';
        const what = `${dialect} ${f.name}`;
        // The stop hook lets the session stop, with a message for the user where its dialect has a place for one.
        const answer = stop && f.answer.release ? f.answer.release('') : 'none';
        if (stop && answer !== 'none' && 'stdout' in answer) {
          assert.deepEqual(Object.keys(JSON.parse(r.stdout) as object), Object.keys(answer.stdout), what);
          assertFailsOpen({ ...r, stdout: '' }, [/cannot save the run marker .*; allowing the stop/], what);
        } else {
          assertFailsOpen(
            r,
            [stop ? /cannot save the run marker .*; allowing the stop/ : /cannot update the tool-loop history in .*; the call is allowed/],
            what,
          );
        }
        assert.match(r.stderr, /\(recorded: see 'hermes-janitor status'\)/, what);
      }
      const status = await runCli(['status'], { env });
      assert.equal(status.code, 1, status.stderr);
      for (const f of fixturesOf(dialect)) {
        const line =
          f.hook === 'stop'
            ? /^ {2}- stop-hook: cannot save the run marker .* \(seen 1 time, last \d+ seconds? ago\)$/m
            : new RegExp(`^  - ${NAME[f.hook]}: cannot update the tool-loop history in .* \\(seen 1 time, last \\d+ seconds? ago\\)$`, 'm');
        assert.match(status.stdout, line, `${dialect} ${f.name}`);
      }
    });
  }

  it('status prints the mistake in the form the issue gives, with its age by luxon', async () => {
    const { env } = freshHome();
    const stop = JSON.stringify(fixturesOf('claude').find((f) => f.hook === 'stop')!.input);
    for (let i = 0; i < 3; i++) await runCli(['stop-hook', '--max-block', '3'], { env, input: stop });
    const status = await runCli(['status'], { env });
    assert.equal(status.code, 1);
    assert.match(status.stdout, /^Needs attention$/m);
    assert.match(
      status.stdout,
      /^ {2}- stop-hook: hook misconfigured: unknown option '--max-block' \(Did you mean --max-blocks\?\) \(seen 3 times, last \d+ seconds? ago\)$/m,
    );
  });

  it('run by hand, usage errors stay exit 2 (status, the verbs, --help is 0)', async () => {
    const { env } = freshHome();
    assertUsageError(await runCli(['status', '--bogus'], { env }), ["unknown option '--bogus'"]);
    assertUsageError(await runCli(['tool-loop', 'reset', '--bogus'], { env }), ["unknown option '--bogus'"]);
    assertUsageError(await runCli(['tool-loop', 'status', '--session'], { env }), ['--session']);
    assertUsageError(await runCli(['stop-hook', 'arm', '--remaining', 'x'], { env }), ["'x'"]);
    assertUsageError(await runCli(['tool-loop'], { env }), ["'tool-loop' needs a verb"]);
    const help = await runCli(['stop-hook', '--help'], { env });
    assert.deepEqual([help.code, help.stderr], [0, '']);
  });

  it('a hermes home that is a regular file: each hook allows with one warning naming it', async () => {
    const file = path.join(tmp.dir, `not-a-home-${run}`);
    writeFileSync(file, 'x');
    const env = { HERMES_HOME: file, HOME: tmp.dir };
    for (const f of fixturesOf('claude')) {
      const r = await runCli([...HOOKS[f.hook]], { env, input: JSON.stringify(f.input) });
      assertFailsOpen(
        r,
        [`${NAME[f.hook]}: the hermes home ${file} is not a directory (check $HERMES_HOME or --home)`, LET_THROUGH[f.hook], '(not recorded)'],
        f.name,
      );
    }
    // A mistake in such a home: the same one line.
    assertFailsOpen(await runCli(['stop-hook', '--max-block', '3'], { env, input: '{}' }), [
      `the hermes home ${file} is not a directory`,
      "unknown option '--max-block'",
    ]);
  });

  it('recording the mistake fails open too: a home the hook cannot write is still exit 0 and one warning', async () => {
    const { home, env } = freshHome();
    chmodSync(home, 0o555);
    const r = await runCli(['tool-loop', 'pre', '--treshold', '3'], { env, input: JSON.stringify(fixturesOf('claude')[0]!.input), unprivileged: true });
    assertFailsOpen(r, ["tool-loop pre: hook misconfigured: unknown option '--treshold'", /\(not recorded: [^)]*EACCES/]);
    chmodSync(home, 0o700);
  });

  it('a CLI that cannot be loaded: a hook still allows with one warning, a command run by hand fails (exit 1)', async () => {
    const { env } = freshHome();
    const fastOnly = fastPathOnly(); // bin/ and the bundles only: what the fast path leaves, the full CLI cannot run
    try {
      const input = JSON.stringify(fixturesOf('claude').find((f) => f.hook === 'stop')!.input);
      assertFailsOpen(await runCli(['stop-hook', '--max-block', '3'], { env, input, bin: fastOnly.bin }), [
        'cannot load the built CLI',
        'the hook lets the agent go on',
      ]);
      assertFailsOpen(await runCli(['tool-loop', 'post', '--bogus'], { env, input, bin: fastOnly.bin }), ['cannot load the built CLI']);
      const byHand = await runCli(['stop-hook', 'status'], { env, bin: fastOnly.bin });
      assert.equal(byHand.code, 1);
      assert.match(byHand.stderr, /^hermes-janitor: cannot load the built CLI/);
    } finally {
      fastOnly.cleanup();
    }
  });

  it('escapes control and binary bytes in the warning about unreadable input', async () => {
    const { env } = freshHome();
    const r = await runCli(['tool-loop', 'pre'], { env, input: Buffer.from([0x01, 0x1b, 0x5b, 0x32, 0x4a, 0xff, 0x7b]) });
    assertFailsOpen(r, ['not valid JSON', '\\x01', '\\x1b[2J', '\\ufffd']);
    assert.doesNotMatch(r.stderr, /[\u0000-\u0009\u000b-\u001f\ufffd]/);
  });
});
