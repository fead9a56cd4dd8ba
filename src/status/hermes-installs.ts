/**
 * `status`'s hermes installs: the checkout, venv or package behind each living hermes process, and the `hermes` on
 * PATH, each once, with its version (package metadata) and commit (a checkout's HEAD), against the newest hermes this
 * janitor knows (`hermes/known.ts`).
 */
import type { HermesProcess } from '../hermes/process-facts.js';
import { type HermesInstall, createPlaceProbe, describeInstall, installOnPath } from '../hermes/installs.js';
import { KNOWN_HERMES, NOTES_READ_UP_TO, newerThanKnown } from '../hermes/known.js';
import { HERMES_RULES, checkedText } from '../hermes/rules.js';
import type { HermesPlace } from '../hermes/processes.js';

/** `status`'s hermes installs. */
export interface HermesInstallsStatus {
  /** The newest hermes whose source this janitor was checked against, and the newest release whose notes were read. */
  known: { version: string; releaseDate: string; commit: string; notesReadUpTo: { version: string; date: string } };
  installs: Array<HermesInstall & { foundBy: string[]; newerThanKnown: boolean | null }>;
  /** When an install is newer than `known`: each rule with the newest hermes it was last checked against (`hermes/rules.ts`). */
  rules?: Array<{ id: string; checked: string; read: string; newer?: string }>;
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
  const rules = installs.some((i) => i.newerThanKnown)
    ? { rules: HERMES_RULES.map((r) => ({ id: r.id, checked: checkedText(r), read: r.checked.read, ...(r.checked.newer ? { newer: r.checked.newer } : {}) })) }
    : {};
  return { known: { ...KNOWN_HERMES, notesReadUpTo: { ...NOTES_READ_UP_TO } }, installs: installs.sort((a, b) => a.dir.localeCompare(b.dir)), ...rules };
}
