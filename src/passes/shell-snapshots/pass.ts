/**
 * The shell-snapshot pass: hermes' abandoned shell snapshots in its temp directory, found, counted and (unless a dry
 * run or `--keep-shell-snapshots`) removed. Rules in rule.ts (the abandoned proof: temp-dirs/rule.ts), files in
 * files.ts and temp-dirs/files.ts, the run in run.ts, its settings in settings.ts. It needs no engine: on a
 * host with none it runs alone. The smallest real pass: docs/development.md walks through it.
 */
import { attentionLines, cappedLine, refusedPaths, refusedTempDirs, runOptions, statusOptions } from '../temp-dirs/report.js';
import { UP_TO_DAYS, ago, span } from '../../core/ages.js';
import { ENV_SANDBOX_DIRS_EVERY, SANDBOX_DIRS_EVERY_MS } from '../../defaults.js';
import { KEEP_SHELL_SNAPSHOTS, type ShellSnapshotSettings } from './settings.js';
import type { FailedSnapshot, RemovedSnapshot, ShellSnapshotsResult, ShellSnapshotsSummary } from './run.js';
import { escapeControls } from '../../util/escape-controls.js';
import { plural } from '../../util/plural.js';
import type { OptionDecl } from '../../cli/option-table.js';
import type { Pass, PassSettingsInput } from '../types.js';
import type { SessionTempDir } from '../temp-dirs/dirs.js';

const OPTIONS: readonly OptionDecl[] = [
  {
    flag: '--keep-shell-snapshots',
    description:
      "leave hermes' abandoned shell snapshots (<temp dir>/hermes-snap-*.sh, which hold its exported variables) in place; they are removed by " +
      'default (also janitor.keep_shell_snapshots: true in config.yaml)',
  },
];

/** One gauge family: per temp directory, by state. */
const FAMILY = {
  name: 'hermes_janitor_shell_snapshots',
  help:
    'hermes shell snapshots in a temp directory at the last reap run, by state="found"|"abandoned"|"with_secret_names" (abandoned ones are ' +
    'removed unless --keep-shell-snapshots or a dry run).',
  labelNames: ['temp_dir', 'state'],
} as const;

type Gauges = Array<{ dir: string; found: number; abandoned: number; withSecretNames: number }>;

/**
 * The settings from the flags and the home's files (`--lifetime` and hermes' own for the threshold), over every
 * directory where a hermes release puts session files for the profiles the run serves.
 */
async function settingsOf(input: PassSettingsInput, keepFlag: boolean | undefined): Promise<ShellSnapshotSettings> {
  const [{ shellSnapshotSettings }, { sessionTempDirs }] = await Promise.all([import('./settings.js'), import('../temp-dirs/dirs.js')]);
  const lifetime = input.flags.lifetime as number | undefined;
  return shellSnapshotSettings(
    { lifetimeSeconds: lifetime, keep: keepFlag },
    input.env,
    { config: input.config, hermes: input.hermes },
    await sessionTempDirs(input),
  );
}

/** `removed shell snapshot /tmp/hermes-snap-<id>.sh (uid 1000, unchanged 3 days, 2 secret-looking names)`. */
function snapshotLine(d: RemovedSnapshot, dryRun: boolean, asOf: Date): string {
  const names = d.secretNames === null ? '' : `, ${d.secretNames.length} secret-looking ${d.secretNames.length === 1 ? 'name' : 'names'}`;
  const more = d.files.length > 1 ? `, ${d.files.length} files` : '';
  return (
    `${dryRun ? 'Would remove' : 'removed'} shell snapshot ${escapeControls(d.path)} (uid ${d.owner}, unchanged ` +
    `${span(Date.parse(d.lastChange), asOf, UP_TO_DAYS)}${names}${more})`
  );
}

/** A temp directory's summary in `status`, with the hermes readings that put session files there. */
type DirSummary = ShellSnapshotsSummary & { readings?: string[] };

