/**
 * Golden outputs of every cleanup pass: what `reap` says in text, JSON and NDJSON, what `watch` says after each of its
 * passes, the metrics (reap's file and watch's endpoint) and `status`, rendered from fixed outcomes
 * (test/helpers/pass-fixtures.ts) and compared byte for byte with test/golden/*.txt. The JSON keys and NDJSON events
 * are contracts; these files are the proof that a change to how passes are wired keeps them. `UPDATE_GOLDEN=1`
 * writes the files instead (only for a change of output that is meant).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { metricsText } from '../../src/adapters/metrics.js';
import { JsonReporter } from '../../src/cli/report/json-reporter.js';
import { NdjsonReporter } from '../../src/cli/report/ndjson-reporter.js';
import type { ReapReport, Reporter } from '../../src/cli/report/reporter.js';
import { TextReporter } from '../../src/cli/report/text-reporter.js';
import { snapshotGauges } from '../../src/passes/shell-snapshots/run.js';
import { createWatchMetrics } from '../../src/watch/metrics.js';
import { PASSES } from '../../src/passes/index.js';
import { execTreesPass } from '../../src/passes/exec-trees/pass.js';
import { imageGauges, imagesPass } from '../../src/passes/images/pass.js';
import { sandboxDirsPass } from '../../src/passes/sandbox-dirs/pass.js';
import { shellSnapshotsPass } from '../../src/passes/shell-snapshots/pass.js';
import { configOf } from '../../src/adapters/config.js';
import { resolveHermesSettings } from '../../src/hermes/settings.js';
import { defaultSelection } from '../../src/core/selection.js';
import {
  HOST_A,
  NOW,
  captureContext,
  containersOnlyReport,
  execTrees,
  fullReport,
  hostOnlyReport,
  images,
  quietSnapshotsReport,
  sandboxDirs,
  shellSnapshots,
} from '../helpers/pass-fixtures.js';

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'golden');

/** Compares `actual` with test/golden/<name>.txt (or writes it with UPDATE_GOLDEN=1). */
function golden(name: string, actual: string): void {
  const file = path.join(DIR, `${name}.txt`);
  if (process.env.UPDATE_GOLDEN === '1') {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  assert.ok(existsSync(file), `golden file ${file} is missing: run with UPDATE_GOLDEN=1 once`);
  assert.equal(actual, readFileSync(file, 'utf8'), `output differs from ${file}`);
}

type Kind = 'text' | 'quiet' | 'json' | 'ndjson' | 'ndjson-quiet';
function reporter(kind: Kind, ctx: ReturnType<typeof captureContext>): Reporter {
  if (kind === 'json') return new JsonReporter(ctx);
  if (kind === 'ndjson' || kind === 'ndjson-quiet') return new NdjsonReporter(ctx, kind === 'ndjson-quiet');
  return new TextReporter(ctx, kind === 'quiet');
}

const both = (ctx: ReturnType<typeof captureContext>) => `--- stdout\n${ctx.out()}--- stderr\n${ctx.err()}`;

async function reapOutput(kind: Kind, report: ReapReport, failOpen?: string | null): Promise<string> {
  const ctx = captureContext();
  const r = reporter(kind, ctx);
  await r.reapResult(report);
  if (failOpen !== undefined) r.failOpen(failOpen);
  return both(ctx);
}

describe('golden: reap', () => {
  const cases: Array<[string, () => ReapReport]> = [
    ['wet', () => fullReport(false)],
    ['dry', () => fullReport(true)],
    ['host-only', hostOnlyReport],
    ['containers-only', containersOnlyReport],
    ['quiet-snapshots', quietSnapshotsReport],
  ];
  for (const kind of ['text', 'quiet', 'json', 'ndjson', 'ndjson-quiet'] as const) {
    for (const [name, make] of cases) {
      it(`${kind}, ${name}`, async () => golden(`reap-${kind}-${name}`, await reapOutput(kind, make())));
    }
  }
  it('text, --fail-open', async () => {
    golden('reap-text-fail-open', await reapOutput('text', { ...fullReport(false), failOpen: true }, '2 removal(s) or stop(s) failed, first: x'));
  });
});

describe('golden: watch', () => {
  for (const kind of ['text', 'quiet', 'ndjson', 'ndjson-quiet'] as const) {
    for (const dryRun of [false, true]) {
      it(`${kind}${dryRun ? ', dry run' : ''}: each pass, and the exec trees`, () => {
        const ctx = captureContext();
        const r = reporter(kind, ctx);
        r.notice({
          kind: 'started',
          hosts: [HOST_A, 'tcp://10.0.0.2:2375'],
          thresholdSeconds: 600,
          profile: 'default',
          dryRun,
          stopIdle: true,
          idleAfterSeconds: 600,
          pid: 42,
        });
        r.passRun(sandboxDirsPass, sandboxDirs, dryRun);
        r.passRun(imagesPass, images, dryRun);
        r.passRun(shellSnapshotsPass, shellSnapshots, dryRun);
        r.passNotice(imagesPass, 'image-used', { host: HOST_A, id: images.removed[0]!.id, container: 'c'.repeat(64), action: 'start', at: NOW.toISOString() });
        r.watchEvent({ type: 'exec-tree', state: 'ended', tree: execTrees.ended[0]!, host: HOST_A, trigger: 'sweep' });
        r.watchEvent({ type: 'exec-tree', state: 'kept', tree: execTrees.kept[0]!, host: HOST_A, trigger: 'sweep' });
        r.watchEvent({ type: 'exec-tree', state: 'failed', tree: execTrees.failed[0]!, host: HOST_A, trigger: 'deadline' });
        golden(`watch-${kind}${dryRun ? '-dry' : ''}`, both(ctx));
      });
    }
  }
});

describe('golden: metrics', () => {
  const counts = [{ host: HOST_A, profile: 'default', removed: 2, stopped: 1, kept: 4, failed: 1, orphans: 1 }];
  it("reap's metrics file, every pass", async () => {
    golden(
      'metrics-reap-full',
      await metricsText({
        finishedAt: NOW,
        durationSeconds: 1.5,
        success: false,
        counts,
        home: '/home/h/.hermes',
        passes: [
          { pass: sandboxDirsPass, gauges: { used: { count: 3, bytes: 300 }, unused: { count: 2, bytes: 1288494284 } } },
          { pass: imagesPass, gauges: imageGauges(images, false) },
          { pass: execTreesPass, gauges: { ended: 1, kept: 1, failed: 1 } },
          { pass: shellSnapshotsPass, gauges: snapshotGauges(shellSnapshots) },
        ],
      }),
    );
  });
  it("reap's metrics file, dry run, nothing measured", async () => {
    golden(
      'metrics-reap-bare',
      await metricsText({
        finishedAt: NOW,
        durationSeconds: 0.25,
        success: true,
        counts: [],
        home: '/home/h/.hermes',
        passes: [
          { pass: sandboxDirsPass, gauges: { used: null, unused: null } },
          { pass: imagesPass, gauges: { ...imageGauges(images, true), bytes: null } },
        ],
      }),
    );
  });
  it("watch's endpoint: from the start, then after each pass", async () => {
    const m = await createWatchMetrics((p) => p ?? 'default', PASSES, { home: '/home/h/.hermes' });
    const first = await m.text();
    m.setPass(sandboxDirsPass, { used: { count: 3, bytes: 300 }, unused: { count: 2, bytes: 1288494284 } });
    m.setPass(imagesPass, imageGauges(images, false));
    m.setPass(shellSnapshotsPass, snapshotGauges(shellSnapshots));
    m.observe({
      type: 'sweep',
      tracked: 3,
      host: HOST_A,
      removed: 2,
      stopped: 1,
      kept: 4,
      failed: 1,
      durationMs: 1500,
      interrupted: false,
      dryRun: false,
      warnings: [],
      counts,
      sweepGauges: [{ pass: execTreesPass, gauges: { ended: 1, kept: 1, failed: 1 } }],
    });
    const now = (t: string) => t.replace(/^(hermes_janitor_(?:last_run|heartbeat)_timestamp_seconds(?:\{[^}]*\})?) \d+(\.\d+)?$/gm, '$1 <now>');
    golden('metrics-watch', `--- at start\n${now(first)}--- after\n${now(await m.text())}`);
  });
});

