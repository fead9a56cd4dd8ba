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

/**
 * The young generation is not let grow past its initial size (1 MB semi-spaces) once a sweep starts. V8 doubles the
 * semi-spaces whenever many objects survive a scavenge, up to 16 MB each on Node 20: a sweep's requests in flight
 * keep that up, and the grown young generation (up to three times the semi-space in RSS) was a third of a 100k
 * reap's peak. Measured (#44, `reap --json` of 20,000 containers on the engine simulator, /usr/bin/time -v, load
 * average about 20): peak RSS 114-117 MB before, 83.7-85.0 MB with this; CPU 12.0-12.4 s before, 11.8-14.1 s with it
 * (within the machine's noise). `--max-semi-space-size` is read only when the heap is made; the growth factor is read
 * at each growth, so setting it at run time takes effect (the same V8 range as `--heap-growing-percent`).
 */
export const SWEEP_SEMI_SPACE_GROWTH_FACTOR = 1;

/**
 * The V8 versions known to have `--heap-growing-percent` (major.minor, both ends included): from the one of Node 20
 * (11.3, the floor) through 13.x (Node 24). V8 has no cheap way to ask whether it knows a flag (`node --v8-options`
 * is a process start, 0.2-0.3 s here), and one it does not know makes `setFlagsFromString` print
 * "Error: unrecognized flag" to stderr on every run; so the flag is set only for these versions, and another V8 runs
 * with its own heap growth, silently. test/unit/heap.test.ts holds the range against the running V8's own flag list.
 */
export const HEAP_GROWING_PERCENT_V8 = { from: [11, 3], through: [13, Infinity] } as const;

/** Whether the V8 of this version (`process.versions.v8`, e.g. `11.3.244.8-node.38`) is known to have the flag. */
export function knowsHeapGrowingPercent(v8Version: string = process.versions.v8): boolean {
  const [major, minor] = v8Version.split('.').map(Number) as [number, number];
  if (!Number.isInteger(major) || !Number.isInteger(minor)) return false;
  const at = (v: readonly [number, number]) => (major === v[0] ? Math.sign(minor - v[1]) : Math.sign(major - v[0]));
  return at(HEAP_GROWING_PERCENT_V8.from) >= 0 && at(HEAP_GROWING_PERCENT_V8.through) <= 0;
}

/**
 * For the CLI's own process only (never the library): sets `--heap-growing-percent` when this V8 is known to have
 * it. Whether it was set.
 */
export function limitHeapGrowth(percent = SWEEP_HEAP_GROWING_PERCENT, v8Version: string = process.versions.v8): boolean {
  if (!knowsHeapGrowingPercent(v8Version)) return false;
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
  v8.setFlagsFromString(`--semi-space-growth-factor=${SWEEP_SEMI_SPACE_GROWTH_FACTOR}`);
  return true;
}