/** `status`: one section per temp directory looked at, each with the hermes readings that put files there. */
function render(dirs: readonly DirSummary[], now: Date): string[] {
  const out: string[] = [];
  for (const s of dirs) {
    out.push(`Shell snapshots (${s.dir}${s.from === 'default' ? '' : `, from ${s.from}`})`);
    for (const r of s.readings ?? []) out.push(`  hermes puts files here: ${r}`);
    if (s.problem) {
      out.push(`  unknown: ${s.problem}`);
      continue;
    }
    const oldest = s.oldestChange ? `; the oldest last changed ${ago(Date.parse(s.oldestChange), now, UP_TO_DAYS)}` : '';
    out.push(`  ${plural(s.snapshots, 'snapshot')}, ${s.abandoned} abandoned (a reap removes them)${oldest}`);
    if (s.snapshots) {
      out.push(
        `  holding secret-looking names: ${s.withSecretNames} (${plural(s.secretNames, 'name')}${s.unreadable ? `; ${s.unreadable} not readable here` : ''})`,
      );
    }
    if (s.otherUsers) out.push(`  other users': ${s.otherUsers} (only root or their owner removes them)`);
    if (s.capped !== undefined) out.push(`  ${cappedLine(s)}`);
  }
  return out;
}

export const shellSnapshotsPass: Pass<ShellSnapshotSettings, ShellSnapshotsResult, Gauges, FailedSnapshot, DirSummary[]> = {
  name: 'shellSnapshots',
  kind: 'run',
  place: 'host',
  nouns: { event: 'shell-snapshot', events: 'shell-snapshots', text: 'shell snapshot', texts: 'shell snapshots' },
  options: OPTIONS,
  keys: [KEEP_SHELL_SNAPSHOTS],

  async settings(input) {
    if (input.plan) return null; // a plan lists containers only
    const s = await settingsOf(input, input.flags.keepShellSnapshots as boolean | undefined);
    return s.keep ? null : s;
  },

  async run(s, ctx) {
    const { shellSnapshotPass, snapshotGauges } = await import('./run.js');
    // Within the run's --timeout (watch: its stop, and --timeout when given): cut short there (`cutShort`).
    const result = await shellSnapshotPass(runOptions(s, ctx));
    return { result, gauges: snapshotGauges(result) };
  },

  outcome: (r) => ({ done: r.removed, kept: r.kept, failed: r.failed }),
  refused: (r) => refusedTempDirs(r.tempDirs),
  cutShort: (r) => r.cutShort === true,
  freedBytes: (r) => r.removed.reduce((n, s) => n + (s.bytes ?? 0), 0),

  text: {
    lines: (r, view) => r.removed.map((d) => snapshotLine(d, view.dryRun, view.asOf)),
    summary(r, { dryRun, always }) {
      // In reap's summary only when something was (or would be) removed or failed: kept snapshots alone are no news.
      if (!always && r.removed.length + r.failed.length === 0) return '';
      return `; shell snapshots: ${dryRun ? 'would remove' : 'removed'} ${r.removed.length}, kept ${r.kept.length}, failed ${r.failed.length}`;
    },
    failure: (f) => f.error,
    watchFailure: (f) => `failed ${f.error}`,
    failedCount: (n) => `${plural(n, 'shell snapshot')} not removed`,
  },

  metrics: {
    families: [FAMILY],
    samples: (dirs) => ({
      [FAMILY.name]: dirs.flatMap((d) => [
        { labels: { temp_dir: d.dir, state: 'found' }, value: d.found },
        { labels: { temp_dir: d.dir, state: 'abandoned' }, value: d.abandoned },
        { labels: { temp_dir: d.dir, state: 'with_secret_names' }, value: d.withSecretNames },
      ]),
    }),
    initial: [],
  },

  status: {
    /** Counted as a dry run would (nothing removed), whatever `--keep-shell-snapshots` says, from the process table status read. */
    async gather(input, ctx) {
      const s = await settingsOf(input, undefined);
      const { shellSnapshotPass, summarize } = await import('./run.js');
      const readings = new Map(s.tempDirs.map((t) => [t.dir, (t as Partial<SessionTempDir>).readings ?? []]));
      const summary = summarize(await shellSnapshotPass(statusOptions(s, ctx)));
      return summary.map((x) => ({ ...x, readings: readings.get(x.dir) ?? [] }));
    },
    json: (part) => ({ shellSnapshots: part }),
    render,
    attention: attentionLines,
    refused: refusedPaths,
  },

  watch: { every: { env: ENV_SANDBOX_DIRS_EVERY, defaultMs: SANDBOX_DIRS_EVERY_MS } },
};
