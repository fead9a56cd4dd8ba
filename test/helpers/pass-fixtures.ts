/**
 * Fixed outcomes of every cleanup pass (containers, exec trees, sandbox directories, images, shell snapshots, session
 * files), for the
 * golden-output tests: the reporters, the metrics and `status` render these, and their output is compared byte for
 * byte with the files in test/golden/. Only how a report is assembled from these may change with the code; the
 * outcomes and the expected output may not.
 */
import type { Context } from '../../src/context.js';
import type { ReapReport } from '../../src/cli/report/reporter.js';
import { execTreesPass } from '../../src/passes/exec-trees/pass.js';
import { imagesPass } from '../../src/passes/images/pass.js';
import { sandboxDirsPass } from '../../src/passes/sandbox-dirs/pass.js';
import { sessionFilesPass } from '../../src/passes/session-files/pass.js';
import { shellSnapshotsPass } from '../../src/passes/shell-snapshots/pass.js';
import type { PassResult } from '../../src/passes/types.js';

export const NOW = new Date('2026-11-22T12:00:00.000Z');
export const HOST_A = 'unix:///var/run/docker.sock';
export const HOST_B = 'tcp://10.0.0.2:2375';

/** A context whose clock stands still and whose output is captured. */
export function captureContext(now = NOW): Context & { out: () => string; err: () => string } {
  let stdout = '';
  let stderr = '';
  return {
    argv: [],
    env: {},
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    stdin: process.stdin,
    cwd: '/',
    homedir: '/root',
    now: () => now,
    out: () => stdout,
    err: () => stderr,
  };
}

const base = (id: string, name: string, host = HOST_A) => ({
  id: id.padEnd(64, '0'),
  name,
  profile: 'default',
  state: 'exited',
  finishedAt: '2026-11-22T08:00:00.123456789Z',
  ageSeconds: 14399.876,
  host,
  rule: 'exited' as const,
});

export const sandboxDirs = {
  removed: [
    { path: '/home/h/.hermes/sandboxes/docker/task-1', bytes: 1288490188, lastChange: '2026-10-12T12:00:00.000Z' },
    { path: '/home/h/.hermes/sandboxes/docker/task\n2', bytes: 4096, lastChange: '2026-11-01T12:00:00.000Z' },
  ],
  kept: [
    {
      path: '/home/h/.hermes/sandboxes/docker/task-3',
      reason: 'in-use' as const,
      detail: 'mounted by hermes-abc (running) on unix:///var/run/docker.sock',
      lastChange: '2026-11-22T11:00:00.000Z',
    },
    { path: '/home/h/.hermes/sandboxes/docker/task-4', reason: 'cut-short' as const, detail: 'the run was cut short before this directory', lastChange: null },
  ],
  failed: [
    {
      path: '/home/h/.hermes/sandboxes/docker/task-5',
      error: 'cannot remove /home/h/.hermes/sandboxes/docker/task-5/home/x (EACCES): run as root; nothing was removed',
      partial: false,
    },
  ],
};

export const images = {
  removed: [
    { id: `sha256:${'a'.repeat(64)}`, tags: ['python:3.11'], bytes: 1073741824, lastUsed: '2026-11-01T10:00:00.000Z', host: HOST_A },
    { id: `sha256:${'b'.repeat(64)}`, tags: [], bytes: 52428800, lastUsed: '2026-10-01T10:00:00.000Z', host: HOST_B },
  ],
  kept: [
    { id: `sha256:${'c'.repeat(64)}`, reason: 'in-use' as const, detail: 'used by 1 container(s), first hermes-1 (running)', tags: ['node:20'], host: HOST_A },
    { id: `sha256:${'d'.repeat(64)}`, reason: 'recent' as const, detail: 'used 10 minutes ago', tags: ['x:1'], host: HOST_A },
    {
      id: `sha256:${'e'.repeat(64)}`,
      reason: 'conflict' as const,
      detail: 'the engine refused the removal: conflict',
      tags: ['y:2', 'y:latest'],
      host: HOST_B,
    },
  ],
  failed: [
    { id: `sha256:${'f'.repeat(64)}`, error: 'remove image ffffffffffff (z:1): boom', host: HOST_A },
    { id: null, error: 'image pass on tcp://10.0.0.2:2375: the engine did not answer (ECONNREFUSED); no image was removed', host: HOST_B },
  ],
  bytesBefore: 6442450944,
  bytesAfter: 5316280320,
  budget: 5368709120,
  engines: [
    { host: HOST_A, bytesBefore: 4294967296, bytesAfter: 3221225472, budget: 5368709120 },
    { host: HOST_B, bytesBefore: 2147483648, bytesAfter: 2095054848, budget: 5368709120 },
  ],
  counted: 7,
};

