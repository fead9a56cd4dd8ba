/**
 * The sandbox-directory pass: hermes' task directories under `<sandbox root>/docker/` that no container uses and
 * nothing changed in for `--sandbox-dirs-older-than` are removed, and (for the metrics) the used and unused ones are
 * measured. Rules in rule.ts, files in files.ts and dir-trees/files.ts, the run in run.ts,
 * `status`'s survey in status.ts. Every profile's root with `--all-profiles`.
 */
import type { Sourced } from '../../hermes/settings.js';
import { UP_TO_DAYS, ago, span } from '../../core/ages.js';
import { type SandboxRoot, cappedRootLine, rootOrigin, sandboxRoot, taskDirsParent } from './rule.js';
import { diskSize } from '../../core/sizes.js';
import { parseDuration } from '../../core/parse-args.js';
import { ENV_SANDBOX_DIRS_EVERY, SANDBOX_DIRS_EVERY_MS } from '../../defaults.js';
import { UsageError, errorMessage } from '../../errors.js';
import type { HermesConfig } from '../../adapters/config.js';
import { type JanitorSetting, readJanitorSetting } from '../../reaper/janitor-settings.js';
import type { FailedSandboxDir, RemovedSandboxDir, SandboxDirsResult } from './run.js';
import type { SandboxDirsStatus } from './status.js';
import { escapeControls } from '../../util/escape-controls.js';
import { plural } from '../../util/plural.js';
import type { OptionDecl } from '../../cli/option-table.js';
import type { EngineAnswer, Pass, PassSettingsInput } from '../types.js';

export const SANDBOX_DIRS_OLDER_THAN: JanitorSetting<'duration'> = {
  key: 'janitor.sandbox_dirs_older_than',
  kind: 'duration',
  flag: '--sandbox-dirs-older-than',
  falseIsOff: true,
  accepts: 'a duration such as 30d, 12h or 90m (or seconds)',
  description: 'remove the task directories no container uses and nothing changed in for this long',
  defaultText: 'never',
  // Removes what the defaults keep: a user without engine rights cannot turn it on for root.
  keepsMore: { more: 'nothing' },
};

const FLAG = '--sandbox-dirs-older-than';
const OPTIONS: readonly OptionDecl[] = [
  {
    flag: FLAG,
    value: '<duration>',
    parse: (v) => parseDuration(v, FLAG),
    description:
      'also remove the task directories hermes leaves under <sandbox root>/docker/ that no container uses and nothing changed in for this long: ' +
      '30d, 12h (default: janitor.sandbox_dirs_older_than in config.yaml, else never; watch checks once an hour)',
  },
];

const FAMILIES = {
  count: {
    name: 'hermes_janitor_sandbox_dirs',
    help:
      'Task directories hermes left under the sandbox root, by whether some container uses them (state="used"|"unused"); absent while not every ' +
      'engine answered.',
    labelNames: ['state'],
  },
  bytes: {
    name: 'hermes_janitor_sandbox_dir_bytes',
    help: 'Size on disk (allocated bytes) of the task directories under the sandbox root, by state="used"|"unused"; absent while not every engine answered.',
    labelNames: ['state'],
  },
} as const;

/** Task directories some container uses, and those none uses (null: not known). */
export interface SandboxDirGauges {
  used: { count: number; bytes: number } | null;
  unused: { count: number; bytes: number } | null;
}

/** A run of the pass: the removal (`olderThanMs`), the measure (`gauges`), or both. */
export interface SandboxDirsSettings {
  /** The run's sandbox roots (`--all-profiles`: every profile's); one directory named twice is measured and swept once. */
  roots: readonly SandboxRoot[];
  /** Remove unused task directories unchanged this long; null: none is removed (measured only, for the metrics). */
  olderThanMs: number | null;
  /** Measure the directories for the metrics (after the removals). */
  gauges: boolean;
}

