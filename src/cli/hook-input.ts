/**
 * Running the hooks (`stop-hook` and `tool-loop pre|post`): reading and parsing the hook JSON on stdin, calling
 * the breaker and writing its answer. Hooks always exit 0 (fail open) and keep stdout for the harness.
 *
 * This module must not load commander: `runHookFastPath` lets `main` run a plain hook invocation without it
 * (hooks run on every tool call, so start-up cost matters). Anything unusual falls back to commander.
 */
import { fstatSync, read, writeSync } from 'node:fs';
import path from 'node:path';
import type { Context, OutputStream } from '../context.js';
import { resolveHermesHome } from '../core/hermes-home.js';
import { ENV_MAX_STOP_BLOCKS } from '../defaults.js';
import { ExitCode, errorMessage } from '../errors.js';

// Only what every hook needs is imported statically; the rest is loaded when used (each module costs start-up time).

/** Hook input larger than this is not read (the call is allowed). */
export const MAX_HOOK_INPUT_BYTES = 32 * 1024 * 1024;
/** A hook waits this long for its input to end before it gives up (and allows). */
export const HOOK_INPUT_TIMEOUT_MS = 10_000;

/**
 * The smallest value of each whole-number flag: `--max-blocks` >= 1, `--threshold` >= 2 (1 would deny every
 * call), `--failure-threshold` >= 1, `--remaining` >= 0. Parsed with `parseWholeNumber` (core/parse-args).
 */
export const COUNT_FLAG_MIN = { '--max-blocks': 1, '--threshold': 2, '--failure-threshold': 1, '--remaining': 0 } as const;
export type CountFlag = keyof typeof COUNT_FLAG_MIN;

function oneLine(s: string, max = 300): string {
  const line = s.replace(/\s*[\r\n]+\s*/g, ' ');
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

/** One warning line on stderr (same format as the other commands' warnings). */
export function hookWarn(ctx: Context, message: string): void {
  ctx.stderr.write(`hermes-janitor: warning: ${oneLine(message, 1000)}\n`);
}

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
  try {
    const st = fstatSync(fd);
    if (!st.isFIFO() && !st.isSocket() && !st.isFile()) return undefined;
  } catch {
    return undefined;
  }
  const maxBytes = opts.maxBytes ?? MAX_HOOK_INPUT_BYTES;
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

/** The hook input: from `fd` when given and usable, else from `ctx.stdin`. */
async function readInput(ctx: Context, fd: number | undefined): Promise<{ payload?: unknown; problem?: string }> {
  return (fd !== undefined ? await readHookInputFd(fd) : undefined) ?? readHookInput(ctx.stdin);
}

/** Writes synchronously to a file descriptor (no stream set-up); a closed or failing reader is ignored. */
function fdWriter(fd: number): OutputStream {
  return {
    write(chunk: string) {
      const bytes = Buffer.from(chunk);
      let off = 0;
      let spins = 0;
      while (off < bytes.length) {
        try {
          off += writeSync(fd, bytes, off);
        } catch (err) {
          // A non-blocking pipe that is full: wait a moment (bounded), else give up (fail open).
          if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || ++spins > 5000) return false;
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
        }
      }
      return true;
    },
  };
}

/**
 * The process context for a hook: stdout and stderr write straight to fds 1 and 2; everything else (stdin
 * included) is the given context's, still read lazily.
 */
export function rawStdioContext(ctx: Context): Context {
  return Object.create(ctx, { stdout: { value: fdWriter(1) }, stderr: { value: fdWriter(2) } }) as Context;
}

function writeLine(ctx: Context, value: unknown, pretty: boolean): void {
  ctx.stdout.write(`${pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value)}\n`);
}

/** A path given on the command line: `~/` is the user's home, relative paths resolve against the cwd. */
export function resolvePathArg(ctx: Context, p: string): string {
  if (p === '~' || p.startsWith('~/')) return path.join(ctx.homedir, p.slice(1));
  return path.resolve(ctx.cwd, p);
}

export interface StopHookRun {
  /** The hermes home (the default marker lives under it). */
  home: string;
  /** `--marker` */
  marker?: string;
  /** `--max-blocks`; else `$HERMES_JANITOR_MAX_STOP_BLOCKS`; else 5. */
  maxBlocks?: number;
  /** `--json` */
  json?: boolean;
  /** Read the input from this file descriptor rather than `ctx.stdin` (see {@link readHookInputFd}). */
  stdinFd?: number;
}

