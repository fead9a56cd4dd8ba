import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The built CLI, as a user runs it. */
export const BIN = path.join(REPO, 'bin', 'hermes-janitor.js');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** Environment added to a clean one (PATH, HOME pointed at a temporary directory unless given). */
  env?: Record<string, string | undefined>;
  /** Written to stdin, then stdin is closed. Without it stdin is closed at once. */
  input?: string | Buffer;
  cwd?: string;
  /** Kill the process after this long (a hang is a failure, not a stuck test run). */
  killAfterMs?: number;
  /**
   * Run as an unprivileged user: as root (CI), through `setpriv` as nobody (uid and gid 65534, no supplementary
   * groups), so file permissions apply; otherwise as the current (already unprivileged) user.
   */
  unprivileged?: boolean;
  /** Another entry than the repository's bin/ (e.g. `fastPathOnly()`'s). */
  bin?: string;
}

/** The uid and gid `unprivileged` runs use when the tests run as root. */
export const NOBODY = 65534;

/** Whether `setpriv` (util-linux) can be run; `unprivileged` needs it when the tests run as root. */
export function hasSetpriv(): boolean {
  return spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0;
}

let managedDir: string | undefined;
/** An empty directory standing for hermes' managed directory (made once per test process, removed at its exit). */
export function emptyManagedDir(): string {
  if (managedDir === undefined) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hj-managed-'));
    chmodSync(dir, 0o755); // also for the runs as nobody
    managedDir = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return managedDir;
}

let quietProc: string | undefined;
/**
 * A procfs root of its own for the CLI under test (`HERMES_JANITOR_PROC_ROOT`): this machine's boot time and no
 * process, so that hermes processes running on the machine (a real gateway, another test's stand-in) own nothing the
 * test made. Made once per test process, removed at its exit. Tests about owners run stand-ins in a pid namespace
 * of their own instead (`owners.ts`).
 */
export function quietProcRoot(): string {
  if (quietProc === undefined) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hj-proc-'));
    const btime = /^btime \d+$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[0] ?? `btime ${Math.floor(Date.now() / 1000 - os.uptime())}`;
    writeFileSync(path.join(dir, 'stat'), `${btime}\n`);
    chmodSync(dir, 0o755); // also for the runs as nobody
    quietProc = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return quietProc;
}

let quietTmp: string | undefined;
/**
 * A directory of its own the CLI under test takes for `/tmp` (`HERMES_JANITOR_SYSTEM_TMP`), where it looks for hermes'
 * session files: never the machine's `/tmp`, where a real hermes or another test keeps theirs. Made once per test
 * process (sticky and world-writable, as `/tmp` is), removed at its exit.
 */
export function quietSystemTmp(): string {
  if (quietTmp === undefined) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hj-systmp-'));
    chmodSync(dir, 0o1777);
    quietTmp = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return quietTmp;
}

/** Spawns `node bin/hermes-janitor.js ARGS` and collects what a user would see. */
export function runCli(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
  // The engine under test (e.g. Podman's socket) reaches the CLI unless a test sets DOCKER_HOST itself (even to undefined).
  if (process.env.DOCKER_HOST && !('DOCKER_HOST' in (opts.env ?? {}))) env.DOCKER_HOST = process.env.DOCKER_HOST;
  for (const [k, v] of Object.entries(opts.env ?? {})) if (v !== undefined) env[k] = v;
  if (!('HOME' in env)) env.HOME = os.tmpdir();
  // Never the machine's /etc/hermes: an empty managed directory unless a test names one (hermes' own suite does
  // the same under pytest, managed_scope._under_pytest).
  if (!('HERMES_MANAGED_DIR' in (opts.env ?? {}))) env.HERMES_MANAGED_DIR = emptyManagedDir();
  // Never the machine's hermes processes: a process table of its own unless a test names one.
  if (!('HERMES_JANITOR_PROC_ROOT' in (opts.env ?? {}))) env.HERMES_JANITOR_PROC_ROOT = quietProcRoot();
  // Never the machine's /tmp: a directory of its own for the session files, unless a test names one.
  if (!('HERMES_JANITOR_SYSTEM_TMP' in (opts.env ?? {}))) env.HERMES_JANITOR_SYSTEM_TMP = quietSystemTmp();
  let command = process.execPath;
  let argv = [opts.bin ?? BIN, ...args];
  if (opts.unprivileged && process.getuid?.() === 0) {
    if (!hasSetpriv()) {
      throw new Error('running as root and setpriv (util-linux) is missing: install util-linux, or run the tests as an unprivileged user');
    }
    argv = [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', command, ...argv];
    command = 'setpriv';
  }
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { env, cwd: opts.cwd ?? REPO, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input);
  });
}

