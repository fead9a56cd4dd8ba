/**
 * The watchdog thread of a run with a deadline (deadline.ts): at the hard stop it has the main thread run its
 * `hardStop` through the inspector, whatever the main thread is doing (the main thread then reports and exits); a
 * main thread that does not answer within `answerMs` (a system call that does not return) is killed after one line.
 *
 * It does no file I/O (it may run while the main thread holds another user's ids: adapters/trust.ts), loads nothing
 * but Node.js built-ins, and opens its inspector session only at the hard stop: a run that ends in time never has one.
 */
import fs from 'node:fs';
import { workerData } from 'node:worker_threads';
import { HARD_STOP_KEY, SLOT, type WatchdogData } from './deadline-protocol.js';

const data = workerData as WatchdogData;
const shared = new Int32Array(data.shared);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (polling: the thread has nothing else to do) until `slot` is 1, at most `ms`. */
async function until(slot: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Atomics.load(shared, slot) !== 1) {
    if (Date.now() >= end) return false;
    await sleep(2);
  }
  return true;
}

async function hardStop(): Promise<void> {
  try {
    const { Session } = await import('node:inspector');
    const session = new Session();
    session.connectToMainThread();
    session.post('Runtime.evaluate', { expression: `globalThis[Symbol.for(${JSON.stringify(HARD_STOP_KEY)})]?.()` });
    if (await until(SLOT.answered, data.answerMs)) return; // the main thread reports and ends the process
  } catch {
    /* no inspector in this build of Node.js: the last resort */
  }
  fs.writeSync(2, data.lastWords);
  process.kill(process.pid, 'SIGKILL');
}

// Not unref'd: this thread lives for its timer (the main thread unrefs the Worker itself).
setTimeout(() => void hardStop(), Math.max(0, data.hardAtMs - Date.now()));