export const execTrees = {
  ended: [{ container: 'hermes-1a2b3c4d', execId: '9'.repeat(64), ageSeconds: 1500, processes: 6, killed: 1 }],
  kept: [
    { container: 'hermes-1a2b3c4d', execId: '8'.repeat(64), reason: 'keep-exec-trees' as const },
    { container: 'hermes-1a2b3c4d', execId: '6'.repeat(64), reason: 'client-alive' as const },
  ],
  failed: [{ container: 'hermes-5e6f7a8b', execId: '7'.repeat(64), error: 'SIGTERM to pid 4242: EPERM' }],
};

export const shellSnapshots = {
  removed: [
    {
      path: '/tmp/hermes-snap-0123456789ab.sh',
      owner: 1000,
      lastChange: '2026-11-19T12:00:00.000Z',
      secretNames: ['API_TOKEN', 'OPENAI_API_KEY'],
      files: ['/tmp/hermes-snap-0123456789ab.sh', '/tmp/hermes-cwd-0123456789ab.txt'],
    },
    {
      path: '/tmp/hermes-snap-ba9876543210.sh',
      owner: 0,
      lastChange: '2026-11-21T11:00:00.000Z',
      secretNames: null,
      files: ['/tmp/hermes-snap-ba9876543210.sh'],
    },
  ],
  kept: [
    {
      path: '/tmp/hermes-snap-aaaaaaaaaaaa.sh',
      reason: 'owner-alive' as const,
      detail: 'a hermes process of uid 1000 runs',
      owner: 1000,
      lastChange: '2026-11-22T11:59:00.000Z',
      secretNames: [],
    },
  ],
  failed: [
    { path: '/tmp/hermes-snap-cccccccccccc.sh', error: 'cannot remove shell snapshot /tmp/hermes-snap-cccccccccccc.sh (EACCES): run as root or as uid 1001' },
  ],
  tempDirs: [{ dir: '/tmp', from: 'default', problem: null }],
  processesHidden: null,
};

export const sessionFiles = {
  removed: [
    {
      kind: 'background-job' as const,
      path: '/home/h/.hermes/cache/terminal/hermes_bg_4f2a',
      owner: 1000,
      lastChange: '2026-11-19T12:00:00.000Z',
      files: [
        '/home/h/.hermes/cache/terminal/hermes_bg_4f2a.log',
        '/home/h/.hermes/cache/terminal/hermes_bg_4f2a.pid',
        '/home/h/.hermes/cache/terminal/hermes_bg_4f2a.exit',
      ],
      bytes: 2048,
    },
    {
      kind: 'code-sandbox' as const,
      path: '/tmp/hermes_sandbox_ab12cd_z',
      owner: 1000,
      lastChange: '2026-11-21T11:00:00.000Z',
      files: ['/tmp/hermes_sandbox_ab12cd_z'],
      bytes: 12288,
    },
    {
      kind: 'rpc-socket' as const,
      path: `/tmp/hermes_rpc_${'0f'.repeat(16)}.sock`,
      owner: 1000,
      lastChange: '2026-11-21T11:00:00.000Z',
      files: [`/tmp/hermes_rpc_${'0f'.repeat(16)}.sock`],
      bytes: 0,
    },
  ],
  kept: [
    {
      kind: 'background-job' as const,
      path: '/home/h/.hermes/cache/terminal/hermes_bg_live',
      reason: 'changed-recently' as const,
      detail: 'changed 60 s ago, under the threshold of 600 s',
      owner: 1000,
      lastChange: '2026-11-22T11:59:00.000Z',
    },
  ],
  failed: [
    {
      kind: 'code-sandbox' as const,
      path: '/tmp/hermes_sandbox_zz99zz99',
      error: 'cannot remove /tmp/hermes_sandbox_zz99zz99: /tmp/hermes_sandbox_zz99zz99/x: permission denied; nothing was removed',
    },
  ],
  tempDirs: [
    { dir: '/home/h/.hermes/cache/terminal', from: 'cache/terminal', problem: null },
    { dir: '/tmp', from: 'default', problem: null },
  ],
  processesHidden: null,
  cutShort: false,
};