/**
 * The built entry with nothing but the bundled fast paths beside it (`bin/`, `dist/*.cjs` and their code caches):
 * what it answers, a fast path answered; anything else fails with "cannot load the built CLI" (exit 1).
 */
export function fastPathOnly(): { bin: string; cleanup: () => void } {
  const t = tempDir('hj-fast-only-');
  mkdirSync(path.join(t.dir, 'bin'));
  mkdirSync(path.join(t.dir, 'dist'));
  const bundles = ['fast-path', 'fast-path-tool-loop', 'fast-path-stop-hook'].flatMap((b) => [`dist/${b}.cjs`, `dist/${b}.cjs.cache`]);
  for (const f of ['bin/hermes-janitor.js', 'bin/package.json', ...bundles]) {
    copyFileSync(path.join(REPO, f), path.join(t.dir, f));
  }
  return { bin: path.join(t.dir, 'bin', 'hermes-janitor.js'), cleanup: t.cleanup };
}

/** A temporary directory removed by the returned function. */
export function tempDir(prefix = 'hj-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A usage error as documented: exit 2, nothing on stdout, and stderr exactly one line `hermes-janitor: ...` that
 * names the offending input (each of `names`: a substring, or a pattern).
 */
export function assertUsageError(r: { code: number | null; stdout: string; stderr: string }, names: Array<string | RegExp>, what = ''): void {
  const ctx = `${what ? `${what}: ` : ''}stderr ${JSON.stringify(r.stderr)}`;
  assert.equal(r.code, 2, `exit ${r.code}; ${ctx}`);
  assert.equal(r.stdout, '', ctx);
  assert.match(r.stderr, /^hermes-janitor: [^\n]+\n$/, `one line; ${ctx}`);
  assert.doesNotMatch(r.stderr, /unexpected error|\n\s+at /, ctx);
  for (const n of names) {
    if (typeof n === 'string') assert.ok(r.stderr.includes(n), `names ${JSON.stringify(n)}; ${ctx}`);
    else assert.match(r.stderr, n, ctx);
  }
}

/**
 * A hook that failed open on its own mistake, as documented: exit 0, nothing on stdout (every dialect's "allow / no
 * decision" answer), and stderr exactly one warning line `hermes-janitor: warning: ...` that names the mistake (each
 * of `names`: a substring, or a pattern).
 */
export function assertFailsOpen(r: { code: number | null; stdout: string; stderr: string }, names: Array<string | RegExp>, what = ''): void {
  const ctx = `${what ? `${what}: ` : ''}stderr ${JSON.stringify(r.stderr)}`;
  assert.equal(r.code, 0, `exit ${r.code}; ${ctx}`);
  assert.equal(r.stdout, '', ctx);
  assert.match(r.stderr, /^hermes-janitor: warning: [^\n]+\n$/, `one line; ${ctx}`);
  assert.doesNotMatch(r.stderr, /unexpected error|\n\s+at /, ctx);
  for (const n of names) {
    if (typeof n === 'string') assert.ok(r.stderr.includes(n), `names ${JSON.stringify(n)}; ${ctx}`);
    else assert.match(r.stderr, n, ctx);
  }
}
