import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { MemoryStateStore, type StateStore } from '../../src/adapters/state-file.js';
import { createRestartGuard, restartLoopFile } from '../../src/breakers/restart-guard.js';
import { main } from '../../src/cli/main.js';
import type { Context } from '../../src/context.js';
import {
  DEFAULT_SETTINGS,
  type RestartGuardSettings,
  checkAndRecord,
  parseRestartLoopState,
  resolveSettings,
  restartGuardStatus,
  windowCutoff,
} from '../../src/core/restart-guard.js';
import { assertUsageError, runCli, tempDir } from '../helpers/cli.js';

// The numbers these tests pin, stated here (not imported from the code under test): a change to one is a change this test must see.
/** Restart-guard keeps at most 50 boots. */
const MAX_STORED_BOOTS = 50;

const S = (max = 3, windowSeconds = 60): RestartGuardSettings => ({ max, windowSeconds });

/** Feeds boots through check-and-record; returns each step's decision and the final state. */
function feed(times: number[], settings: RestartGuardSettings = DEFAULT_SETTINGS, boots: number[] = []) {
  let state = { boots };
  const tripped: boolean[] = [];
  for (const t of times) {
    const step = checkAndRecord(state, t, settings);
    state = step.next;
    tripped.push(step.verdict.tripped);
  }
  return { tripped, state };
}

describe('restart-guard core: check-and-record', () => {
  it('trips on the third of boots at 1000, 1005, 1010 with the defaults (3 within 60 s)', () => {
    const { tripped, state } = feed([1000, 1005, 1010]);
    assert.deepEqual(tripped, [false, false, true]);
    assert.deepEqual(state, { boots: [1000, 1005, 1010] });
  });

  it('never trips on boots at 1000, 1070, 1140, and forgets the old ones', () => {
    const { tripped, state } = feed([1000, 1070, 1140]);
    assert.deepEqual(tripped, [false, false, false]);
    assert.deepEqual(state, { boots: [1140] });
  });

  it('keeps a boot exactly at now - window, and drops one a moment older', () => {
    assert.deepEqual(checkAndRecord({ boots: [940] }, 1000, S()).next.boots, [940, 1000]);
    assert.deepEqual(checkAndRecord({ boots: [939.999] }, 1000, S()).next.boots, [1000]);
    // Two boots on the boundary plus this one: tripped.
    assert.equal(checkAndRecord({ boots: [940, 940] }, 1000, S()).verdict.tripped, true);
    assert.equal(checkAndRecord({ boots: [939.5, 940] }, 1000, S()).verdict.tripped, false);
  });

  it('never uses a window shorter than 1 s', () => {
    assert.equal(windowCutoff(1000, 0), 999);
    assert.equal(windowCutoff(1000, -5), 999);
    assert.equal(windowCutoff(1000, 0.25), 999);
    assert.deepEqual(checkAndRecord({ boots: [999, 998.5] }, 1000, S(3, 0.1)).next.boots, [999, 1000]);
  });

  it('trips at the first boot with --max 1, and never with --max 0 or below', () => {
    assert.equal(checkAndRecord({ boots: [] }, 1000, S(1)).verdict.tripped, true);
    const many = Array.from({ length: 60 }, (_, i) => 1000 + i * 0.1);
    for (const max of [0, -1, -100]) {
      const { tripped } = feed(many, S(max));
      assert.ok(
        tripped.every((t) => !t),
        `max ${max} must never trip`,
      );
      const v = checkAndRecord({ boots: many }, 1006, S(max)).verdict;
      assert.equal(v.enabled, false);
      assert.equal(v.tripped, false);
    }
  });

  it('keeps only the 50 newest boots', () => {
    const old = Array.from({ length: 70 }, (_, i) => 1000 + i);
    const { next, verdict } = checkAndRecord({ boots: old }, 1070, S(3, 3600));
    assert.equal(next.boots.length, MAX_STORED_BOOTS);
    assert.deepEqual(next.boots, [...old.slice(-49), 1070]);
    assert.equal(verdict.count, 50);
    assert.equal(verdict.tripped, true);
  });

  it('counts a boot from the future (the clock went back) as inside the window', () => {
    const { next, verdict } = checkAndRecord({ boots: [1500, 990] }, 1000, S());
    assert.deepEqual(next.boots, [990, 1000, 1500]);
    assert.equal(verdict.tripped, true);
  });

  it('reports the decision numbers', () => {
    const v = checkAndRecord({ boots: [995] }, 1000, S(3, 60)).verdict;
    assert.deepEqual(v, { tripped: false, enabled: true, count: 2, max: 3, windowSeconds: 60, now: 1000, cutoff: 940 });
  });
});