/**
 * How long an unused sandbox directory must be unchanged to be removed: `--sandbox-dirs-older-than`, else
 * `janitor.sandbox_dirs_older_than` in config.yaml, else null (off).
 */
export function resolveSandboxDirsOlderThan(flagMs: number | undefined, config: HermesConfig): Sourced<number | null> {
  if (flagMs !== undefined) {
    if (!(Number.isFinite(flagMs) && flagMs > 0)) throw new UsageError(`${FLAG} must be a duration > 0, got '${flagMs}'`);
    return { value: flagMs, source: FLAG };
  }
  const ms = readJanitorSetting(config, SANDBOX_DIRS_OLDER_THAN);
  if (ms === undefined || ms === null) return { value: null, source: 'default' };
  return { value: ms, source: 'config.yaml janitor.sandbox_dirs_older_than' };
}

/** The roots, each directory once (the first naming of it kept): two profiles sharing a root are handled once. */
export function uniqueRoots(roots: readonly SandboxRoot[]): SandboxRoot[] {
  const seen = new Set<string>();
  return roots.filter((r) => !seen.has(r.root) && Boolean(seen.add(r.root)));
}

/**
 * A home's sandbox root as a run uses it (passes/sandbox-dirs/rule.ts `sandboxRoot`), with the uid it must belong to when the
 * janitor runs as root over another user's home and the root is that user's word: the default under their home, or a
 * value from their `.env` or `config.yaml` (core/trust.ts `namedByOwner`).
 */
async function rootOfHome(setting: { value: string; source: string }, home: string): Promise<SandboxRoot> {
  const r = sandboxRoot(setting, home);
  const [{ homeAccess }, { namedByOwner }] = await Promise.all([import('../../adapters/trust.js'), import('../../core/trust.js')]);
  const owner = homeAccess(home).owner;
  return owner && namedByOwner(setting.source, home) ? { ...r, owner: owner.uid } : r;
}

/** The home's root, and with `--all-profiles` every profile's (each resolved from its own home). */
const rootsOf = async (input: PassSettingsInput) =>
  uniqueRoots(await Promise.all([rootOfHome(input.hermes.sandboxRoot, input.home), ...input.profiles.map((p) => rootOfHome(p.hermes.sandboxRoot, p.home))]));

/** Used and unused task directories and their size; a state is null when not every engine answered. */
async function measure(s: SandboxDirsSettings, engines: readonly EngineAnswer[], signal: AbortSignal | undefined): Promise<SandboxDirGauges> {
  const { surveySandboxDirs } = await import('./status.js');
  const reachable = engines.filter((e) => e.answered).map((e) => e.engine);
  const unreachable = engines.filter((e) => !e.answered).map((e) => e.engine.host);
  const total = { count: 0, bytes: 0, unused: 0, unusedBytes: 0 };
  for (const root of s.roots) {
    const { summary: x } = await surveySandboxDirs(root, reachable, unreachable, signal);
    if (x.count === null || x.bytes === null || x.unused === null || x.unusedBytes === null) return { used: null, unused: null };
    total.count += x.count;
    total.bytes += x.bytes;
    total.unused += x.unused;
    total.unusedBytes += x.unusedBytes;
  }
  return {
    used: { count: total.count - total.unused, bytes: Math.max(0, total.bytes - total.unusedBytes) },
    unused: { count: total.unused, bytes: total.unusedBytes },
  };
}

/** `removed sandbox dir <path> (<size>, unchanged 41 days)`; a dry run says `Would remove sandbox dir`. */
function sandboxDirLine(d: RemovedSandboxDir, dryRun: boolean, asOf: Date): string {
  const unchanged = span(Date.parse(d.lastChange), asOf, UP_TO_DAYS);
  return `${dryRun ? 'Would remove' : 'removed'} sandbox dir ${escapeControls(d.path)} (${diskSize(d.bytes)}, unchanged ${unchanged})`;
}

