/**
 * Engine discovery with the real engines. Docker serves /var/run/docker.sock; the Podman test engine serves
 * PODMAN_SOCK. To make Podman the only engine, the CLI runs in its own mount namespace (`unshare -m`, root only)
 * where the Podman socket is bind-mounted into a temporary XDG_RUNTIME_DIR and a tmpfs over /run hides the
 * default socket (and /run/hermes-janitor) from that process tree alone.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BIN, REPO, type CliResult, runCli, tempDir } from '../helpers/cli.js';
import { failUnderCi, skipUnless } from '../helpers/preconditions.js';

const PODMAN_SOCK = process.env.PODMAN_SOCK ?? '/run/hermes-janitor/podman.sock';
const DOCKER_SOCK = '/var/run/docker.sock';
const isRoot = process.getuid?.() === 0;
const canUnshare = isRoot && spawnSync('unshare', ['-m', 'true']).status === 0;

/** `sh -c script` in a private mount namespace, then the CLI with `env` (and nothing of this process's env). */
function runIsolated(setup: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const script = `set -e\n${setup}\nexec ${quoted}`;
  return new Promise((resolve, reject) => {
    const child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script], { env, cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** A unix socket file with nothing listening (bound, never listened on, its process gone). */
function deadSocket(file: string): void {
  const r = spawnSync('python3', ['-c', 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])', file]);
  assert.equal(r.status, 0, String(r.stderr));
}

describe('engine discovery (real Docker and Podman)', { skip: skipUnless(!canUnshare && 'needs root and unshare -m') }, () => {
  const dirs: Array<() => void> = [];
  before(() => {
    failUnderCi(!canUnshare && 'needs root and unshare -m');
    assert.ok(existsSync(PODMAN_SOCK), `no Podman test socket at ${PODMAN_SOCK}: run 'bash scripts/engine.sh start podman'`);
    assert.ok(existsSync(DOCKER_SOCK), 'no Docker socket: run bash scripts/engine.sh start docker');
  });
  after(() => {
    for (const c of dirs) c();
  });
  function scratch() {
    const t = tempDir('hj-disc-');
    dirs.push(t.cleanup);
    const run = path.join(t.dir, 'run');
    mkdirSync(path.join(run, 'podman'), { recursive: true });
    return { dir: t.dir, run, home: path.join(t.dir, 'hermes'), podman: path.join(run, 'podman', 'podman.sock') };
  }
  const basePath = process.env.PATH ?? '/usr/bin:/bin';

  it('Podman is the only engine (DOCKER_HOST unset, default socket hidden): it is found and used', async () => {
    const s = scratch();
    writeFileSync(s.podman, '');
    const setup = `mount --bind '${PODMAN_SOCK}' '${s.podman}'\nmount -t tmpfs tmpfs /run`;
    const env = { PATH: basePath, HOME: s.dir, XDG_RUNTIME_DIR: s.run, HERMES_HOME: s.home };
    const r = await runIsolated(setup, ['status', '--json'], env);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const report = JSON.parse(r.stdout) as { engines: Array<{ host: string; kind: string; chosenBy: string; reachable: boolean }> };
    assert.equal(report.engines.length, 1);
    assert.equal(report.engines[0]!.host, `unix://${s.podman}`);
    assert.equal(report.engines[0]!.kind, 'Podman');
    assert.match(report.engines[0]!.chosenBy, /found by discovery: Podman socket .* answered a ping .*skipped \/var\/run\/docker\.sock \(absent\)/);
    // reap uses it too, and --verbose says why.
    const reap = await runIsolated(setup, ['reap', '--dry-run', '--verbose', '--json'], env);
    assert.equal(reap.code, 0, reap.stderr);
    assert.deepEqual(
      (JSON.parse(reap.stdout) as { hosts: Array<{ host: string }> }).hosts.map((h) => h.host),
      [`unix://${s.podman}`],
    );
    assert.match(reap.stderr, /engine unix:\/\/.*podman\.sock: found by discovery/);
  });

  it('HERMES_DOCKER_BINARY=podman puts the Podman socket first when both engines answer; docker on PATH keeps Docker first', async () => {
    const s = scratch();
    symlinkSync(PODMAN_SOCK, s.podman);
    const env = { HOME: s.dir, XDG_RUNTIME_DIR: s.run, HERMES_HOME: s.home, DOCKER_HOST: undefined };
    const withPodman = await runCli(['list', '--verbose', '--json'], { env: { ...env, HERMES_DOCKER_BINARY: 'podman' } });
    assert.equal(withPodman.code, 0, withPodman.stderr);
    assert.deepEqual(
      (JSON.parse(withPodman.stdout) as { hosts: Array<{ host: string }> }).hosts.map((h) => h.host),
      [`unix://${s.podman}`],
    );
    assert.match(withPodman.stderr, /Podman sockets first \(HERMES_DOCKER_BINARY=podman\)/);
    const plain = await runCli(['list', '--json'], { env });
    assert.equal(plain.code, 0, plain.stderr);
    assert.deepEqual(
      (JSON.parse(plain.stdout) as { hosts: Array<{ host: string }> }).hosts.map((h) => h.host),
      [`unix://${DOCKER_SOCK}`],
    );
    // podman the only container CLI on PATH: Podman first as well.
    const bin = path.join(s.dir, 'bin');
    mkdirSync(bin);
    symlinkSync('/usr/bin/podman', path.join(bin, 'podman'));
    const onlyPodman = await runCli(['list', '--json', '--verbose'], { env: { ...env, PATH: bin } });
    assert.equal(onlyPodman.code, 0, onlyPodman.stderr);
    assert.deepEqual(
      (JSON.parse(onlyPodman.stdout) as { hosts: Array<{ host: string }> }).hosts.map((h) => h.host),
      [`unix://${s.podman}`],
    );
    assert.match(onlyPodman.stderr, /podman is the only container CLI on PATH/);
  });

  it('an engine named by DOCKER_HOST is used as given, with no probing', async () => {
    const s = scratch();
    symlinkSync(PODMAN_SOCK, s.podman);
    const r = await runCli(['list', '--json', '--verbose'], {
      env: { HOME: s.dir, XDG_RUNTIME_DIR: s.run, HERMES_HOME: s.home, DOCKER_HOST: `unix://${DOCKER_SOCK}`, HERMES_DOCKER_BINARY: 'podman' },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /engine unix:\/\/\/var\/run\/docker\.sock: named by DOCKER_HOST/);
  });

  it('nothing answers: exit 3, one line with every socket tried, the Podman hint, and how to point at an engine', async () => {
    const s = scratch();
    deadSocket(s.podman); // exists, nothing listening: socket activation off
    const env = { PATH: basePath, HOME: s.dir, XDG_RUNTIME_DIR: s.run, HERMES_HOME: s.home };
    for (const args of [['reap'], ['list'], ['status']]) {
      const r = await runIsolated('mount -t tmpfs tmpfs /run', args, env);
      assert.equal(r.code, 3, `${args[0]}: ${r.stderr}`);
      const line = args[0] === 'status' ? r.stdout : r.stderr.trim();
      if (args[0] !== 'status') assert.equal(line.split('\n').length, 1, line);
      assert.match(line, /no container engine found: tried \/var\/run\/docker\.sock \(absent\)/);
      assert.ok(line.includes(`${s.podman} (not listening; Podman's API socket is off: systemctl --user enable --now podman.socket)`), line);
      assert.ok(line.includes('/run/podman/podman.sock (absent)'), line);
      assert.match(line, /--host unix:\/\/\/path\/to\/docker\.sock, DOCKER_HOST or --context/);
    }
    // reap --fail-open turns it into exit 0 with the line on stderr.
    const open = await runIsolated('mount -t tmpfs tmpfs /run', ['reap', '--fail-open'], env);
    assert.equal(open.code, 0);
    assert.match(open.stderr, /no container engine found/);
  });

  it('--once-per: the stamp of a discovered engine makes the next run skip without probing', async () => {
    const s = scratch();
    writeFileSync(s.podman, '');
    const env = { PATH: basePath, HOME: s.dir, XDG_RUNTIME_DIR: s.run, HERMES_HOME: s.home };
    const first = await runIsolated(`mount --bind '${PODMAN_SOCK}' '${s.podman}'\nmount -t tmpfs tmpfs /run`, ['reap', '--once-per', '1h', '--json'], env);
    assert.equal(first.code, 0, first.stderr);
    assert.ok('hosts' in (JSON.parse(first.stdout) as object) && !('skipped' in (JSON.parse(first.stdout) as object)), first.stdout);
    // No engine at all now: a fresh stamp still skips (exit 0), so nothing was probed.
    const again = await runIsolated('mount -t tmpfs tmpfs /run', ['reap', '--once-per', '1h'], env);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stderr, '');
  });
});
