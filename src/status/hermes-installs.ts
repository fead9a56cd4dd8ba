/**
 * `status`'s hermes installs: the checkout, venv or package behind each living hermes process, and the `hermes` on
 * PATH, each once, with its version (package metadata) and commit (a checkout's HEAD), against the newest hermes this
 * janitor knows (`hermes/known.ts`).
 */
import type { HermesProcess } from '../hermes/process-facts.js';
import { type HermesInstall, createPlaceProbe, describeInstall, installOnPath } from '../hermes/installs.js';
import { KNOWN_HERMES, newerThanKnown } from '../hermes/known.js';
import type { HermesPlace } from '../hermes/processes.js';

/** `status`'s hermes installs. */
export interface HermesInstallsStatus {
  /** The newest hermes this janitor was checked against. */
  known: { version: string; releaseDate: string; commit: string };
  installs: Array<HermesInstall & { foundBy: string[]; newerThanKnown: boolean | null }>;
}

/** The installs behind `processes` and the `hermes` on `pathVar`. */
export function hermesInstalls(processes: readonly HermesProcess[], pathVar: string | undefined): HermesInstallsStatus {
  const found = new Map<string, { place: HermesPlace; foundBy: string[] }>();
  const add = (place: HermesPlace, by: string) => {
    const key = `${place.kind}\0${place.dir}`;
    const f = found.get(key) ?? { place, foundBy: [] };
    if (!f.foundBy.includes(by)) f.foundBy.push(by);
    found.set(key, f);
  };
  for (const p of processes) for (const place of p.places ?? []) add(place, `pid ${p.pid}`);
  const onPath = installOnPath(pathVar, createPlaceProbe());
  if (onPath) add(onPath.place, `PATH (${onPath.file})`);
  const installs = [...found.values()].map(({ place, foundBy }) => {
    const d = describeInstall(place);
    return { ...d, foundBy, newerThanKnown: newerThanKnown(d.version) };
  });
  return { known: { ...KNOWN_HERMES }, installs: installs.sort((a, b) => a.dir.localeCompare(b.dir)) };
}
