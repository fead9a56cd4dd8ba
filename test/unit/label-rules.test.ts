/**
 * Each label's idle rule from its own profiles (#48): a profile read as `--profile` reads it, several profiles of one
 * label (several homes, or a shared key) combined by the reading that stops or ends later, and the sweep's idle book
 * taking a container's rule by its label.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configOf } from '../../src/adapters/config.js';
import { TIED, tiedLabels } from '../../src/core/policy.js';
import { selectionFrom } from '../../src/core/selection.js';
import type { ProfileRead } from '../../src/hermes/judgement.js';
import { HERMES_SETTINGS, type HermesSettings } from '../../src/hermes/settings.js';
import { IdleBook } from '../../src/reaper/idle-book.js';
import { labelIdleRules, laterRule } from '../../src/reaper/label-rules.js';
import type { IdleRule } from '../../src/reaper/sweep-types.js';
import type { ExecTreeOptions } from '../../src/passes/exec-trees/settings.js';

function read(home: string, profile: string, lifetime: number, janitor: Record<string, unknown> = {}): ProfileRead {
  const settings = Object.fromEntries(
    Object.entries(HERMES_SETTINGS).map(([k, spec]) => [k, { value: spec.interpret(undefined, { home, cwd: '/' }), source: 'default' }]),
  ) as unknown as HermesSettings;
  settings.lifetimeSeconds = { value: lifetime, source: 'config.yaml terminal.lifetime_seconds' };
  return { profile, home, settings, refused: null, config: configOf(`${home}/config.yaml`, { janitor }) };
}
const where = { env: {}, selection: selectionFrom({ profile: null }), selectorGiven: false };

describe('each label judged by its own profiles (reaper/label-rules.ts)', () => {
  it("a profile's idle threshold is 2 x its own lifetime (as under --profile); --idle-after still applies to all", () => {
    const rules = labelIdleRules([read('/r', 'default', 300), read('/r/profiles/p1', 'p1', 60)], {}, where);
    assert.deepEqual([rules.default!.idleAfterSeconds, rules.p1!.idleAfterSeconds], [600, 120]);
    const flagged = labelIdleRules([read('/r', 'default', 300), read('/r/profiles/p1', 'p1', 60)], { idleAfterSeconds: 5 }, where);
    assert.deepEqual([flagged.default!.idleAfterSeconds, flagged.p1!.idleAfterSeconds], [5, 5]);
  });

  it("a label two homes have takes the later reading of each part; each home's janitor keys count for its own", () => {
    const a = read('/home/a/.hermes', 'default', 1800, { stopped_retention: '30d', idle_max_processes: 5, exec_max_age: '2h' });
    const b = read('/home/b/.hermes', 'default', 300, { stop_idle: false, idle_max_processes: 1, idle_after_owned: 'never' });
    const r = labelIdleRules([a, b], {}, where).default!;
    assert.equal(r.idleAfterSeconds, 3600);
    assert.equal(r.stopIdle, false, 'stopping off if either says so');
    assert.equal(r.maxProcesses, 1, 'the stricter in-use rule');
    assert.equal(r.idleAfterOwnedSeconds, null, 'never is the longest');
    assert.equal(r.stoppedRetentionSeconds, 30 * 86_400);
    assert.equal((r.sweeps?.execTrees as ExecTreeOptions | undefined)?.boundSeconds, 7200);
  });

  it('laterRule: the rule of the process count, and trees kept if either keeps them', () => {
    const base: IdleRule = { stopIdle: true, idleAfterSeconds: 10, idleAfterOwnedSeconds: 10, stoppedRetentionSeconds: 10 };
    assert.equal(laterRule({ ...base, maxProcesses: 5 }, base).maxProcesses, undefined, "the rule's own count is stricter than 5");
    assert.equal(laterRule({ ...base, maxProcesses: 5 }, { ...base, maxProcesses: 3 }).maxProcesses, 3);
    const trees = (end: boolean, s: number): IdleRule => ({ ...base, sweeps: { execTrees: { boundSeconds: s, boundSource: 'x', end } } });
    assert.deepEqual(laterRule(trees(true, 100), trees(false, 50)).sweeps, { execTrees: { boundSeconds: 100, boundSource: 'x', end: false } });
    assert.deepEqual(laterRule(trees(false, 50), base).sweeps, { execTrees: { boundSeconds: 50, boundSource: 'x', end: false } }, 'one profile alone: its own');
  });
});

describe("the idle book takes a container's rule by its label", () => {
  it("thresholds, limits and retention per label; a label not listed: the run's", () => {
    const book = new IdleBook(
      {
        stopIdle: true,
        idleAfterSeconds: 600,
        stoppedRetentionSeconds: 100,
        byProfile: { p1: { stopIdle: false, idleAfterSeconds: 120, maxProcesses: 1, idleAfterOwnedSeconds: null, stoppedRetentionSeconds: 5 } },
      },
      'unix:///x',
      [],
      1,
    );
    const p1 = { 'hermes-profile': 'p1' };
    assert.deepEqual([book.thresholdOf(null, p1), book.thresholdOf(null, { 'hermes-profile': 'other' }), book.thresholdOf(null)], [120, 600, 600]);
    assert.equal(book.ruleOf(p1).stopIdle, false);
    assert.equal(book.ruleOf(p1), book.ruleOf({ ...p1 }), 'one object per label');
    assert.deepEqual([book.limitOf({ init: true, labels: p1 }), book.limitOf({ init: true, labels: {} })], [1, 2]);
    assert.equal(book.thresholdOf({ pid: 1 } as never, p1), Infinity, 'an owned sandbox of a label whose owned threshold is never');
  });

  it("a label's own sweep-pass options over the run's (the exec-tree pass: its bound and switch, the run's process readers)", () => {
    const proc = {} as never;
    const run: ExecTreeOptions = { boundSeconds: 1200, boundSource: 'run', end: true, proc };
    const own: ExecTreeOptions = { boundSeconds: 60, boundSource: 'p1', end: false };
    const rule = { stopIdle: true, idleAfterSeconds: 1, idleAfterOwnedSeconds: 1, stoppedRetentionSeconds: 0 };
    const book = new IdleBook(
      { stopIdle: true, idleAfterSeconds: 600, sweeps: { execTrees: run }, byProfile: { p1: { ...rule, sweeps: { execTrees: own } }, p2: rule } },
      'unix:///x',
      [],
      1,
    );
    assert.deepEqual(book.ruleOf({ 'hermes-profile': 'p1' }).sweeps, { execTrees: { ...own, proc } });
    assert.deepEqual(book.ruleOf({ 'hermes-profile': 'p2' }).sweeps, { execTrees: run }, "a label without its own: the run's");
    const off = new IdleBook({ stopIdle: true, idleAfterSeconds: 600, byProfile: { p1: { ...rule, sweeps: { execTrees: own } } } }, 'unix:///x', [], 1);
    assert.equal(off.ruleOf({ 'hermes-profile': 'p1' }).sweeps, undefined, 'a pass the run does not run stays off for every label');
  });
});

describe('a container its mounts tie to one home (core/policy.ts tiedLabels)', () => {
  const req = {
    tiedRoots: [
      { dir: '/home/a/.hermes/sandboxes/docker', home: '/home/a/.hermes' },
      { dir: '/home/b/.hermes/sandboxes/docker', home: '/home/b/.hermes' },
    ],
    knownProfiles: new Set(['default', `default${TIED}/home/a/.hermes`, `default${TIED}/home/b/.hermes`]),
  };
  const labels = { 'hermes-profile': 'default' };
  it("is judged by that home's rules of its label; several homes, an unknown pair or no bind: the label's", () => {
    const bind = (...b: string[]) => tiedLabels(req, { labels, binds: b })['hermes-profile'];
    assert.equal(bind('/home/a/.hermes/sandboxes/docker/task-1/workspace', '/home/a/.hermes/sandboxes/docker/task-1/home'), `default${TIED}/home/a/.hermes`);
    assert.equal(bind('/home/a/.hermes/sandboxes/docker/t/w', '/home/b/.hermes/sandboxes/docker/t/w'), 'default', 'tied to two homes: not tied');
    assert.equal(bind('/home/a/.hermes/sandboxes/dockerx/t'), 'default', 'a sibling directory is not under the root');
    assert.equal(bind(), 'default');
    assert.equal(tiedLabels(req, { labels: { 'hermes-profile': 'work' }, binds: ['/home/a/.hermes/sandboxes/docker/t'] })['hermes-profile'], 'work');
    assert.equal(tiedLabels({}, { labels, binds: ['/home/a/.hermes/sandboxes/docker/t'] }), labels, 'a run over one home: as labelled');
  });
});
