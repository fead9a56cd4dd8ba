import { promises as fs } from 'node:fs';

/** Total bytes of the filesystem holding `p` (statfs: blocks x block size); null when `p` cannot be reached here. */
export async function filesystemBytes(p: string): Promise<number | null> {
  try {
    const st = await fs.statfs(p);
    const total = Number(st.blocks) * Number(st.bsize);
    return Number.isFinite(total) && total > 0 ? total : null;
  } catch {
    return null;
  }
}
