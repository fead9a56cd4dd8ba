/**
 * An image as the engines report it, the engine adapters' answer (`adapters/engine.ts` `EngineClient`): what the
 * image pass (`passes/images/`) judges. Pure, a leaf.
 */

/** One image as the engine reports it (`GET /system/df`, tags from `GET /images/json`). */
export interface ImageFacts {
  /** `sha256:<64 hex>` (Podman's df leaves the prefix out: it is added). */
  id: string;
  /** `repository:tag` names (none for a dangling image). */
  tags: string[];
  /** The image's `Created` (ms since the epoch): when it was built or committed (a pull keeps the builder's time). */
  createdMs: number;
  /** `Size`: every layer of the image, shared ones included. */
  size: number;
  /** `SharedSize`: of `size`, the layers other images share (-1 or absent counts as 0). */
  sharedSize: number;
}

/** A full image id (`sha256:<64 hex>`) from Docker's or Podman's spelling; other strings as given. */
export function fullImageId(id: string): string {
  return /^[0-9a-f]{64}$/.test(id) ? `sha256:${id}` : id;
}
