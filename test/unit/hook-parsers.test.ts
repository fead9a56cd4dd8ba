/**
 * The two parsers of the hook forms agree. A plain hook invocation runs on the start-up fast path (no commander);
 * anything else falls back to commander, so commander's path of `stop-hook` and `tool-loop pre|post` runs only on
 * fallbacks. Every hook form, with every option its declaration lists (hook-options.ts, global-options.ts) in every
 * spelling, is run on every fixture through both, each in its own home, and must give the same exit code, stdout
 * and stderr. Nothing here names an option: a new one in the tables is covered as it is declared.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { runFastPath } from '../../src/cli/fast-path.js';
import { runFastPath as runStopHookBundle } from '../../src/cli/hooks/fast-path-stop-hook.js';
import { runFastPath as runToolLoopBundle } from '../../src/cli/hooks/fast-path-tool-loop.js';
import { GLOBAL_OPTIONS } from '../../src/cli/global-options.js';
import { HOOK_FORMS, type HookForm } from '../../src/cli/hooks/hook-options.js';
import { main } from '../../src/cli/main.js';
import type { OptionDecl } from '../../src/cli/option-table.js';
import type { Context } from '../../src/context.js';
import { FIXTURES } from '../fixtures/hook-dialects/index.js';
import { tempDir } from '../helpers/cli.js';

const tmp = tempDir('hj-parsers-');
after(tmp.cleanup);
let n = 0;

function makeCtx(home: string, input: string) {
  let stdout = '';
  let stderr = '';
  const ctx: Context = {
    argv: [],
    env: { HERMES_HOME: path.join(home, 'hermes') },
    stdout: { write: (s: string) => ((stdout += s), true) },
    stderr: { write: (s: string) => ((stderr += s), true) },
    stdin: Readable.from([Buffer.from(input)]),
    cwd: home,
    homedir: home,
    now: () => new Date('2026-11-22T10:00:00Z'),
  };
  // Paths differ between the two homes: compare them as <home>.
  const clean = (s: string) => s.split(home).join('<home>');
  return { ctx, out: () => clean(stdout), err: () => clean(stderr) };
}

/** A value the option accepts: the first candidate its parser takes (a path for an option without a parser). */
function goodValue(d: OptionDecl): string {
  if (!d.parse) return 'run-marker.json';
  const ok = ['2', 'claude', 'codex'].find((raw) => {
    try {
      d.parse!(raw);
      return true;
    } catch {
      return false;
    }
  });
  assert.ok(ok, `a valid sample value for ${d.flag}`);
  return ok;
}

/** Every spelling of a form's invocation: each option alone, in both value spellings, and all together; globals before and after. */
function variants(form: HookForm): string[][] {
  const alone = form.options.flatMap((d) => (d.value ? [[d.flag, goodValue(d)], [`${d.flag}=${goodValue(d)}`]] : [[d.flag]]));
  const all = form.options.flatMap((d) => (d.value ? [d.flag, goodValue(d)] : [d.flag]));
  const globals = GLOBAL_OPTIONS.filter((g) => g.flag === '--profile').map((g) => [g.flag, 'work']);
  return [
    [...form.words],
    ...alone.map((opts) => [...form.words, ...opts]),
    [...form.words, ...all],
    ...globals.map((g) => [...g, ...form.words, ...all]),
    ...globals.map((g) => [...form.words, ...all, ...g]),
  ];
}

/** Argv the fast path must leave to commander: a bad value, a repeated option, an option before the words, help. */
function fallbacks(form: HookForm): string[][] {
  const valued = form.options.filter((d) => d.value && d.parse);
  return [
    ...valued.map((d) => [...form.words, d.flag, 'bogus']),
    ...form.options.filter((d) => d.value).map((d) => [...form.words, d.flag, goodValue(d), d.flag, goodValue(d)]),
    ...form.options.filter((d) => !d.value).map((d) => [d.flag, ...form.words]),
    [...form.words, '--help'],
  ];
}

