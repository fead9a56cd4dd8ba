/**
 * How far V8 lets the old generation grow past what the last full collection kept, for the `watch` process.
 *
 * Each deadline batch re-checks up to 100 containers (list, inspect, remove: responses, entries, promises); some
 * of that outlives a young-generation collection and is promoted, at about 1 KB per container removed. V8 only
 * collects the old generation once it has grown past the live size times a factor it picks from its own speed
 * measurements, up to 4x with the default 4 GB heap limit: with 100k containers tracked (about 40 MB of heap in
 * use), a mass removal piled up to 170 MB of promoted garbage before the next full collection (peak RSS 216-306 MB).
 * A fixed, small growth factor makes them come once a quarter of the live size has been promoted, so the peak stays
 * near the live size (the scale test's removal lag did not change measurably).
 *
 * `--max-old-space-size` cannot be changed once the heap exists (and a cap would crash a bigger fleet), but the
 * growth factor is read at every full collection, so setting it at run time takes effect (measured: see
 * test/integration/watch-scale.test.ts and the README's `watch` figures). Set for `watch` only, a long-running
 * service; one-shot commands keep V8's defaults.
 */
import v8 from 'node:v8';

/** Old-generation growth allowed between full collections, percent of the live size. */
export const WATCH_HEAP_GROWING_PERCENT = 25;

export function limitHeapGrowth(percent = WATCH_HEAP_GROWING_PERCENT): void {
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
