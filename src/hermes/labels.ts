import { LABEL_VALUE_MAX } from '../defaults.js';

/**
 * hermes-agent's label-value sanitizer: every code point outside `[A-Za-z0-9_.-]` becomes one `_`,
 * the result is cut to 63 characters, and an empty or missing value becomes `unknown`.
 */
export function sanitizeLabelValue(value: string | null | undefined): string {
  if (value === null || value === undefined) return 'unknown';
  let out = '';
  for (const ch of value) out += /^[A-Za-z0-9_.-]$/.test(ch) ? ch : '_';
  out = out.slice(0, LABEL_VALUE_MAX);
  return out === '' ? 'unknown' : out;
}
