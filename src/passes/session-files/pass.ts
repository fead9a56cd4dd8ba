/**
 * The session-file pass: hermes' abandoned background-job triplets (`hermes_bg_<id>.{log,pid,exit}`), `execute_code`
 * sandbox directories (`hermes_sandbox_*`) and RPC sockets (`hermes_rpc_<hex>.sock`), in every directory where a
 * hermes release puts session files for the profiles the run serves, found, counted and (unless a dry run or
 * `--keep-session-files`) removed by the shell snapshots' proof. Each kind its own in text, JSON and metrics. Rules in
 * rule.ts, files in files.ts, the run in run.ts, settings in settings.ts. It needs no engine: on a host with none it runs alone.
 */
import { attentionLines, cappedLine, refusedPaths, refusedTempDirs, runOptions, statusOptions } from '../temp-dirs/report.js';
import { UP_TO_DAYS, span } from '../../core/ages.js';
import { KIND_NOUN, SESSION_FILE_KINDS, type SessionFileKind } from './rule.js';
import { diskSize } from '../../core/sizes.js';
import { ENV_SANDBOX_DIRS_EVERY, SANDBOX_DIRS_EVERY_MS } from '../../defaults.js';
import { KEEP_SESSION_FILES, type SessionFileSettings } from './settings.js';
import type { FailedSessionFile, RemovedSessionFile, SessionFilesResult, SessionFilesSummary } from './run.js';
import { escapeControls } from '../../util/escape-controls.js';
import { plural } from '../../util/plural.js';
import type { OptionDecl } from '../../cli/option-table.js';
import type { Pass, PassSettingsInput } from '../types.js';

const OPTIONS: readonly OptionDecl[] = [
  {
    flag: '--keep-session-files',
    description:
      "leave hermes' abandoned background-job files (hermes_bg_*.log/.pid/.exit), execute_code sandboxes (hermes_sandbox_*) and RPC sockets in " +
      'place; they are removed by default, as shell snapshots are (also janitor.keep_session_files: true in config.yaml)',
  },
];

/** One gauge family: per directory and kind, by state. */
const FAMILY = {
  name: 'hermes_janitor_session_files',
  help:
    'hermes session files in a directory at the last reap run, by kind="background-job"|"code-sandbox"|"rpc-socket" and ' +
    'state="found"|"abandoned" (abandoned ones are removed unless --keep-session-files or a dry run).',
  labelNames: ['temp_dir', 'kind', 'state'],
} as const;

type Gauges = SessionFilesSummary[];

async function settingsOf(input: PassSettingsInput, keepFlag: boolean | undefined): Promise<SessionFileSettings> {
  const [{ sessionFileSettings }, { sessionTempDirs }] = await Promise.all([import('./settings.js'), import('../temp-dirs/dirs.js')]);
  const lifetime = input.flags.lifetime as number | undefined;
  return sessionFileSettings(
    { lifetimeSeconds: lifetime, keep: keepFlag },
    input.env,
    { config: input.config, hermes: input.hermes },
    await sessionTempDirs(input),
  );
}

/** `removed background job /tmp/hermes_bg_ab12 (uid 1000, unchanged 3 days, 3 files)`. */
function entryLine(d: RemovedSessionFile, dryRun: boolean, asOf: Date): string {
  const more = d.kind === 'background-job' ? `, ${plural(d.files.length, 'file')}` : d.kind === 'code-sandbox' ? `, ${diskSize(d.bytes)}` : '';
  return (
    `${dryRun ? 'Would remove' : 'removed'} ${KIND_NOUN[d.kind][0]} ${escapeControls(d.path)} (uid ${d.owner}, unchanged ` +
    `${span(Date.parse(d.lastChange), asOf, UP_TO_DAYS)}${more})`
  );
}

