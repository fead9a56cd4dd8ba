/**
 * The streaming JSON-array parser behind the engine's container list: whatever the chunking, it hands over exactly
 * the elements JSON.parse finds, and it rejects (never accepts, never hangs on) anything that is not one
 * well-formed array or that has an element over the size cap.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { forEachArrayElement } from '../../src/adapters/json-array-stream.js';
import { MalformedJsonArrayError } from '../../src/errors.js';

// The numbers these tests pin, stated here (not imported from the code under test): a change to one is a change this test must see.
/** One row of an engine's container list: at most 1 MiB. */
const MAX_LIST_ROW_BYTES = 1024 * 1024;

const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);
const BIG = 1 << 30;

/** Splits bytes at the given cut points (any byte offset, even inside a UTF-8 sequence). */
function split(bytes: Buffer, cuts: number[], asString: boolean): Array<Buffer | Uint8Array | string> {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Array<Buffer | Uint8Array | string> = [];
  let prev = 0;
  for (const c of [...at, bytes.length]) {
    const piece = bytes.subarray(prev, c);
    // A string chunk only when the piece is ASCII (a string chunk is whole characters by definition).
    out.push(asString && piece.every((b) => b < 0x80) ? piece.toString('latin1') : prev % 2 ? new Uint8Array(piece) : piece);
    prev = c;
  }
  return out;
}

async function* streamOf(chunks: Array<Buffer | Uint8Array | string>) {
  for (const c of chunks) {
    await Promise.resolve();
    yield c;
  }
}

type Outcome = { ok: true; elements: unknown[] } | { ok: false; problem: string };

async function parse(chunks: Array<Buffer | Uint8Array | string>, cap = BIG): Promise<Outcome> {
  const elements: unknown[] = [];
  try {
    await forEachArrayElement(streamOf(chunks), (v) => elements.push(v), cap);
    return { ok: true, elements };
  } catch (err) {
    assert.ok(err instanceof MalformedJsonArrayError, `rejected with a MalformedJsonArrayError, not ${String(err)}`);
    return { ok: false, problem: err.message };
  }
}

