/**
 * A private Docker engine for tests that must kill or restart the engine, or change its swarm state: its own
 * socket, data-root, exec-root and pid file under a fresh directory, and its own network namespace, so the shared
 * engine (which other test runs use at the same time) and the host's network are never touched. `cleanup()`
 * removes its containers, leaves its swarm, stops it, ends whatever it started (by pid), unmounts what it left and
 * removes the directory.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, closeSync } from 'node:fs';
import { promisify } from 'node:util';
import path from 'node:path';
import { TEST_IMAGE } from './docker.js';
import { REPO } from './cli.js';

const exec = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class SecondDockerd {
  readonly socket: string;
  readonly host: string;
  private pid: number | undefined;

  private constructor(
    readonly dir: string,
    /** A command prefix that enters the namespaces it runs in (`nsenter ...`), or none. */
    private readonly prefix: readonly string[] = [],
  ) {
    this.socket = path.join(dir, 'docker.sock');
    this.host = `unix://${this.socket}`;
  }

  /**
   * Null (with the reason) when no dockerd can be started here (not root, no dockerd). `prefix` runs it in other
   * namespaces (a pid namespace of its own: its containers' pids are then those its pid namespace numbers).
   */
  static async start(prefix: readonly string[] = []): Promise<SecondDockerd | { unavailable: string }> {
    if (process.getuid?.() !== 0) return { unavailable: 'a second dockerd needs root' };
    if (!existsSync('/usr/sbin/dockerd') && !existsSync('/usr/bin/dockerd')) return { unavailable: 'no dockerd binary' };
    const d = new SecondDockerd(mkdtempSync('/tmp/hj-dockerd-'), prefix);
    try {
      await d.up();
      // The test image, imported as the project's script imports it (whichever engine the rest of the run uses).
      await exec('bash', [path.join(REPO, 'scripts', 'engine.sh'), 'image'], {
        timeout: 60_000,
        env: { ...process.env, DOCKER_HOST: d.host, HERMES_JANITOR_TEST_IMAGE: TEST_IMAGE },
      });
      return d;
    } catch (err) {
      await d.cleanup();
      return { unavailable: `the second dockerd did not start: ${(err as Error).message.split('\n')[0]}` };
    }
  }

  /** Runs the docker CLI against this engine. */
  async docker(args: string[], timeoutMs = 30_000): Promise<string> {
    const { stdout } = await exec('docker', args, { env: { ...process.env, DOCKER_HOST: this.host }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
    return stdout.trim();
  }

  /** Starts (or starts again) the daemon and waits until it answers. */
  async up(): Promise<void> {
    const d = this.dir;
    const log = openSync(path.join(d, 'dockerd.log'), 'a');
    // In a network namespace of its own: a dockerd in the host's removes the host's docker0 when started with
    // `--bridge none` (the shared engine's containers then cannot use the default network), and its own bridges
    // (its docker0, Swarm's docker_gwbridge) would be left on the host. Here they go with the namespace. The socket
    // is a file, so it is reached as before; Swarm advertises 127.0.0.1. unshare and sh exec, so the pid is dockerd's.
    const child = spawn(
      this.prefix[0] ?? 'unshare',
      [
        ...(this.prefix.length ? [...this.prefix.slice(1), 'unshare'] : []),
        '--net',
        '--',
        'sh',
        '-c',
        'ip link set lo up && exec dockerd "$@"',
        'dockerd',
        '--host',
        this.host,
        '--data-root',
        path.join(d, 'data'),
        '--exec-root',
        path.join(d, 'exec'),
        '--pidfile',
        path.join(d, 'dockerd.pid'),
        '--iptables=false',
        '--ip6tables=false',
      ],
      { detached: true, stdio: ['ignore', log, log] },
    );
    closeSync(log);
    child.unref();
    this.pid = child.pid;
    for (let i = 0; i < 150; i++) {
      try {
        await this.docker(['version', '--format', '{{.Server.Version}}'], 5000);
        // Entered through a prefix, the child is nsenter's: dockerd itself, as the host numbers it, is the one to stop.
        if (this.prefix.length)
          this.pid = pidsMentioning(this.dir).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('dockerd\0')) ?? this.pid;
        return;
      } catch {
        if (child.exitCode !== null) break;
        await sleep(200);
      }
    }
    throw new Error(`dockerd at ${this.host} did not come up; see ${path.join(d, 'dockerd.log')}`);
  }

  /** Stops the daemon (SIGTERM, like `systemctl stop docker`) and waits for it to exit. */
  async down(): Promise<void> {
    const pid = this.pid;
    if (!pid) return;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      this.pid = undefined;
      return;
    }
    for (let i = 0; i < 150 && alive(pid); i++) await sleep(100);
    if (alive(pid)) process.kill(pid, 'SIGKILL');
    this.pid = undefined;
  }

  async cleanup(): Promise<void> {
    if (this.pid && alive(this.pid)) {
      await this.docker(['swarm', 'leave', '--force']).catch(() => undefined);
      const ids = await this.docker(['ps', '-aq']).catch(() => '');
      if (ids) await this.docker(['rm', '-f', ...ids.split('\n')], 60_000).catch(() => undefined);
    }
    await this.down();
    // Whatever is left that this engine started (containerd, shims): by pid, found by this directory.
    for (const pid of pidsMentioning(this.dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await sleep(200);
    const mounts = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[1] ?? '')
      .filter((m) => m.startsWith(this.dir))
      .sort((a, b) => b.length - a.length);
    for (const m of mounts) await exec('umount', ['-l', m]).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}

function pidsMentioning(dir: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(dir)) out.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return out;
}