describe('restart-guard core: status', () => {
  it('is tripped when the boots inside the window reach max, and changes nothing', () => {
    const state = { boots: [1000, 1005, 1010] };
    assert.equal(restartGuardStatus(state, 1010, S()).tripped, true);
    assert.equal(restartGuardStatus(state, 1060, S()).tripped, true, '1000 is exactly at the window start');
    assert.equal(restartGuardStatus(state, 1060.5, S()).tripped, false);
    assert.equal(restartGuardStatus(state, 1060.5, S()).count, 2);
    assert.equal(restartGuardStatus(state, 1010, S(4)).tripped, false);
    assert.equal(restartGuardStatus(state, 1010, S(0)).tripped, false);
    assert.deepEqual(state, { boots: [1000, 1005, 1010] });
  });
});

describe('restart-guard core: reading the state', () => {
  it('reads missing state as empty without a problem', () => {
    assert.deepEqual(parseRestartLoopState(undefined), { state: { boots: [] } });
    assert.deepEqual(parseRestartLoopState({}), { state: { boots: [] } });
  });

  it('ignores non-numeric entries and sorts the rest', () => {
    const { state, problem } = parseRestartLoopState({ boots: [1010, '1005', null, true, { t: 1 }, [1], 1000.5, 'x'] });
    assert.equal(problem, undefined);
    assert.deepEqual(state.boots, [1000.5, 1010]);
  });

  it('treats a wrongly shaped document as empty and says why', () => {
    for (const bad of [null, 42, 'boots', [1000, 1005], true]) {
      const r = parseRestartLoopState(bad);
      assert.deepEqual(r.state, { boots: [] }, JSON.stringify(bad));
      assert.match(r.problem ?? '', /treated as empty/);
    }
    for (const bad of [{ boots: 1000 }, { boots: { a: 1 } }, { boots: '1000' }, { boots: null }]) {
      const r = parseRestartLoopState(bad);
      assert.deepEqual(r.state, { boots: [] }, JSON.stringify(bad));
      assert.match(r.problem ?? '', /"boots" is not a list/);
    }
  });
});

describe('restart-guard core: settings', () => {
  it('uses flags, else config.yaml values, else 3 within 60 s', () => {
    assert.deepEqual(resolveSettings({}).settings, { max: 3, windowSeconds: 60 });
    assert.deepEqual(resolveSettings({ configMax: 5, configWindow: 120 }).settings, { max: 5, windowSeconds: 120 });
    assert.deepEqual(resolveSettings({ flagMax: 2, flagWindow: 10, configMax: 5, configWindow: 120 }).settings, { max: 2, windowSeconds: 10 });
    assert.deepEqual(resolveSettings({ configMax: '4', configWindow: '30.5' }).settings, { max: 4, windowSeconds: 30.5 });
    assert.deepEqual(resolveSettings({ configMax: 0 }).settings.max, 0);
    assert.deepEqual(resolveSettings({ configMax: 3.9 }).settings.max, 3);
  });

  it('warns about an unusable config value and uses the default', () => {
    const r = resolveSettings({ configMax: 'many', configWindow: true });
    assert.deepEqual(r.settings, { max: 3, windowSeconds: 60 });
    assert.equal(r.warnings.length, 2);
    assert.match(r.warnings[0]!, /max_restarts must be an integer/);
    assert.match(r.warnings[1]!, /window_seconds must be a number/);
  });

  it('caps a config max above the 50 kept boots at 50, with a warning', () => {
    const r = resolveSettings({ configMax: 80 });
    assert.equal(r.settings.max, 50);
    assert.match(r.warnings[0]!, /only the 50 newest boots are kept/);
  });
});

