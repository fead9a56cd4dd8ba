/**
 * No run outlives its deadline (#47), through the built CLI on the real engine:
 * - the keep pattern (`janitor.keep_images: '^sha256:(?:[0-9a-f]|[0-9a-f])*!'`, `janitor.images_over: 1`)
 *   over an image a selected container uses: `reap --dry-run --timeout 5s` returns within 6 s of its spawn, exit 0 or
 *   3, and `watch`'s `/healthz` answers every poll meanwhile (on main the backtracking match held the run for minutes
 *   and `/healthz` went silent);
 * - the hard stop itself, whatever the code is doing: a preload (test/helpers/stall.mjs) makes the listing of the
 *   session files' directory a synchronous loop that never yields. `reap --timeout 2s` (text and `--json`) ends
 *   within 3 s of its spawn, exit 3, its report parseable and saying `timedOut`, its lock released; `watch` ends the
 *   stuck run, says so and carries on, `/healthz` answering throughout (on main: the run never ends);
 * - a reader that goes away (`reap --json | head -c 100`, EPIPE) gets no stack trace: the run ends with its own code.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { BIN, REPO, emptyManagedDir, quietProcRoot, runCli, tempDir } from '../helpers/cli.js';
import { EngineFixture, requireEngine } from '../helpers/docker.js';
import { WatchProcess } from '../helpers/watch-process.js';

const hex = (n: number) => randomBytes(n).toString('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const STALL = pathToFileURL(path.join(REPO, 'test', 'helpers', 'stall.mjs')).href;
const KEEP_PATTERN = "janitor:\n  images_over: 1\n  keep_images: '^sha256:(?:[0-9a-f]|[0-9a-f])*!'\n";

/** Runs the CLI and how long it took from its spawn. */
async function timed(args: string[], env: Record<string, string>): Promise<Awaited<ReturnType<typeof runCli>> & { ms: number }> {
  const t0 = Date.now();
  const r = await runCli(args, { env, killAfterMs: 30_000 });
  return { ...r, ms: Date.now() - t0 };
}

/** Polls `/healthz` every 200 ms until `until` resolves: each poll's status, or the error of one that got no answer within 1 s. */
async function pollHealth(url: string, until: Promise<unknown>): Promise<Array<number | string>> {
  let done = false;
  void until.then(() => (done = true));
  const out: Array<number | string> = [];
  while (!done) {
    try {
      out.push((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })).status);
    } catch (err) {
      out.push(String((err as Error).message));
    }
    await sleep(200);
  }
  return out;
}

