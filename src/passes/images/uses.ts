/**
 * The state file of the image budget, `<home>/janitor/images.json` (mode 0600, written atomically under its lock,
 * never through a symlink: `FileStateStore`): per engine address and image id, the last time a container of it was
 * seen and whether a hermes container was one. Format in passes/images/rule.ts (`ImageUsesDoc`).
 */
import { type ImageUse, type Sighting, recordUses, usesOf } from './rule.js';
import type { StateStore } from '../../adapters/state-file.js';

export class ImageUses {
  constructor(readonly store: StateStore) {}

  /** The remembered uses of one engine (a file that is unusable counts as empty; the next record replaces it). */
  async read(host: string): Promise<Map<string, ImageUse>> {
    return usesOf((await this.store.read()).value, host);
  }

  /**
   * Records sightings for one engine, under the file's lock; with `present`, forgets the images the engine no longer
   * has. Returns the uses of that engine after the update.
   */
  async record(host: string, sightings: readonly Sighting[], present?: ReadonlySet<string>): Promise<Map<string, ImageUse>> {
    return this.store.update((cur) => {
      const next = recordUses(cur.value, host, sightings, present);
      return { next, result: usesOf(next, host) };
    });
  }
}

/** The file-backed uses of a hermes home. */
export async function imageUsesOf(home: string): Promise<ImageUses> {
  const [{ FileStateStore }, { imagesStatePath }] = await Promise.all([import('../../adapters/state-file.js'), import('../../adapters/janitor-files.js')]);
  return new ImageUses(new FileStateStore(imagesStatePath(home)));
}
