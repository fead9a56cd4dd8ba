/**
 * Real processes standing in for hermes, and a second user: the owner/abandoned tests (shell snapshots, owned
 * sandboxes). A stand-in is `sh <dir>/hermes [args]` (a script named after hermes' entry point, so its command line
 * is hermes': `<dir>/hermes gateway run` is a gateway), run as a given user with the environment given; it writes a
 * shell snapshot the way hermes does (`umask 077; export -p > ...`) when asked, says `ready` on stdout, and waits. It
 * runs in a process group of its own, killed with SIGKILL as a whole.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, type CliResult, REPO, quietSystemTmp } from './cli.js';

/** The unprivileged user these tests create when it is missing (never removed: other runs reuse it). */
export const TEST_USER = 'hj-owner';

/** The test user's uid and gid, creating the user (no home, no login) when missing; null with the reason when impossible. */
export function testUser(): { uid: number; gid: number } | string {
  if (process.getuid?.() !== 0) return 'needs root (to create and switch to a second user)';
  if (spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status !== 0) return 'needs setpriv (util-linux)';
  const id = () => spawnSync('id', ['-u', TEST_USER], { encoding: 'utf8' });
  if (id().status !== 0) {
    const r = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', TEST_USER], { encoding: 'utf8' });
    if (r.status !== 0 && id().status !== 0) return `cannot create user ${TEST_USER}: ${r.stderr.trim()}`;
  }
  const uid = Number(id().stdout.trim());
  const gid = Number(spawnSync('id', ['-g', TEST_USER], { encoding: 'utf8' }).stdout.trim());
  return { uid, gid };
}

/** `setpriv` arguments that run a command as `user` (no supplementary groups). */
export function asUser(user: { uid: number; gid: number }): string[] {
  return [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--'];
}

export interface StandIn {
  pid: number;
  /** Its pid as it sees itself (in a pid namespace of its own: not `pid`). */
  innerPid: number;
  child: ChildProcess;
  /** SIGKILL to the whole group; resolves once it exited. */
  kill(): Promise<void>;
}

/**
 * A directory holding the stand-in script `<dir>/hermes` (hermes' entry point's name), readable by everyone, and
 * `<dir>/hermes-notes/backup.sh`, the same waiting script under a directory whose name merely starts with `hermes-`.
 */
export function standInScript(): { script: string; notHermes: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hj-standin-'));
  chmodSync(dir, 0o755);
  const script = path.join(dir, 'hermes');
  // HJ_SNAPSHOT: a session id to write a snapshot for (unset: none).
  const text = 'umask 077\nif [ -n "$HJ_SNAPSHOT" ]; then export -p > "$TMPDIR/hermes-snap-$HJ_SNAPSHOT.sh"; fi\necho "ready $$"\nsleep 3600 &\nwait\n';
  writeFileSync(script, text, { mode: 0o755 });
  mkdirSync(path.join(dir, 'hermes-notes'), { mode: 0o755 });
  const notHermes = path.join(dir, 'hermes-notes', 'backup.sh');
  writeFileSync(notHermes, text, { mode: 0o755 });
  return { script, notHermes, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts a stand-in as `user` (null: this user) with `env` (PATH added) and waits for its `ready`: `sh <script>
 * [args]`, writing a snapshot for `session` unless it is `-`.
 */
export async function startStandIn(
  script: string,
  session: string,
  env: Record<string, string>,
  user: { uid: number; gid: number } | null,
  prefix: string[] = [],
  args: string[] = [],
): Promise<StandIn> {
  const argv = [script.endsWith('.sh') ? 'bash' : 'sh', script, ...args];
  if (session !== '-') env = { ...env, HJ_SNAPSHOT: session };
  return startArgv(argv, env, user, prefix);
}

/**
 * Starts a process with exactly `argv` (a launcher's command line: `<venv>/bin/python -m hermes_cli.main gateway run`)
 * as `user` with `env` (PATH added), and waits for the `ready <pid>` it prints; killed with SIGKILL as a whole group.
 */
export async function startArgv(
  argv: string[],
  env: Record<string, string>,
  user: { uid: number; gid: number } | null,
  prefix: string[] = [],
): Promise<StandIn> {
  const [cmd, ...rest] = [...prefix, ...(user ? ['setpriv', ...asUser(user), ...argv] : argv)];
  const child = spawn(cmd!, rest, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (/ready \d+\n/.test(out)) resolve();
    });
    child.on('exit', (code) => reject(new Error(`stand-in exited (${code}) before it was ready`)));
  });
  return {
    pid: child.pid!,
    innerPid: Number(/ready (\d+)/.exec(out)![1]),
    child,
    async kill() {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      await exited;
    },
  };
}

/** The built CLI as `user` (null: this user), with `env` only (PATH and LANG added). */
export function runCliAs(
  user: { uid: number; gid: number } | null,
  args: string[],
  env: Record<string, string>,
  prefix: string[] = [],
  killAfterMs = 60_000,
): Promise<CliResult> {
  // Never the machine's /tmp for hermes' session files, unless a test names one (`quietSystemTmp`).
  const full = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', HERMES_JANITOR_SYSTEM_TMP: quietSystemTmp(), ...env };
  const argv = [process.execPath, BIN, ...args];
  const [cmd, ...rest] = [...prefix, ...(user ? ['setpriv', ...asUser(user), ...argv] : argv)];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd!, rest, { env: full, cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * A pid namespace of its own (with its own /proc), held open by a sleeping process: stand-ins and janitor runs
 * entered into it (`prefix`) see only each other, not the other processes of a shared machine.
 */
export async function pidNamespace(): Promise<{ prefix: string[]; close: () => Promise<void> }> {
  const holder = spawn('unshare', ['--pid', '--fork', '--mount', '--mount-proc', '--propagation', 'private', 'sleep', '3600'], {
    stdio: 'ignore',
    detached: true,
  });
  const exited = once(holder, 'exit');
  await once(holder, 'spawn');
  // The namespace's first process is unshare's child: wait for it to exist (its fork is the event).
  let inner = '';
  for (let i = 0; i < 500 && !inner; i++) {
    try {
      inner = readFileSync(`/proc/${holder.pid}/task/${holder.pid}/children`, 'utf8').trim().split(' ')[0] ?? '';
    } catch {
      /* not yet */
    }
    if (!inner) await new Promise((r) => setTimeout(r, 10));
  }
  if (!inner) throw new Error('the pid namespace did not start');
  return {
    prefix: ['nsenter', '-t', inner, '--pid', '--mount', '--'],
    async close() {
      try {
        process.kill(-holder.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      await exited;
    },
  };
}
