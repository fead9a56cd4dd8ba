/**
 * Every rule the janitor follows of hermes, as data: the janitor file it lives in, the hermes file and function it
 * follows, the newest hermes it was checked against and what was read (source text at a commit, source text whose
 * release could not be told, or release notes only). One table, from which `docs/hermes.md`'s table is made (a unit
 * test holds the page to it), `status` says what was last checked when, and `npm run hermes-drift` lists what to read
 * again for the next hermes release.
 */
import { KNOWN_HERMES, NOTES_READ_UP_TO } from './known.js';
import { compareHermesVersions } from './versions.js';

/** What was read of hermes for a rule. */
export interface RuleCheck {
  /** The newest hermes release whose source text was read for this rule, or null (none tied to a release). */
  version: string | null;
  /** Its date (YYYY-MM-DD), or null. */
  date: string | null;
  /** What was read, for a person: `source at commit 00067189dfec (0.21.3)`, `source text on main (...)`. */
  read: string;
  /** Newer text read where it exists: source of main whose release could not be told, release notes. */
  newer?: string;
}

export interface HermesRule {
  /** Short name (`labels`, `targets`): `npm run hermes-drift -- <id>` shows one. */
  id: string;
  /** What the janitor assumes of hermes. */
  rule: string;
  /** The janitor files that hold it. */
  janitor: string[];
  /** The hermes files and functions it follows. */
  follows: string[];
  /** The hermes versions it holds for. */
  holds: string;
  checked: RuleCheck;
}

const AT_0213 = `source at commit ${KNOWN_HERMES.commit.slice(0, 12)} (0.21.3)`;
const V0213: Pick<RuleCheck, 'version' | 'date' | 'read'> = { version: KNOWN_HERMES.version, date: '2026-09-14', read: AT_0213 };
/** The stored copies of hermes' main branch read in December 2026: their commits and releases could not be told. */
const MAIN = 'source text of main read in stored copies (December 2026; commit and release not established)';
const NOTES = 'release notes 0.21.4-0.23.6 read';