describe('no run outlives its deadline (#47)', () => {
  const fx = new EngineFixture();
  const t = tempDir('hj-deadline-');
  const watches: WatchProcess[] = [];
  let sysTmp = '';

  before(async () => {
    await requireEngine();
    sysTmp = path.join(t.dir, 'systmp');
    mkdirSync(sysTmp, { mode: 0o1777 });
  });
  after(async () => {
    for (const w of watches) w.kill();
    await fx.cleanup();
    t.cleanup();
  });

  /** A home of its own (`config` as its config.yaml) and the arguments selecting only this test's containers. */
  function home(config: string | null): { dir: string; args: string[]; env: Record<string, string> } {
    const dir = path.join(t.dir, `home-${hex(3)}`);
    mkdirSync(dir, { recursive: true });
    if (config !== null) writeFileSync(path.join(dir, 'config.yaml'), config);
    return { dir, args: ['--home', dir, '--profile', fx.profile], env: { HOME: t.dir, HERMES_JANITOR_SYSTEM_TMP: sysTmp } };
  }

  it("the issue's keep pattern: reap --dry-run --timeout 5s returns within 6 s, and watch's /healthz answers throughout", async () => {
    await fx.create({ state: 'created' }); // its image is counted: the pattern is matched against the image's id
    const h = home(KEEP_PATTERN);
    const r = await timed(['reap', '--dry-run', '--json', '--timeout', '5s', ...h.args], h.env);
    assert.ok(r.code === 0 || r.code === 3, `exit ${r.code}: ${r.stderr}`);
    assert.ok(r.ms <= 6000, `returned after ${r.ms} ms (--timeout 5s + 1 s)`);
    const report = JSON.parse(r.stdout) as { timedOut: boolean; images?: { counted: number } };
    if (!report.timedOut) assert.ok((report.images?.counted ?? 0) >= 1, `the image pass counted the container's image: ${r.stdout.slice(0, 400)}`);

    const w = WatchProcess.start([...h.args, '--timeout', '5s', '--images-over', '1', '--metrics-listen', '127.0.0.1:0'], h.env);
    watches.push(w);
    await w.waitFor('metrics address', (ls) => ls.some((l) => l.event === 'metrics'));
    const url = w.events('metrics')[0]!.url as string;
    const polls = await pollHealth(url, sleep(8000));
    assert.ok(polls.length >= 10, `polled ${polls.length} times`);
    assert.deepEqual(
      polls.filter((p) => typeof p !== 'number'),
      [],
      `every /healthz poll answered within 1 s: ${polls.join(',')}; ${w.stderr}`,
    );
    const stop = await w.stop();
    assert.equal(stop.code, 0, w.stderr);
  });

  it('a synchronous loop (a directory listing that never yields): reap --timeout 2s ends within 3 s, exit 3, report and lock released', async () => {
    const h = home(null);
    const env = { ...h.env, NODE_OPTIONS: `--import ${STALL}`, HJ_STALL_DIR: sysTmp };
    for (const json of [false, true]) {
      const r = await timed(['reap', ...(json ? ['--json'] : []), '--timeout', '2s', ...h.args], env);
      assert.match(r.stderr, /\[stall: listing /, 'the listing stalled');
      assert.equal(r.code, 3, r.stderr);
      assert.ok(r.ms <= 3000, `returned after ${r.ms} ms (--timeout 2s + 1 s)`);
      if (json) assert.equal((JSON.parse(r.stdout) as { timedOut: boolean }).timedOut, true, r.stdout);
      else assert.match(r.stderr, /timed out after --timeout 2s/);
      const janitor = path.join(h.dir, 'janitor');
      const locks = existsSync(janitor) ? readdirSync(janitor).filter((n) => /^reap-.*\.lock$/.test(n)) : [];
      assert.deepEqual(locks, [], 'the reap lock is released');
    }
  });

  it('watch ends a run stuck past its deadline, says so and carries on; /healthz answers throughout', async () => {
    const h = home(null);
    const once = path.join(t.dir, `stalled-${hex(3)}`);
    const env = { ...h.env, NODE_OPTIONS: `--import ${STALL}`, HJ_STALL_DIR: sysTmp, HJ_STALL_ONCE: once };
    const w = WatchProcess.start([...h.args, '--timeout', '3s', '--metrics-listen', '127.0.0.1:0'], env);
    watches.push(w);
    await w.waitFor('metrics address', (ls) => ls.some((l) => l.event === 'metrics'));
    const url = w.events('metrics')[0]!.url as string;
    const ended = w.waitFor('the stuck run ended', (ls) => ls.some((l) => l.event === 'run-ended-at-deadline'), 30_000);
    const polls = await pollHealth(
      url,
      ended.then(() => sleep(2000)),
    );
    await ended;
    assert.ok(existsSync(once), 'the listing stalled once');
    assert.deepEqual(
      polls.filter((p) => typeof p !== 'number'),
      [],
      `every /healthz poll answered within 1 s: ${polls.join(',')}; ${w.stderr}`,
    );
    assert.ok(w.child.exitCode === null, `watch carries on: ${w.stderr}`);
    const stop = await w.stop();
    assert.equal(stop.code, 0, w.stderr);
  });

  it('a reader that goes away (reap --json | head -c 100): no stack trace, the run ends with its own code', async () => {
    // Enough of the report to fill a pipe: 3,000 recent background jobs, each kept and listed.
    const dir = path.join(t.dir, `pipe-${hex(3)}`);
    mkdirSync(dir);
    for (let i = 0; i < 3000; i++) writeFileSync(path.join(dir, `hermes_bg_p${i}.log`), '');
    const h = home(null);
    for (const format of [['--json'], ['--log-format', 'json']]) {
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        LANG: 'C.UTF-8',
        HOME: t.dir,
        HERMES_MANAGED_DIR: emptyManagedDir(),
        HERMES_JANITOR_PROC_ROOT: quietProcRoot(),
        HERMES_JANITOR_SYSTEM_TMP: dir,
        ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}),
      };
      const child = spawn(process.execPath, [BIN, 'reap', '--dry-run', ...format, ...h.args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      let first = 0;
      child.stdout.on('data', (d: Buffer) => {
        first += d.length;
        child.stdout.destroy(); // as `head -c 100` does once it has its bytes
      });
      const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
      assert.ok(first > 0, 'the report began');
      assert.doesNotMatch(stderr, /EPIPE|^\s+at /m, `no stack trace (${format.join(' ')}): ${stderr}`);
      assert.equal(code, 0, `${format.join(' ')}: ${stderr}`);
    }
    rmSync(dir, { recursive: true, force: true });
  });
});
