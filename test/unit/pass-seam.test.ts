/**
 * The pass seam: a pass added in a test fixture (test/fixtures/demo-pass.ts), and declared nowhere in src/, appears
 * in reap's text, JSON and NDJSON, in watch's lines, in the metrics (file and endpoint), in status (text, JSON,
 * attention), in the fail-open line, in the flags of reap and watch, and runs in the list's order, through its
 * descriptor alone. And no module of src/ outside a pass's own files and the list names a pass.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { metricsText } from '../../src/adapters/metrics.js';
import { JsonReporter } from '../../src/cli/report/json-reporter.js';
import { NdjsonReporter } from '../../src/cli/report/ndjson-reporter.js';
import { TextReporter, firstProblem } from '../../src/cli/report/text-reporter.js';
import { configOf } from '../../src/adapters/config.js';
import { resolveHermesSettings } from '../../src/hermes/settings.js';
import { defaultSelection } from '../../src/core/selection.js';
import { PASSES, passOptions } from '../../src/passes/index.js';
import { runPasses, settlePasses } from '../../src/passes/runner.js';
import type { PassSettingsInput } from '../../src/passes/types.js';
import { createWatchMetrics } from '../../src/watch/metrics.js';
import { demoPass } from '../fixtures/demo-pass.js';
import { NOW, captureContext, containersOnlyReport } from '../helpers/pass-fixtures.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const passes = [...PASSES, demoPass];
const input: PassSettingsInput = {
  command: 'reap',
  flags: { demo: 'a.old,b.new,c.bad' },
  env: {},
  config: configOf('/h/config.yaml', undefined),
  hermes: resolveHermesSettings({ env: {}, dotenv: null, managedDotenv: null, config: null, managedConfig: null, home: '/nonexistent-hj', cwd: '/' }),
  home: '/nonexistent-hj',
  profiles: [],
  selection: defaultSelection('default'),
  lifetimeSeconds: 300,
  plan: false,
  metrics: true,
};

async function demoRun(dryRun = false) {
  const settled = await settlePasses([demoPass], input);
  return runPasses(passes, settled, { dryRun, now: () => NOW, engines: [] }, []);
}

describe('a pass added in a test fixture', () => {
  it('runs from its settings, and its outcome and gauges come out in the list order', async () => {
    const run = await demoRun();
    assert.deepEqual(
      run.results.map((r) => r.pass.name),
      ['execTrees', 'demoFiles'],
      'the sweep pass always, then what ran',
    );
    assert.deepEqual(
      run.gauges.map((g) => g.pass.name),
      ['execTrees', 'demoFiles'],
    );
    assert.deepEqual(await settlePasses([demoPass], { ...input, flags: {} }), [], 'its settings say it does not run');
  });

  it("appears in reap's text (failures, lines, summary), JSON and NDJSON", async () => {
    const run = await demoRun();
    const report = { ...containersOnlyReport(), passes: run.results };
    const text = captureContext();
    await new TextReporter(text, false).reapResult(report);
    assert.match(text.err(), /^hermes-janitor: cannot remove demo file c\.bad: it is bad$/m);
    assert.match(text.out(), /^removed demo file a\.old$/m);
    assert.match(text.out(), /failed 0; demo files: removed 1, kept 1, failed 1 \(threshold/);
    const json = captureContext();
    await new JsonReporter(json).reapResult(report);
    assert.deepEqual(JSON.parse(json.out()).demoFiles, run.results[1]!.result);
    const nd = captureContext();
    await new NdjsonReporter(nd, false).reapResult(report);
    const events = nd
      .out()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      events.map((e) => e.event),
      ['removed-demo-file', 'kept-demo-file', 'failed-demo-file', 'summary'],
    );
    assert.deepEqual(events.at(-1)!.demoFiles, { removed: 1, kept: 1, failed: 1 });
    assert.equal(firstProblem({ ...report, failed: [] }), '1 demo file(s) not removed, first: cannot remove demo file c.bad: it is bad');
  });

  it("appears in watch's lines (text and NDJSON) after each of its runs", async () => {
    const run = await demoRun(true);
    const result = run.results[1]!.result;
    const text = captureContext();
    new TextReporter(text, false).passRun(demoPass, result, true);
    assert.equal(text.out(), `${NOW.toISOString()} Would remove demo file a.old\n${NOW.toISOString()} checked demo files: would remove 1, kept 1, failed 1\n`);
    assert.equal(text.err(), `${NOW.toISOString()} failed demo file: cannot remove demo file c.bad: it is bad\n`);
    const nd = captureContext();
    new NdjsonReporter(nd, false).passRun(demoPass, result, true);
    assert.deepEqual(
      nd
        .out()
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { event: string }).event),
      ['would-remove-demo-file', 'kept-demo-file', 'failed-demo-file', 'demo-files'],
    );
  });

  it("appears in reap's metrics file and watch's endpoint", async () => {
    const run = await demoRun();
    const file = await metricsText({ finishedAt: NOW, durationSeconds: 1, success: true, counts: [], passes: run.gauges });
    assert.match(file, /^# HELP hermes_janitor_demo_files Demo files found\.\n# TYPE hermes_janitor_demo_files gauge\nhermes_janitor_demo_files 3$/m);
    const m = await createWatchMetrics((p) => p ?? '', passes);
    m.setPass(demoPass, { found: 5 });
    assert.match(await m.text(), /^hermes_janitor_demo_files 5$/m);
  });

  it('appears in status: its JSON keys, its section and what needs attention', async () => {
    const { gatherStatus } = await import('../../src/status/gather.js');
    const { render } = await import('../../src/cli/commands/status.js');
    const { report, parts } = await gatherStatus({
      home: '/nonexistent-hj',
      selection: input.selection,
      endpoints: [],
      noEngine: 'no engine here',
      connect: async () => [],
      thresholdSeconds: 600,
      asOf: NOW,
      now: NOW,
      concurrency: 1,
      env: {},
      passes: [demoPass],
      passInput: input,
    });
    assert.deepEqual(report.demoFiles, { found: 3 });
    assert.ok(Object.keys(report).indexOf('demoFiles') < Object.keys(report).indexOf('noEngine'), 'an engine pass: its keys before noEngine');
    assert.deepEqual(report.attention, ['demo files: 3 found']);
    assert.equal(report.exitCode, 1);
    assert.match(render(report, NOW, { parts }), /\nDemo files\n {2}3 found\n/);
  });

  it('its flags are registered with reap and watch (declared in the descriptor)', () => {
    assert.deepEqual(
      passOptions([demoPass]).map((o) => o.flag),
      ['--demo'],
    );
  });
});

describe('no module of src/ but its own folder and the list names a pass', () => {
  /** A pass's own files: its folder (`src/passes/<pass>/`: rule, I/O, run, settings, status part, descriptor), and the list. */
  const own =
    (folder: string, extra: RegExp | null = null) =>
    (f: string) =>
      f === 'src/passes/index.ts' || f.startsWith(`src/passes/${folder}/`) || (extra !== null && extra.test(f));
  const extras: Record<string, RegExp> = {
    // "images" is a word too: the engine client's image calls (its I/O), the image facts it answers with, and the
    // state file's place name it.
    images: /^src\/(adapters\/(engine|engine-answers|dockerode-engine|janitor-files)|core\/image-facts|defaults)\.ts$/,
    // The exec-tree pass is a sweep pass: the sweep's result keeps its part under its name (`ReapResult.execTrees`, a
    // key of `reap --json` and of the library's result); the sweep itself takes it from the list, by its hooks.
    execTrees: /^src\/reaper\/sweep-types\.ts$/,
  };
  const cases = PASSES.map((p): [string, string, RegExp | null] => [p.name, p.name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), extras[p.name] ?? null]);
  it('every pass of the list has its folder', () => {
    assert.deepEqual(
      cases.map(([, folder]) => folder),
      ['sandbox-dirs', 'images', 'exec-trees', 'shell-snapshots', 'session-files'],
    );
    for (const [, folder] of cases) assert.ok(existsSync(path.join(REPO, 'src', 'passes', folder, 'pass.ts')), `src/passes/${folder}/pass.ts`);
  });
  for (const [name, folder, extra] of cases) {
    it(`${name}: in src/passes/${folder}/ and the list only (the exec trees: and the sweep result's key)`, () => {
      const files = execFileSync('git', ['grep', '-l', '-w', '-e', name, '-e', `${name}Pass`, '--', 'src'], { cwd: REPO, encoding: 'utf8' })
        .trim()
        .split('\n');
      assert.deepEqual(
        files.filter((f) => !own(folder, extra)(f)),
        [],
        `${name} is named outside its files`,
      );
    });
  }
});