describe('restart-guard property', () => {
  it('never trips with fewer than max boots inside the window, and always trips at max', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 200, noNaN: true, noDefaultInfinity: true }), { minLength: 1, maxLength: 80 }),
        fc.integer({ min: -2, max: 12 }),
        fc.double({ min: 0, max: 300, noNaN: true, noDefaultInfinity: true }),
        (gaps, max, windowSeconds) => {
          const settings = S(max, windowSeconds);
          const window = Math.max(1, windowSeconds);
          let t = 1_700_000_000;
          let state = { boots: [] as number[] };
          const history: number[] = [];
          for (const gap of gaps) {
            t += gap;
            history.push(t);
            const step = checkAndRecord(state, t, settings);
            state = step.next;
            // Independent count: every boot so far inside [t - window, t].
            const inside = history.filter((b) => b >= t - window).length;
            if (max <= 0 || inside < max) assert.equal(step.verdict.tripped, false, `inside=${inside} max=${max}`);
            else assert.equal(step.verdict.tripped, true, `inside=${inside} max=${max}`);
            assert.equal(restartGuardStatus(state, t, settings).tripped, step.verdict.tripped);
            assert.ok(state.boots.length <= MAX_STORED_BOOTS);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** A store whose every operation fails, like a read-only or vanished directory. */
class BrokenStore implements StateStore {
  readonly location = '/broken/restart_loop.json';
  async read(): Promise<never> {
    throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
  }
  async update(): Promise<never> {
    throw Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' });
  }
  async remove(): Promise<never> {
    throw Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' });
  }
}

describe('restart-guard breaker (in process)', () => {
  const at = (s: number) => () => new Date(s * 1000);

  it('records boots in the store and trips on the third', async () => {
    const store = new MemoryStateStore();
    const results = [];
    for (const t of [1000, 1005, 1010]) results.push(await createRestartGuard({ store, now: at(t) }).checkAndRecord());
    assert.deepEqual(
      results.map((r) => r.tripped),
      [false, false, true],
    );
    assert.deepEqual(store.snapshot(), { boots: [1000, 1005, 1010] });
    const status = await createRestartGuard({ store, now: at(1011) }).status();
    assert.equal(status.tripped, true);
    assert.equal(status.verdict?.count, 3);
    assert.deepEqual(store.snapshot(), { boots: [1000, 1005, 1010] }, 'status is read-only');
    await createRestartGuard({ store }).clear();
    assert.equal(store.snapshot(), undefined);
  });

  it('fails open: an unwritable state never trips and says why', async () => {
    const guard = createRestartGuard({ store: new BrokenStore(), now: at(1000), max: 1 });
    const r = await guard.checkAndRecord();
    assert.equal(r.tripped, false);
    assert.match(r.error ?? '', /cannot record the boot in \/broken\/restart_loop.json: EROFS.*fails open/);
    const s = await guard.status();
    assert.equal(s.tripped, false);
    assert.match(s.error ?? '', /cannot read/);
    const c = await guard.clear();
    assert.match(c.error ?? '', /cannot delete/);
  });

  it('treats a wrongly shaped state as empty and replaces it', async () => {
    const store = new MemoryStateStore({ boots: 'nope', other: 1 });
    const r = await createRestartGuard({ store, now: at(1000) }).checkAndRecord();
    assert.equal(r.tripped, false);
    assert.match(r.warnings.join('\n'), /"boots" is not a list/);
    assert.deepEqual(store.snapshot(), { boots: [1000] });
  });

  it('rejects impossible settings', () => {
    assert.throws(() => createRestartGuard({ store: new MemoryStateStore(), max: 1.5 }), RangeError);
    assert.throws(() => createRestartGuard({ store: new MemoryStateStore(), windowSeconds: 0 }), RangeError);
  });
});

// ---- The command, in process (fixed clock, real files) ---------------------------------------------------------

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], opts: { now: number; env?: Record<string, string> }): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const ctx: Context = {
    argv: args,
    env: opts.env ?? {},
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    stdin: Readable.from([]),
    cwd: '/',
    homedir: '/nonexistent-home',
    now: () => new Date(opts.now * 1000),
  };
  const code = await main(args, ctx);
  return { code, stdout, stderr };
}

