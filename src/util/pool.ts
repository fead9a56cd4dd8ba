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

/** A semaphore: the returned function runs `fn` with at most `limit` calls in flight (FIFO). */
export function limiter(limit: number): <R>(fn: () => Promise<R>) => Promise<R> {
  let active = 0;
  const queue: Array<() => void> = [];
  const next = () => {
    if (active >= Math.max(1, limit)) return;
    const go = queue.shift();
    if (go) {
      active++;
      go();
    }
  };
  return <R>(fn: () => Promise<R>) =>
    new Promise<R>((resolve, reject) => {
      queue.push(() => {
        fn()
          .then(resolve, reject)
          .finally(() => {
            active--;
            next();
          });
      });
      next();
    });
}