/** `status`: the home's task directories, how many no container uses, and what could not be measured. */
function render(part: SandboxDirsStatus, now: Date): string[] {
  const { summary: s, detail: d } = part;
  const origin = d.from === 'TERMINAL_SANDBOX_DIR' ? `, from ${rootOrigin({ root: s.root, from: d.from, ...(d.source ? { source: d.source } : {}) })}` : '';
  const out = [`Sandboxes (${s.root}${origin})`];
  if (d.error || s.count === null || s.bytes === null) return [...out, `  unknown: ${d.error ?? 'not measured'}`];
  out.push(`  ${s.count} task ${s.count === 1 ? 'directory' : 'directories'}, ${diskSize(s.bytes)} on disk`);
  if (s.unused === null || s.unusedBytes === null) out.push(`  used by no container: unknown (${d.usageUnknown ?? 'no engine answered'})`);
  else if (s.count > 0) {
    // How long a directory sat unchanged decides its removal: said in days at most.
    const oldest = s.oldestUnusedChange ? `; the oldest last changed ${ago(Date.parse(s.oldestUnusedChange), now, UP_TO_DAYS)}` : '';
    out.push(`  used by no container: ${s.unused} (${diskSize(s.unusedBytes)})${oldest}`);
  }
  if (d.capped !== undefined) out.push(`  ${cappedRootLine(taskDirsParent(s.root), d.capped)} (the counts are at least these)`);
  if (d.unreadable.length) {
    out.push(
      `  could not read ${plural(d.unreadable.length, 'path')} (sizes are at least the ones shown): ${d.unreadable
        .slice(0, 3)
        .map((u) => `${escapeControls(u.path)} (${u.error})`)
        .join(', ')}${d.unreadable.length > 3 ? ', ...' : ''}`,
    );
  }
  if (d.notEntered.length)
    out.push(
      `  other filesystems inside, not entered: ${d.notEntered
        .slice(0, 3)
        .map((p) => escapeControls(p))
        .join(', ')}${d.notEntered.length > 3 ? ', ...' : ''}`,
    );
  return out;
}

