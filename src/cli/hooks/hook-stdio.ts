/**
 * A hook's output: its answer on stdout and warnings on stderr, written synchronously to fds 1 and 2 when it runs
 * as a process (no stream set-up: hooks run on every tool call, so start-up time matters).
 */
import { versioned } from '../json-schema.js';
import { writeSync } from 'node:fs';
import type { Context, OutputStream } from '../../context.js';
import { escapeControls } from '../../util/escape-controls.js';

export function oneLine(s: string, max = 300): string {
  const line = s.replace(/\s*[\r\n]+\s*/g, ' ');
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

/**
 * Control characters (C0, DEL, C1), line and paragraph separators, bidirectional overrides, lone surrogates and
 * U+FFFD (what undecodable bytes become) as `\xNN` / `\uNNNN`: a warning may quote the agent's input (a JSON error
 * quotes the text it choked on), and must stay one readable line that cannot move a terminal's cursor or forge
 * another line.
 */
export function escapeForWarning(s: string): string {
  return escapeControls(s, { bytes: true });
}

/** One warning line on stderr (same format as the other commands' warnings), control and binary bytes escaped. */
export function hookWarn(ctx: Context, message: string): void {
  ctx.stderr.write(`hermes-janitor: warning: ${escapeForWarning(oneLine(message, 1000))}\n`);
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

/** A hook's answer (one line, the agent's protocol: as is), or its `--json` document (`pretty`: with `schemaVersion`). */
export function writeLine(ctx: Context, value: unknown, pretty: boolean): void {
  ctx.stdout.write(`${pretty ? JSON.stringify(versioned(value), null, 2) : JSON.stringify(value)}\n`);
}
