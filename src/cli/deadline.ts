/**
 * No run outlives its deadline (#47): `--timeout` holds whatever the run is doing. The run's AbortSignal ends what
 * waits (engine calls, sleeps, directory slices) at the deadline, as before; and a watchdog thread (a
 * `node:worker_threads` Worker, `deadline-watchdog.ts`) ends what does not yield: past the deadline
 * (HARD_STOP_GRACE_MS) it has the main thread run `hardStop` below through the inspector's `Runtime.evaluate`, which
 * V8 runs at once as an interrupt, even inside a synchronous loop (a pattern match, a parse, a listing's loop), or as
 * a turn of the event loop of its own when the run is waiting. There, synchronously, and never returning to the code
 * that was running: the command's report of what it did (its `onHardStop`: what the run reported done so far, the
 * run marked timed out, nothing under way reported as done), one line, every lock the process holds released
 * (adapters/file-lock.ts), root's ids taken back if a `withOwnerRights` window was open; then the process exits 3.
 * A main thread that does not answer within ANSWER_MS (blocked in a system call that does not return) is killed by
 * the watchdog after one line on stderr (its locks are then a dead holder's, which the next taker takes over at once).
 *
 * The process exits from inside the interrupt, by design: ending only the stuck code (`Runtime.terminateExecution`)
 * and carrying on is not safe on Node.js's main thread (a callback ended that way corrupts its async-hook stack, and
 * Node.js aborts). `watch`, which must carry on after a stuck run, runs its work in a Worker that its supervisor
 * ends and starts again instead (watch-supervisor.ts).
 *
 * Why the work stays on the main thread with a watchdog beside it, rather than in a Worker: a Worker boots a whole
 * Node.js environment (about 48 ms here, as much as `node -e 0`), which a worker doing the work would add to every
 * run before it starts; the watchdog boots on another core while the run goes on, and the main thread pays loading
 * `node:worker_threads` and making the Worker (about 7 ms here; `npm run bench:startup`). The start-up fast path
 * (`--once-per`) and the hooks never come here.
 *
 * Only for the CLI's own process (`Context.ownsProcess`): the library (src/index.ts) and a test calling `main()` get
 * the run's AbortSignal as before, and no watchdog.
 */
import fs from 'node:fs';
import { requirePackage } from '../util/require-package.js';
import type { Context } from '../context.js';
import { performance } from 'node:perf_hooks';
import { releaseHeldLocksNow } from '../adapters/file-lock.js';
import { leaveOwnerRights } from '../adapters/trust.js';
import { ExitCode, errorMessage } from '../errors.js';
import { escapeControls } from '../util/escape-controls.js';
import { HARD_STOP_GRACE_MS, HARD_STOP_KEY, SLOT, type WatchdogData } from './deadline-protocol.js';

export { HARD_STOP_GRACE_MS };

/** How long the watchdog waits for the main thread to answer before it kills the process. */
export const ANSWER_MS = 250;

const HARD_STOP = Symbol.for(HARD_STOP_KEY);

/** What the command said it was doing when the deadline passed, for its report. */
export interface HardStopInfo {
  timeoutSeconds: number;
  /** `reading settings`, `sweeping`, `checking session files`, ... */
  phase: string;
}

export interface RunDeadline {
  /** Aborts at the deadline; undefined for `--timeout 0`. */
  readonly signal: AbortSignal | undefined;
  /** When it aborts (`Date.now()` ms), or undefined. */
  readonly deadlineMs: number | undefined;
  /** What the run is doing from now on (said at a hard stop). */
  phase(what: string): void;
  /** The command's report at a hard stop, written synchronously; returns the exit code. The last one given counts. */
  onHardStop(report: (info: HardStopInfo) => number): void;
  /** Undone at a hard stop before the report (a spinner's cursor). */
  cleanup(fn: () => void): void;
  /**
   * The command writes its own report from now on: a hard stop then writes none of its own (that would be a second
   * one), only its line saying the report was cut.
   */
  writing(): void;
}

/**
 * The run's deadline, `timeoutMs` after the process started (`--timeout` bounds the whole run, start-up included):
 * its AbortSignal and, in the CLI's own process, the watchdog that ends the run 0.4 s past it whatever it
 * is doing (`ctx.ownsProcess`). `command` names the run in its lines (`reap`, `list`, `status`).
 */
