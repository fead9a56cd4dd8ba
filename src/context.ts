import os from 'node:os';

/** Where a command writes; injected so tests can capture output. */
export interface OutputStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

/** Everything a command may touch of the outside world. */
export interface Context {
  /** The command line after the program name. */
  argv: readonly string[];
  env: Record<string, string | undefined>;
  stdout: OutputStream;
  stderr: OutputStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  cwd: string;
  /** The user's home directory (for `~/.hermes`, `~/.docker`). */
  homedir: string;
  /** The clock. */
  now(): Date;
  /**
   * The CLI's own process (`processContext`): a run may be ended at its deadline whatever it is doing, and the
   * process with it (cli/deadline.ts). Absent for a test's or a host's context.
   */
  ownsProcess?: boolean;
}

/**
 * The user's home directory, as `os.homedir()` gives it, without loading node:os where `$HOME` decides it (on POSIX
 * systems libuv answers `$HOME` whenever it is set, even empty; hooks run on every tool call).
 */
export function userHome(env: Record<string, string | undefined> = process.env): string {
  const home = process.platform === 'win32' ? undefined : env.HOME;
  return home ?? os.homedir();
}

const watched = new WeakSet<NodeJS.WriteStream>();

/**
 * A reader that went away (`reap --json | head -c 100`: EPIPE) ends nothing half-way: what is left to write is
 * dropped, without a stack trace, and the run ends as it would have (its removals and locks as ever), with its own
 * exit code: 0 for a clean run, the reader's leaving being no failure of the run (a CLI killed by SIGPIPE would leave
 * its work half-done and exit 141). Any other error of the stream is thrown as before.
 */
function quietWhenClosed(stream: NodeJS.WriteStream): NodeJS.WriteStream {
  if (watched.has(stream)) return stream;
  watched.add(stream);
  let closed = false;
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (closed || err.code === 'EPIPE') {
      closed = true; // later writes fail as ERR_STREAM_DESTROYED: dropped the same way
      return;
    }
    throw err;
  });
  return stream;
}

export function processContext(argv: readonly string[] = process.argv.slice(2)): Context {
  return {
    argv,
    env: process.env,
    // Getters: touching process.stdin/stdout/stderr sets up a stream (a few ms each), so only on first use.
    get stdout() {
      return quietWhenClosed(process.stdout);
    },
    get stderr() {
      return quietWhenClosed(process.stderr);
    },
    get stdin() {
      return process.stdin;
    },
    cwd: process.cwd(),
    homedir: userHome(),
    now: () => new Date(),
    ownsProcess: true,
  };
}
