/**
 * hermes' container labels (hermes-agent `tools/environments/docker.py` `build_container_labels`, every version with
 * profiles): `hermes-agent=1` marks a container hermes started, `hermes-profile=<identity>` the profile (or shared
 * identity, `identity.ts`) it belongs to, each value sanitised by `_sanitize_label_value`; and the profile directory
 * names of `hermes_cli/profiles.py` (`_PROFILE_ID_RE`).
 */

/** Label that marks a container as started by hermes-agent (value `1`). */
export const AGENT_LABEL = 'hermes-agent';
export const AGENT_LABEL_VALUE = '1';
/** Label holding the (sanitized) profile name, or the shared container identity. */
export const PROFILE_LABEL = 'hermes-profile';
/** hermes-agent's rule for a profile directory name. */
export const PROFILE_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** Maximum length of a sanitized label value. */
export const LABEL_VALUE_MAX = 63;

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
