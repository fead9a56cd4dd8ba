/**
 * How far V8 lets the old generation grow past what the last full collection kept, for the CLI's engine sweeps
 * (`reap`, `list`, `watch`). The CLI owns its process, so it sets this; the library (`createReaper`) leaves its
 * host's V8 alone.
 *
 * A sweep's requests are in flight (8 at a time, a few ms each) while young-generation collections run, so part of
 * each request's garbage (response chunks, parsed answers, promises and closures) outlives one and is promoted: about
 * 1.8 KB per container for a `reap` (`--trace-gc-nvp`: 35.6 MB promoted over a 20k sweep; 49.4 MB, 2.5 KB each,
 * with the docker-modem client before dockerode), 1 KB per container of a `watch` deadline batch. V8 only collects
 * the old generation once it has grown past the live size times a factor it picks from its own speed measurements,
 * up to 4x with the default heap limit: a 100k `reap` (about 45 MB live: one report entry per container) let old
 * space reach 75-130 MB of mostly garbage before each full collection (peak RSS 180-272 MB), and `watch`'s mass
 * removal 170 MB (peaks 216-306 MB). A fixed, small growth factor makes full collections come once a quarter of the
 * live size has been promoted, so the peak stays near the live size; time did not change measurably.
 *
 * `--max-old-space-size` cannot be changed once the heap exists (and a cap would crash a bigger fleet), but the
 * growth factor is read at every full collection, so setting it at run time takes effect (measured: see
 * test/integration/watch-scale.test.ts, `npm run bench:scale` and the README's figures). It caps nothing.
 */
import v8 from 'node:v8';

/** Old-generation growth allowed between full collections, percent of the live size. */
export const SWEEP_HEAP_GROWING_PERCENT = 25;

export function limitHeapGrowth(percent = SWEEP_HEAP_GROWING_PERCENT): void {
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
