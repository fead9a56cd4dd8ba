/**
 * Runs `fn` over `items` with at most `limit` calls in flight, in order of start. Stops starting new work once
 * `shouldStop()` is true; work already started finishes.
 */
export async function forEachBounded<T>(
  items: Iterable<T>,
  limit: number,
  fn: (item: T) => Promise<void>,
  shouldStop: () => boolean = () => false,
): Promise<void> {
  const it = items[Symbol.iterator]();
  const worker = async () => {
    for (;;) {
      if (shouldStop()) return;
      const next = it.next();
      if (next.done) return;
      await fn(next.value);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, limit) }, worker));
}