/** What JSON.parse says about the whole text: its elements when it is an array, else undefined. */
function oracle(text: string): unknown[] | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Characters of strings and keys: JSON's own punctuation and escapes often, any code point (multi-byte too) otherwise. */
const char = fc.oneof(
  fc.constantFrom('"', '\\', ',', '[', ']', '{', '}', ':', ' ', '\n', '\u0000', 'é', '\u{1F600}', '\uD800'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);
const value = fc.jsonValue({ maxDepth: 4, stringUnit: char });
const ws = fc.stringMatching(/^[ \t\n\r]{0,3}$/);
const cuts = fc.array(fc.nat(), { maxLength: 40 });
/** An array serialized either by JSON.stringify (with a random indent) or compactly with random whitespace between top-level tokens. */
const arrayText = fc.oneof(
  fc.tuple(fc.array(value, { maxLength: 12 }), fc.constantFrom(undefined, 0, 1, 2, '\t')).map(([arr, indent]) => JSON.stringify(arr, null, indent)),
  fc
    .tuple(fc.array(fc.tuple(ws, value, ws), { maxLength: 12 }), ws, ws)
    .map(([items, lead, tail]) => `${lead}[${items.map(([a, v, b]) => a + JSON.stringify(v) + b).join(',')}${items.length ? '' : tail}]${tail}`),
);

describe('forEachArrayElement (streamed JSON array)', () => {
  it('hands over exactly what JSON.parse finds, however the bytes are chunked', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(arrayText, cuts, fc.boolean(), async (text, at, asString) => {
        const got = await parse(split(Buffer.from(text), at, asString));
        assert.deepEqual(got, { ok: true, elements: JSON.parse(text) as unknown[] });
      }),
      { numRuns: RUNS },
    );
  });

  it('agrees with JSON.parse on random mutations: accepts exactly the arrays, with the same elements', { timeout: 120_000 }, async () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.constantFrom('[', ']', '{', '}', '"', ',', ':', '\\', 'x', '1', ' ', 'null') }),
      fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), text: fc.constant('') }),
    );
    await fc.assert(
      fc.asyncProperty(arrayText, fc.array(mutation, { minLength: 1, maxLength: 3 }), cuts, async (text, muts, at) => {
        let t = text;
        for (const m of muts) {
          const i = m.at % (t.length + 1);
          t = m.kind === 'insert' ? t.slice(0, i) + m.text + t.slice(i) : t.slice(0, i) + t.slice(i + 1);
        }
        // The oracle reads the same bytes (a deletion can leave a lone surrogate, which UTF-8 turns into U+FFFD).
        const bytes = Buffer.from(t);
        const expected = oracle(bytes.toString('utf8'));
        const got = await parse(split(bytes, at, false));
        if (expected === undefined) assert.equal(got.ok, false, `accepted ${JSON.stringify(t)}`);
        else assert.deepEqual(got, { ok: true, elements: expected });
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it('rejects truncated bodies, extra bytes after the array, unbalanced brackets and strings, and non-arrays', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(arrayText, fc.nat(), cuts, async (text, n, at) => {
        const bytes = Buffer.from(text);
        const last = bytes.lastIndexOf(0x5d);
        // Truncated anywhere before the closing bracket.
        const cut = n % (last + 1);
        const truncated = await parse(split(bytes.subarray(0, cut), at, false));
        assert.equal(truncated.ok, false);
        if (!truncated.ok) assert.match(truncated.problem, /^(the body ends before the array does|an empty body)$/);
        // Anything but whitespace after it.
        for (const extra of [']', ',', 'x', '[]', '"', '{}', '0']) {
          const r = await parse(split(Buffer.concat([bytes, Buffer.from(extra)]), at, false));
          assert.deepEqual(r, { ok: false, problem: 'more bytes after the array' });
        }
        // The closing bracket swapped for a brace, or doubled opening brackets.
        const swapped = Buffer.from(bytes);
        swapped[last] = 0x7d;
        assert.equal((await parse(split(swapped, at, false))).ok, false);
        assert.equal((await parse(split(Buffer.concat([Buffer.from('['), bytes]), at, false))).ok, false);
        // An unterminated string at the end.
        assert.equal((await parse(split(Buffer.from(`${text.slice(0, text.lastIndexOf(']'))}"abc`), at, false))).ok, false);
      }),
      { numRuns: RUNS },
    );
    await fc.assert(
      fc.asyncProperty(
        value.filter((v) => !Array.isArray(v)),
        cuts,
        async (v, at) => {
          assert.deepEqual(await parse(split(Buffer.from(JSON.stringify(v)), at, false)), { ok: false, problem: 'not a JSON array' });
        },
      ),
      { numRuns: RUNS },
    );
    for (const body of ['', ' \n', '[', '[1,', '[1,,2]', '[,1]', '[1,]', '[1 2]', '[1}', '[{]', '[{"a":1]', '["a]', '[]]', '[] x', '\uFEFF[]', 'null']) {
      const r = await parse([Buffer.from(body)]);
      assert.equal(r.ok, false, `accepted ${JSON.stringify(body)}`);
    }
  });

  it('rejects an element over the cap, whatever the chunking, and accepts one at the cap', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(ws, value, ws), { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 120 }), cuts, async (items, cap, at) => {
        const text = `[${items.map(([a, v, b]) => a + JSON.stringify(v) + b).join(',')}]`;
        const sizes = items.map(([, v]) => Buffer.byteLength(JSON.stringify(v)));
        const got = await parse(split(Buffer.from(text), at, false), cap);
        if (sizes.every((s) => s <= cap)) assert.deepEqual(got, { ok: true, elements: JSON.parse(text) as unknown[] });
        else assert.deepEqual(got, { ok: false, problem: `an element larger than ${cap} bytes` });
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it(`accepts a row of exactly ${MAX_LIST_ROW_BYTES} bytes and rejects one of ${MAX_LIST_ROW_BYTES + 1}, in 64 KiB chunks`, async () => {
    const row = (bytes: number) => {
      const head = '{"Id":"0123456789ab","Labels":{"note":"';
      const tail = '"}}';
      // One 'é' (2 bytes) in the padding, so the size counts bytes, not characters.
      return `${head}é${'x'.repeat(bytes - head.length - tail.length - 2)}${tail}`;
    };
    const chunks = (text: string) => {
      const b = Buffer.from(text);
      const out: Buffer[] = [];
      for (let i = 0; i < b.length; i += 65_536) out.push(b.subarray(i, i + 65_536));
      return out;
    };
    const atCap = row(MAX_LIST_ROW_BYTES);
    assert.equal(Buffer.byteLength(atCap), MAX_LIST_ROW_BYTES);
    const ok = await parse(chunks(`[ ${atCap} ,{"Id":"b"}\n]`), MAX_LIST_ROW_BYTES);
    assert.equal(ok.ok, true);
    if (ok.ok) assert.deepEqual(ok.elements, [JSON.parse(atCap), { Id: 'b' }]);

    const over = row(MAX_LIST_ROW_BYTES + 1);
    assert.equal(Buffer.byteLength(over), MAX_LIST_ROW_BYTES + 1);
    assert.deepEqual(await parse(chunks(`[{"Id":"a"},${over}]`), MAX_LIST_ROW_BYTES), { ok: false, problem: 'an element larger than 1 MiB' });
    // Rejected as soon as the cap is passed, before the row (or the body) ends.
    const endless = (async function* () {
      yield Buffer.from('[{"Id":"a","x":"');
      for (;;) yield Buffer.alloc(65_536, 0x78);
    })();
    await assert.rejects(
      forEachArrayElement(endless, () => {}, MAX_LIST_ROW_BYTES),
      { message: 'an element larger than 1 MiB' },
    );
  });
});