/**
 * `HERMES_JANITOR_MAX_STOP_BLOCKS`, when set: an integer >= 1. An invalid value is a warning and the default
 * applies (a hook never fails on its environment).
 */
export async function maxBlocksFromEnv(env: Context['env'], warnings: string[]): Promise<number | undefined> {
  const raw = env[ENV_MAX_STOP_BLOCKS];
  if (raw === undefined || raw.trim() === '') return undefined;
  const { parseWholeNumber } = await import('../core/parse-args.js');
  try {
    return parseWholeNumber(raw, ENV_MAX_STOP_BLOCKS, COUNT_FLAG_MIN['--max-blocks']);
  } catch (err) {
    warnings.push(`${errorMessage(err)}; using the default`);
    return undefined;
  }
}

/** The Stop hook: reads the input, decides, prints the answer. Always returns 0. */
export async function runStopHook(ctx: Context, run: StopHookRun): Promise<number> {
  const warnings: string[] = [];
  try {
    const reading = readInput(ctx, run.stdinFd); // meanwhile, the breaker loads
    const { createStopHook, defaultMarkerPath, DEFAULT_MAX_BLOCKS, HARNESS_BLOCK_CAP } = await import('../breakers/stop-hook.js');
    const maxBlocks = run.maxBlocks ?? (await maxBlocksFromEnv(ctx.env, warnings)) ?? DEFAULT_MAX_BLOCKS;
    if (maxBlocks >= HARNESS_BLOCK_CAP) {
      warnings.push(`max blocks ${maxBlocks} is not below the harness's own cap of about ${HARNESS_BLOCK_CAP}; it may end the turn first`);
    }
    const marker = run.marker !== undefined ? resolvePathArg(ctx, run.marker) : defaultMarkerPath(run.home);
    const hook = createStopHook({ marker, maxBlocks, now: () => ctx.now() });
    const input = await reading;
    const result =
      input.problem !== undefined
        ? { action: 'allow' as const, why: 'malformed-input' as const, warnings: [`${input.problem}; allowing the stop`] }
        : await hook.decide(input.payload as Parameters<typeof hook.decide>[0]);
    warnings.push(...result.warnings);
    for (const w of warnings) hookWarn(ctx, `stop-hook: ${w}`);
    if (run.json) {
      const state = 'marker' in result ? (result.marker ?? null) : null;
      writeLine(ctx, { hook: 'stop', action: result.action, why: result.why, output: ('output' in result && result.output) || null, marker, state, maxBlocks, warnings }, true);
    } else if ('output' in result && result.output) {
      writeLine(ctx, result.output, false);
    }
  } catch (err) {
    hookWarn(ctx, `stop-hook: internal error: ${errorMessage(err)}; allowing the stop`);
  }
  return ExitCode.OK;
}

export interface ToolLoopRun {
  event: 'pre' | 'post';
  /** The hermes home (histories live in `<home>/tool-loop/`). */
  home: string;
  threshold?: number;
  failureThreshold?: number;
  json?: boolean;
  /** Read the input from this file descriptor rather than `ctx.stdin` (see {@link readHookInputFd}). */
  stdinFd?: number;
}

/** The PreToolUse/PostToolUse hook: reads the input, counts, prints a deny/block answer when due. Always returns 0. */
export async function runToolLoopHook(ctx: Context, run: ToolLoopRun): Promise<number> {
  const name = `tool-loop ${run.event}`;
  try {
    const reading = readInput(ctx, run.stdinFd); // meanwhile, the breaker loads
    const { createToolLoop, defaultToolLoopDir } = await import('../breakers/tool-loop.js');
    const loop = createToolLoop({
      dir: defaultToolLoopDir(run.home),
      threshold: run.threshold,
      failureThreshold: run.failureThreshold,
      now: () => ctx.now(),
    });
    const input = await reading;
    const result =
      input.problem !== undefined
        ? { action: 'allow' as const, why: 'malformed-input' as const, warnings: [`${input.problem}; the call is not counted`] }
        : await loop[run.event](input.payload as Parameters<typeof loop.pre>[0]);
    for (const w of result.warnings) hookWarn(ctx, `${name}: ${w}`);
    if (run.json) {
      const r = result as Partial<Awaited<ReturnType<typeof loop.pre>>>;
      writeLine(
        ctx,
        {
          hook: run.event,
          action: result.action,
          why: result.why,
          output: r.output ?? null,
          session: r.session ?? null,
          count: r.count ?? null,
          dir: loop.location,
          state: r.state ?? null,
          threshold: loop.threshold,
          failureThreshold: loop.failureThreshold,
          warnings: result.warnings,
        },
        true,
      );
    } else if ('output' in result && result.output) {
      writeLine(ctx, result.output, false);
    }
  } catch (err) {
    hookWarn(ctx, `${name}: internal error: ${errorMessage(err)}; the call is allowed`);
  }
  return ExitCode.OK;
}