describe('golden: status', () => {
  const breakers = {
    restartGuard: { location: '/h/gateway/restart_loop.json', bootsInWindow: 0, max: 3, windowSeconds: 60, tripped: false, problem: null },
    stuckSessions: { location: '/h/.restart_failure_counts', threshold: 3, sessions: 0, suspended: [], problem: null },
    stopHook: { location: '/h/m', armed: false, owner: null, remaining: null, blocks: 0, maxBlocks: 8, stalled: false, problem: null, hookErrors: [] },
    toolLoop: { location: '/h/t', sessions: [], looping: [], warnings: 0, stops: 0, disarmed: null, hookErrors: [] },
  };
  const report = {
    home: '/home/h/.hermes',
    profile: 'default',
    asOf: NOW.toISOString(),
    thresholdSeconds: 600,
    engines: [{ host: HOST_A, chosenBy: 'DOCKER_HOST', reachable: true, kind: 'Docker', version: '20.10.24', apiVersion: '1.41', error: null }],
    containers: null,
    runningSandboxes: [],
    // The cost of a stop a reap would make: the sandbox's writable layer (hermes' reaper removes it with the sandbox).
    stopCosts: [{ id: 'c'.repeat(64), name: 'hermes-1a2b3c4d', host: HOST_A, profile: 'default', idleSeconds: 7200, writableLayerBytes: 21_495_808 }],
    janitor: {
      sweeps: [
        {
          host: HOST_A,
          profile: 'default',
          completedAt: '2026-11-16T12:00:00.000Z',
          ageSeconds: 518400,
          file: '/home/h/.hermes/janitor/stamps/x.json',
          scheduleSeconds: null,
          by: 'reap' as const,
        },
      ],
      locks: [],
      log: { path: '/home/h/.hermes/logs/janitor.log', exists: false, sizeBytes: 0, lastRun: null },
      freshness: [
        {
          host: HOST_A,
          completedAt: '2026-11-16T12:00:00.000Z',
          ageSeconds: 518400,
          scheduleSeconds: 3600,
          scheduleFrom: 'default' as const,
          stale: true,
        },
      ],
      watch: null,
    },
    sandboxDirs: {
      root: '/home/h/.hermes/sandboxes',
      count: 5,
      bytes: 1288494284,
      unused: 2,
      unusedBytes: 1288490188,
      oldestUnusedChange: '2026-10-12T12:00:00.000Z',
    },
    sandboxDirsDetail: {
      from: 'home' as const,
      source: 'default',
      used: 3,
      unreadable: [{ path: '/home/h/.hermes/sandboxes/docker/t/x', error: 'EACCES' }],
      notEntered: [],
      usageUnknown: null,
      error: null,
    },
    images: {
      count: 4,
      uniqueBytes: 3221225472,
      bytes: 4294967296,
      budget: 5368709120,
      budgetGiven: '5GiB',
      oldestLastUse: '2026-10-01T10:00:00.000Z',
      error: null,
    },
    hermesProcesses: { processes: [], hidden: null },
    shellSnapshots: [
      {
        dir: '/tmp',
        from: 'default',
        snapshots: 3,
        abandoned: 2,
        oldestChange: '2026-11-19T12:00:00.000Z',
        withSecretNames: 1,
        secretNames: 2,
        unreadable: 1,
        otherUsers: 1,
        problem: null,
      },
    ],
    breakers,
    trust: { owner: null, stateDir: '/home/h/.hermes/janitor', refused: [] },
    attention: [
      `no completed sweep for 6 days on ${HOST_A}, more than twice the schedule of every 1 hour (default): run hermes-janitor reap --home ` +
        '/home/h/.hermes, then check the timer, cron line or watch that should sweep',
      'sandbox directories: x',
    ],
    exitCode: 1 as const,
    verdict: {
      ok: false,
      count: 2,
      line: `ATTENTION: 2 things, the worst first: no completed sweep for 6 days on ${HOST_A}; sandbox directories`,
      worst: `no completed sweep for 6 days on ${HOST_A}`,
    },
  };
  it('text: the sandboxes, images and shell-snapshot sections', async () => {
    const { render } = await import('../../src/cli/commands/status.js');
    const partsOf = (r: { sandboxDirs: unknown; sandboxDirsDetail: unknown; images: unknown; shellSnapshots: unknown }) => [
      { pass: sandboxDirsPass, part: { summary: r.sandboxDirs, detail: r.sandboxDirsDetail } },
      { pass: imagesPass, part: r.images },
      { pass: shellSnapshotsPass, part: r.shellSnapshots },
    ];
    golden('status-text', render(report, NOW, { parts: partsOf(report) }));
    const unknown = {
      ...report,
      sandboxDirs: { ...report.sandboxDirs, count: null, bytes: null, unused: null, unusedBytes: null, oldestUnusedChange: null },
      sandboxDirsDetail: { ...report.sandboxDirsDetail, error: 'sandbox root x is not a directory: move it' },
      images: { ...report.images, count: null, bytes: null, uniqueBytes: null, error: 'no engine answered', budgetGiven: null, budget: null },
      shellSnapshots: [{ ...report.shellSnapshots[0]!, problem: 'cannot read /tmp (EACCES)' }],
    };
    golden('status-text-unknown', render(unknown, NOW, { parts: partsOf(unknown) }));
  });
});

