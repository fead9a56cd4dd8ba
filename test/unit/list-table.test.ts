/**
 * The `list` table as people and pipes read it: piped, plain lines under one header (the shape `docker ps` prints),
 * no box drawing, no colour, nothing cut; at a terminal one line per container fitted to its width with REASON never
 * cut and names shortened only where they still differ; `--wide` every column; `--format` templates.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { Context } from '../../src/context.js';
import { leastDistinctWidth, renderListTable, shorten } from '../../src/cli/render-list-table.js';
import { parseListFormat, renderListFormat } from '../../src/cli/list-format.js';
import { ValueError } from '../../src/core/parse-args.js';
import type { ListedEntry } from '../../src/reaper/sweep.js';
import { runCli, tempDir } from '../helpers/cli.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

const asOf = new Date('2026-11-27T12:00:00Z');
const row = (o: Partial<ListedEntry>): ListedEntry => ({
  id: 'a'.repeat(64),
  name: 'hermes-1a2b3c4d',
  profile: 'default',
  state: 'exited',
  finishedAt: '2026-11-27T09:00:00Z',
  ageSeconds: 3 * 3600,
  host: 'unix:///var/run/docker.sock',
  rule: 'exited',
  verdict: 'reap',
  reason: 'expired',
  ...o,
});
const LONG = 'hermes-9f8e7d6c-with-a-name-far-too-long-for-any-terminal';
const ROWS: ListedEntry[] = [
  row({}),
  row({
    id: 'b'.repeat(64),
    name: LONG,
    state: 'running',
    finishedAt: '0001-01-01T00:00:00Z',
    ageSeconds: null,
    rule: 'idle',
    verdict: 'keep',
    reason: 'running',
    idleSeconds: 65,
    idleReason: 'in-use',
    processes: 4,
  }),
  row({
    id: 'c'.repeat(64),
    state: 'running',
    name: 'hermes-5e6f7a8b',
    finishedAt: '0001-01-01T00:00:00Z',
    ageSeconds: null,
    rule: 'idle',
    verdict: 'keep',
    reason: 'running',
    idleSeconds: 30,
    idleReason: 'idle-too-recent',
  }),
];
const ANSI = /\u001b\[/;
const BOX = /[─│┌┐└┘├┤┬┴┼]/;

function ctxFor(tty: boolean, columns?: number, env: Record<string, string> = { NO_COLOR: '1' }): Context {
  const stdout = { write: () => true, isTTY: tty, ...(columns ? { columns } : {}) };
  return { argv: [], env, stdout, stderr: stdout, stdin: process.stdin, cwd: '/', homedir: '/', now: () => asOf } as unknown as Context;
}

describe('the list table', () => {
  it('piped: one plain line per container under one header, nothing cut, no box drawing, no colour (even without NO_COLOR)', () => {
    const out = renderListTable(ctxFor(false, undefined, {}), ROWS, { asOf, showHost: false, wide: false });
    const lines = out.split('\n');
    assert.equal(lines.length, ROWS.length + 1, out);
    assert.doesNotMatch(out, BOX);
    assert.doesNotMatch(out, ANSI);
    assert.match(lines[0]!, /^ID\s+NAME\s+STATE\s+FINISHED\s+IDLE\s+VERDICT\s+REASON$/, 'no PROFILE column for one profile');
    assert.match(lines[1]!, /^a{12}  hermes-1a2b3c4d\s+exited\s+3 hours ago\s+-\s+reap\s+expired$/);
    assert.ok(lines[2]!.includes(LONG), 'a long name whole');
    assert.match(lines[2]!, /running\s+-\s+1 minute\s+keep\s+in-use$/, 'the reason word; its detail is in --wide');
    assert.match(lines[3]!, /keep\s+idle-too-recent$/);
    // Columns separated by runs of spaces: awk/cut read them.
    for (const l of lines.slice(1)) assert.equal(l.split(/ {2,}/).length, 7, l);
  });

  it('at an 80-column terminal: one line per container, none wider than 80, every reason word whole, names still apart', () => {
    const many = [
      ...ROWS,
      row({
        id: 'd'.repeat(64),
        name: `${LONG}-2`,
        state: 'running',
        finishedAt: '0001-01-01T00:00:00Z',
        ageSeconds: null,
        rule: 'idle',
        verdict: 'keep',
        reason: 'running',
        idleSeconds: 3 * 3600,
        idleReason: 'processes-unknown',
      }),
    ];
    for (const columns of [80, 72, 64]) {
      const out = renderListTable(ctxFor(true, columns), many, { asOf, showHost: false, wide: false });
      const lines = out.split('\n');
      assert.equal(lines.length, many.length + 1, out);
      for (const l of lines) assert.ok(l.length <= columns, `${columns}: ${l.length}: ${l}`);
      assert.doesNotMatch(out, BOX);
      for (const word of ['expired', 'in-use', 'idle-too-recent', 'processes-unknown'])
        assert.match(out, new RegExp(`  ${word}$`, 'm'), `${columns}: ${word}\n${out}`);
      const names = lines.slice(1).map((l) => l.split(/ {2,}/)[1]);
      assert.equal(new Set(names).size, names.length, `${columns}: names still differ: ${names.join(' | ')}`);
    }
    // hermes' own names (hermes-<8 hex>) and the usual reasons fit whole.
    const usual = [ROWS[0]!, { ...ROWS[1]!, name: 'hermes-9f8e7d6c' }, ROWS[2]!];
    const out = renderListTable(ctxFor(true, 80), usual, { asOf, showHost: false, wide: false });
    for (const name of ['hermes-1a2b3c4d', 'hermes-9f8e7d6c', 'hermes-5e6f7a8b']) assert.match(out, new RegExp(`  ${name}  `), out);
  });

  it('a wide terminal cuts nothing; a narrower one shortens names first, then says times narrow', () => {
    const full = renderListTable(ctxFor(true, 500), ROWS, { asOf, showHost: false, wide: false });
    assert.ok(full.includes(LONG));
    const width = Math.max(...full.split('\n').map((l) => l.length));
    const less = renderListTable(ctxFor(true, width - 5), ROWS, { asOf, showHost: false, wide: false });
    assert.ok(!less.includes(LONG) && less.includes('3 hours ago'), less);
    const narrow = renderListTable(ctxFor(true, 70), ROWS, { asOf, showHost: false, wide: false });
    assert.match(narrow, /  3h ago  /, narrow);
  });

  it('a terminal: bold header unless NO_COLOR; piped never', () => {
    assert.match(renderListTable(ctxFor(true, 200, {}), ROWS, { asOf, showHost: false, wide: false }), /^\u001b\[1mID/);
    assert.doesNotMatch(renderListTable(ctxFor(true, 200, { NO_COLOR: '1' }), ROWS, { asOf, showHost: false, wide: false }), ANSI);
  });

  it('--wide: every column (PROFILE and HOST), the reason with its detail, nothing cut whatever the width, piped too', () => {
    for (const ctx of [ctxFor(true, 40), ctxFor(false)]) {
      const out = renderListTable(ctx, ROWS, { asOf, showHost: false, wide: true });
      assert.match(out.split('\n')[0]!, /^ID\s+NAME\s+PROFILE\s+STATE\s+FINISHED\s+IDLE\s+VERDICT\s+HOST\s+REASON$/);
      assert.ok(out.includes(LONG));
      assert.match(out, /in-use: 4 processes$/m);
      assert.equal(out.split('\n').length, ROWS.length + 1);
    }
  });

  it('several profiles: a PROFILE column; control characters in a name are escaped, never a second line', () => {
    const rows = [...ROWS, row({ id: 'e'.repeat(64), profile: 'work', name: 'evil\nname' })];
    const out = renderListTable(ctxFor(false), rows, { asOf, showHost: false, wide: false });
    assert.match(out.split('\n')[0]!, /^ID\s+NAME\s+PROFILE\s+STATE/);
    assert.equal(out.split('\n').length, rows.length + 1);
    assert.match(out, /evil\\u000aname/);
  });

  it('shortening keeps the part that tells values apart', () => {
    assert.equal(shorten('hermes-1a2b3c4d', 20), 'hermes-1a2b3c4d');
    assert.equal(shorten('hermes-1a2b3c4d-long-tail', 12, { prefix: 9, suffix: 1 }), 'hermes-1a…il');
    assert.equal(shorten('hermes-1a2b3c4d-long-tail-2', 12, { prefix: 27, suffix: 1 }), 'hermes…ail-2');
    assert.equal(shorten('abcdefghij', 5), 'ab…ij');
    const names = ['hermes-1a2b3c4d-session-one', 'hermes-1a2b3c4d-session-two', 'hermes-9f9f9f9f-session-one'];
    const least = leastDistinctWidth(names);
    assert.ok(least < 27 && least >= 2, `${least}`);
  });
});

describe('list --format', () => {
  it('fields, escapes, {{json .}} and a table', () => {
    assert.equal(
      renderListFormat(parseListFormat('{{.ID}}\\t{{.Name}} {{.Verdict}}/{{.Reason}}'), ROWS.slice(0, 2), asOf),
      `aaaaaaaaaaaa\thermes-1a2b3c4d reap/expired\nbbbbbbbbbbbb\t${LONG} keep/in-use\n`,
    );
    assert.equal(renderListFormat(parseListFormat('{{.Detail}}|{{.Processes}}|{{.IdleSeconds}}'), ROWS.slice(1, 2), asOf), 'in-use: 4 processes|4|65\n');
    const json = renderListFormat(parseListFormat('{{json .}}'), ROWS.slice(0, 1), asOf);
    assert.equal((JSON.parse(json) as ListedEntry).id, 'a'.repeat(64));
    const table = renderListFormat(parseListFormat('table {{.Name}}\\t{{.Verdict}}'), ROWS.slice(0, 2), asOf).split('\n');
    assert.match(table[0]!, /^NAME\s+VERDICT$/);
    assert.match(table[1]!, /^hermes-1a2b3c4d\s+reap$/);
    assert.equal(renderListFormat(parseListFormat('{{.Name}}'), [row({ name: 'a\nb' })], asOf), 'a\\u000ab\n');
  });

  it('an unknown field or a broken template is one line naming it and the fields there are', () => {
    assert.throws(
      () => parseListFormat('{{.Nope}}'),
      (e: Error) => e instanceof ValueError && /unknown field '\{\{\.Nope\}\}'.*\{\{\.Name\}\}/.test(e.message),
    );
    assert.throws(() => parseListFormat('{{.Name'), ValueError);
  });
});

describe('list through the built CLI (engine simulator)', () => {
  it('list | cat: three plain lines under one header, the summary on stderr; --wide and --format', async () => {
    const profile = `pipe${process.pid}`;
    const labels = { 'hermes-agent': '1', 'hermes-profile': profile };
    const sim = await EngineSimulator.start({
      containers: ['hermes-0a0a0a0a', 'hermes-0b0b0b0b', 'hermes-0c0c0c0c'].map((name) => ({ name, labels, finishedAt: '2026-11-27T09:00:00Z' })),
    });
    const home = tempDir('hj-pipe-');
    try {
      const env = { HOME: home.dir, HERMES_HOME: path.join(home.dir, 'hermes') };
      const args = ['list', '--host', sim.host, '--profile', profile, '--as-of', '2026-11-27T12:00:00Z'];
      const piped = await runCli(args, { env });
      assert.equal(piped.code, 0, piped.stderr);
      const lines = piped.stdout.trimEnd().split('\n');
      assert.equal(lines.length, 4, piped.stdout);
      assert.match(lines[0]!, /^ID\s+NAME\s+STATE\s+FINISHED\s+IDLE\s+VERDICT\s+REASON$/);
      for (const l of lines.slice(1)) assert.match(l, /^\w{12}  hermes-0\w{7}  exited\s+3 hours ago\s+-\s+reap\s+expired$/);
      assert.doesNotMatch(piped.stdout, BOX);
      assert.doesNotMatch(piped.stdout, ANSI);
      assert.match(piped.stderr, /3 container\(s\), 3 to reap, 0 to stop\./);
      assert.match(
        piped.stderr,
        // The advice names the home (here from HERMES_HOME and --profile), so that pasted by another user it acts on the same one.
        new RegExp(
          `them: hermes-janitor reap --home ${path.join(env.HERMES_HOME, 'profiles', profile).replace(/[/.]/g, '\\$&')} --profile ${profile} ` +
            `--host ${sim.host.replace(/[/.]/g, '\\$&')} --as-of 2026-11-27T12:00:00Z$`,
          'm',
        ),
      );

      const wide = await runCli([...args, '--wide'], { env });
      assert.match(wide.stdout.split('\n')[0]!, /^ID\s+NAME\s+PROFILE\s+STATE\s+FINISHED\s+IDLE\s+VERDICT\s+HOST\s+REASON$/);

      const format = await runCli([...args, '--format', '{{.Name}} {{.Verdict}}'], { env });
      assert.equal(format.code, 0, format.stderr);
      assert.deepEqual(format.stdout.trimEnd().split('\n').sort(), ['hermes-0a0a0a0a reap', 'hermes-0b0b0b0b reap', 'hermes-0c0c0c0c reap']);
      const bad = await runCli([...args, '--format', '{{.Nope}}'], { env });
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /unknown field/);
    } finally {
      await sim.close();
      home.cleanup();
    }
  });

  it('--format and {{json .}} go through the one escaper: a name holding U+202E and U+009B prints neither raw (#47)', async () => {
    const profile = `bidi${process.pid}`;
    const hostile = 'hermes-\u202efdp.exe\u009b31m';
    const sim = await EngineSimulator.start({
      containers: [{ name: hostile, labels: { 'hermes-agent': '1', 'hermes-profile': profile }, finishedAt: '2026-11-27T09:00:00Z' }],
    });
    const home = tempDir('hj-bidi-');
    try {
      const env = { HOME: home.dir, HERMES_HOME: path.join(home.dir, 'hermes') };
      const args = ['list', '--host', sim.host, '--profile', profile, '--as-of', '2026-11-27T12:00:00Z', '--format'];
      for (const template of ['{{json .}}', '{{.Name}} {{json .}}', 'table {{.Name}}\\t{{json .}}']) {
        const r = await runCli([...args, template], { env });
        assert.equal(r.code, 0, r.stderr);
        assert.doesNotMatch(r.stdout, /[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/, `${template}: ${JSON.stringify(r.stdout)}`);
        assert.match(r.stdout, /\\u202e/, template);
      }
      const json = await runCli([...args, '{{json .}}'], { env });
      assert.equal((JSON.parse(json.stdout) as ListedEntry).name, hostile, 'the JSON reads back as the name');
    } finally {
      await sim.close();
      home.cleanup();
    }
  });
});