export const HERMES_RULES: readonly HermesRule[] = [
  {
    id: 'labels',
    rule: 'Container labels `hermes-agent=1`, `hermes-profile=<identity>`, `hermes-task-id=<task label>`; profile names',
    janitor: ['src/hermes/labels.ts'],
    follows: ['tools/environments/docker.py build_container_labels, _sanitize_label_value, _container_task_label', 'hermes_cli/profiles.py _PROFILE_ID_RE'],
    holds: 'every version with profiles',
    checked: { ...V0213, newer: `${MAIN}: build_container_labels with _container_task_label (a task id cut to 50 and hashed); ${NOTES}: nothing on labels` },
  },
  {
    id: 'home',
    rule: 'The profile of a home: the root is `default`, `<root>/profiles/<name>` is `<name>`, anything else `custom`',
    janitor: ['src/hermes/home.ts'],
    follows: ['hermes_cli/profiles.py'],
    holds: 'every version with profiles',
    checked: { ...V0213, newer: `${NOTES}: nothing on profile homes` },
  },
  {
    id: 'identity',
    rule: 'Container identity: the profile name, or with `terminal.docker_shared_container_key` `<key sanitised, cut to 50>-<sha256(key)[:12]>`',
    janitor: ['src/hermes/identity.ts'],
    follows: ['tools/environments/docker.py _container_identity'],
    holds: 'since the shared key (0.20 releases); the key stripped by some releases and not by others: both identities are selected',
    checked: { ...V0213, newer: `${MAIN}: _container_identity unchanged` },
  },
  {
    id: 'task-ids',
    rule:
      'Task ids and their sandbox directories: `task-<16 hex>-target-<20 hex>`, `<base>-target-<12 hex>`, `task-<16 hex>-storage-<20 hex>`, ' +
      'the multiplexer scope `profile-<sha256(home)[:12]>:`; a task directory is `sanitize_task_id_for_path(id)`',
    janitor: ['src/hermes/task-ids.ts'],
    follows: [
      'tools/execution_targets.py ExecutionTargetResolution.backend_task_id, legacy_backend_task_id, storage_task_id, scope_task_key, _active_profile_scope',
      'tools/environments/path_utils.py sanitize_task_id_for_path',
    ],
    holds: 'named execution targets (release not established); plain task ids in every version',
    checked: {
      version: null,
      date: null,
      read: `${MAIN}: NousResearch/hermes-agent at ec126fdbfe69 (the earlier \`<base>-target-<12 hex>\` form) and later copies (the current form)`,
      newer: `${NOTES}: none names execution targets`,
    },
  },
  {
    id: 'launch-reading',
    rule: 'The launch reading of a profile: default, environment, `<home>/.env`, managed `.env`, `config.yaml terminal:`',
    janitor: ['src/hermes/settings.ts', 'src/hermes/settings-worth.ts', 'src/hermes/dotenv.ts', 'src/adapters/hermes-settings.ts'],
    follows: [
      'hermes_cli/env_loader.py load_hermes_dotenv',
      'hermes_cli/config.py apply_terminal_config_to_env',
      'hermes_cli/managed_scope.py get_managed_dir',
    ],
    holds: 'every version; the one reading of releases before the routed-profile scope',
    checked: { ...V0213, newer: `${NOTES}: 0.23.4 "managed-scope config honored by security and URL-safety reads" (not terminal settings)` },
  },
  {
    id: 'scope-reading',
    rule:
      "The scope reading of a routed turn: defaults, the profile `.env`'s `TERMINAL_*` keys, its `config.yaml terminal:`; " +
      'a file that does not parse refuses the profile',
    janitor: ['src/hermes/scope-settings.ts', 'src/hermes/env-file.ts'],
    follows: ['tools/terminal_scope.py build_profile_terminal_scope, _validate_dotenv', 'agent/secret_scope.py load_env_file'],
    holds: 'since hermes-agent PR #101242 (merged 2026-09-02, so from 0.21.0 or 0.21.1 on; the janitor counts it from 0.21.0)',
    checked: { ...V0213, newer: NOTES },
  },
  {
    id: 'readings',
    rule:
      'The reading acted on: the longer lifetime and timeouts, the reaper off if any reading says off, paths as launched; ' +
      'the scope reading not taken where every install found predates it',
    janitor: ['src/hermes/readings.ts', 'src/hermes/host-readings.ts'],
    follows: ['the launch and scope readings above', 'the installs below'],
    holds: 'all releases',
    checked: { ...V0213, newer: NOTES },
  },
  {
    id: 'targets',
    rule:
      'Named execution targets: `terminal.targets.<name>` (static config.yaml, and the runtime registry `<home>/runtime/execution-targets.d/*.json`); ' +
      'each inherits the flat `terminal:` keys; a docker target counts with its `lifetime_seconds` and `docker_orphan_reaper`',
    janitor: ['src/hermes/targets.ts', 'src/adapters/execution-targets.ts'],
    follows: [
      'tools/execution_targets.py resolve_execution_target, list_execution_targets',
      'tools/execution_target_overlay.py overlay_runtime_execution_targets',
      'tools/execution_target_registry.py registry_directory, _parse_fragment',
    ],
    holds: 'named execution targets (release not established); a home without targets as before',
    checked: {
      version: null,
      date: null,
      read: `${MAIN}: NousResearch/hermes-agent at ec126fdbfe69 (execution_targets.py), crosslink-ch/hermes-agent at 87b01e7e671a (the overlay and registry)`,
      newer: `${NOTES}: none names execution targets`,
    },
  },
  {
    id: 'reaper',
    rule:
      "hermes' own reaper: exited only, 2 x max(60, the longest lifetime of the flat setting and every docker target), its identity only; " +
      "which labels each profile's settings judge",
    janitor: ['src/hermes/judgement.ts', 'src/hermes/profile-set.ts'],
    follows: ['tools/terminal_tool.py _maybe_reap_docker_orphans'],
    holds: 'since the shared key; the targets-aware lifetime since named execution targets',
    checked: { ...V0213, newer: `${MAIN}: the targets-aware _maybe_reap_docker_orphans ("2 x the longest configured Docker-target lifetime"); ${NOTES}` },
  },
  {
    id: 'processes',
    rule:
      'Which process is hermes, by what it runs: entry points, modules, entry files, venvs; the surfaces (gateway, dashboard, `serve`, TUI backend, cron); ' +
      'the launchd stderr wrapper; Desktop and AppImage payloads',
    janitor: ['src/hermes/processes.ts', 'src/hermes/process-facts.ts', 'src/adapters/hermes-processes.ts'],
    follows: [
      'pyproject.toml [project.scripts]',
      'hermes_cli/gateway.py generate_systemd_unit, generate_launchd_plist, _timestamped_stderr_gateway_command, _gateway_run_command',
      'apps/desktop backend-command.ts serveBackendArgs, dashboardFallbackArgs; desktop packaging probeBundledBackend',
      'tui_gateway/entry.py',
    ],
    holds: 'up to 0.21.3 from its source; the launcher shapes of main; 0.23.4 gateway migrate --backends and 0.23.5 from notes only',
    checked: {
      ...V0213,
      newer:
        `${MAIN}: the systemd unit, the launchd plist (stderr_timestamp wrapper, --external-supervisor), Desktop's serve/dashboard backends; ` +
        `${NOTES}: 0.23.4 gateway migrate --backends, 0.23.5 the dashboard-moving notice and plugin preflight (no process text read)`,
    },
  },
  {
    id: 'owners',
    rule:
      'What a process owns: a surface launched on a root serves every profile under it, or `default` and the allowlist; ' +
      '`-p NAME` owns NAME; any other the profile of its home',
    janitor: ['src/hermes/owned-profiles.ts', 'src/hermes/processes.ts'],
    follows: [
      'hermes_cli/profiles.py profiles_to_serve',
      'gateway/config.py _normalize_multiplex_profile_allowlist',
      'hermes_cli/main.py _apply_profile_override',
    ],
    holds: '`gateway.multiplex_profiles` opt-in since v2026.6.19 (PR #48273), the only topology since #118273; the allowlist since PR #83400',
    checked: { ...V0213, newer: NOTES },
  },
  {
    id: 'installs',
    rule: "Where hermes' checkouts, venvs, packages and Desktop payloads are, their version (package metadata, the install stamp) and commit",
    janitor: ['src/hermes/installs.ts', 'src/status/hermes-installs.ts'],
    follows: [
      'scripts/install.sh',
      'pyproject.toml version',
      'hermes_cli/version_info.py _stamp_version_info (install-stamp.json)',
      'pm/paths.py install_stamp_path',
    ],
    holds: 'up to 0.21.3 from its source; the install stamp of main',
    checked: { ...V0213, newer: `${MAIN}: NousResearch/hermes-agent hermes_cli/version_info.py at 09b812e67702; ${NOTES}` },
  },
  {
    id: 'versions',
    rule: 'Version strings in every form: `vX.Y.Z`, `v2026.M.D`, `rc.N-vX.Y.Z`, `<base>+N.g<sha>`, `git.<sha>`, compared',
    janitor: ['src/hermes/versions.ts', 'src/hermes/known.ts'],
    follows: ['hermes_cli/version_info.py _derived_version, _git_version_info', 'hermes_cli/__init__.py __version__, __release_date__', 'the release pages'],
    holds: 'every release to 0.23.6',
    checked: { ...V0213, newer: `${MAIN}: version_info.py at 09b812e67702, a lazily served __version__; release pages read to 0.23.6 (2026-12-01)` },
  },
  {
    id: 'timeouts',
    rule: "hermes' command timeouts: `TERMINAL_MAX_FOREGROUND_TIMEOUT` (600), `terminal.timeout` (180), `code_execution.timeout` (300)",
    janitor: ['src/hermes/timeouts.ts'],
    follows: ['tools/terminal_tool.py FOREGROUND_MAX_TIMEOUT', 'tools/code_execution_tool.py'],
    holds: 'up to 0.21.3',
    checked: { ...V0213, newer: NOTES },
  },
  {
    id: 'session-dirs',
    rule:
      "Every directory where a release puts a session's files: `TERMINAL_TEMP_DIR`, `TMPDIR`/`TMP`/`TEMP`, " +
      '`<home>/cache/terminal`, `<home>/cache/scratch`, `/tmp`',
    janitor: ['src/hermes/session-dirs.ts'],
    follows: ['tools/environments/local.py get_temp_dir', 'tools/code_execution_tool.py', 'hermes_constants.py export_scratch_tmp_env'],
    holds: 'all releases: every directory any of them uses',
    checked: { ...V0213, newer: NOTES },
  },
];

