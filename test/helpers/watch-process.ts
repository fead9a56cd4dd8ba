/** A `hermes-janitor watch --log-format json` child process, its NDJSON events collected as they come. */
import { type ChildProcess, spawn } from 'node:child_process';
import os from 'node:os';
import { BIN, REPO, emptyManagedDir, quietProcRoot, quietSystemTmp } from './cli.js';

export interface WatchLine {
  time: string;
  event: string;
  [key: string]: unknown;
}

export class WatchProcess {
  readonly lines: WatchLine[] = [];
  stderr = '';
  private buf = '';
  private waiters: Array<() => void> = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      this.buf += d;
      for (let nl = this.buf.indexOf('\n'); nl >= 0; nl = this.buf.indexOf('\n')) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        try {
          this.lines.push(JSON.parse(line) as WatchLine);
        } catch {
          this.stderr += `[non-JSON stdout] ${line}\n`;
        }
      }
      for (const w of this.waiters.splice(0)) w();
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) =>
      child.on('close', (code, signal) => {
        for (const w of this.waiters.splice(0)) w();
        resolve({ code, signal });
      }),
    );
  }

  /**
   * Starts `watch --log-format json ARGS` with a clean environment (plus `env`); `shell`: a shell line run first, in
   * the same process (`ulimit -n 1024`), which then execs node (the child's pid stays node's).
   */
  static start(args: string[], env: Record<string, string | undefined> = {}, shell?: string): WatchProcess {
    const e: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', HOME: os.tmpdir() };
    if (process.env.DOCKER_HOST && !('DOCKER_HOST' in env)) e.DOCKER_HOST = process.env.DOCKER_HOST;
    if (!('HERMES_MANAGED_DIR' in env)) e.HERMES_MANAGED_DIR = emptyManagedDir(); // never the machine's /etc/hermes
    if (!('HERMES_JANITOR_PROC_ROOT' in env)) e.HERMES_JANITOR_PROC_ROOT = quietProcRoot(); // never the machine's hermes processes
    if (!('HERMES_JANITOR_SYSTEM_TMP' in env)) e.HERMES_JANITOR_SYSTEM_TMP = quietSystemTmp(); // never the machine's /tmp
    for (const [k, v] of Object.entries(env)) if (v !== undefined) e[k] = v;
    const argv = [process.execPath, BIN, 'watch', '--log-format', 'json', ...args];
    const [cmd, ...rest] = shell ? ['sh', '-c', `${shell} && exec "$@"`, 'sh', ...argv] : argv;
    const child = spawn(cmd!, rest, { env: e, cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    return new WatchProcess(child);
  }

  events(name: string): WatchLine[] {
    return this.lines.filter((l) => l.event === name);
  }

  /** Waits until `pred` holds over the lines so far; throws (with what was seen) after `timeoutMs`. */
  async waitFor(what: string, pred: (lines: WatchLine[]) => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred(this.lines)) {
      if (this.child.exitCode !== null) throw new Error(`watch exited (${this.child.exitCode}) while waiting for ${what}; stderr: ${this.stderr}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}; events: ${this.lines.map((l) => l.event).join(',')}; stderr: ${this.stderr}`);
      }
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 500));
        this.waiters.push(() => (clearTimeout(t), r()));
      });
    }
  }

  /** Sends a signal and waits for the exit; how long it took. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; ms: number }> {
    const t0 = Date.now();
    if (this.child.exitCode === null) this.child.kill(signal);
    const r = await this.exited;
    return { code: r.code, ms: Date.now() - t0 };
  }

  /** Ends it whatever state it is in (cleanup). */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}
