/**
 * THE bounded directory reader, for every directory a user can fill (#47): `opendir`, a few entries at a time, so no
 * listing is ever held whole; only the entries the reader is after are kept (`keep`), the others dropped as read; at
 * most `max` entries are read (the cap: `more` says it was reached, and each caller reports it); the async form gives
 * the event loop a turn between slices, so the run's deadline and `watch`'s `/healthz` act while it reads.
 *
 * The time a listing takes is bounded by `max` (one `getdents` per slice), and its memory by what `keep` keeps (at most
 * `max` entries). Callers name their cap as a constant and document it.
 */
import { type Dir, type Dirent, opendirSync, promises as fs } from 'node:fs';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** Entries read between two turns of the event loop (and the size of `opendir`'s buffer). */
export const DIR_SLICE = 256;

/** What a bounded read kept, and whether the directory held more entries than it reads. */
export interface DirRead<T> {
  kept: T[];
  /** More entries were there than `max`: those past it were not read. */
  more?: true;
  /** The run's abort (`pause`) stopped the reading. */
  cutShort?: true;
}

export interface DirReadOptions<T> {
  /** At most this many entries are read (`Infinity`: every one, still a few at a time). */
  max: number;
  /** What to keep of an entry, or null to drop it. */
  keep: (e: Dirent) => T | null;
}

/**
 * The loop of both readers: reads `d` into `out` (at most `max` entries, `keep`'s of them kept), pausing after each
 * slice of `DIR_SLICE` entries; the caller decides what a pause is (none, or a turn of the event loop).
 */
function* readInto<T>(d: Dir, opts: DirReadOptions<T>, out: DirRead<T>): Generator<void, void, void> {
  let n = 0;
  for (let e = d.readSync(); e !== null; e = d.readSync()) {
    if (n >= opts.max) {
      out.more = true;
      return;
    }
    if (++n % DIR_SLICE === 0) yield;
    const k = opts.keep(e);
    if (k !== null) out.kept.push(k);
  }
}

/** At most `max` entries of the directory at `at`, those `keep` maps to a value kept, synchronously. Throws as `opendir`. */
export function readDirCapped<T>(at: string, opts: DirReadOptions<T>): DirRead<T> {
  const d = opendirSync(at, { bufferSize: DIR_SLICE });
  const out: DirRead<T> = { kept: [] };
  try {
    for (const _ of readInto(d, opts, out));
  } finally {
    d.closeSync();
  }
  return out;
}

/**
 * `readDirCapped`, a slice at a time with a turn of the event loop between slices: `pause` (when given) is asked at
 * each turn and stops the reading when it answers true (the run is aborted: `cutShort`).
 */
export async function readDirSliced<T>(at: string, opts: DirReadOptions<T> & { pause?: () => Promise<boolean> }): Promise<DirRead<T>> {
  const d = await fs.opendir(at, { bufferSize: DIR_SLICE });
  const out: DirRead<T> = { kept: [] };
  try {
    for (const _ of readInto(d, opts, out)) {
      if (opts.pause ? await opts.pause() : (await yieldToLoop(), false)) {
        out.cutShort = true;
        break;
      }
    }
  } finally {
    d.closeSync();
  }
  return out;
}

/**
 * Every entry of a directory, a slice (at most `DIR_SLICE` names) at a time: `each` is awaited on each slice before the
 * next is read, so what the caller holds is one slice (and what it keeps). For a walk that must see every entry (a
 * removal): the directory may change meanwhile (entries removed by `each` are not read again).
 */
export async function forEachSlice(at: string, each: (names: string[]) => Promise<boolean | undefined>): Promise<void> {
  const d = await fs.opendir(at, { bufferSize: DIR_SLICE });
  try {
    for (;;) {
      const names: string[] = [];
      for (let e = d.readSync(); e !== null; e = names.length < DIR_SLICE ? d.readSync() : null) names.push(e.name);
      if (names.length === 0) return;
      if ((await each(names)) === false) return;
      if (names.length < DIR_SLICE) return;
    }
  } finally {
    d.closeSync();
  }
}
