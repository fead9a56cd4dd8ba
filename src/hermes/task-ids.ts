/**
 * hermes' task ids in every current form, as its sandboxes carry them (`hermes-task-id`) and as their host directories
 * are named (`<sandbox root>/docker/<task dir>`). Pure.
 *
 * hermes-agent, source text of main (release not established):
 * - `tools/execution_targets.py` `ExecutionTargetResolution`: under the multiplexer a task key is scoped
 *   `profile-<sha256(resolved HERMES_HOME)[:12]>:<key>` (`scope_task_key`, `_active_profile_scope`); a named target's
 *   sandbox id is `task-<sha256(scoped key)[:16]>-target-<security scope, 20 hex>` (`backend_task_id`; the earlier
 *   text, kept as `legacy_backend_task_id`: `<scoped key>-target-<sha256(target name)[:12]>`), and its persistent
 *   storage id `task-<sha256(base id)[:16]>-storage-<20 hex>` (`storage_task_id`: stable across policy edits).
 * - `tools/environments/docker.py` `_container_task_label`: the label is the id sanitised (`_sanitize_label_value`);
 *   when that changed it or it is longer than 63, `<sanitised, cut to 50>-<sha256(id)[:12]>`, cut to 63.
 * - `tools/environments/path_utils.py` `sanitize_task_id_for_path`: the directory is the id itself when it is 1-128
 *   of `[A-Za-z0-9._-]` (not `.`, `..`, nor ending in `.`), else `<cleaned stem>-<sha256(id)[:12]>`; empty: `default`.
 *
 * The janitor tells sandbox directories apart by the mounts that use them, never by their names (`core/
 * sandbox-dirs.ts`): every form above is one more name it needs nothing from. This module says what a name is, for
 * `status` and the tests.
 */
import { createHash } from 'node:crypto';
import { sanitizeLabelValue } from './labels.js';

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

/** What a task id (or the label or directory made of one) says. */
export interface TaskIdForm {
  /** `target` (`task-<16>-target-<20>`), `legacy-target` (`<base>-target-<12>`), `storage` (`task-<16>-storage-<20>`), `plain`. */
  kind: 'target' | 'legacy-target' | 'storage' | 'plain';
  /** The multiplexer's profile scope (12 hex), when the id carries it in the clear (`profile-<12 hex>:`). */
  profileScope: string | null;
  /** The task key inside (plain and legacy ids), without the scope. */
  base: string | null;
}

/** `profile-<12 hex>` followed by `:` (the id) or `_` (its label or directory, where `:` is replaced). */
const SCOPED = /^profile-([0-9a-f]{12})[:_](.*)$/s;

/** Reads a task id, a `hermes-task-id` label value, or a task directory name. */
export function parseTaskId(id: string): TaskIdForm {
  if (/^task-[0-9a-f]{16}-target-[0-9a-f]{20}$/.test(id)) return { kind: 'target', profileScope: null, base: null };
  if (/^task-[0-9a-f]{16}-storage-[0-9a-f]{20}$/.test(id)) return { kind: 'storage', profileScope: null, base: null };
  const legacy = /^(.*)-target-[0-9a-f]{12}$/s.exec(id);
  const rest = legacy ? legacy[1]! : id;
  const scoped = SCOPED.exec(rest);
  return { kind: legacy ? 'legacy-target' : 'plain', profileScope: scoped ? scoped[1]! : null, base: scoped ? scoped[2]! : rest };
}

/** The multiplexer's profile scope of a home (`_active_profile_scope`: sha256 of the resolved home, first 12 hex). */
export function profileScopeOf(resolvedHome: string): string {
  return sha(resolvedHome).slice(0, 12);
}

/** `scope_task_key` + `backend_task_id` of the earlier text: `[profile-<scope>:]<key>-target-<sha256(name)[:12]>`. */
export function legacyTargetTaskId(key: string, target: string, profileScope = ''): string {
  const base = profileScope ? `profile-${profileScope}:${key}` : key;
  return `${base}-target-${sha(target).slice(0, 12)}`;
}

/** `backend_task_id` of the current text, given the target's security scope (20 hex, from its private key). */
export function targetTaskId(key: string, securityScope: string, profileScope = ''): string {
  const base = profileScope ? `profile-${profileScope}:${key}` : key;
  return `task-${sha(base).slice(0, 16)}-target-${securityScope}`;
}

/** `_container_task_label`: the `hermes-task-id` label of a task id. */
export function taskLabel(id: string): string {
  const raw = id || 'default';
  let label = sanitizeLabelValue(raw);
  if (label !== raw || raw.length > 63) label = `${label.slice(0, 50)}-${sha(raw).slice(0, 12)}`.slice(0, 63);
  return label || 'default';
}

/** `sanitize_task_id_for_path`: the directory name of a task id under `<sandbox root>/docker/`. */
export function taskDirName(id: string): string {
  if (!id) return 'default';
  const cleaned = id.replace(/[^A-Za-z0-9._-]/g, '_');
  if (cleaned === id && id.length <= 128 && id !== '.' && id !== '..' && !id.endsWith('.')) return id;
  const stem = cleaned.slice(0, 128 - 12 - 1).replace(/^[._]+|[._]+$/g, '');
  return `${stem || 'task'}-${sha(id).slice(0, 12)}`;
}