/** `1 background job, 2 code sandboxes`: the kinds present in a list, each counted. */
function byKind(entries: ReadonlyArray<{ kind: SessionFileKind }>): string {
  return SESSION_FILE_KINDS.map((k) => [k, entries.filter((e) => e.kind === k).length] as const)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${KIND_NOUN[k][n === 1 ? 0 : 1]}`)
    .join(', ');
}

/** `status`: the directories holding any, each kind's found and abandoned. */
function render(dirs: readonly SessionFilesSummary[]): string[] {
  const out = ['Session files (background jobs, code sandboxes, rpc sockets: in the directories of the shell snapshots)'];
  const shown = dirs.filter((d) => d.problem || SESSION_FILE_KINDS.some((k) => d.kinds[k].found > 0));
  for (const d of shown) {
    if (d.problem) {
      out.push(`  ${escapeControls(d.dir)}: unknown: ${d.problem}`);
      continue;
    }
    const kinds = SESSION_FILE_KINDS.filter((k) => d.kinds[k].found > 0).map(
      (k) => `${plural(d.kinds[k].found, KIND_NOUN[k][0], KIND_NOUN[k][1])} (${d.kinds[k].abandoned} abandoned)`,
    );
    out.push(`  ${escapeControls(d.dir)}: ${kinds.join(', ')}${d.otherUsers ? `; other users': ${d.otherUsers}` : ''}`);
    if (d.capped !== undefined) out.push(`  ${escapeControls(cappedLine(d))}`);
  }
  if (shown.length === 0) out.push(`  none in ${plural(dirs.length, 'directory', 'directories')}`);
  return out;
}

export const sessionFilesPass: Pass<SessionFileSettings, SessionFilesResult, Gauges, FailedSessionFile, SessionFilesSummary[]> = {
  name: 'sessionFiles',
  kind: 'run',
  place: 'host',
  nouns: { event: 'session-file', events: 'session-files', text: 'session file', texts: 'session files' },
  options: OPTIONS,
  keys: [KEEP_SESSION_FILES],

  async settings(input) {
    if (input.plan) return null; // a plan lists containers only
    const s = await settingsOf(input, input.flags.keepSessionFiles as boolean | undefined);
    return s.keep ? null : s;
  },

  async run(s, ctx) {
    const { sessionFilePass, summarizeSessionFiles } = await import('./run.js');
    const result = await sessionFilePass(runOptions(s, ctx));
    return { result, gauges: summarizeSessionFiles(result) };
  },

  outcome: (r) => ({ done: r.removed, kept: r.kept, failed: r.failed }),
  refused: (r) => refusedTempDirs(r.tempDirs),
  cutShort: (r) => r.cutShort,
  freedBytes: (r) => r.removed.reduce((n, x) => n + x.bytes, 0),
  ndjsonCounts: (r) => ({ byKind: Object.fromEntries(SESSION_FILE_KINDS.map((k) => [k, r.removed.filter((x) => x.kind === k).length])) }),

  text: {
    lines: (r, view) => r.removed.map((d) => entryLine(d, view.dryRun, view.asOf)),
    summary(r, { dryRun, always }) {
      // Only when something was (or would be) removed or failed: kept files alone are no news.
      if (!always && r.removed.length + r.failed.length === 0) return '';
      const kinds = byKind(r.removed);
      return (
        `; session files: ${dryRun ? 'would remove' : 'removed'} ${r.removed.length}${kinds ? ` (${kinds})` : ''}, kept ${r.kept.length}, ` +
        `failed ${r.failed.length}`
      );
    },
    failure: (f) => f.error,
    watchFailure: (f) => `failed ${f.error}`,
    failedCount: (n) => `${plural(n, 'session file')} not removed`,
  },

  metrics: {
    families: [FAMILY],
    samples: (dirs) => ({
      [FAMILY.name]: dirs.flatMap((d) =>
        SESSION_FILE_KINDS.flatMap((kind) => [
          { labels: { temp_dir: d.dir, kind, state: 'found' }, value: d.kinds[kind].found },
          { labels: { temp_dir: d.dir, kind, state: 'abandoned' }, value: d.kinds[kind].abandoned },
        ]),
      ),
    }),
    initial: [],
  },

  status: {
    /** Counted as a dry run would (nothing removed), whatever `--keep-session-files` says. */
    async gather(input, ctx) {
      const s = await settingsOf(input, undefined);
      const { sessionFilePass, summarizeSessionFiles } = await import('./run.js');
      return summarizeSessionFiles(await sessionFilePass(statusOptions(s, ctx)));
    },
    json: (part) => ({ sessionFiles: part }),
    render: (part) => render(part),
    attention: attentionLines,
    refused: refusedPaths,
  },

  watch: { every: { env: ENV_SANDBOX_DIRS_EVERY, defaultMs: SANDBOX_DIRS_EVERY_MS } },
};
