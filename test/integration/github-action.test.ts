import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { load as parse } from 'js-yaml';
import { REPO, assertUsageError, tempDir } from '../helpers/cli.js';
import { EngineFixture, after as plus, requireEngine } from '../helpers/docker.js';
import { reapSummaryMarkdown } from '../../src/cli/render-markdown.js';

/** Runs the action's reap step as GitHub would: INPUT_* variables, GITHUB_* files. */
function runStep(
  inputs: Record<string, string>,
  dir: string,
): Promise<{ code: number | null; summary: string; outputs: string; stdout: string; stderr: string }> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    GITHUB_ACTION_PATH: REPO,
    RUNNER_TEMP: dir,
    GITHUB_STEP_SUMMARY: path.join(dir, 'summary.md'),
    GITHUB_OUTPUT: path.join(dir, 'output'),
    ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}),
  };
  for (const [k, v] of Object.entries(inputs)) env[`INPUT_${k.toUpperCase().replace(/-/g, '_')}`] = v;
  return new Promise((resolve) => {
    const child = spawn('bash', [path.join(REPO, 'scripts/github-action-reap.sh')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (code) => {
      const read = (f: string) => {
        try {
          return readFileSync(path.join(dir, f), 'utf8');
        } catch {
          return '';
        }
      };
      resolve({ code, summary: read('summary.md'), outputs: read('output'), stdout, stderr });
    });
  });
}

describe('the GitHub Action (action.yml)', () => {
  const fx = new EngineFixture();
  const tmp = tempDir('hj-action-');
  before(requireEngine);
  after(async () => {
    await fx.cleanup();
    tmp.cleanup();
  });

  it('declares the inputs and runs the reap step script', () => {
    const action = parse(readFileSync(path.join(REPO, 'action.yml'), 'utf8')) as {
      inputs: Record<string, unknown>;
      runs: { using: string; steps: Array<{ run: string; env?: Record<string, string> }> };
    };
    assert.deepEqual(Object.keys(action.inputs).sort(), ['all-profiles', 'args', 'dry-run', 'lifetime', 'profile']);
    assert.equal(action.runs.using, 'composite');
    const step = action.runs.steps.find((s) => s.run.includes('github-action-reap.sh'));
    assert.ok(step, 'a step runs scripts/github-action-reap.sh');
    for (const input of Object.keys(action.inputs)) {
      assert.equal(step.env?.[`INPUT_${input.toUpperCase().replace(/-/g, '_')}`], `\${{ inputs.${input} }}`);
    }
  });

  it('dry run, then real run: a Markdown table in the step summary, outputs set, exit code passed through', async () => {
    const id = await fx.create({ state: 'exited' });
    const asOf = plus(await fx.finishedAt(id), 3600);
    const dry = await runStep({ profile: fx.profile, 'dry-run': 'true', args: `--as-of ${asOf}` }, tmp.dir);
    assert.equal(dry.code, 0);
    assert.match(dry.summary, /Dry run: nothing was removed/);
    assert.match(dry.summary, new RegExp(`\\| \`${id.slice(0, 12)}\` \\| hermes-[0-9a-f]{8} \\| ${fx.profile} \\| exited \\|`));
    assert.match(dry.outputs, /^exit-code=0$/m);
    assert.ok((await fx.remaining()).includes(id));

    const real = await runStep({ profile: fx.profile, lifetime: '0', args: `--as-of ${asOf}` }, tmp.dir);
    assert.equal(real.code, 0);
    assert.match(real.summary, /\*\*Removed:\*\* 1/);
    assert.match(real.summary, /Threshold 120 s/);
    assert.ok(!(await fx.remaining()).includes(id));

    const bad = await runStep({ lifetime: 'abc' }, tmp.dir);
    assertUsageError(bad, ['--lifetime', "'abc'"]);
    assert.match(bad.outputs, /^exit-code=2$/m);
    assert.match(bad.summary, /No report/);
  });
});

describe('reapSummaryMarkdown', () => {
  it('escapes table cells and reports unreachable engines', () => {
    const md = reapSummaryMarkdown({
      dryRun: false,
      asOf: '2026-03-31T12:00:00Z',
      thresholdSeconds: 600,
      profile: null,
      removed: [],
      kept: [],
      failed: [{ id: 'a'.repeat(64), name: 'n|x', profile: 'p', state: 'exited', ageSeconds: 7200, host: 'h', error: 'boom\nline2 <b>' }],
      hosts: [{ host: 'tcp://h:1', reachable: false, error: 'refused' }],
    });
    assert.match(md, /\| `aaaaaaaaaaaa` \| n\\\|x \| p \| exited \| 2 hours \| h \| boom line2 &lt;b> \|/);
    assert.match(md, /> Engine tcp:\/\/h:1 unreachable: refused/);
    assert.match(reapSummaryMarkdown({ disabled: true, reason: 'r' }), /Reaper disabled: r/);
  });

  it('lists idle sandboxes stopped (or that a dry run would stop) with their idle time', () => {
    const stopped = [{ id: 'b'.repeat(64), name: 'hermes-1', profile: 'p', state: 'exited', ageSeconds: null, host: 'h', rule: 'idle', idleSeconds: 10_800 }];
    const md = reapSummaryMarkdown({ dryRun: false, removed: [], stopped, kept: [], failed: [], hosts: [] });
    assert.match(md, /\*\*Stopped \(idle\):\*\* 1/);
    assert.match(md, /\| `bbbbbbbbbbbb` \| hermes-1 \| p \| exited \| - \| h \| 3 hours \|/);
    assert.match(reapSummaryMarkdown({ dryRun: true, removed: [], stopped, kept: [], failed: [] }), /\*\*Would stop \(idle\):\*\* 1/);
  });
});
