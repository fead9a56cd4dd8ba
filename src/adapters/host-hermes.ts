/**
 * The hermes installed on this host, as `status`'s hermes installs find it (behind each living hermes process, and
 * the `hermes` on PATH: `hermes/installs.ts`), read once and kept a minute: the readings rule
 * (`hermes/host-readings.ts`) asks only when the scope reading would change what is acted on. The process table is
 * read in slices inside the run's `--timeout`; an abort leaves the question unanswered (the scope reading stays).
 */
import { type FoundInstall, scopeNotTaken } from '../hermes/host-readings.js';
import { createPlaceProbe, describeInstall, installOnPath } from '../hermes/installs.js';
import type { HermesPlace } from '../hermes/processes.js';
import { TimeSlice } from '../util/time-slice.js';
import { procRootOf, readHermesProcesses } from './hermes-processes.js';

/** How long what was found is kept (a long-lived `watch` sees an upgraded hermes within a minute). */
const KEEP_MS = 60_000;
const memo = new Map<string, { at: number; value: Promise<FoundInstall[] | null> }>();

/** The installs found (each once), or null when the process table could not be read to the end. */
async function found(env: Record<string, string | undefined>, signal?: AbortSignal): Promise<FoundInstall[] | null> {
  const probe = createPlaceProbe();
  const table = await readHermesProcesses({ procRoot: procRootOf(env), profiles: false, probe }, new TimeSlice(signal));
  if (table === null || !table.readable) return null;
  const places = new Map<string, HermesPlace>();
  for (const p of table.processes) for (const place of p.places ?? []) places.set(`${place.kind}\0${place.dir}`, place);
  const onPath = installOnPath(env.PATH, probe);
  if (onPath) places.set(`${onPath.place.kind}\0${onPath.place.dir}`, onPath.place);
  return [...places.values()].map((place) => ({ dir: place.dir, version: describeInstall(place).version }));
}

/** Why the scope reading is not taken on this host (every install found predates it), or null: it is. */
export async function hostScopeNotTaken(env: Record<string, string | undefined>, signal?: AbortSignal): Promise<string | null> {
  const key = `${procRootOf(env)}\0${env.PATH ?? ''}`;
  const hit = memo.get(key);
  const p = hit && Date.now() - hit.at < KEEP_MS ? hit.value : found(env, signal);
  if (p !== hit?.value) memo.set(key, { at: Date.now(), value: p });
  const installs = await p;
  if (installs === null) memo.delete(key); // cut short: asked again next time
  return installs === null ? null : scopeNotTaken(installs);
}
