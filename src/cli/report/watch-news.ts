/**
 * What of `watch`'s events is news, whatever the format: a warning once per text, a running sandbox kept at an idle
 * check only the first time it is kept in use with that many processes (a busy one is checked after every exec).
 */
import type { WatchEvent } from '../../watch/engine-watcher.js';

export class WatchNews {
  private readonly warned = new Set<string>();
  /** Sandboxes last reported in use, with their process count: said once, again when the count changes. */
  private readonly inUseSaid = new Map<string, number | null | undefined>();

  /** The warnings of a run not said before. */
  freshWarnings(warnings: readonly string[]): string[] {
    const out: string[] = [];
    for (const w of warnings) {
      if (this.warned.has(w)) continue;
      this.warned.add(w);
      out.push(w);
    }
    return out;
  }

  /** Whether a `kept` event is worth a line. */
  keptIsNews(ev: Extract<WatchEvent, { type: 'kept' }>): boolean {
    const e = ev.entry;
    if (e.reason !== 'running') return true;
    if (e.idleReason !== 'in-use') {
      this.inUseSaid.delete(e.id);
      return false;
    }
    if (this.inUseSaid.has(e.id) && this.inUseSaid.get(e.id) === e.processes) return false;
    this.inUseSaid.set(e.id, e.processes);
    return true;
  }
}
