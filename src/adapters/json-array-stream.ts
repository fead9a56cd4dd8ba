import { MalformedJsonArrayError } from '../errors.js';

const isWs = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function formatSize(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/**
 * Hands over the elements of one JSON array read from a byte stream, in order and one element in memory at a time
 * (a list of 100k containers is ~100 MB of JSON, never held whole). Chunks may split the text anywhere, even inside
 * a UTF-8 sequence. Anything but a single well-formed array throws a `MalformedJsonArrayError` naming the problem:
 * a body that is empty, not an array, truncated, or followed by more bytes; an empty or invalid element; an
 * element whose JSON text (without the whitespace around it) is longer than `maxElementBytes`, detected as soon as
 * that many bytes have arrived. Elements before the problem have already been handed over. Errors from the stream
 * and from `onElement` pass through unchanged.
 */
export async function forEachArrayElement(
  stream: AsyncIterable<Buffer | Uint8Array | string>,
  onElement: (value: unknown) => void,
  maxElementBytes: number,
): Promise<void> {
  const scanner = new ArrayScanner(onElement, maxElementBytes);
  for await (const raw of stream) scanner.feed(typeof raw === 'string' ? Buffer.from(raw) : raw);
  scanner.end();
}

/** Where the scan of the array is between two chunks. */
class ArrayScanner {
  private phase = 0; // 0 before '[', 1 inside the array, 2 after its ']'
  private depth = 0; // nesting inside the current element
  private inString = false;
  private escaped = false;
  private inElement = false;
  private afterComma = false;
  private sawAnything = false;
  private parts: Uint8Array[] = [];
  private size = 0; // bytes of the current element so far
  private trailingWs = 0; // of which whitespace after its last significant byte (outside strings)

  constructor(
    private readonly onElement: (value: unknown) => void,
    private readonly maxElementBytes: number,
  ) {}

  /** One chunk of the body (the scan state lives in locals while it runs: the byte loop is the hot path). */
  feed(chunk: Uint8Array): void {
    let { phase, depth, inString, escaped } = this;
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
        continue;
      }
      const ws = isWs(c);
      if (phase !== 1) {
        if (ws) continue;
        if (phase === 0 && c === 0x5b) {
          phase = 1;
          this.sawAnything = true;
          continue;
        }
        throw malformed(phase === 0 ? 'not a JSON array' : 'more bytes after the array');
      }
      if (depth === 0) {
        if (c === 0x2c || c === 0x5d) {
          // ',' or ']' at the top: the element (if any) ends here.
          if (this.inElement)
            this.emit(chunk.subarray(start, i)); // (outside any string here)
          else if (c === 0x2c || this.afterComma) throw malformed('an empty element');
          this.afterComma = c === 0x2c;
          if (c === 0x5d) phase = 2;
          continue;
        }
        if (ws) continue;
        if (!this.inElement) {
          this.inElement = true;
          start = i;
        }
      }
      if (c === 0x22) inString = true;
      else if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        if (depth === 0) throw malformed('an unbalanced bracket');
        depth--;
      }
    }
    Object.assign(this, { phase, depth, inString, escaped });
    if (this.inElement) {
      const piece = chunk.subarray(start);
      this.grow(piece, inString);
      this.parts.push(piece);
    }
  }

  /** The body ended: it must have ended with the array. */
  end(): void {
    if (this.phase !== 2) throw malformed(this.sawAnything ? 'the body ends before the array does' : 'an empty body');
  }

  /**
   * Adds a piece of the current element to its size (`inString`: the piece ends inside a string, where whitespace
   * counts); throws as soon as the element is over the cap.
   */
  private grow(piece: Uint8Array, inString: boolean): void {
    this.size += piece.length;
    let run = 0;
    if (!inString) while (run < piece.length && isWs(piece[piece.length - 1 - run]!)) run++;
    this.trailingWs = run === piece.length && !inString ? this.trailingWs + run : run;
    if (this.size - this.trailingWs > this.maxElementBytes) throw malformed(`an element larger than ${formatSize(this.maxElementBytes)}`);
  }

  /** The current element ends with `tail`: parsed and handed over. */
  private emit(tail: Uint8Array): void {
    this.grow(tail, false);
    this.parts.push(tail);
    const bytes = this.parts.length === 1 ? tail : Buffer.concat(this.parts);
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8');
    this.parts = [];
    this.size = 0;
    this.trailingWs = 0;
    this.inElement = false;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw malformed('an element that is not valid JSON');
    }
    this.onElement(value);
  }
}

const malformed = (problem: string) => new MalformedJsonArrayError(problem);
