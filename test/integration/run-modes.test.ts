import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { reapLockPath } from '../../src/adapters/janitor-files.js';
import { assertUsageError, fastPathOnly, runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_HOST, ENGINE_SOCKET, EngineFixture, after as plus, requireEngine } from '../helpers/docker.js';

interface Entry {
  id: string;
  host: string;
  reason?: string;
}
const DEFAULT_SOCKET_HOST = 'unix:///var/run/docker.sock';

describe('shell start-up, cron, CI and many-engine modes (real engine)', () => {
  const fx = new EngineFixture();
  const tmp = tempDir('hj-modes-');
  const home = path.join(tmp.dir, 'hermes');
  const env = { HOME: tmp.dir, HERMES_HOME: home };
  const servers: net.Server[] = [];

  before(requireEngine);
  after(async () => {
    for (const s of servers) s.close();
    await fx.cleanup();
    tmp.cleanup();
  });

  it('--once-per: a fresh stamp exits 0 at once without contacting the engine', async () => {
    const sock = path.join(tmp.dir, 'alias.sock');
    symlinkSync(ENGINE_SOCKET, sock);
    const host = `unix://${sock}`;
    const first = await runCli(['reap', '--once-per', '1h', '--host', host, '--profile', fx.profile], { env });
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /Removed 0/);
    rmSync(sock); // the engine is now unreachable at that address
    // The shell start-up form: answered by the bundled fast path alone (the full CLI is not even there to load).
    const fastOnly = fastPathOnly();
    try {
      const plain = await runCli(['reap', '--once-per', '1h', '--host', host, '--profile', fx.profile, '--quiet'], { env, bin: fastOnly.bin });
      assert.deepEqual([plain.code, plain.stdout, plain.stderr], [0, '', '']);
      // A selection without a stamp is the full CLI's to run: without it there, the entry says it cannot load it.
      const unstamped = await runCli(['reap', '--once-per', '1h', '--host', host, '--profile', `${fx.profile}-none`, '--quiet'], { env, bin: fastOnly.bin });
      assert.equal(unstamped.code, 1, unstamped.stderr);
      assert.match(unstamped.stderr, /cannot load the built CLI/);
    } finally {
      fastOnly.cleanup();
    }
    // The full CLI agrees, in every output form.
    const fresh = await runCli(['reap', '--once-per', '1h', '--host', host, '--profile', fx.profile, '--json'], { env });
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.equal(JSON.parse(fresh.stdout).skipped, 'fresh');
    // Another selection has no stamp: it does contact the (unreachable) engine.
    const other = await runCli(['reap', '--once-per', '1h', '--host', host, '--all-profiles'], { env });
    assert.equal(other.code, 3);
    // An unreachable run records no stamp.
    const again = await runCli(['reap', '--once-per', '1h', '--host', host, '--all-profiles'], { env });
    assert.equal(again.code, 3);
    // A dry run records no stamp either.
    await runCli(['reap', '--dry-run', '--once-per', '1s', '--profile', `${fx.profile}-dry`], { env });
    const afterDry = await runCli(['reap', '--dry-run', '--json', '--once-per', '1h', '--profile', `${fx.profile}-dry`], { env });
    assert.equal(JSON.parse(afterDry.stdout).skipped, undefined);
  });

  it('--once-per with several engines needs every stamp fresh', async () => {
    const a = path.join(tmp.dir, 'a.sock');
    const b = path.join(tmp.dir, 'b.sock');
    symlinkSync(ENGINE_SOCKET, a);
    symlinkSync(ENGINE_SOCKET, b);
    const one = await runCli(['reap', '--host', `unix://${a}`, '--profile', fx.profile], { env });
    assert.equal(one.code, 0, one.stderr);
    const both = await runCli(['reap', '--json', '--once-per', '1h', '--host', `unix://${a}`, '--host', `unix://${b}`, '--profile', fx.profile], { env });
    assert.equal(both.code, 0, both.stderr);
    assert.equal(JSON.parse(both.stdout).skipped, undefined, 'b had no stamp: a sweep ran');
    const fresh = await runCli(['reap', '--json', '--once-per', '1h', '--host', `unix://${a}`, '--host', `unix://${b}`, '--profile', fx.profile], { env });
    assert.equal(JSON.parse(fresh.stdout).skipped, 'fresh');
  });

  it('only one reap per home and engine: a live holder skips, a dead holder is taken over, --wait times out', async () => {
    // --profile without --home selects <root>/profiles/<profile>: the lock lives in that home.
    const lock = reapLockPath(path.join(home, 'profiles', fx.profile), ENGINE_HOST);
    mkdirSync(path.dirname(lock), { recursive: true });
    writeFileSync(lock, JSON.stringify({ pid: process.pid, host: os.hostname(), acquiredAt: new Date().toISOString(), token: 'test' }));
    const skipped = await runCli(['reap', '--json', '--profile', fx.profile], { env });
    assert.equal(skipped.code, 0, skipped.stderr);
    const sj = JSON.parse(skipped.stdout);
    assert.equal(sj.skipped, 'locked');
    assert.equal(sj.holder.pid, process.pid);
    const text = await runCli(['reap', '--profile', fx.profile], { env });
    assert.match(text.stderr, new RegExp(`another reap is running.*pid ${process.pid}`));
    const dryRun = await runCli(['reap', '--dry-run', '--json', '--profile', fx.profile], { env });
    assert.equal(JSON.parse(dryRun.stdout).dryRun, true, 'dry runs take no lock');
    const waited = await runCli(['reap', '--json', '--wait', '--timeout', '1s', '--profile', fx.profile], { env });
    assert.equal(waited.code, 3);
    assert.equal(JSON.parse(waited.stdout).timedOut, true);

    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    writeFileSync(lock, JSON.stringify({ pid: Number(dead.stdout), host: os.hostname(), acquiredAt: new Date().toISOString(), token: 'dead' }));
    const takeover = await runCli(['reap', '--json', '--profile', fx.profile], { env });
    assert.equal(takeover.code, 0, takeover.stderr);
    assert.equal(JSON.parse(takeover.stdout).skipped, undefined);
    assert.ok(!existsSync(lock), 'the lock is released after the run');
  });

  it('--timeout cuts off an engine that accepts the connection and never answers', async () => {
    const sock = path.join(tmp.dir, 'hung.sock');
    const server = net.createServer(() => undefined); // accept, never answer
    servers.push(server);
    await new Promise<void>((r) => server.listen(sock, r));
    const started = Date.now();
    const res = await runCli(['reap', '--json', '--timeout', '1s', '--host', `unix://${sock}`], { env, killAfterMs: 20_000 });
    const took = Date.now() - started;
    assert.equal(res.code, 3, res.stderr);
    const out = JSON.parse(res.stdout);
    assert.equal(out.timedOut, true);
    assert.deepEqual(out.removed, []);
    assert.ok(took < 8000, `ended ${took} ms after start`);
    const failOpen = await runCli(['reap', '--fail-open', '--timeout', '1s', '--host', `unix://${sock}`], { env });
    assert.equal(failOpen.code, 0);
    assert.ok(failOpen.stderr.trim().split('\n').length <= 1);
    const quiet = await runCli(['reap', '--fail-open', '--quiet', '--timeout', '1s', '--host', `unix://${sock}`], { env });
    assert.equal(quiet.code, 0);
    assert.equal(quiet.stderr, '');
  });

  it('an ssh:// engine that refuses the connection: exit 3 and one stderr line (ssh2 is loaded on first use)', async () => {
    const res = await runCli(['reap', '--timeout', '5s', '--host', 'ssh://nobody@127.0.0.1:1'], { env, killAfterMs: 20_000 });
    assert.equal(res.code, 3, res.stderr);
    assert.match(res.stderr, /^hermes-janitor: engine ssh:\/\/nobody@127\.0\.0\.1:1 unreachable: cannot reach the engine at .* \(ECONNREFUSED\).*\n$/);
  });

  it('plan, then apply: only planned ids are removed, each re-checked; a later container is untouched', async () => {
    const planned = await fx.create({ state: 'exited' });
    const keepMe = await fx.create({ state: 'exited', labels: { 'hj-keep': 'yes' } });
    const asOf = plus(await fx.finishedAt(keepMe), 3600);
    const planFile = path.join(tmp.dir, 'plan.json');
    const dry = await runCli(['reap', '--dry-run', '--json', '--plan-out', planFile, '--profile', fx.profile, '--exclude-label', 'hj-keep', '--as-of', asOf], {
      env,
    });
    assert.equal(dry.code, 0, dry.stderr);
    const plan = JSON.parse(readFileSync(planFile, 'utf8'));
    assert.deepEqual(
      plan.containers.map((c: Entry) => c.id),
      [planned],
    );
    assert.equal(plan.selection.profile, fx.profile);
    const dj = JSON.parse(dry.stdout);
    assert.equal(dj.kept.find((k: Entry) => k.id === keepMe)?.reason, 'excluded');

    const late = await fx.create({ state: 'exited' });
    const lateAsOf = plus(await fx.finishedAt(late), 3600);
    const conflict = await runCli(['reap', '--plan', planFile, '--profile', 'other'], { env });
    assertUsageError(conflict, [`flags disagree with plan ${planFile}`, 'profile other (plan: ']);
    const apply = await runCli(['reap', '--json', '--plan', planFile, '--as-of', lateAsOf], { env });
    assert.equal(apply.code, 0, apply.stderr);
    const aj = JSON.parse(apply.stdout);
    assert.deepEqual(
      aj.removed.map((e: Entry) => e.id),
      [planned],
    );
    const reported = [...aj.removed, ...aj.kept, ...aj.failed].map((e: Entry) => e.id);
    assert.ok(!reported.includes(late) && !reported.includes(keepMe), 'nothing outside the plan is reported');
    const left = await fx.remaining();
    assert.ok(left.includes(late) && left.includes(keepMe) && !left.includes(planned));
    const replay = await runCli(['reap', '--json', '--plan', planFile, '--as-of', lateAsOf], { env });
    assert.deepEqual(
      JSON.parse(replay.stdout).kept.map((e: Entry) => [e.id, e.reason]),
      [[planned, 'gone']],
    );
    writeFileSync(planFile, '{"version": 1}');
    const bad = await runCli(['reap', '--plan', planFile], { env });
    assertUsageError(bad, [planFile, 'is not a reap plan']);
  });

  it('--label and --profile-label serve other labelling schemes; --exclude-label wins', async () => {
    const ci = await fx.create({ state: 'exited', agent: null, profile: null, labels: { 'ci-job': fx.runId, 'ci-team': 'red' } });
    const other = await fx.create({ state: 'exited', agent: null, profile: null, labels: { 'ci-job': fx.runId, 'ci-team': 'blue' } });
    const asOf = plus(await fx.finishedAt(other), 3600);
    const res = await runCli(
      ['reap', '--json', '--dry-run', '--label', `ci-job=${fx.runId}`, '--profile-label', 'ci-team', '--profile', 'red', '--as-of', asOf],
      { env },
    );
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout);
    assert.deepEqual(
      out.removed.map((e: Entry) => e.id),
      [ci],
    );
    const ex = await runCli(
      ['reap', '--json', '--dry-run', '--label', `ci-job=${fx.runId}`, '--all-profiles', '--exclude-label', 'ci-team=blue', '--as-of', asOf],
      { env },
    );
    const ej = JSON.parse(ex.stdout);
    assert.deepEqual(
      ej.removed.map((e: Entry) => e.id),
      [ci],
    );
    assert.deepEqual(
      ej.kept.map((e: Entry) => [e.id, e.reason]),
      [[other, 'excluded']],
    );
    assertUsageError(await runCli(['reap', '--exclude-label', '=x'], { env }), ['--exclude-label', "'=x'"]);
  });

  it('two engines, one down: the other is swept, every entry carries its host, exit 3', async () => {
    const id = await fx.create({ state: 'exited' });
    const asOf = plus(await fx.finishedAt(id), 3600);
    const res = await runCli(['reap', '--json', '--host', ENGINE_HOST, '--host', 'tcp://127.0.0.1:9', '--profile', fx.profile, '--as-of', asOf], { env });
    assert.equal(res.code, 3, res.stderr);
    const out = JSON.parse(res.stdout);
    assert.deepEqual(
      out.hosts.map((h: { host: string; reachable: boolean }) => [h.host, h.reachable]),
      [
        [ENGINE_HOST, true],
        ['tcp://127.0.0.1:9', false],
      ],
    );
    assert.ok(out.removed.some((e: Entry) => e.id === id && e.host === ENGINE_HOST));
    assert.ok(!(await fx.remaining()).includes(id));
  });

  it('resolves docker contexts in the docker CLI order', async () => {
    const cfg = path.join(tmp.dir, 'docker-config');
    const meta = (name: string, host: string) => {
      const dir = path.join(cfg, 'contexts', 'meta', createHash('sha256').update(name).digest('hex'));
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'meta.json'), JSON.stringify({ Name: name, Endpoints: { docker: { Host: host, SkipTLSVerify: false } } }));
    };
    const alias = path.join(tmp.dir, 'ctx.sock');
    symlinkSync(ENGINE_SOCKET, alias);
    meta('local-alias', `unix://${alias}`);
    meta('down', 'tcp://127.0.0.1:9');
    mkdirSync(cfg, { recursive: true });
    writeFileSync(path.join(cfg, 'config.json'), JSON.stringify({ currentContext: 'local-alias' }));
    const hostOf = async (args: string[], extra: Record<string, string> = {}) => {
      const r = await runCli(['list', '--json', '--profile', fx.profile, ...args], { env: { ...env, DOCKER_CONFIG: cfg, DOCKER_HOST: undefined, ...extra } });
      return { code: r.code, stdout: r.stdout, host: r.stdout ? JSON.parse(r.stdout).hosts[0].host : null, stderr: r.stderr };
    };
    assert.equal((await hostOf([])).host, `unix://${alias}`, 'currentContext');
    assert.equal((await hostOf([], { DOCKER_CONTEXT: 'down' })).host, 'tcp://127.0.0.1:9', '$DOCKER_CONTEXT over currentContext');
    assert.equal((await hostOf([], { DOCKER_CONTEXT: 'down', DOCKER_HOST: ENGINE_HOST })).host, ENGINE_HOST, '$DOCKER_HOST over $DOCKER_CONTEXT');
    assert.equal((await hostOf(['--context', 'local-alias'], { DOCKER_HOST: 'tcp://127.0.0.1:9' })).host, `unix://${alias}`, '--context over $DOCKER_HOST');
    assert.equal((await hostOf(['--context', 'down', '--host', ENGINE_HOST])).host, ENGINE_HOST, '--host over --context');
    assert.equal((await hostOf(['--context', 'default'])).host, DEFAULT_SOCKET_HOST, 'default is the default socket');
    const unknown = await hostOf(['--context', 'nope']);
    assertUsageError(unknown, ["unknown docker context 'nope'"]);
  });

  it('--log-format json prints NDJSON events with time and event names', async () => {
    const id = await fx.create({ state: 'exited' });
    const asOf = plus(await fx.finishedAt(id), 3600);
    const res = await runCli(['reap', '--log-format', 'json', '--profile', fx.profile, '--as-of', asOf], { env });
    assert.equal(res.code, 0, res.stderr);
    const events = res.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    for (const e of events) {
      assert.ok(!Number.isNaN(Date.parse(e.time)) && typeof e.event === 'string');
    }
    assert.ok(events.some((e) => e.event === 'removed' && e.id === id));
    assert.equal(events.at(-1).event, 'summary');
    assertUsageError(await runCli(['reap', '--json', '--log-format', 'json'], { env }), ['--json', '--log-format']);
  });

  it('--background returns at once and writes the run to <home>/logs/janitor.log', async () => {
    const bgHome = path.join(tmp.dir, 'bg');
    const res = await runCli(['reap', '--background', '--profile', fx.profile], { env: { ...env, HERMES_HOME: bgHome } });
    assert.equal(res.code, 0, res.stderr);
    const log = path.join(bgHome, 'profiles', fx.profile, 'logs', 'janitor.log');
    for (let i = 0; i < 100 && !(existsSync(log) && /Removed \d+/.test(readFileSync(log, 'utf8'))); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(readFileSync(log, 'utf8'), /Removed 0, stopped 0, kept 0, failed 0/);
    // status reads that log: the last background run, and that it completed.
    const st = await runCli(['status', '--json', '--profile', fx.profile], { env: { ...env, HERMES_HOME: bgHome } });
    const lastRun = (JSON.parse(st.stdout) as { janitor: { log: { lastRun: { command: string; completed: boolean } | null } } }).janitor.log.lastRun;
    assert.deepEqual([lastRun?.command.includes('reap'), lastRun?.completed], [true, true], st.stdout);
  });

  it('--help says what each engine command does now: all three rules of reap and watch, list verdicts, status sections', async () => {
    const top = await runCli(['--help'], { env });
    assert.equal(top.code, 0, top.stderr);
    const flat = top.stdout.replace(/\s+/g, ' ');
    assert.match(flat, / reap remove exited and never-started orphans older than the threshold; stop sandboxes proven idle /);
    assert.match(flat, / watch run as a service: remove each orphan at its deadline and stop each idle sandbox/);
    assert.match(flat, / list\|ls list labelled containers with the verdict reap would reach \(reap, stop or keep\)/);
    assert.match(flat, / status engines, containers, janitor state, sandbox directories and breakers/);
    assert.match(flat, /1 at least one removal or stop failed/);
    const reap = await runCli(['reap', '--help'], { env });
    assert.match(reap.stdout.replace(/\s+/g, ' '), /--idle-max-processes <n> the most processes a running container may hold and still be idle/);
  });

  it('shell-init prints a snippet for bash, zsh and fish', async () => {
    for (const shell of ['bash', 'zsh', 'fish']) {
      const res = await runCli(['shell-init', shell]);
      assert.equal(res.code, 0);
      assert.match(res.stdout, /hermes-janitor reap --once-per 1h --background --fail-open --quiet/);
    }
    const bash = await runCli(['shell-init', 'bash']);
    assert.equal(spawnSync('bash', ['-n'], { input: bash.stdout }).status, 0, 'valid bash');
    assertUsageError(await runCli(['shell-init', 'tcsh']), ["'tcsh'", 'bash, zsh, fish']);
  });
});
