/**
 * `watch` against the real engine (Docker, and Podman via scripts/test.sh): deadlines from the event stream,
 * a restarted container surviving, the reap lock, metrics and health, and a prompt exit 0 on SIGTERM.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { assertUsageError, runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, RUN_EXTRA, RUN_LABEL, TEST_IMAGE, docker, requireEngine } from '../helpers/docker.js';
import { WatchProcess, type WatchLine } from '../helpers/watch-process.js';

const runId = randomBytes(5).toString('hex');
const profile = `w-${runId}`;
const home = tempDir('hj-watch-');
const watches: WatchProcess[] = [];

/** `docker run -d` a hermes-labelled container of this run running `cmd`. */
function run(cmd: string[]): Promise<string> {
  return docker([
    'run',
    '-d',
    '--init',
    ...RUN_EXTRA,
    '--label',
    `${RUN_LABEL}=${runId}`,
    '--label',
    'hermes-agent=1',
    '--label',
    `hermes-profile=${profile}`,
    '--network',
    'none',
    TEST_IMAGE,
    ...cmd,
  ]);
}

async function remaining(): Promise<string[]> {
  const out = await docker(['ps', '-aq', '--no-trunc', '--filter', `label=${RUN_LABEL}=${runId}`]);
  return out ? out.split('\n') : [];
}

function startWatch(extra: string[] = []): WatchProcess {
  const w = WatchProcess.start(['--home', home.dir, '--profile', profile, '--older-than', '3s', '--force-threshold', ...extra]);
  watches.push(w);
  return w;
}

const connected = (lines: WatchLine[]) => lines.some((l) => l.event === 'engine' && l.state === 'connected');
const removedIds = (w: WatchProcess) => new Set(w.events('removed').map((l) => l.id as string));
const finishedMs = (raw: string) => Date.parse(raw.replace(/(\.\d{3})\d+/, '$1'));

before(requireEngine);
after(async () => {
  for (const w of watches) w.kill();
  const ids = await remaining().catch(() => []);
  if (ids.length) await docker(['rm', '-f', ...ids]).catch(() => undefined);
  home.cleanup();
});

