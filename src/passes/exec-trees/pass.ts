/**
 * The exec-tree pass: `docker exec` trees of running sandboxes past the bound (abandoned by a hermes timeout), ended
 * and left out of the idle rule. A `sweep` pass: the container sweep calls its hooks (`sweep` below, the interface in
 * passes/sweep-pass.ts) per running sandbox, before the idle rule (run.ts, rules in rule.ts, settings in settings.ts),
 * and its decisions stream as the sweep's events (`exec-tree-ended`, ...); here is also how its outcome is said and
 * counted.
 */
import { UP_TO_DAYS, span } from '../../core/ages.js';
import { isHermesSelection } from '../../core/selection.js';
import { type EndedTree, type ExecSurvey, type ExecTreeReport, type FailedTree, abandonedLoad, endAbandonedTrees, mayRunExecs, surveyExecs } from './run.js';
import { type ExecTreeOptions, laterExecTrees, resolveExecTrees, withLabelBound } from './settings.js';
import { plural } from '../../util/plural.js';
import type { SweepHooks } from '../sweep-pass.js';
import type { Pass } from '../types.js';
import type { ReapResult } from '../../reaper/sweep-types.js';

type Counts = { ended: number; kept: number; failed: number };

const FAMILY = {
  name: 'hermes_janitor_exec_trees',
  help: 'docker exec trees of running sandboxes the last reap run found past the bound, by state="ended"|"kept"|"failed".',
  labelNames: ['state'],
} as const;

/** `ended exec tree <id> in <container> (running 25 minutes, 6 processes)`. */
export function execTreeLine(t: EndedTree): string {
  const running = span(0, new Date(t.ageSeconds * 1000), UP_TO_DAYS);
  return `ended exec tree ${t.execId.slice(0, 12)} in ${t.container} (running ${running}, ${t.processes} ${t.processes === 1 ? 'process' : 'processes'})`;
}

/** The one line of a tree that could not be ended. */
export const execTreeFailure = (f: FailedTree) => `failed to end exec tree ${f.execId.slice(0, 12)} in ${f.container}: ${f.error}`;

/** What the container sweep calls per running sandbox (passes/sweep-pass.ts). */
const sweep: SweepHooks<ExecTreeOptions, ExecSurvey> = {
  // The bound comes from hermes' timeouts: the pass is for hermes' sandboxes only (not a --label selection).
  options: (inputs, where) => (isHermesSelection(where.selection) ? resolveExecTrees(inputs, where) : null),
  later: laterExecTrees,
  withLabel: withLabelBound,
  mayRun: (local, d) => d.execIds.length > 0 && mayRunExecs(local, d),
  survey: surveyExecs,
  views: (survey) => survey.execs.map((x) => x.view),
  act: endAbandonedTrees,
  load: abandonedLoad,
  endedLine: execTreeLine,
};

/** Its part of each sweep's result (`ReapResult.execTrees`, by its name). */
const ownPart = (r: ReapResult) => r.execTrees as ExecTreeReport;

export const execTreesPass: Pass<never, ExecTreeReport, Counts, FailedTree> = {
  name: 'execTrees',
  kind: 'sweep',
  place: 'engine',
  nouns: { event: 'exec-tree', events: 'exec-trees', text: 'exec tree', texts: 'exec trees' },
  sweep,

  fromSweeps: (sweeps) => ({
    ended: sweeps.flatMap((r) => ownPart(r).ended),
    kept: sweeps.flatMap((r) => ownPart(r).kept),
    failed: sweeps.flatMap((r) => ownPart(r).failed),
  }),
  outcome: (r) => ({ done: r.ended, kept: r.kept, failed: r.failed }),
  cutShort: () => false,
  gaugesOf: (r) => ({ ended: r.ended.length, kept: r.kept.length, failed: r.failed.length }),

  text: {
    lines: (r) => r.ended.map(execTreeLine),
    /** `; exec trees: ended 1, kept 0, failed 0`, when there were any. */
    summary(r, { always }) {
      if (!always && r.ended.length + r.kept.length + r.failed.length === 0) return '';
      return `; exec trees: ended ${r.ended.length}, kept ${r.kept.length}, failed ${r.failed.length}`;
    },
    failure: execTreeFailure,
    watchFailure: execTreeFailure,
    failedCount: (n) => `${plural(n, 'exec tree')} not ended`,
  },

  metrics: {
    families: [FAMILY],
    samples: (c) => ({ [FAMILY.name]: (['ended', 'kept', 'failed'] as const).map((state) => ({ labels: { state }, value: c[state] })) }),
    initial: { ended: 0, kept: 0, failed: 0 },
    sum: (a, b) => ({ ended: a.ended + b.ended, kept: a.kept + b.kept, failed: a.failed + b.failed }),
  },
};