describe('golden: status --json', () => {
  it('the keys in order, and the pass parts (a home with one task directory, no engine on the host)', async () => {
    const { mkdtempSync, mkdirSync: mk, rmSync, utimesSync, writeFileSync: wf } = await import('node:fs');
    const os = await import('node:os');
    const t = mkdtempSync(path.join(os.tmpdir(), 'hj-golden-'));
    try {
      const home = path.join(t, 'home');
      mk(path.join(home, 'sandboxes', 'docker', 'task-1', 'home'), { recursive: true });
      wf(path.join(home, 'sandboxes', 'docker', 'task-1', 'home', 'f'), 'x');
      const old = new Date('2026-10-01T00:00:00Z');
      for (const p of ['task-1/home/f', 'task-1/home', 'task-1']) utimesSync(path.join(home, 'sandboxes', 'docker', p), old, old);
      const tmp = path.join(t, 'tmp');
      mk(tmp);
      const { gatherStatus } = await import('../../src/status/gather.js');
      const hermes = resolveHermesSettings({
        env: { TMPDIR: tmp },
        dotenv: null,
        managedDotenv: null,
        config: null,
        managedConfig: null,
        home,
        cwd: '/',
      });
      const selection = defaultSelection('default');
      const { report: r } = await gatherStatus({
        home,
        selection,
        endpoints: [],
        noEngine: "no container engine found (no socket at /nowhere): only the host's own files were checked",
        connect: async () => [],
        thresholdSeconds: 600,
        asOf: NOW,
        now: NOW,
        concurrency: 2,
        env: {},
        passes: PASSES,
        passInput: {
          command: 'status',
          flags: {},
          env: { TMPDIR: tmp, HERMES_JANITOR_SYSTEM_TMP: path.join(t, 'systmp') },
          config: configOf(path.join(home, 'config.yaml'), undefined),
          hermes,
          home,
          profiles: [],
          selection,
          lifetimeSeconds: 300,
          plan: false,
          metrics: false,
        },
      });
      const shown = JSON.stringify(
        {
          keys: Object.keys(r),
          sandboxDirs: r.sandboxDirs,
          sandboxDirsDetail: r.sandboxDirsDetail,
          images: r.images,
          shellSnapshots: r.shellSnapshots,
          attention: r.attention,
          exitCode: r.exitCode,
        },
        null,
        2,
      ).replaceAll(t, '<tmp>');
      golden('status-json', `${shown.replace(/"bytes": \d+/g, '"bytes": <n>').replace(/"unusedBytes": \d+/g, '"unusedBytes": <n>')}\n`);
    } finally {
      rmSync(t, { recursive: true, force: true });
    }
  });
});
