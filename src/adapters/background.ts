import { spawn } from 'node:child_process';
import { closeSync, promises as fs, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The log is rotated to `<log>.1` once it passes this size, so it never grows without bound. */
export const LOG_CAP_BYTES = 1024 * 1024;

const BIN = fileURLToPath(new URL('../../bin/hermes-janitor.js', import.meta.url));

/**
 * Starts `hermes-janitor ARGS` detached from the terminal (own session, no stdin), appending its output to
 * `log` (mode 0600; rotated at 1 MiB, one old file kept). Returns the child's pid.
 */
export async function detachToLog(args: readonly string[], log: string, env: Record<string, string | undefined>, now: Date): Promise<number | undefined> {
  await fs.mkdir(path.dirname(log), { recursive: true, mode: 0o700 });
  try {
    if ((await fs.stat(log)).size > LOG_CAP_BYTES) await fs.rename(log, `${log}.1`);
  } catch {
    /* no log yet */
  }
  const fd = openSync(log, 'a', 0o600);
  try {
    // The header repeats the command line: a password in an engine address (`--host tcp://u:secret@h`) is masked.
    const shown = args.map((a) => a.replace(/(:\/\/[^:/@\s]*):[^@/\s]*@/g, '$1:***@'));
    writeSync(fd, `--- ${now.toISOString()} hermes-janitor ${shown.join(' ')}\n`);
    const child = spawn(process.execPath, [BIN, ...args], {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: env as NodeJS.ProcessEnv,
    });
    child.on('error', () => undefined);
    child.unref();
    return child.pid;
  } finally {
    closeSync(fd);
  }
}
