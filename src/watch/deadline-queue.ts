/**
 * Deadlines of tracked containers: a binary min-heap (earliest first) with one live deadline per id. Changing or
 * dropping a deadline leaves the old heap entry behind, skipped when it surfaces (and compacted away once stale
 * entries outnumber live ones), so every operation is O(log n). Pure: no timers, no clock.
 */
interface Entry {
  at: number;
  id: string;
  gen: number;
}

export class DeadlineQueue {
  private heap: Entry[] = [];
  private readonly live = new Map<string, Entry>();
  private gen = 0;

  get size(): number {
    return this.live.size;
  }

  /** The deadline of `id` (ms since the epoch), if it has one. */
  get(id: string): number | undefined {
    return this.live.get(id)?.at;
  }

  has(id: string): boolean {
    return this.live.has(id);
  }

  /** Sets (or moves) the deadline of `id`. */
  set(id: string, at: number): void {
    const cur = this.live.get(id);
    if (cur && cur.at === at) return;
    const e: Entry = { at, id, gen: ++this.gen };
    this.live.set(id, e);
    this.push(e);
    if (this.heap.length > 1024 && this.heap.length > 2 * this.live.size) this.compact();
  }

  delete(id: string): boolean {
    return this.live.delete(id);
  }

  clear(): void {
    this.heap = [];
    this.live.clear();
  }

  /** The earliest live deadline, if any. */
  peek(): { id: string; at: number } | undefined {
    this.dropStale();
    const top = this.heap[0];
    return top && { id: top.id, at: top.at };
  }

  /** Takes up to `max` ids whose deadline is at or before `now`, earliest first; they leave the queue. */
  popDue(now: number, max = Infinity): Array<{ id: string; at: number }> {
    const out: Array<{ id: string; at: number }> = [];
    while (out.length < max) {
      this.dropStale();
      const top = this.heap[0];
      if (!top || top.at > now) break;
      this.pop();
      this.live.delete(top.id);
      out.push({ id: top.id, at: top.at });
    }
    return out;
  }

  /** Every live id with its deadline (no order). */
  *entries(): Generator<[string, number]> {
    for (const [id, e] of this.live) yield [id, e.at];
  }

  private isStale(e: Entry): boolean {
    return this.live.get(e.id) !== e;
  }

  private dropStale(): void {
    while (this.heap.length && this.isStale(this.heap[0]!)) this.pop();
  }

  private compact(): void {
    this.heap = [...this.live.values()].sort((a, b) => a.at - b.at || a.gen - b.gen);
  }

  private less(a: Entry, b: Entry): boolean {
    return a.at < b.at || (a.at === b.at && a.gen < b.gen);
  }

  private push(e: Entry): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private pop(): Entry | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length && last) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}