/** A hook invocation the fast path accepts: the command words, then only these options. */
interface HookForm {
  words: string[];
  /** The options taking a value. */
  values: string[];
  run(ctx: Context, home: string, opts: Record<string, unknown>, stdinFd: number | undefined): Promise<number>;
}

const FORMS: HookForm[] = [
  {
    words: ['stop-hook'],
    values: ['--marker', '--max-blocks'],
    run: (ctx, home, o, stdinFd) =>
      runStopHook(ctx, { home, marker: o['--marker'] as string | undefined, maxBlocks: o['--max-blocks'] as number | undefined, json: o['--json'] === true, stdinFd }),
  },
  {
    words: ['tool-loop', 'pre'],
    values: ['--threshold'],
    run: (ctx, home, o, stdinFd) =>
      runToolLoopHook(ctx, { event: 'pre', home, threshold: o['--threshold'] as number | undefined, json: o['--json'] === true, stdinFd }),
  },
  {
    words: ['tool-loop', 'post'],
    values: ['--failure-threshold'],
    run: (ctx, home, o, stdinFd) =>
      runToolLoopHook(ctx, { event: 'post', home, failureThreshold: o['--failure-threshold'] as number | undefined, json: o['--json'] === true, stdinFd }),
  },
];

const GLOBAL_VALUES = new Set(['--home', '--profile']);

export interface FastPathOptions {
  /** Read the hook input from this descriptor (the process's own stdin, 0) instead of `ctx.stdin`. */
  stdinFd?: number;
}

/**
 * Runs a plain hook invocation (`[--home H] [--profile P] stop-hook [--marker M] [--max-blocks N] [--json]`,
 * `tool-loop pre [--threshold N] [--json]`, `tool-loop post [--failure-threshold N] [--json]`) without loading
 * commander. Returns undefined, having read nothing, for anything else (help, other verbs, unknown, repeated
 * or invalid options, a bad profile): commander then handles it with its usual messages.
 */
export async function runHookFastPath(argv: readonly string[], ctx: Context, options: FastPathOptions = {}): Promise<number | undefined> {
  const words: string[] = [];
  const globals = new Map<string, string>();
  const local = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('-')) {
      if (local.size > 0) return undefined; // an option between the words: let commander judge
      words.push(arg);
      continue;
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    let value: string | true = true;
    if (flag === '--json') {
      if (eq > 0) return undefined;
    } else {
      const next = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (next === undefined || next === '' || next.startsWith('-')) return undefined;
      value = next;
    }
    if (GLOBAL_VALUES.has(flag)) {
      if (globals.has(flag)) return undefined;
      globals.set(flag, value as string);
    } else {
      if (local.has(flag) || words.length === 0) return undefined;
      local.set(flag, value);
    }
  }
  const form = FORMS.find((f) => f.words.length === words.length && f.words.every((w, j) => w === words[j]));
  if (!form) return undefined;
  const opts: Record<string, unknown> = {};
  let home: string;
  try {
    for (const [flag, raw] of local) {
      if (flag === '--json') opts[flag] = true;
      else if (!form.values.includes(flag) || typeof raw !== 'string') return undefined;
      else if (flag in COUNT_FLAG_MIN) {
        const { parseWholeNumber } = await import('../core/parse-args.js');
        opts[flag] = parseWholeNumber(raw, flag, COUNT_FLAG_MIN[flag as CountFlag]);
      } else opts[flag] = raw;
    }
    home = resolveHermesHome({ home: globals.get('--home'), profile: globals.get('--profile'), env: ctx.env, homedir: ctx.homedir, cwd: ctx.cwd }).home;
  } catch {
    return undefined; // an invalid value: commander reports it
  }
  return form.run(ctx, home, opts, options.stdinFd);
}
