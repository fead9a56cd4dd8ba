/**
 * The `list` table as a person sees it: at a terminal one line per container fitted to its width (reason cut first,
 * then the name, an ellipsis where cut), PROFILE only when several profiles are shown, `-` where a time does not
 * apply; `--wide` uncut; piped, the bordered table as before.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { Context } from '../../src/context.js';
import { fitWidths, renderListTable } from '../../src/cli/render-list-table.js';
import type { ListedEntry } from '../../src/reaper/sweep.js';
import { runCli, tempDir } from '../helpers/cli.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

const asOf = new Date('2026-11-27T12:00:00Z');
const row = (o: Partial<ListedEntry>): ListedEntry => ({
  id: 'a'.repeat(64), name: 'hermes-1a2b3c4d', profile: 'default', state: 'exited', finishedAt: '2026-11-27T09:00:00Z', ageSeconds: 3 * 3600,
  host: 'unix:///var/run/docker.sock', rule: 'exited', verdict: 'reap', reason: 'expired', ...o,
});
const ROWS: ListedEntry[] = [
  row({}),
  row({ id: 'b'.repeat(64), name: 'hermes-9f8e7d6c-with-a-name-far-too-long-for-any-terminal', state: 'running', finishedAt: '0001-01-01T00:00:00Z', ageSeconds: null, rule: 'idle', verdict: 'keep', reason: 'running', idleSeconds: 65, idleReason: 'in-use', processes: 4 }),
  row({ id: 'c'.repeat(64), state: 'running', finishedAt: '0001-01-01T00:00:00Z', ageSeconds: null, rule: 'idle', verdict: 'keep', reason: 'running', idleSeconds: 30, idleReason: 'idle-too-recent' }),
];

function ctxFor(tty: boolean, columns?: number): Context {
  const stdout = { write: () => true, isTTY: tty, ...(columns ? { columns } : {}) };
  return { argv: [], env: { NO_COLOR: '1' }, stdout, stderr: stdout, stdin: process.stdin, cwd: '/', homedir: '/', now: () => asOf } as unknown as Context;
}

describe('the list table', () => {
  it('at an 80-column terminal: one line per container and a header, none wider than 80, no rules, cut with an ellipsis', async () => {
    const out = await renderListTable(ctxFor(true, 80), ROWS, { asOf, showHost: false, wide: false });
    const lines = out.split('\n');
    assert.equal(lines.length, ROWS.length + 1, out);
    for (const l of lines) assert.ok(l.length <= 80, `${l.length}: ${l}`);
    assert.doesNotMatch(out, /[─│┌]/);
    assert.match(lines[0]!, /^ID\s+NAME\s+STATE\s+FINISHED\s+IDLE\s+VERDICT\s+REASON$/, 'no PROFILE column for one profile');
    assert.match(lines[2]!, /^bbbbbbbbbbbb {2}hermes-9f8e7d\S*… {2}running {2}- {2}/, 'a long name is cut; a running one has not finished: -');
    assert.match(lines[1]!, /3 hours ago/);
    assert.doesNotMatch(out, /never/);
  });

  it('the reason gives way first: wide enough for everything but the reason, the name stays whole', async () => {
    const wide = await renderListTable(ctxFor(true, 500), ROWS, { asOf, showHost: false, wide: false });
    const full = Math.max(...wide.split('\n').map((l) => l.length));
    const out = await renderListTable(ctxFor(true, full - 5), ROWS, { asOf, showHost: false, wide: false });
    assert.match(out, /hermes-9f8e7d6c-with-a-name-far-too-long-for-any-terminal/);
    assert.match(out, /in-use: 4 pro…$/m);
  });

  it('several profiles: a PROFILE column; --wide: nothing cut whatever the width, piped too', async () => {
    const rows = [...ROWS, row({ id: 'd'.repeat(64), profile: 'work' })];
    for (const ctx of [ctxFor(true, 40), ctxFor(false)]) {
      const out = await renderListTable(ctx, rows, { asOf, showHost: false, wide: true });
      assert.match(out.split('\n')[0]!, /^ID\s+NAME\s+PROFILE\s+STATE/);
      assert.match(out, /hermes-9f8e7d6c-with-a-name-far-too-long-for-any-terminal/);
      assert.match(out, /in-use: 4 processes$/m);
      assert.equal(out.split('\n').length, rows.length + 1);
    }
  });

  it('piped without --wide: the bordered table as it always was (every column, "never" for the zero time)', async () => {
    const out = await renderListTable(ctxFor(false), ROWS, { asOf, showHost: false, wide: false });
    assert.match(out, /^┌/);
    assert.match(out.split('\n')[1]!, /│ ID\s+│ NAME\s+│ PROFILE\s+│ STATE\s+│ FINISHED\s+│ IDLE\s+│ VERDICT\s+│ REASON\s+│/);
    assert.match(out, /│ never\s+│/);
    assert.match(out, /running \(in-use: 4 processes\)/);
  });

  it('fitting: cuts the reason, then the name, then the host, never below what still says something, then to the headers', () => {
    const head = ['ID', 'NAME', 'STATE', 'HOST', 'REASON'];
    assert.deepEqual(fitWidths(head, [12, 30, 7, 30, 30], null), [12, 30, 7, 30, 30]);
    assert.deepEqual(fitWidths(head, [12, 30, 7, 30, 30], 200), [12, 30, 7, 30, 30]);
    // 117 wide with its gaps: 8 too many, the reason alone gives them
    assert.deepEqual(fitWidths(head, [12, 30, 7, 30, 30], 109), [12, 30, 7, 30, 22]);
    // 27 too many: the reason down to 12, the name gives the rest
    assert.deepEqual(fitWidths(head, [12, 30, 7, 30, 30], 90), [12, 21, 7, 30, 12]);
    // 57 too many: reason 12, name 16, host 16, then the reason to 6 and the name gives the last 5
    assert.deepEqual(fitWidths(head, [12, 30, 7, 30, 30], 60), [12, 11, 7, 16, 6]);
    // narrower than everything at its least: the rest wraps
    assert.deepEqual(fitWidths(head, [12, 30, 7, 30, 30], 40), [12, 8, 7, 16, 6]);
  });
});

describe('list --wide through the built CLI (engine simulator)', () => {
  it('piped with --wide: the plain table, one line per container, nothing cut; without it the bordered one', async () => {
    const profile = `wide${process.pid}`;
    const name = 'hermes-0a0a0a0a-a-name-longer-than-any-terminal-would-show-whole-on-one-line';
    const sim = await EngineSimulator.start({ containers: [{ name, labels: { 'hermes-agent': '1', 'hermes-profile': profile }, finishedAt: '2026-11-27T09:00:00Z' }] });
    const home = tempDir('hj-wide-');
    try {
      const env = { HOME: home.dir, HERMES_HOME: path.join(home.dir, 'hermes') };
      const args = ['list', '--host', sim.host, '--profile', profile, '--as-of', '2026-11-27T12:00:00Z'];
      const wide = await runCli([...args, '--wide'], { env });
      assert.equal(wide.code, 0, wide.stderr);
      const lines = wide.stdout.trimEnd().split('\n');
      assert.match(lines[0]!, /^ID\s+NAME\s+STATE\s+FINISHED\s+IDLE\s+VERDICT\s+REASON$/);
      assert.match(lines[1]!, new RegExp(`^\\w{12}  ${name}  exited\\s+3 hours ago\\s+-\\s+reap\\s+expired$`));
      assert.match(lines[2]!, /^1 container\(s\), 1 to reap/);
      const boxed = await runCli(args, { env });
      assert.match(boxed.stdout, /^┌/);
    } finally {
      await sim.close();
      home.cleanup();
    }
  });
});
