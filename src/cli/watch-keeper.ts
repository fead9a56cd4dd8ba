/**
 * What a running `watch` leaves for `status` and for `reap --once-per`: its record (adapters/watch-record.ts: who it
 * is, its heartbeat, its `/healthz`) and its sweep stamps. A connected watch is sweeping as it goes, so each engine's
 * stamp is written at the end of each full sweep and refreshed at every heartbeat while that engine is connected (a
 * `reap --once-per` of the same home, engine and selection then skips, as after any fresh sweep); the record's heartbeat
 * moves only while every engine is connected. A dry run writes neither. A write that fails is said once, never fatal.
 */
import { writeStamp } from '../adapters/janitor-files.js';
import { selfIdentity } from '../adapters/process-identity.js';
import { type WatchRecord, writeWatchRecord } from '../adapters/watch-record.js';
import type { EngineEndpoint } from '../adapters/engine-host.js';
import type { Selection } from '../core/selection.js';
import { errorMessage } from '../errors.js';
import { oncePerStamps } from './once-per-stamps.js';

export interface WatchKeeperInput {
  home: string;
  selection: Selection;
  endpoints: readonly EngineEndpoint[];
  heartbeatMs: number;
  now: () => Date;
  /** Said once per kind of failure (a warning notice). */
  warn: (message: string) => void;
}

export class WatchKeeper {
  private record: WatchRecord;
  /** Writes in flight, one after the other (never two writers of one file from this process). */
  private writing: Promise<void> = Promise.resolve();
  private readonly warned = new Set<string>();

  constructor(private readonly input: WatchKeeperInput) {
    this.record = {
      ...selfIdentity(),
      startedAt: input.now().toISOString(),
      hosts: input.endpoints.map((e) => e.host),
      profile: input.selection.profile,
      heartbeatSeconds: input.heartbeatMs / 1000,
      heartbeatAt: null,
      healthz: null,
    };
  }

  /** Once it holds its locks: the record, with the address of its `/healthz` when it serves one. */
  started(healthz: string | null): Promise<void> {
    this.record = { ...this.record, healthz };
    return this.writeRecord();
  }

  /** A heartbeat: the record's (every engine connected), and the stamps of the engines connected now. */
  beat(connected: readonly string[], healthy: boolean): void {
    const now = this.input.now();
    if (healthy) {
      this.record = { ...this.record, heartbeatAt: now.toISOString() };
      void this.writeRecord();
    }
    for (const host of connected) this.stamp(host, now);
  }

  /** A full sweep of `host` ran to its end. */
  swept(host: string): void {
    this.stamp(host, this.input.now());
  }

  /** Stopped by `signal`: said in the record, awaited. */
  stopped(signal: string): Promise<void> {
    this.record = { ...this.record, stoppedAt: this.input.now().toISOString(), stoppedBy: signal };
    return this.writeRecord();
  }

  private stamp(host: string, now: Date): void {
    const endpoint = this.input.endpoints.find((e) => e.host === host);
    if (!endpoint) return;
    const [file] = oncePerStamps(this.input.home, this.input.selection, [endpoint]);
    const more = { scheduleSeconds: this.input.heartbeatMs / 1000, by: 'watch' as const };
    void this.queue(() => writeStamp(file!, now, host, this.input.selection, more), 'the sweep stamp');
  }

  private writeRecord(): Promise<void> {
    const record = this.record;
    return this.queue(() => writeWatchRecord(this.input.home, record), 'its record for status');
  }

  private queue(write: () => Promise<void>, what: string): Promise<void> {
    this.writing = this.writing.then(write).catch((err: unknown) => {
      if (this.warned.has(what)) return;
      this.warned.add(what);
      this.input.warn(`cannot write ${what} (${errorMessage(err)})`);
    });
    return this.writing;
  }
}
