/**
 * Orders strings by UTF-16 code units: the same order on every machine and in every locale, and free, where
 * `localeCompare`'s first call builds ICU's collator (about 30 ms measured here, in every `list`).
 */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
