/**
 * The docs say what the code reads: the table of every `janitor.*` key in docs/reaping.md is rendered from the one
 * reader's declarations (`reaper/janitor-settings.ts` and each pass's keys), and every option of `reap`, `list`,
 * `watch` and `status` (the one option table, the passes' flags) is in the options section of the docs, and every
 * option that section names exists. `UPDATE_DOCS=1` writes the keys' table.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ACTION_OPTIONS, ENGINE_OPTIONS, OUTPUT_OPTIONS, REAP_OPTIONS, STATUS_OPTIONS, WATCH_OPTIONS } from '../../src/cli/engine-option-table.js';
import { GLOBAL_OPTIONS } from '../../src/cli/global-options.js';
import { PASSES, janitorSettings, passOptions } from '../../src/passes/index.js';
import { METRIC_FAMILIES } from '../../src/adapters/metrics.js';
import { REPO } from '../helpers/cli.js';

const START = '<!-- janitor-keys: rendered from the declarations (test/unit/docs-settings.test.ts); do not edit by hand -->';
const END = '<!-- /janitor-keys -->';

/** The table of every janitor.* key, one row each, in the reader's order. */
function keysTable(): string {
  const rows = janitorSettings().map((s) => {
    const accepts = s.kind === 'switch' ? `switch: ${s.accepts}` : `${s.kind}: ${s.accepts}`;
    return `| \`${s.key}\` | ${accepts} | ${
      s.flag
        ? s.flag
            .split(' or ')
            .map((f) => `\`${f}\``)
            .join(', ')
        : '-'
    } | ${s.defaultText} | ${s.description} |`;
  });
  return [START, '', '| Key | Accepts | Flag (wins over the key) | Default | What it does |', '|---|---|---|---|---|', ...rows, '', END].join('\n');
}

describe('the docs and the code agree', () => {
  const file = path.join(REPO, 'docs', 'reaping.md');

  it("the table of janitor.* keys in docs/reaping.md is the reader's declarations", () => {
    const text = readFileSync(file, 'utf8');
    const a = text.indexOf(START);
    const b = text.indexOf(END);
    assert.ok(a >= 0 && b > a, `docs/reaping.md has no keys table between ${START} and ${END}`);
    const shown = text.slice(a, b + END.length);
    if (process.env.UPDATE_DOCS === '1' && shown !== keysTable()) writeFileSync(file, text.replace(shown, keysTable()));
    else assert.equal(shown, keysTable(), 'run the test with UPDATE_DOCS=1 to render it');
  });

  it('every janitor.* key the code reads is declared (and so in the table); none is read by hand', () => {
    const declared = new Set(janitorSettings().map((s) => s.key));
    const src = path.join(REPO, 'src');
    const used = execFileSync('git', ['grep', '-h', '-o', "'janitor\\.[a-z_]*'", '--', src], { cwd: REPO, encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((l) => l.replace(/'/g, ''))
      .filter((k) => !/^janitor\.(log|prom|js|json)$/.test(k)); // file names, not keys
    for (const k of used) assert.ok(declared.has(k as `janitor.${string}`), `${k} is read in src/ but not declared`);
  });

  it("every option of reap, list, watch and status is in the docs' options (status's own in docs/status.md), and every option they name exists", () => {
    const declared: string[] = [
      ...GLOBAL_OPTIONS,
      ...ENGINE_OPTIONS,
      ...OUTPUT_OPTIONS,
      ...ACTION_OPTIONS,
      ...REAP_OPTIONS,
      ...WATCH_OPTIONS,
      ...STATUS_OPTIONS,
      ...passOptions(),
    ]
      .map((d) => d.flag)
      .concat(['--no-stop-idle', '--wide', '--format']);
    const text = readFileSync(file, 'utf8');
    const section = text.slice(text.indexOf('### Options (reap and list)'), text.indexOf('### Exit codes'));
    const watchDoc = readFileSync(path.join(REPO, 'docs', 'watch.md'), 'utf8');
    const statusDoc = readFileSync(path.join(REPO, 'docs', 'status.md'), 'utf8');
    for (const flag of new Set(declared)) {
      const own = (STATUS_OPTIONS.some((d) => d.flag === flag) ? statusDoc : watchDoc).includes(`\`${flag}`);
      assert.ok(section.includes(`\`${flag}`) || section.includes(`${flag} `) || own, `${flag} is not documented in the options`);
    }
    const named = new Set([...section.matchAll(/`(--[a-z][a-z-]*)/g)].map((m) => m[1]!));
    const docker = ['--init']; // a docker run flag the text refers to
    for (const flag of named) assert.ok(declared.includes(flag) || docker.includes(flag), `the docs name ${flag}, which no command takes`);
  });

  it("the metrics table of docs/operations.md lists every family of reap's file (the run's and each pass's), and no other", () => {
    const text = readFileSync(path.join(REPO, 'docs', 'operations.md'), 'utf8');
    const table = text.slice(text.indexOf('| Metric (all gauges) |'), text.indexOf('An unreachable engine has no'));
    const shown = new Set([...table.matchAll(/^\| `(hermes_janitor_[a-z_]+)`/gm)].map((m) => m[1]!));
    const declared = new Set([...Object.values(METRIC_FAMILIES).map((f) => f.name), ...PASSES.flatMap((p) => p.metrics?.families.map((f) => f.name) ?? [])]);
    assert.deepEqual([...shown].sort(), [...declared].sort());
  });
});
