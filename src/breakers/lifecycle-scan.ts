/**
 * lifecycle-scan, in process: reads the text, the scripts or stdin (each capped at `maxBytes`), decodes bytes
 * with replacement characters and scans them with the pure core. A missing or unreadable script is a warning,
 * never a match; nothing here throws.
 */
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { type LifecycleMatch, decodeScript, scanText } from '../core/lifecycle-scan.js';
import { errorMessage } from '../errors.js';
import { libraryHome } from './home.js';

/** At most this many bytes of each input are scanned (the rest is reported as truncated). */
export const MAX_SCAN_BYTES = 4 * 1024 * 1024;
/** At most this many matching lines are reported. */
export const MAX_REPORTED_MATCHES = 100;

export interface ScannedSource {
  kind: 'text' | 'stdin' | 'script';
  /** `text`, `stdin`, or the script's resolved path. */
  name: string;
  /** Bytes scanned. */
  bytes: number;
  /** More input was there than was scanned. */
  truncated: boolean;
  /** False when the source could not be read (see `warning`). */
  scanned: boolean;
  warning?: string;
}

export interface SourceMatch extends LifecycleMatch {
  /** The source's name (`text`, `stdin`, or a script path). */
  source: string;
}

export interface LifecycleScanOutcome {
  /** True when a gateway lifecycle command was found: the caller should refuse. */
  matched: boolean;
  /** The first matching lines (at most MAX_REPORTED_MATCHES). */
  matches: SourceMatch[];
  /** How many lines matched in all. */
  total: number;
  sources: ScannedSource[];
  warnings: string[];
}

export interface LifecycleScanInput {
  /** TEXT arguments, joined with spaces. */
  texts?: string[];
  /** Script paths; relative ones resolve under `<home>/scripts/`. */
  scripts?: string[];
  /** Read when there are neither texts nor scripts. */
  stdin?: NodeJS.ReadableStream;
  home: string;
  maxBytes?: number;
}

/** A script path as hermes resolves it: relative paths live under `<home>/scripts/`. */
export function resolveScriptPath(home: string, script: string): string {
  return path.isAbsolute(script) ? script : path.join(home, 'scripts', script);
}