/** A rule's check in a few words: `0.21.3 (2026-09-14), source`, or `main, source (release not established)`. */
export function checkedText(r: HermesRule): string {
  return r.checked.version === null ? 'main, source text (release not established)' : `${r.checked.version} (${r.checked.date}), source`;
}

/** The markdown table of `docs/hermes.md` (its rows, one per rule, with the header). */
export function rulesTable(): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const rows = HERMES_RULES.map((r) => {
    const rule = `${esc(r.rule)} (${r.janitor.map((f) => `\`${f}\``).join(', ')})`;
    const follows = r.follows.map((f) => esc(f)).join('; ');
    const checked = `${esc(checkedText(r))}: ${esc(r.checked.read)}${r.checked.newer ? `. Newer: ${esc(r.checked.newer)}` : ''}`;
    return `| \`${r.id}\`: ${rule} | ${follows} | ${esc(r.holds)} | ${checked} |`;
  });
  return ['| Rule (janitor file) | hermes file and function | Versions | Newest checked against, and what was read |', '|---|---|---|---|', ...rows].join('\n');
}

/** Whether a rule must be read again for hermes `against`: its source was read for an older release, or for none. */
export function staleFor(r: HermesRule, against: string): boolean {
  if (r.checked.version === null) return true;
  const c = compareHermesVersions(r.checked.version, against);
  return c === null || c < 0;
}