describe(`watch on the real engine (${ENGINE_KIND})`, () => {
  it('removes containers exiting at staggered times within 2 s of their deadline; one restarted before its deadline survives', async () => {
    // Exited before watch starts: found by the first sweep and removed at its deadline.
    const early = await run(['true']);
    const w = startWatch();
    await w.waitFor('connected', connected);
    const staggered: string[] = [];
    for (let k = 1; k <= 10; k++) staggered.push(await run(['sleep', String(k * 0.5)]));
    const restarted = await run(['sleep', '3600']);
    const control = await run(['sleep', '3600']);
    await docker(['stop', '-t', '0', restarted, control]);
    await new Promise((r) => setTimeout(r, 1000));
    await docker(['start', restarted]);
    const expected = [early, ...staggered, control];
    await w.waitFor('every exited container removed', () => expected.every((id) => removedIds(w).has(id)), 30_000);

    const lags: number[] = [];
    for (const l of w.events('removed')) {
      if (l.trigger !== 'deadline') continue;
      lags.push((Date.parse(l.time) - (finishedMs(l.finishedAt as string) + 3000)) / 1000);
    }
    assert.ok(lags.length >= 11, `removed at their deadlines: ${JSON.stringify(w.events('removed'))}`);
    for (const lag of lags) assert.ok(lag >= 0 && lag < 2, `lag ${lag} s not within [0, 2)`);
    // The restarted one is more than 3 s past its first exit now and runs on.
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(await docker(['inspect', '--format', '{{.State.Status}}', restarted]), 'running');
    assert.ok(!removedIds(w).has(restarted));
    const left = await remaining();
    assert.deepEqual(left, [restarted]);

    // While watch runs, a reap of this home and engine answers "skipped": "locked" at once.
    const t0 = Date.now();
    const r = await runCli(['reap', '--json', '--home', home.dir, '--profile', profile]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { skipped?: string }).skipped, 'locked');
    assert.ok(Date.now() - t0 < 5000);

    const stop = await w.stop('SIGTERM');
    assert.equal(stop.code, 0, w.stderr);
    assert.ok(stop.ms < 5000, `SIGTERM took ${stop.ms} ms`);
    assert.equal(w.events('shutdown').length, 1);
    await docker(['rm', '-f', restarted]);
  });

  it('serves Prometheus metrics and /healthz; exits 0 on SIGINT', async () => {
    const w = startWatch(['--metrics-listen', '127.0.0.1:0']);
    await w.waitFor('metrics address', (ls) => ls.some((l) => l.event === 'metrics'));
    await w.waitFor('connected', connected);
    const url = w.events('metrics')[0]!.url as string;
    const id = await run(['true']);
    await w.waitFor('removal', () => removedIds(w).has(id), 15_000);
    const health = await fetch(`${url}/healthz`);
    assert.equal(health.status, 200);
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const family of [
      'hermes_janitor_last_run_timestamp_seconds',
      'hermes_janitor_last_run_duration_seconds',
      'hermes_janitor_last_run_success',
      'hermes_janitor_containers_removed',
      'hermes_janitor_containers_kept',
      'hermes_janitor_containers_failed',
      'hermes_janitor_orphans',
      'hermes_janitor_events_total',
      'hermes_janitor_reconnects_total',
      'hermes_janitor_tracked_containers',
    ]) {
      assert.match(text, new RegExp(`^# TYPE ${family} `, 'm'), family);
    }
    // Every series carries the home watch serves (`home`, after the labels of before).
    const at = `home="${home.dir}"`;
    assert.match(text, new RegExp(`^hermes_janitor_removed_total\\{host="[^"]+",profile="${profile}",${at}\\} 1$`, 'm'));
    assert.match(text, new RegExp(`^hermes_janitor_events_total\\{host="[^"]+",action="die",${at}\\} [1-9]`, 'm'));
    assert.match(text, new RegExp(`^hermes_janitor_containers_stopped\\{host="[^"]+",profile="${profile}",${at}\\} 0$`, 'm'), 'stopped carries series');
    assert.match(text, new RegExp(`^hermes_janitor_heartbeat_timestamp_seconds\\{${at}\\} \\d`, 'm'), 'the heartbeat');
    // The families shared with `reap --metrics-file` have the very same HELP and TYPE lines.
    const file = `${home.dir}/reap.prom`;
    const r = await runCli(['reap', '--dry-run', '--home', home.dir, '--profile', profile, '--metrics-file', file]);
    assert.equal(r.code, 0, r.stderr);
    const header = (t: string) => t.split('\n').filter((l) => /^# (HELP|TYPE) /.test(l));
    const reapHeader = header(readFileSync(file, 'utf8'));
    assert.ok(reapHeader.length >= 16, reapHeader.join('\n'));
    const watchHeader = new Set(header(text));
    for (const l of reapHeader) assert.ok(watchHeader.has(l), `watch lacks: ${l}`);
    assert.equal((await fetch(`${url}/nope`)).status, 404);
    const stop = await w.stop('SIGINT');
    assert.equal(stop.code, 0, w.stderr);
  });
});

describe(`watch and the idle rule on the real engine (${ENGINE_KIND})`, () => {
  it('with a short --idle-after it stops an idle --init sleeper, never one kept busy by execs', async () => {
    const idleHome = tempDir('hj-watch-idle-');
    const idleProfile = `wi-${runId}`;
    const runIn = (cmd: string[]) =>
      docker([
        'run',
        '-d',
        '--init',
        ...RUN_EXTRA,
        '--label',
        `${RUN_LABEL}=${runId}`,
        '--label',
        'hermes-agent=1',
        '--label',
        `hermes-profile=${idleProfile}`,
        '--network',
        'none',
        TEST_IMAGE,
        ...cmd,
      ]);
    let busyLoop = true;
    try {
      // --idle-after-owned too: a hermes on this host (another run's stand-in, hermes itself) may own every profile.
      const w = WatchProcess.start(['--home', idleHome.dir, '--profile', idleProfile, '--idle-after', '3s', '--idle-after-owned', '3s', '--stop-timeout', '1']);
      watches.push(w);
      await w.waitFor('connected', connected);
      const idle = await runIn(['sleep', '3600']);
      const busy = await runIn(['sleep', '3600']);
      // The busy one runs a command every 0.7 s, as hermes does (every command is a `docker exec`).
      const execs = (async () => {
        while (busyLoop) {
          await docker(['exec', busy, 'true']).catch(() => undefined);
          await new Promise((r) => setTimeout(r, 700));
        }
      })();
      const stoppedIds = () => new Set(w.events('stopped').map((l) => l.id as string));
      await w.waitFor('the idle sandbox stopped', () => stoppedIds().has(idle), 30_000);
      const ev = w.events('stopped').find((l) => l.id === idle)!;
      assert.equal(ev.rule, 'idle');
      assert.ok((ev.idleSeconds as number) >= 3, `idle ${String(ev.idleSeconds)} s`);
      assert.equal(await docker(['inspect', '--format', '{{.State.Running}}', idle]), 'false');
      // Several idle thresholds with execs: the busy one runs on.
      await new Promise((r) => setTimeout(r, 8000));
      busyLoop = false;
      await execs;
      assert.ok(!stoppedIds().has(busy), `busy sandbox stopped: ${JSON.stringify(w.events('stopped'))}`);
      assert.equal(await docker(['inspect', '--format', '{{.State.Running}}', busy]), 'true');
      const stop = await w.stop('SIGTERM');
      assert.equal(stop.code, 0, w.stderr);
    } finally {
      busyLoop = false;
      idleHome.cleanup();
    }
  });
});

