/** Sizes a person reads: `512 B`, `4.0 KiB`, `1.2 MiB`, `3.4 GiB` (binary units, as `du -h` counts them). */
export function diskSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}
