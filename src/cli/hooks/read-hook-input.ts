/**
 * Reading a hook's input: the agent harness pipes one JSON value to the hook on stdin. Never throws: every failure
 * (a terminal, too much input, no end in time, not JSON) is a `problem` the hook turns into one warning.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import type { Context } from '../../context.js';
import { errorMessage } from '../../errors.js';
import { oneLine } from './hook-stdio.js';

/** Hook input larger than this is not read (the call is allowed). */
export const MAX_HOOK_INPUT_BYTES = 32 * 1024 * 1024;
/** A hook waits this long for its input to end before it gives up (and allows). */
export const HOOK_INPUT_TIMEOUT_MS = 10_000;

/** Parses hook input text: one JSON value (a leading BOM and surrounding whitespace are ignored). */
export function parseHookJson(text: string): { payload?: unknown; problem?: string } {
  const body = (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).trim();
  if (body === '') return { problem: 'no hook input on stdin' };
  try {
    return { payload: JSON.parse(body) as unknown };
  } catch (err) {
    return { problem: `the hook input is not valid JSON (${oneLine(errorMessage(err), 120)})` };
  }
}

type Reading = { payload?: unknown; problem?: string };

/** The problems of reading stdin, worded alike for a descriptor and a stream. */
const tooLarge = (maxBytes: number): Reading => ({ problem: `the hook input is larger than ${Math.round(maxBytes / 1048576)} MiB` });
const noEnd = (timeoutMs: number): Reading => ({ problem: `the hook input did not end within ${timeoutMs / 1000} s` });
const unreadable = (err: unknown): Reading => ({ problem: `cannot read stdin: ${errorMessage(err)}` });

export interface ReadHookInputOptions {
  maxBytes?: number;
  timeoutMs?: number;
}

/** Reads stdin to its end and parses it as JSON. Never throws: every failure is a `problem`. */
export async function readHookInput(stdin: Context['stdin'], opts: ReadHookInputOptions = {}): Promise<{ payload?: unknown; problem?: string }> {
  if (stdin.isTTY) return { problem: 'no hook input: stdin is a terminal (the agent harness pipes the hook JSON in)' };
  const maxBytes = opts.maxBytes ?? MAX_HOOK_INPUT_BYTES;
  const timeoutMs = opts.timeoutMs ?? HOOK_INPUT_TIMEOUT_MS;
  const read = await new Promise<{ text?: string; problem?: string }>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (r: { text?: string; problem?: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stdin.removeListener('data', onData);
      stdin.removeListener('end', onEnd);
      stdin.removeListener('close', onEnd);
      stdin.removeListener('error', onError);
      if (r.problem) stdin.pause();
      resolve(r);
    };
    const onData = (chunk: Buffer | string) => {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += b.length;
      if (size > maxBytes) finish(tooLarge(maxBytes));
      else chunks.push(b);
    };
    const onEnd = () => finish({ text: Buffer.concat(chunks).toString('utf8') });
    const onError = (err: Error) => finish(unreadable(err));
    const timer = setTimeout(() => finish(noEnd(timeoutMs)), timeoutMs);
    stdin.on('data', onData);
    stdin.once('end', onEnd);
    stdin.once('close', onEnd);
    stdin.once('error', onError);
    stdin.resume();
  });
  return read.problem !== undefined ? { problem: read.problem } : parseHookJson(read.text ?? '');
}

/** The bytes read so far, in one buffer that doubles when full (no list of chunks to concatenate). */
interface Bytes {
  buf: Buffer;
  n: number;
}

/** Room for the next read: the buffer doubles when it is full. */
function room(b: Bytes): void {
  if (b.n < b.buf.length) return;
  const bigger = Buffer.allocUnsafe(b.buf.length * 2);
  b.buf.copy(bigger, 0, 0, b.n);
  b.buf = bigger;
}

const parsed = (b: Bytes): Reading => parseHookJson(b.buf.toString('utf8', 0, b.n));

/**
 * Reads the hook input straight from a file descriptor (a pipe, socket or file), synchronously, without setting up
 * `process.stdin` (a stream costs a few milliseconds of start-up). Returns undefined when the descriptor is not
 * one of those (a terminal, /dev/null): the caller then reads the stream. Never throws.
 *
 * A pipe (Codex, hermes, a shell) is read through a non-blocking descriptor of its own, so a writer that never ends
 * it meets the deadline. A socket (what Node.js harnesses give) is read as it comes, as a pipe where /proc cannot
 * reopen it (a non-blocking descriptor up to the deadline): Node.js can give a blocking socket a deadline only by
 * loading its networking (about 2 ms a call), and its thread pool, the other way, cannot be left behind by an exiting
 * process while a read waits (the process would wait for the writer all the same). The harness ends stdin once it
 * has written the input; its own hook timeout bounds one that never does.
 */
export async function readHookInputFd(fd: number, opts: ReadHookInputOptions = {}): Promise<Reading | undefined> {
  let pipe: boolean;
  try {
    const st = fstatSync(fd);
    if (!st.isFIFO() && !st.isSocket() && !st.isFile()) return undefined;
    pipe = st.isFIFO();
  } catch {
    return undefined;
  }
  const maxBytes = opts.maxBytes ?? MAX_HOOK_INPUT_BYTES;
  const timeoutMs = opts.timeoutMs ?? HOOK_INPUT_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  const own = pipe ? nonBlockingPipe(fd) : undefined;
  if (own === undefined) return readNow(fd, maxBytes, deadline, timeoutMs);
  try {
    return readNow(own, maxBytes, deadline, timeoutMs);
  } finally {
    closeSync(own);
  }
}

/**
 * A descriptor of its own on the pipe `fd` reads, opened non-blocking (through /proc: Node.js cannot set
 * O_NONBLOCK on a descriptor it was given); undefined where that cannot be done (no procfs, no permission).
 */
function nonBlockingPipe(fd: number): number | undefined {
  try {
    return openSync(`/proc/self/fd/${fd}`, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
}

/**
 * Reads `fd` to its end. A blocking descriptor waits in the read; a non-blocking one with nothing to read yet is tried
 * again every 5 ms while its writer has not ended it, until `deadline`.
 */
function readNow(fd: number, maxBytes: number, deadline: number, timeoutMs: number): Reading {
  const b: Bytes = { buf: Buffer.allocUnsafe(65536), n: 0 };
  for (;;) {
    room(b);
    let k: number;
    try {
      k = readSync(fd, b.buf, b.n, b.buf.length - b.n, null);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EINTR') continue;
      if (code !== 'EAGAIN') return unreadable(err);
      if (Date.now() >= deadline) return noEnd(timeoutMs);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
      continue;
    }
    if (k === 0) return parsed(b);
    b.n += k;
    if (b.n > maxBytes) return tooLarge(maxBytes);
  }
}

/** The hook input: from `fd` when given and usable, else from `ctx.stdin`. */
export async function readInput(ctx: Context, fd: number | undefined): Promise<{ payload?: unknown; problem?: string }> {
  return (fd !== undefined ? await readHookInputFd(fd) : undefined) ?? readHookInput(ctx.stdin);
}
