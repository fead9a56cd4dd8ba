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
  const malformed = (problem: string) => new MalformedJsonArrayError(problem);
  const tooLarge = () => malformed(`an element larger than ${formatSize(maxElementBytes)}`);
  let phase = 0; // 0 before '[', 1 inside the array, 2 after its ']'
  let depth = 0; // nesting inside the current element
  let inString = false;
  let escaped = false;
  let inElement = false;
  let afterComma = false;
  let sawAnything = false;
  let parts: Uint8Array[] = [];
  let size = 0; // bytes of the current element so far
  let trailingWs = 0; // of which whitespace after its last significant byte (outside strings)
  /** Adds a piece of the current element to its size; throws as soon as the element is over the cap. */
  const grow = (piece: Uint8Array) => {
    size += piece.length;
    let run = 0;
    if (!inString) while (run < piece.length && isWs(piece[piece.length - 1 - run]!)) run++;
    trailingWs = run === piece.length && !inString ? trailingWs + run : run;
    if (size - trailingWs > maxElementBytes) throw tooLarge();
  };
  const emit = (tail: Uint8Array) => {
    grow(tail);
    parts.push(tail);
    const bytes = parts.length === 1 ? tail : Buffer.concat(parts);
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8');
    parts = [];
    size = 0;
    trailingWs = 0;
    inElement = false;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw malformed('an element that is not valid JSON');
    }
    onElement(value);
  };
  for await (const raw of stream) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
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
          sawAnything = true;
          continue;
        }
        throw malformed(phase === 0 ? 'not a JSON array' : 'more bytes after the array');
      }
      if (depth === 0) {
        if (c === 0x2c || c === 0x5d) {
          // ',' or ']' at the top: the element (if any) ends here.
          if (inElement) emit(chunk.subarray(start, i));
          else if (c === 0x2c || afterComma) throw malformed('an empty element');
          afterComma = c === 0x2c;
          if (c === 0x5d) phase = 2;
          continue;
        }
        if (ws) continue;
        if (!inElement) {
          inElement = true;
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
    if (inElement) {
      const piece = chunk.subarray(start);
      grow(piece);
      parts.push(piece);
    }
  }
  if (phase !== 2) throw malformed(sawAnything ? 'the body ends before the array does' : 'an empty body');
}