export function runDeadline(timeoutMs: number, command: string, ctx: Pick<Context, 'ownsProcess'>): RunDeadline {
  if (!(timeoutMs > 0)) {
    return {
      signal: undefined,
      deadlineMs: undefined,
      phase: () => undefined,
      onHardStop: () => undefined,
      cleanup: () => undefined,
      writing: () => undefined,
    };
  }
  const deadlineMs = performance.timeOrigin + timeoutMs;
  const signal = AbortSignal.timeout(Math.max(0, Math.ceil(deadlineMs - Date.now())));
  const state: StopState = { command, timeoutSeconds: timeoutMs / 1000, phase: 'starting', cleanups: [], report: undefined, worker: null, writing: false };
  if (ctx.ownsProcess) state.worker = startWatchdog(state, deadlineMs + HARD_STOP_GRACE_MS);
  return {
    signal,
    deadlineMs,
    phase: (what) => void (state.phase = what),
    onHardStop: (report) => void (state.report = report),
    cleanup: (fn) => void state.cleanups.push(fn),
    writing: () => void (state.writing = true),
  };
}

interface StopState {
  command: string;
  timeoutSeconds: number;
  phase: string;
  cleanups: Array<() => void>;
  report: ((info: HardStopInfo) => number) | undefined;
  /** The command writes its own report (`RunDeadline.writing`). */
  writing: boolean;
  worker: { shared: Int32Array } | null;
}

type WorkerThreads = typeof import('node:worker_threads');

/** Starts the watchdog (loaded and made here only: about 7 ms of the main thread's time). */
function startWatchdog(state: StopState, hardAtMs: number): StopState['worker'] {
  const getBuiltin = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  const { Worker } = (getBuiltin?.('node:worker_threads') ?? requirePackage('node:worker_threads')) as WorkerThreads;
  const shared = new SharedArrayBuffer(4);
  const data: WatchdogData = {
    hardAtMs,
    shared,
    answerMs: ANSWER_MS,
    lastWords:
      `hermes-janitor: ${state.command} timed out after --timeout ${state.timeoutSeconds}s and did not answer ` +
      '(a system call that does not return): killed\n',
  };
  // One CommonJS file (scripts/build-fast-path.cjs bundles src/cli/deadline-watchdog.ts): no module loader to set up.
  const worker = new Worker(new URL('./deadline-watchdog.cjs', import.meta.url), {
    workerData: data,
    // Its own small heap: it holds a timer and, at the deadline, an inspector session.
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
    stdout: true,
    stderr: true,
  });
  worker.unref(); // a run that ends before its deadline ends its process as before
  worker.on('error', () => undefined); // a watchdog that could not start leaves the run with its AbortSignal, as before
  (globalThis as Record<symbol, unknown>)[HARD_STOP] = () => hardStop(state);
  return { shared: new Int32Array(shared) };
}

/**
 * The run past its deadline, on the main thread, synchronously (see the module comment): V8 runs it as an interrupt
 * inside whatever the main thread was doing, which never gets control back: the process exits from here.
 */
function hardStop(state: StopState): void {
  Atomics.store(state.worker!.shared, SLOT.answered, 1);
  let code: number = ExitCode.ENGINE;
  try {
    leaveOwnerRights();
    for (const fn of state.cleanups.splice(0)) {
      try {
        fn();
      } catch {
        /* a spinner that cannot stop: the report goes on */
      }
    }
    writeThrough();
    const info = { timeoutSeconds: state.timeoutSeconds, phase: state.phase };
    if (state.writing) say(`${state.command} timed out after --timeout ${info.timeoutSeconds}s while writing its report: the report is cut short`);
    else if (state.report) code = state.report(info);
    else say(`${state.command} timed out after --timeout ${info.timeoutSeconds}s while ${info.phase}: ended at the deadline`);
  } catch (err) {
    say(`${state.command} timed out after --timeout ${state.timeoutSeconds}s (and its report failed: ${errorMessage(err)})`);
  } finally {
    releaseHeldLocksNow();
    quietGoodbye();
    process.exit(code);
  }
}

const say = (line: string) => process.stderr.write(`hermes-janitor: ${escapeControls(line)}\n`);

/**
 * stdout and stderr written through from now on (a pipe's writes block until read, as a file's do): the process
 * exits right after the report, and Node.js drops what a pipe has not taken yet at an exit. (What an earlier write
 * left waiting for a slow reader is still dropped: it cannot be written from inside the code that did not yield.)
 */
function writeThrough(): void {
  for (const s of [process.stdout, process.stderr]) {
    (s as unknown as { _handle?: { setBlocking?: (on: boolean) => unknown } })._handle?.setBlocking?.(true);
  }
}

/**
 * A process that exits with an inspector session open says "Waiting for the debugger to disconnect..." on stderr,
 * and the watchdog's session can only close once the main thread gets control back, which it never does here:
 * stderr is pointed at /dev/null for the exit itself (everything the run says is written by now).
 */
function quietGoodbye(): void {
  try {
    fs.closeSync(2);
    const fd = fs.openSync('/dev/null', 'w');
    if (fd !== 2) fs.closeSync(fd);
  } catch {
    /* the line is said: harmless */
  }
}