describe('restart-guard command (in process)', () => {
  const tmp = tempDir('hj-rg-');
  after(tmp.cleanup);
  let n = 0;
  const freshHome = () => path.join(tmp.dir, `home-${n++}`);

  it('writes exactly {"boots": [...]} and trips on the third boot, saying how to clear it', async () => {
    const home = freshHome();
    const file = restartLoopFile(home);
    const r1 = await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1000.25 });
    const r2 = await cli(['restart-guard', 'check-and-record', '--home', home], { now: 1005.5 });
    assert.equal(r1.code, 0, r1.stderr);
    assert.equal(r2.code, 0, r2.stderr);
    assert.equal(r1.stdout + r2.stdout, '', 'nothing on stdout without --json');
    const r3 = await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1010 });
    assert.equal(r3.code, 1);
    assert.match(r3.stderr, /tripped: 3 restart-interrupted boots within 60 s \(max 3\)/);
    assert.ok(r3.stderr.includes(`restart-guard clear`), r3.stderr);
    assert.ok(r3.stderr.includes(file), r3.stderr);
    const doc = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    assert.deepEqual(doc, { boots: [1000.25, 1005.5, 1010] });
    assert.deepEqual(Object.keys(doc as object), ['boots']);
  });

  it('prints one JSON document with the decision and the state', async () => {
    const home = freshHome();
    await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1000 });
    const r = await cli(['--home', home, 'restart-guard', 'check-and-record', '--json', '--max', '2'], { now: 1001 });
    assert.equal(r.code, 1);
    const j = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.equal(j.decision, 'tripped');
    assert.equal(j.tripped, true);
    assert.equal(j.count, 2);
    assert.equal(j.max, 2);
    assert.equal(j.window_seconds, 60);
    assert.equal(j.state_file, restartLoopFile(home));
    assert.deepEqual(j.state, { boots: [1000, 1001] });
    const s = await cli(['--home', home, 'restart-guard', 'status', '--json'], { now: 1100 });
    assert.equal(s.code, 0);
    const sj = JSON.parse(s.stdout) as Record<string, unknown>;
    assert.equal(sj.decision, 'proceed');
    assert.equal(sj.count, 0);
  });

  it('status exits 1 when tripped and 0 otherwise; clear deletes the state', async () => {
    const home = freshHome();
    for (const t of [1000, 1001, 1002]) await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: t });
    assert.equal((await cli(['--home', home, 'restart-guard', 'status'], { now: 1003 })).code, 1);
    // Exit 0 means "proceed" for a breaker that is fine and for one that is disabled alike: only the text tells them apart.
    const ok = await cli(['--home', home, 'restart-guard', 'status', '--max', '4'], { now: 1003 });
    assert.equal(ok.code, 0);
    assert.match(ok.stderr, /^restart-guard: ok \(max 4\): 3 boots within the last /);
    const window = await cli(['--home', home, 'restart-guard', 'status', '--window', '1'], { now: 1003 });
    assert.equal(window.code, 0);
    assert.match(window.stderr, /^restart-guard: ok \(max 3\): 1 boot within the last 1 s;/);
    for (const max of [['--max', '0'], ['--max=-1']]) {
      const disabled = await cli(['--home', home, 'restart-guard', 'status', ...max], { now: 1003 });
      assert.equal(disabled.code, 0, max.join(' '));
      assert.match(disabled.stderr, /^restart-guard: disabled \(max (0|-1)\): 3 boots within the last [^\n]+\n$/, max.join(' '));
      assert.doesNotMatch(disabled.stderr, /TRIPPED|ok \(/, max.join(' '));
    }
    const c = await cli(['--home', home, 'restart-guard', 'clear'], { now: 1003 });
    assert.equal(c.code, 0);
    assert.equal(existsSync(restartLoopFile(home)), false);
    assert.equal((await cli(['--home', home, 'restart-guard', 'status'], { now: 1003 })).code, 0);
    assert.equal((await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1004 })).code, 0);
  });

  it('reads max and window from config.yaml, and warns (but proceeds) when it is broken', async () => {
    const home = freshHome();
    mkdirSync(home, { recursive: true });
    writeFileSync(path.join(home, 'config.yaml'), 'gateway:\n  restart_loop_guard:\n    max_restarts: 2\n    window_seconds: 5\n');
    assert.equal((await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1000 })).code, 0);
    assert.equal((await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1006 })).code, 0, 'outside a 5 s window');
    assert.equal((await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1008 })).code, 1, '2 within 5 s');
    assert.equal((await cli(['--home', home, 'restart-guard', 'status', '--max', '3'], { now: 1008 })).code, 0, 'a flag beats config');
    writeFileSync(path.join(home, 'config.yaml'), 'gateway: [unclosed\n');
    const r = await cli(['--home', home, 'restart-guard', 'status'], { now: 1008 });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /warning: .*config.yaml is not valid YAML.*defaults/);
  });

  it('replaces a corrupt state file with a valid one, with a warning', async () => {
    const home = freshHome();
    const file = restartLoopFile(home);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, '{"boots": [1000, 10');
    const r = await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1001 });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /warning: .*not valid JSON/);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { boots: [1001] });
    writeFileSync(file, '[1000, 1001]');
    await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1002 });
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { boots: [1002] });
  });

  it('never writes through a symlink planted at the state path', async () => {
    const home = freshHome();
    const file = restartLoopFile(home);
    mkdirSync(path.dirname(file), { recursive: true });
    const target = path.join(tmp.dir, `victim-${n}`);
    writeFileSync(target, 'precious\n');
    symlinkSync(target, file);
    const r = await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1000 });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /symlink/);
    assert.equal(readFileSync(target, 'utf8'), 'precious\n');
    assert.equal(lstatSync(file).isSymbolicLink(), false);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { boots: [1000] });
  });

  it('does not hang on a FIFO planted at the state path, and replaces it', async () => {
    const home = freshHome();
    const file = restartLoopFile(home);
    mkdirSync(path.dirname(file), { recursive: true });
    execFileSync('mkfifo', [file]);
    const s = await cli(['--home', home, 'restart-guard', 'status'], { now: 1000 });
    assert.equal(s.code, 0);
    assert.match(s.stderr, /not a regular file/);
    const r = await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1000 });
    assert.equal(r.code, 0);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { boots: [1000] });
  });

  it('creates the file 0600 in a 0700 directory', async () => {
    const home = freshHome();
    await cli(['--home', home, 'restart-guard', 'check-and-record'], { now: 1000 });
    assert.equal(statSync(restartLoopFile(home)).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(restartLoopFile(home))).mode & 0o777, 0o700);
  });

  it('fails open when the state directory cannot be written: exit 0 and one warning line (the built CLI, unprivileged)', async () => {
    // As root (CI) the CLI runs as nobody through setpriv; the directory is root's, readable but not writable by
    // nobody. As another user the directory is made read-only. Either way permissions apply: never skipped.
    const asRoot = process.getuid?.() === 0;
    const base = mkdtempSync(path.join(os.tmpdir(), 'hj-rg-ro-'));
    const home = path.join(base, 'home');
    const gateway = path.join(home, 'gateway');
    mkdirSync(gateway, { recursive: true });
    for (const d of [base, home]) chmodSync(d, 0o755);
    chmodSync(gateway, asRoot ? 0o755 : 0o555);
    try {
      const r = await runCli(['--home', home, 'restart-guard', 'check-and-record', '--max', '1'], { unprivileged: true, env: { HOME: base } });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /^hermes-janitor: warning: cannot record the boot in .*restart_loop\.json: .*fails open\)\n$/);
      assert.deepEqual(readdirSync(gateway), [], 'nothing written');
    } finally {
      chmodSync(gateway, 0o700);
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('fails open when the state path is a directory: exit 0 and one warning line', async () => {
    const home = freshHome();
    mkdirSync(restartLoopFile(home), { recursive: true });
    const r = await cli(['--home', home, 'restart-guard', 'check-and-record', '--max', '1'], { now: 1000 });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /^hermes-janitor: warning: cannot record the boot in .*fails open\)\n$/);
  });

  it('selects the profile home with --profile, before or after the subcommand', async () => {
    const root = freshHome();
    const env = { HERMES_HOME: root };
    await cli(['--profile', 'work', 'restart-guard', 'check-and-record'], { now: 1000, env });
    await cli(['restart-guard', 'check-and-record', '--profile', 'work'], { now: 1001, env });
    assert.deepEqual(JSON.parse(readFileSync(restartLoopFile(path.join(root, 'profiles', 'work')), 'utf8')), { boots: [1000, 1001] });
    assert.equal(existsSync(restartLoopFile(root)), false);
  });

  it('rejects bad usage with exit 2', async () => {
    const home = freshHome();
    for (const [args, names] of [
      [['restart-guard'], ["'restart-guard' needs a verb: check-and-record, status or clear"]],
      [['restart-guard', 'bogus'], ["unknown restart-guard verb 'bogus'"]],
      [
        ['restart-guard', 'check-and-record', '--max', 'x'],
        ['--max', "'x'"],
      ],
      [
        ['restart-guard', 'check-and-record', '--max', '2.5'],
        ['--max', "'2.5'"],
      ],
      [
        ['restart-guard', 'check-and-record', '--window', '0'],
        ['--window', "'0'"],
      ],
      [
        ['restart-guard', 'check-and-record', '--window', 'soon'],
        ['--window', "'soon'"],
      ],
      [['restart-guard', 'check-and-record', '--nope'], ["unknown option '--nope' (Did you mean --home?)"]],
      [['--profile', '../x', 'restart-guard', 'status'], ["invalid profile '../x'"]],
      [['restart-guard', 'status', '--profile', 'A B'], ["invalid profile 'A B'"]],
    ] as Array<[string[], string[]]>) {
      assertUsageError(await cli(['--home', home, ...args], { now: 1000 }), names, args.join(' '));
    }
    assert.equal(existsSync(home), false, 'usage errors touch nothing');
  });

  it('--max above the 50 kept boots counts as 50, with a warning', async () => {
    const home = freshHome();
    const r = await cli(['--home', home, 'restart-guard', 'status', '--max', '51', '--json'], { now: 1000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /--max is 51, but only the 50 newest boots are kept; using 50/);
  });

  it('states the exit codes in --help', async () => {
    for (const sub of [[], ['check-and-record'], ['status'], ['clear']]) {
      const r = await cli(['restart-guard', ...sub, '--help'], { now: 1000 });
      assert.equal(r.code, 0);
      assert.match(r.stdout, /Exit codes:/);
      if (sub[0] !== 'clear') assert.match(r.stdout, /1\s+tripped/);
    }
  });
});