/** Every pass with something removed, kept and failed, over two engines. */
export function fullReport(dryRun: boolean): ReapReport {
  return {
    dryRun,
    asOf: NOW,
    thresholdSeconds: 600,
    profile: 'default',
    stopIdle: true,
    idleAfterSeconds: 600,
    removed: [
      { ...base('a1', 'hermes-a1'), volumes: ['v'.repeat(64)] },
      { ...base('b2', 'hermes-b2', HOST_B), volumes: [] },
    ],
    stopped: [
      {
        ...base('c3', 'hermes-c3'),
        state: 'running',
        rule: 'idle',
        idleSeconds: 7200,
        processes: 2,
        graceSeconds: 10,
        killed: true,
        writableLayerBytes: 21_495_808,
      },
    ],
    kept: [{ ...base('d4', 'hermes-d4'), reason: 'too-recent' }],
    failed: [{ ...base('e5', 'hermes-e5', HOST_B), error: '(HTTP code 500) server error - unable to remove filesystem' }],
    hosts: [
      { host: HOST_A, reachable: true, error: null },
      { host: HOST_B, reachable: true, error: null },
    ],
    timedOut: false,
    timeoutSeconds: 120,
    warnings: ['cannot read the idle state /x/idle.json (EACCES); observing afresh'],
    failOpen: false,
    passes: [
      { pass: sandboxDirsPass, result: sandboxDirs },
      { pass: imagesPass, result: images },
      { pass: execTreesPass, result: execTrees },
      { pass: shellSnapshotsPass, result: shellSnapshots },
      { pass: sessionFilesPass, result: sessionFiles },
    ],
  };
}

const noTrees: PassResult = { pass: execTreesPass, result: { ended: [], kept: [], failed: [] } };

/** No engine answered; only the host's own pass ran (and removed something). */
export function hostOnlyReport(): ReapReport {
  return {
    dryRun: false,
    asOf: NOW,
    thresholdSeconds: 600,
    profile: null,
    stopIdle: true,
    idleAfterSeconds: 600,
    removed: [],
    stopped: [],
    kept: [],
    failed: [],
    hosts: [{ host: '(discovery)', reachable: false, error: 'no engine answered at unix:///run/docker.sock' }],
    timedOut: true,
    timeoutSeconds: 30,
    warnings: [],
    failOpen: false,
    passes: [noTrees, { pass: shellSnapshotsPass, result: shellSnapshots }],
  };
}

/** Nothing but containers: no pass ran (a plan, say). */
export function containersOnlyReport(): ReapReport {
  return {
    dryRun: false,
    asOf: NOW,
    thresholdSeconds: 600,
    profile: 'work',
    stopIdle: false,
    idleAfterSeconds: 600,
    removed: [base('a1', 'hermes-a1')],
    stopped: [],
    kept: [],
    failed: [],
    hosts: [{ host: HOST_A, reachable: true, error: null }],
    timedOut: false,
    timeoutSeconds: 120,
    warnings: [],
    failOpen: false,
    planOut: '/tmp/plan.json',
    passes: [noTrees],
  };
}

/** Snapshots that only kept something: no news for reap's summary. */
export function quietSnapshotsReport(): ReapReport {
  const { planOut: _, ...rest } = containersOnlyReport();
  return { ...rest, passes: [noTrees, { pass: shellSnapshotsPass, result: { ...shellSnapshots, removed: [], failed: [] } }] };
}