/**
 * `npm run hermes-drift [-- VERSION]`: each rule with the hermes file and function it follows and the version last
 * checked, and which ones to read again for `against` (default: the newest release whose notes were read).
 */
export function driftReport(against: string = NOTES_READ_UP_TO.version): string {
  const out = [
    `hermes drift: the rules the janitor follows of hermes (src/hermes/), each with what was last read, against hermes ${against}.`,
    `The janitor was checked against hermes ${KNOWN_HERMES.version} (${KNOWN_HERMES.releaseDate}) for every rule; release notes read up to ` +
      `${NOTES_READ_UP_TO.version} (${NOTES_READ_UP_TO.date}). Follow a new hermes: docs/development.md, "Following a new hermes".`,
    '',
  ];
  for (const r of HERMES_RULES) {
    out.push(`${r.id}${staleFor(r, against) ? `  [read again for ${against}]` : ''}`);
    out.push(`  janitor: ${r.janitor.join(', ')}`);
    for (const f of r.follows) out.push(`  follows: ${f}`);
    out.push(`  checked: ${checkedText(r)}: ${r.checked.read}`);
    if (r.checked.newer) out.push(`  newer:   ${r.checked.newer}`);
  }
  const stale = HERMES_RULES.filter((r) => staleFor(r, against)).length;
  out.push('', `${stale} of ${HERMES_RULES.length} rules to read again for hermes ${against}.`);
  return `${out.join('\n')}\n`;
}