function mib(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`;
}

/** Reads up to `max` bytes of a regular file without blocking on a FIFO or a device. */
async function readCapped(file: string, max: number): Promise<{ bytes: Buffer; truncated: boolean; size: number }> {
  const fh = await fs.open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (st.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    if (!st.isFile()) throw Object.assign(new Error('is not a regular file'), { code: 'ENOTREG' });
    const chunks: Buffer[] = [];
    let got = 0;
    while (got <= max) {
      const buf = Buffer.alloc(Math.min(256 * 1024, max + 1 - got));
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      chunks.push(buf.subarray(0, bytesRead));
      got += bytesRead;
    }
    const all = Buffer.concat(chunks, got);
    return { bytes: all.subarray(0, Math.min(got, max)), truncated: got > max, size: Math.max(st.size, got) };
  } finally {
    await fh.close();
  }
}

/** Reads up to `max` bytes of a stream, then stops reading (an endless stdin does not hang the scan). */
async function readStream(stream: NodeJS.ReadableStream, max: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let total = 0;
  let truncated = false;
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (total + buf.length > max) {
      chunks.push(buf.subarray(0, max - total));
      total = max;
      truncated = true;
      break; // ends the iteration and destroys the stream
    }
    chunks.push(buf);
    total += buf.length;
  }
  return { bytes: Buffer.concat(chunks, total), truncated };
}

/** Scans the given inputs. */
export async function scanLifecycle(input: LifecycleScanInput): Promise<LifecycleScanOutcome> {
  const max = input.maxBytes ?? MAX_SCAN_BYTES;
  const sources: ScannedSource[] = [];
  const warnings: string[] = [];
  const matches: SourceMatch[] = [];
  let total = 0;

  const scan = (name: string, text: string) => {
    const result = scanText(text, MAX_REPORTED_MATCHES);
    total += result.total;
    for (const m of result.matches) if (matches.length < MAX_REPORTED_MATCHES) matches.push({ ...m, source: name });
  };
  const truncatedWarning = (name: string, size?: number) =>
    `${name} is larger than ${mib(max)}${size !== undefined ? ` (${size} bytes)` : ''}: only its first ${mib(max)} were scanned`;

  const texts = input.texts ?? [];
  const scripts = input.scripts ?? [];
  if (texts.length > 0) {
    const joined = Buffer.from(texts.join(' '));
    const truncated = joined.length > max;
    const bytes = truncated ? joined.subarray(0, max) : joined;
    sources.push({ kind: 'text', name: 'text', bytes: bytes.length, truncated, scanned: true });
    if (truncated) warnings.push(truncatedWarning('the text', joined.length));
    scan('text', decodeScript(bytes));
  }
  for (const script of scripts) {
    const file = resolveScriptPath(input.home, script);
    try {
      const { bytes, truncated, size } = await readCapped(file, max);
      sources.push({ kind: 'script', name: file, bytes: bytes.length, truncated, scanned: true });
      if (truncated) warnings.push(truncatedWarning(`script ${file}`, size));
      scan(file, decodeScript(bytes));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why =
        code === 'ENOENT' || code === 'ENOTDIR'
          ? 'does not exist'
          : code === 'EISDIR'
            ? 'is a directory'
            : code === 'ENOTREG'
              ? 'is not a regular file'
              : `cannot be read (${errorMessage(err)})`;
      const warning = `script ${file} ${why}; it was not scanned`;
      sources.push({ kind: 'script', name: file, bytes: 0, truncated: false, scanned: false, warning });
      warnings.push(warning);
    }
  }
  if (texts.length === 0 && scripts.length === 0) {
    if (!input.stdin) {
      warnings.push('no text, script or stdin to scan');
    } else {
      try {
        const { bytes, truncated } = await readStream(input.stdin, max);
        sources.push({ kind: 'stdin', name: 'stdin', bytes: bytes.length, truncated, scanned: true });
        if (truncated) warnings.push(truncatedWarning('stdin'));
        scan('stdin', decodeScript(bytes));
      } catch (err) {
        const warning = `cannot read stdin (${errorMessage(err)}); it was not scanned`;
        sources.push({ kind: 'stdin', name: 'stdin', bytes: 0, truncated: false, scanned: false, warning });
        warnings.push(warning);
      }
    }
  }
  return { matched: total > 0, matches, total, sources, warnings };
}

// ---- Library API ---------------------------------------------------------------------------------------------

export interface LifecycleScanOptions {
  /** Hermes home, for relative script paths (`<home>/scripts/`). Default: `$HERMES_HOME`, else `~/.hermes`. */
  home?: string;
  /** Hermes profile: selects `<root>/profiles/<name>` as the home when `home` is not given. */
  profile?: string;
  /** Environment for the home resolution. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /** Accepted so every breaker takes the same options; the scan does not depend on time. */
  now?: () => Date;
  /** Scan at most this many bytes of each input (default 4 MiB). */
  maxBytes?: number;
}

/** The in-process lifecycle scanner. Never throws: an unreadable input is a warning, not a match. */
export interface LifecycleScanner {
  /** Scans a command text (several parts are joined with spaces). */
  scanText(...texts: string[]): Promise<LifecycleScanOutcome>;
  /** Scans script files (relative paths resolve under `<home>/scripts/`). */
  scanScripts(...scripts: string[]): Promise<LifecycleScanOutcome>;
  /** Scans a stream (e.g. stdin), reading at most `maxBytes`. */
  scanStream(stream: NodeJS.ReadableStream): Promise<LifecycleScanOutcome>;
}

/**
 * Creates a lifecycle scanner.
 *
 * @example
 * const scanner = createLifecycleScan();
 * const { matched, matches } = await scanner.scanText('launchctl kickstart gui/501/ai.hermes.gateway');
 * // matched: true; matches[0].rule: 'launchctl'
 */
export function createLifecycleScan(options: LifecycleScanOptions = {}): LifecycleScanner {
  const home = libraryHome(options);
  const base = { home, ...(options.maxBytes !== undefined ? { maxBytes: options.maxBytes } : {}) };
  return {
    scanText: (...texts) => scanLifecycle({ ...base, texts }),
    scanScripts: (...scripts) => scanLifecycle({ ...base, scripts }),
    scanStream: (stream) => scanLifecycle({ ...base, stdin: stream }),
  };
}
