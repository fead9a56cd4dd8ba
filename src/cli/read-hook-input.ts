/**
 * Reading a hook's input: the agent harness pipes one JSON value to the hook on stdin. Never throws: every failure
 * (a terminal, too much input, no end in time, not JSON) is a `problem` the hook turns into one warning.
 */
import { fstatSync, read, readSync } from 'node:fs';
import type { Context } from '../context.js';
import { errorMessage } from '../errors.js';
import { oneLine } from './hook-stdio.js';

/** Hook input larger than this is not read (the call is allowed). */
export const MAX_HOOK_INPUT_BYTES = 32 * 1024 * 1024;
/** A hook waits this long for its input to end before it gives up (and allows). */
export const HOOK_INPUT_TIMEOUT_MS = 10_000;

/** Parses hook input text: one JSON value (a leading BOM and surrounding whitespace are ignored). */
export function parseHookJson(text: string): { payload?: unknown; problem?: string } {
  const body = text.replace(/^\uFEFF/, '').trim();
  if (body === '') return { problem: 'no hook input on stdin' };
  try {
    return { payload: JSON.parse(body) as unknown };
  } catch (err) {
    return { problem: `the hook input is not valid JSON (${oneLine(errorMessage(err), 120)})` };
  }
}

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
      if (size > maxBytes) finish({ problem: `the hook input is larger than ${Math.round(maxBytes / 1048576)} MiB` });
      else chunks.push(b);
    };
    const onEnd = () => finish({ text: Buffer.concat(chunks).toString('utf8') });
    const onError = (err: Error) => finish({ problem: `cannot read stdin: ${errorMessage(err)}` });
    const timer = setTimeout(() => finish({ problem: `the hook input did not end within ${timeoutMs / 1000} s` }), timeoutMs);
    stdin.on('data', onData);
    stdin.once('end', onEnd);
    stdin.once('close', onEnd);
    stdin.once('error', onError);
    stdin.resume();
  });
  return read.problem !== undefined ? { problem: read.problem } : parseHookJson(read.text ?? '');
}

/**
 * Reads the hook input straight from a file descriptor (a pipe, socket or file), without setting up
 * `process.stdin` (a stream costs a few milliseconds of start-up). Returns undefined when the descriptor is not
 * one of those (a terminal, /dev/null): the caller then reads the stream. Never throws.
 */
export async function readHookInputFd(fd: number, opts: ReadHookInputOptions = {}): Promise<{ payload?: unknown; problem?: string } | undefined> {
  let isFile: boolean;
  try {
    const st = fstatSync(fd);
    if (!st.isFIFO() && !st.isSocket() && !st.isFile()) return undefined;
    isFile = st.isFile();
  } catch {
    return undefined;
  }
  const maxBytes = opts.maxBytes ?? MAX_HOOK_INPUT_BYTES;
  if (isFile) return readFileFd(fd, maxBytes);
  // A pipe or socket may not have its input yet: read it off the thread pool, with a deadline. Its first use
  // starts the pool; one thread is all a hook process uses it for (unless the environment says otherwise).
  process.env.UV_THREADPOOL_SIZE ??= '1';
  const deadline = Date.now() + (opts.timeoutMs ?? HOOK_INPUT_TIMEOUT_MS);
  const chunks: Buffer[] = [];
  let size = 0;
  const readChunk = (buf: Buffer) =>
    new Promise<number>((resolve, reject) => read(fd, buf, 0, buf.length, null, (err, n) => (err ? reject(err) : resolve(n))));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()));
  });
  try {
    for (;;) {
      const buf = Buffer.allocUnsafe(65536);
      let n: number | 'timeout';
      try {
        n = await Promise.race([readChunk(buf), timeout]);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return { problem: `cannot read stdin: ${errorMessage(err)}` };
        if (Date.now() >= deadline) n = 'timeout';
        else {
          await new Promise((r) => setTimeout(r, 5));
          continue;
        }
      }
      if (n === 'timeout') return { problem: `the hook input did not end within ${(opts.timeoutMs ?? HOOK_INPUT_TIMEOUT_MS) / 1000} s` };
      if (n === 0) break;
      size += n;
      if (size > maxBytes) return { problem: `the hook input is larger than ${Math.round(maxBytes / 1048576)} MiB` };
      chunks.push(buf.subarray(0, n));
    }
  } finally {
    clearTimeout(timer);
  }
  return parseHookJson(Buffer.concat(chunks).toString('utf8'));
}

/** A regular file on stdin (`hook < payload.json`) never blocks: it is read at once, without the thread pool. */
function readFileFd(fd: number, maxBytes: number): { payload?: unknown; problem?: string } {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for (;;) {
      const buf = Buffer.allocUnsafe(65536);
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      size += n;
      if (size > maxBytes) return { problem: `the hook input is larger than ${Math.round(maxBytes / 1048576)} MiB` };
      chunks.push(buf.subarray(0, n));
    }
  } catch (err) {
    return { problem: `cannot read stdin: ${errorMessage(err)}` };
  }
  return parseHookJson(Buffer.concat(chunks).toString('utf8'));
}

/** The hook input: from `fd` when given and usable, else from `ctx.stdin`. */
export async function readInput(ctx: Context, fd: number | undefined): Promise<{ payload?: unknown; problem?: string }> {
  return (fd !== undefined ? await readHookInputFd(fd) : undefined) ?? readHookInput(ctx.stdin);
}