const HOOK_OF = { 'stop-hook': 'stop', 'tool-loop pre': 'pre', 'tool-loop post': 'post', 'tool-loop prompt': 'prompt' } as const;
/** Each form's own bundle (bin/ loads it first), and the other hook's, which must leave the form alone. */
const OWN = {
  'stop-hook': runStopHookBundle,
  'tool-loop pre': runToolLoopBundle,
  'tool-loop post': runToolLoopBundle,
  'tool-loop prompt': runToolLoopBundle,
} as const;
const OTHER = {
  'stop-hook': runToolLoopBundle,
  'tool-loop pre': runStopHookBundle,
  'tool-loop post': runStopHookBundle,
  'tool-loop prompt': runStopHookBundle,
} as const;

describe('the fast path and commander answer every hook form alike', () => {
  for (const form of HOOK_FORMS) {
    const inputs = [...FIXTURES.filter((f) => f.hook === HOOK_OF[form.name]).map((f) => JSON.stringify(f.input)), 'not json', '{}'];

    it(`${form.name}: every option, every spelling, every fixture: same exit code, stdout and stderr`, async () => {
      let compared = 0;
      for (const argv of variants(form)) {
        for (const input of inputs) {
          const homes = [path.join(tmp.dir, `fast-${n}`), path.join(tmp.dir, `commander-${n}`), path.join(tmp.dir, `own-${n++}`)];
          // An armed run in both homes, so the stop hook decides something.
          for (const home of homes) assert.equal(await main(['stop-hook', 'arm', '--remaining', '2'], makeCtx(home, '').ctx), 0);
          for (let call = 0; call < 3; call++) {
            const fast = makeCtx(homes[0]!, input);
            const code = await runFastPath(argv, fast.ctx);
            assert.notEqual(code, undefined, `the fast path runs ${argv.join(' ')}`);
            const slow = makeCtx(homes[1]!, input);
            const slowCode = await main(argv, slow.ctx, { fastPathTried: true });
            const own = makeCtx(homes[2]!, input);
            const ownCode = await OWN[form.name](argv, own.ctx);
            const other = makeCtx(homes[2]!, input);
            assert.equal(await OTHER[form.name](argv, other.ctx), undefined, `the other hook's bundle leaves ${argv.join(' ')} alone`);
            const what = `${argv.join(' ')} <<< ${input.slice(0, 80)} (call ${call + 1})`;
            assert.deepEqual({ code: slowCode, stdout: slow.out(), stderr: slow.err() }, { code, stdout: fast.out(), stderr: fast.err() }, what);
            assert.deepEqual({ code: ownCode, stdout: own.out(), stderr: own.err() }, { code, stdout: fast.out(), stderr: fast.err() }, `own bundle: ${what}`);
            assert.deepEqual([other.out(), other.err()], ['', ''], 'nothing read, nothing written');
            compared++;
          }
        }
      }
      assert.ok(compared >= variants(form).length * inputs.length * 3);
    });

    it(`${form.name}: what the fast path leaves to commander, commander runs or fails open (exit 0, one warning line), or helps`, async () => {
      for (const argv of fallbacks(form)) {
        const home = path.join(tmp.dir, `fallback-${n++}`);
        const fast = makeCtx(home, '{}');
        assert.equal(await runFastPath(argv, fast.ctx), undefined, argv.join(' '));
        assert.equal(await OWN[form.name](argv, fast.ctx), undefined, `own bundle: ${argv.join(' ')}`);
        assert.deepEqual([fast.out(), fast.err()], ['', ''], 'nothing read, nothing written');
        const slow = makeCtx(home, '{}');
        const code = await main(argv, slow.ctx, { fastPathTried: true });
        if (argv.includes('--help')) {
          assert.equal(code, 0);
          for (const d of form.options) assert.ok(slow.out().includes(d.flag), `--help lists ${d.flag}`);
        } else if (argv.includes('bogus')) {
          // A hook's bad value: it lets the agent go on, with one warning, and prints no answer.
          assert.equal(code, 0, argv.join(' '));
          assert.equal(slow.out(), '', argv.join(' '));
          assert.match(slow.err(), /^hermes-janitor: warning: [^\n]*hook misconfigured: [^\n]*'bogus'[^\n]+\n$/, argv.join(' '));
        } else {
          assert.equal(code, 0, `${argv.join(' ')}: ${code} ${slow.err()}`);
        }
      }
    });
  }
});