describe(`watch and a sandbox it stopped, on the real engine (${ENGINE_KIND})`, () => {
  it("--stopped-retention 3s: the idle sandbox is stopped, kept, then removed within a second of the retention's end", async () => {
    const rHome = tempDir('hj-watch-retain-');
    const rProfile = `wr-${runId}`;
    try {
      const w = WatchProcess.start([
        '--home',
        rHome.dir,
        '--profile',
        rProfile,
        '--idle-after',
        '1s',
        '--stopped-retention',
        '3s',
        '--older-than',
        '1s',
        '--force-threshold',
        '--stop-timeout',
        '0',
      ]);
      watches.push(w);
      await w.waitFor('connected', connected);
      const id = await docker([
        'run',
        '-d',
        '--init',
        ...RUN_EXTRA,
        '--label',
        `${RUN_LABEL}=${runId}`,
        '--label',
        'hermes-agent=1',
        '--label',
        `hermes-profile=${rProfile}`,
        '--network',
        'none',
        TEST_IMAGE,
        'sleep',
        '3600',
      ]);
      await w.waitFor('the idle sandbox stopped', () => w.events('stopped').some((l) => l.id === id), 30_000);
      const stoppedAt = Date.parse(w.events('stopped').find((l) => l.id === id)!.time);
      await w.waitFor('the stopped sandbox removed', () => removedIds(w).has(id), 20_000);
      const removedAt = Date.parse(w.events('removed').find((l) => l.id === id)!.time);
      const lag = (removedAt - (stoppedAt + 3000)) / 1000;
      assert.ok(lag >= -0.05 && lag < 1, `removed ${lag} s after the retention's end (stopped ${new Date(stoppedAt).toISOString()})`);
      assert.deepEqual(await remaining().then((ids) => ids.filter((x) => x === id)), []);
      assert.equal((await w.stop('SIGTERM')).code, 0, w.stderr);
    } finally {
      rHome.cleanup();
    }
  });
});

describe('--older-than and watch usage errors (no engine needed)', () => {
  for (const cmd of ['reap', 'list', 'watch']) {
    it(`${cmd} --older-than under 120 s with the hermes selection needs --force-threshold`, async () => {
      const r = await runCli([cmd, '--home', home.dir, '--older-than', '30s', '--host', 'unix:///nonexistent.sock']);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /--older-than 30s .*--force-threshold/);
      assert.equal(r.stderr.trim().split('\n').length, 1);
    });
  }
  it('a stray positional argument: exit 2 with one line naming it and the fix, before any engine contact', async () => {
    for (const cmd of ['reap', 'list', 'status', 'watch']) {
      const r = await runCli([cmd, 'extra', '--home', home.dir, '--host', 'unix:///nonexistent.sock']);
      assertUsageError(r, [`unexpected argument 'extra' for ${cmd}: it takes options only`, `see 'hermes-janitor ${cmd} --help'`], cmd);
    }
    // Several: every one named, also those after `--`; the alias `ls` is named as list.
    assertUsageError(await runCli(['ls', 'a', '--', '--b', '--home', home.dir]), [/unexpected arguments 'a', '--b', '--home', '[^']+' for list:/]);
  });
  it('a custom --label selection takes a short --older-than without --force-threshold', async () => {
    const r = await runCli(['list', '--json', '--home', home.dir, '--label', `ci-${runId}=1`, '--older-than', '5s']);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as { thresholdSeconds: number; idleAfterSeconds: number };
    assert.equal(doc.thresholdSeconds, 5);
    assert.equal(doc.idleAfterSeconds, 600, '--older-than leaves the idle threshold to the lifetime');
  });
  it('rejects fractions of a second, --lifetime with --older-than, and --json for watch', async () => {
    for (const args of [
      ['reap', '--older-than', '1500ms'],
      ['reap', '--older-than', '10m', '--lifetime', '30'],
      ['reap', '--force-threshold'],
      ['watch', '--json'],
      ['watch', '--metrics-listen', 'nope'],
    ]) {
      const r = await runCli([...args, '--home', home.dir, '--host', 'unix:///nonexistent.sock']);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
  });
});