export const sandboxDirsPass: Pass<SandboxDirsSettings, SandboxDirsResult, SandboxDirGauges, FailedSandboxDir, SandboxDirsStatus> = {
  name: 'sandboxDirs',
  kind: 'run',
  place: 'engine',
  nouns: { event: 'sandbox-dir', events: 'sandbox-dirs', text: 'sandbox dir', texts: 'sandbox dirs' },
  options: OPTIONS,
  keys: [SANDBOX_DIRS_OLDER_THAN],

  /**
   * Removing with `--sandbox-dirs-older-than` (or its key), measuring for the metrics; every root is checked before
   * anything is touched (a root that is not a directory: exit 2). A plan lists containers only: applying one removes no
   * directory (the flag is refused with it).
   */
  async settings(input) {
    const flag = input.flags.sandboxDirsOlderThan as number | undefined;
    if (input.plan && flag !== undefined) {
      throw new UsageError(`${FLAG} cannot be combined with --plan: a plan lists containers only; run it on its own`);
    }
    const olderThanMs = input.plan ? null : resolveSandboxDirsOlderThan(flag, input.config).value;
    if (olderThanMs === null && !input.metrics) return null;
    const roots = await rootsOf(input);
    if (olderThanMs !== null) {
      const [{ listTaskDirs }, { rootRefusal }] = await Promise.all([import('./files.js'), import('./run.js')]);
      for (const root of roots) {
        // A root refused for the run (`untrusted-root`: root over another user's home) is not bad input: the pass reports it.
        if (rootRefusal(root)) continue;
        await listTaskDirs(root); // throws UsageError naming the root and what is wrong with it
      }
    }
    return { roots, olderThanMs, gauges: input.metrics };
  },

  async run(s, ctx) {
    let result: SandboxDirsResult | null = null;
    if (s.olderThanMs !== null) {
      const { removeUnusedSandboxDirs } = await import('./run.js');
      try {
        result = await removeUnusedSandboxDirs({
          roots: s.roots,
          engines: ctx.engines,
          olderThanMs: s.olderThanMs,
          dryRun: ctx.dryRun,
          now: ctx.now,
          ...(ctx.signal ? { signal: ctx.signal } : {}),
        });
      } catch (err) {
        // The root went bad since the run checked it (it never throws for one directory): nothing of it was removed.
        result = { removed: [], kept: [], failed: [{ path: s.roots.map((r) => r.root).join(', '), error: errorMessage(err), partial: false }] };
      }
    }
    return { result, gauges: s.gauges ? await measure(s, ctx.engines, ctx.signal ?? undefined).catch(() => null) : null };
  },

  outcome: (r) => ({ done: r.removed, kept: r.kept, failed: r.failed }),
  refused: (r) => [
    ...(r.refused ?? []).map((x) => ({ event: 'refused-sandbox-root', fields: { ...x }, line: x.detail })),
    ...(r.capped ?? []).map((x) => ({ event: 'capped-sandbox-root', fields: { path: x.path, capped: x.capped }, line: x.detail })),
  ],
  cutShort: (r) => r.kept.some((k) => k.reason === 'cut-short'),
  freedBytes: (r) => r.removed.reduce((n, d) => n + d.bytes, 0),

  text: {
    lines: (r, view) => r.removed.map((d) => sandboxDirLine(d, view.dryRun, view.asOf)),
    summary(r, { dryRun }) {
      const bytes = r.removed.reduce((n, x) => n + x.bytes, 0);
      return (
        `; sandbox dirs: ${dryRun ? 'would remove' : 'removed'} ${r.removed.length} (${diskSize(bytes)}), kept ${r.kept.length}, failed ` + `${r.failed.length}`
      );
    },
    failure: (f) => f.error,
    watchFailure: (f) => `failed sandbox dir: ${f.error}`,
    failedCount: (n) => `${n} sandbox ${n === 1 ? 'directory' : 'directories'} not removed`,
  },

  metrics: {
    families: [FAMILIES.count, FAMILIES.bytes],
    samples(g) {
      const states = (['used', 'unused'] as const).filter((state) => g[state]);
      return {
        [FAMILIES.count.name]: states.map((state) => ({ labels: { state }, value: g[state]!.count })),
        [FAMILIES.bytes.name]: states.map((state) => ({ labels: { state }, value: g[state]!.bytes })),
      };
    },
  },

  status: {
    async gather(input, ctx) {
      const { surveySandboxDirs } = await import('./status.js');
      return surveySandboxDirs(await rootOfHome(input.hermes.sandboxRoot, input.home), ctx.engines, ctx.unreachable, ctx.signal);
    },
    json: (part) => ({ sandboxDirs: part.summary, sandboxDirsDetail: part.detail }),
    render,
    attention: (part) => [
      ...(part.detail.error ? [`sandbox directories: ${part.detail.error}`] : []),
      ...(part.detail.capped !== undefined ? [`sandbox directories: ${cappedRootLine(taskDirsParent(part.summary.root), part.detail.capped)}`] : []),
    ],
    // Said under "Needs attention" as the root's problem above.
    refused: (part) => (part.detail.refused ? [{ path: part.summary.root, what: 'sandbox root', ...part.detail.refused, attention: false }] : []),
    sources: (input) => ({ sandboxDirsOlderThanMs: resolveSandboxDirsOlderThan(input.flags.sandboxDirsOlderThan as number | undefined, input.config) }),
    sourceRows(sources) {
      const s = sources.sandboxDirsOlderThanMs as Sourced<number | null> | undefined;
      if (!s) return [];
      return [`  remove sandbox dirs unchanged for: ${s.value === null ? 'never' : `${s.value / 1000} s`} (${s.source})`];
    },
  },

  watch: { every: { env: ENV_SANDBOX_DIRS_EVERY, defaultMs: SANDBOX_DIRS_EVERY_MS } },
};
