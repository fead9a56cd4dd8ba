/**
 * Deadlines of tracked containers: an indexed binary min-heap (earliest first, ties in the order they were set)
 * with exactly one entry per id, so every operation is O(log n) and nothing stale is left behind. Pure: no timers,
 * no clock.
 *
 * Compact on purpose (`watch` tracks 100k containers in a few tens of MB): the heap is three parallel arrays (ids,
 * deadlines and tie-break sequence numbers, the last two unboxed doubles) and the index is one Map from id to heap
 * position (a small integer), so a container costs its id string, one Map entry and three array slots, with no
 * object per entry.
 */
export class DeadlineQueue {
  /** Heap position of each id. */
  private readonly pos = new Map<string, number>();
  private ids: string[] = [];
  private ats: number[] = [];
  /** When each deadline was set (a counter): equal deadlines come out in the order they were set. */
  private seqs: number[] = [];
  private seq = 0;

  get size(): number {
    return this.ids.length;
  }

  /** The deadline of `id` (ms since the epoch), if it has one. */
  get(id: string): number | undefined {
    const i = this.pos.get(id);
    return i === undefined ? undefined : this.ats[i];
  }

  has(id: string): boolean {
    return this.pos.has(id);
  }

  /** Sets (or moves) the deadline of `id`. */
  set(id: string, at: number): void {
    const i = this.pos.get(id);
    if (i !== undefined) {
      if (this.ats[i] === at) return;
      this.ats[i] = at;
      this.seqs[i] = ++this.seq;
      this.siftDown(this.siftUp(i));
      return;
    }
    const n = this.ids.length;
    this.ids.push(id);
    this.ats.push(at);
    this.seqs.push(++this.seq);
    this.pos.set(id, n);
    this.siftUp(n);
  }

  delete(id: string): boolean {
    const i = this.pos.get(id);
    if (i === undefined) return false;
    this.removeAt(i);
    return true;
  }

  clear(): void {
    this.pos.clear();
    this.ids = [];
    this.ats = [];
    this.seqs = [];
  }

  /** The earliest deadline, if any. */
  peek(): { id: string; at: number } | undefined {
    return this.ids.length ? { id: this.ids[0]!, at: this.ats[0]! } : undefined;
  }

  /** Takes up to `max` ids whose deadline is at or before `now`, earliest first; they leave the queue. */
  popDue(now: number, max = Infinity): Array<{ id: string; at: number }> {
    const out: Array<{ id: string; at: number }> = [];
    while (out.length < max && this.ids.length && this.ats[0]! <= now) {
      out.push({ id: this.ids[0]!, at: this.ats[0]! });
      this.removeAt(0);
    }
    return out;
  }

  /** Every id with its deadline (no order). */
  *entries(): Generator<[string, number]> {
    for (let i = 0; i < this.ids.length; i++) yield [this.ids[i]!, this.ats[i]!];
  }

  private removeAt(i: number): void {
    const last = this.ids.length - 1;
    this.pos.delete(this.ids[i]!);
    if (i !== last) {
      this.place(i, this.ids[last]!, this.ats[last]!, this.seqs[last]!);
    }
    this.ids.pop();
    this.ats.pop();
    this.seqs.pop();
    if (i !== last) this.siftDown(this.siftUp(i));
  }

  private place(i: number, id: string, at: number, seq: number): void {
    this.ids[i] = id;
    this.ats[i] = at;
    this.seqs[i] = seq;
    this.pos.set(id, i);
  }

  private less(a: number, b: number): boolean {
    const x = this.ats[a]!;
    const y = this.ats[b]!;
    return x < y || (x === y && this.seqs[a]! < this.seqs[b]!);
  }

  private swap(a: number, b: number): void {
    const { ids, ats, seqs } = this;
    const id = ids[a]!;
    const at = ats[a]!;
    const seq = seqs[a]!;
    this.place(a, ids[b]!, ats[b]!, seqs[b]!);
    this.place(b, id, at, seq);
  }

  /** Moves entry `i` up to its place; returns where it ended. */
  private siftUp(i: number): number {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      this.swap(i, p);
      i = p;
    }
    return i;
  }

  private siftDown(i: number): void {
    const n = this.ids.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.less(l, m)) m = l;
      if (r < n && this.less(r, m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}
