/**
 * One JSON style: every `--json` document of every command carries `"schemaVersion"` first, the version of the
 * shape of the CLI's JSON documents (raised when a key is renamed or reshaped; new keys do not raise it). Keys are
 * camelCase and times ISO 8601; the breakers' older snake_case keys and epoch seconds stay beside them, deprecated.
 * Cheap to import: the hooks' fast paths load it.
 */
export const JSON_SCHEMA_VERSION = 1;

/** `value` with `schemaVersion` first, when it is a plain object (anything else as it is). */
export function versioned(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype) return value;
  return { schemaVersion: JSON_SCHEMA_VERSION, ...(value as Record<string, unknown>) };
}
