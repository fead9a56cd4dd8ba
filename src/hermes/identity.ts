/**
 * The container identity hermes labels a profile's sandboxes with (`hermes-profile=<identity>`), and that its own
 * reaper selects.
 *
 * hermes-agent `tools/environments/docker.py` `_container_identity(shared_key)` and `_sanitize_label_value` (every
 * version with `terminal.docker_shared_container_key`, read up to 0.21.3): without a shared key, the profile's name
 * sanitised; with one, `<key sanitised, cut to 50>-<sha256(key as UTF-8), first 12 hex>`, where sanitising replaces
 * every character outside `[A-Za-z0-9_.-]` by `_`, cuts to 63, and makes an empty result `unknown`. The key comes from
 * `tools/terminal_tool.py` `_get_env_config()`: `TERMINAL_DOCKER_SHARED_CONTAINER_KEY`, stripped of surrounding
 * whitespace in some versions and not in others, so a key with surrounding whitespace has two identities here.
 */
import { createHash } from 'node:crypto';
import { sanitizeLabelValue } from './labels.js';

/** `_container_identity(key)` for a non-empty key. */
export function sharedIdentity(key: string): string {
  const digest = createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 12);
  return `${sanitizeLabelValue(key).slice(0, 50)}-${digest}`;
}

/**
 * The identities a profile's sandboxes may carry: its shared key's (the key as written and stripped, where hermes
 * versions differ) when it sets one, else its own name's. Never empty.
 */
export function identitiesOf(profile: string, sharedKey: string): string[] {
  const stripped = sharedKey.trim();
  const out = new Set([stripped === '' ? sanitizeLabelValue(profile) : sharedIdentity(stripped)]);
  // The versions that do not strip: the key as written (never empty here, as it differs from the stripped one).
  if (sharedKey !== stripped) out.add(sharedIdentity(sharedKey));
  return [...out];
}

/** Whether a label value has the shape of a shared identity (`<name>-<12 hex>`). */
export function looksShared(label: string): boolean {
  return /-[0-9a-f]{12}$/.test(label);
}
