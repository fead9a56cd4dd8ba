/**
 * The documentation holds together: every relative link and `#anchor` in README.md and docs/*.md resolves (anchors
 * as GitHub makes them from headings), and the README's two set-up commands are the ones the repository really runs
 * (.ci/run, package.json's test script, scripts/test.sh, scripts/engine.sh, the bin).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { REPO } from '../helpers/cli.js';

/** GitHub's heading anchor (github-slugger): lower case, punctuation removed (not `-` or `_`), each space a `-`. */
function slug(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text only
    .replace(/<[^>]+>/g, ''); // inline HTML
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Lines outside fenced code blocks, with their line numbers. */
function proseLines(text: string): Array<{ n: number; line: string }> {
  const out: Array<{ n: number; line: string }> = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === undefined) fence = m[1]![0];
      else if (m[1]![0] === fence) fence = undefined;
      return;
    }
    if (fence === undefined) out.push({ n: i + 1, line });
  });
  return out;
}

/** The anchors of a Markdown file's headings, duplicates suffixed -1, -2, ... as GitHub does. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { line } of proseLines(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** Inline links `[text](target)` outside code (fenced blocks and code spans). */
function links(text: string): Array<{ n: number; target: string }> {
  const out: Array<{ n: number; target: string }> = [];
  for (const { n, line } of proseLines(text)) {
    const prose = line.replace(/`[^`]*`/g, '``');
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push({ n, target: m[1]! });
  }
  return out;
}

/**
 * Every relative link that does not resolve, as `file:line: target (why)`. `files` maps a path relative to the
 * repository to its text; a target outside it is looked up on disk under `root`.
 */
function brokenLinks(files: Map<string, string>, root: string): string[] {
  const problems: string[] = [];
  for (const [file, text] of files) {
    for (const { n, target } of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check
      const [rel, anchor] = target.split('#', 2) as [string, string | undefined];
      const dest = rel === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), rel));
      const where = `${file}:${n}: ${target}`;
      const destText = files.get(dest);
      if (destText === undefined && !existsSync(path.join(root, dest))) {
        problems.push(`${where} (no such file: ${dest})`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!dest.endsWith('.md')) {
        problems.push(`${where} (an anchor into a file that is not Markdown)`);
        continue;
      }
      const headings = anchors(destText ?? readFileSync(path.join(root, dest), 'utf8'));
      if (!headings.has(anchor)) problems.push(`${where} (no heading in ${dest} has the anchor #${anchor})`);
    }
  }
  return problems;
}

function docsFiles(): Map<string, string> {
  const files = new Map<string, string>([['README.md', readFileSync(path.join(REPO, 'README.md'), 'utf8')]]);
  for (const name of readdirSync(path.join(REPO, 'docs')).sort()) {
    if (name.endsWith('.md')) files.set(`docs/${name}`, readFileSync(path.join(REPO, 'docs', name), 'utf8'));
  }
  return files;
}

describe('docs: links and anchors', () => {
  it("makes anchors as GitHub does: lower case, punctuation dropped, '-' for spaces, -1, -2 for duplicates", () => {
    assert.equal(slug('Idle sandboxes: stopped after an idleness proof'), 'idle-sandboxes-stopped-after-an-idleness-proof');
    assert.equal(slug('Metrics for node_exporter'), 'metrics-for-node_exporter');
    assert.equal(slug('Options (reap and list)'), 'options-reap-and-list');
    assert.equal(slug('Agent loop breakers (Claude Code hooks)'), 'agent-loop-breakers-claude-code-hooks');
    assert.equal(slug('Reaping: what `reap` and `list` remove, stop and keep'), 'reaping-what-reap-and-list-remove-stop-and-keep');
    assert.equal(slug('See [the guide](GUIDE.md) now'), 'see-the-guide-now');
    assert.deepEqual([...anchors('# A\n## A\n```sh\n# A (a comment, not a heading)\n```\n### A\n## B.\n')], ['a', 'a-1', 'a-2', 'b']);
  });

  it('finds a broken link, a missing page and a wrong anchor (the check can fail)', () => {
    const files = new Map([
      ['README.md', '# Top\n[ok](docs/a.md#two-words) [page](docs/missing.md) [anchor](docs/a.md#nope) [self](#top) `[code](nowhere.md)`\n'],
      ['docs/a.md', '# A\n## Two words\n[back](../README.md#top) [up](#a) [bad](#b)\n```\n[fenced](gone.md)\n```\n'],
    ]);
    assert.deepEqual(brokenLinks(files, '/nonexistent-root'), [
      'README.md:2: docs/missing.md (no such file: docs/missing.md)',
      'README.md:2: docs/a.md#nope (no heading in docs/a.md has the anchor #nope)',
      'docs/a.md:3: #b (no heading in docs/a.md has the anchor #b)',
    ]);
  });

  it('every relative link and #anchor in README.md and docs/*.md resolves', () => {
    const files = docsFiles();
    assert.ok(files.size >= 7, 'README.md and the docs pages');
    const all = [...files.values()].flatMap((t) => links(t)).filter((l) => !/^[a-z]+:/i.test(l.target));
    assert.ok(all.length >= 40, `the pages link to each other (${all.length} relative links)`);
    assert.deepEqual(brokenLinks(files, REPO), []);
  });

  it('every docs page opens with who needs it, and the README links every page', () => {
    const files = docsFiles();
    const readme = files.get('README.md')!;
    for (const [file, text] of files) {
      if (file === 'README.md') continue;
      assert.match(text, /^# .+\n\nFor /, `${file}: a title, then a paragraph starting "For ..." (who needs the page)`);
      assert.ok(readme.includes(`](${file})`), `README.md links ${file}`);
    }
  });

  it('README.md stays a front page: at most 300 lines', () => {
    const lines = readFileSync(path.join(REPO, 'README.md'), 'utf8').split('\n').length;
    assert.ok(lines <= 300, `README.md has ${lines} lines`);
  });
});

/** The `sh` blocks of the README's set-up section. */
function setupCommands(): { tryIt: string; test: string } {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const start = readme.indexOf('## Set up on a fresh machine');
  assert.ok(start >= 0, 'the README has its set-up section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
  assert.equal(blocks.length, 2, 'two commands: one to try it, one to run the tests');
  return { tryIt: blocks[0]!, test: blocks[1]! };
}

const steps = (command: string) => command.split('&&').map((s) => s.trim().split(/\s+/));

/** The commands a shell script runs (not comments, not set/cd/export/echo), each as words. */
function scriptCommands(file: string): string[][] {
  return readFileSync(path.join(REPO, file), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#') && !/^(set|cd|export|echo)\b/.test(l))
    .map((l) => l.split(/\s+/));
}

describe("README: the two set-up commands are the repository's own", () => {
  const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string>; bin: Record<string, string> };

  it('the test command is what .ci/run runs (npm ci, npm test; CI adds only quieter flags)', () => {
    const readme = steps(setupCommands().test);
    const ci = scriptCommands('.ci/run');
    assert.deepEqual(
      readme.map((w) => w.slice(0, 2).join(' ')),
      ci.map((w) => w.slice(0, 2).join(' ')),
      '.ci/run runs the same steps in the same order',
    );
    ci.forEach((words, i) => {
      const extra = words.slice(readme[i]!.length);
      assert.deepEqual(words.slice(0, readme[i]!.length), readme[i], `.ci/run step ${i + 1} starts with the README's`);
      for (const flag of extra) assert.match(flag, /^--no-(audit|fund)$/, `.ci/run step ${i + 1} adds only output flags, not ${flag}`);
    });
    // `npm test` is scripts/test.sh, which builds and starts the engines itself.
    assert.equal(pkg.scripts.test, 'bash scripts/test.sh');
    const suite = scriptCommands('scripts/test.sh').map((w) => w.join(' '));
    assert.ok(suite.includes('npm run --silent build'), 'scripts/test.sh builds');
    assert.ok(
      suite.some((c) => c.startsWith('bash scripts/engine.sh start')),
      'scripts/test.sh starts the engines',
    );
  });

  it('the try-it command installs as CI does, starts the engine with the script the tests use, and runs the bin', () => {
    const [install, engine, run, ...rest] = steps(setupCommands().tryIt);
    assert.deepEqual(rest, []);
    assert.deepEqual(install, steps(setupCommands().test)[0], 'the same install step as the test command');
    assert.deepEqual(engine, ['bash', 'scripts/engine.sh', 'start']);
    assert.ok(statSync(path.join(REPO, 'scripts/engine.sh')).isFile());
    assert.match(readFileSync(path.join(REPO, 'scripts/engine.sh'), 'utf8'), /ENGINE="\$\{2:-docker\}"/, 'start with no engine starts docker');
    assert.ok(
      scriptCommands('scripts/test.sh').some((w) => w.slice(0, 3).join(' ') === 'bash scripts/engine.sh start'),
      'the same script and verb as the suite',
    );
    assert.deepEqual(run, ['node', pkg.bin['hermes-janitor']!.replace(/^\.\//, ''), 'list'], 'the package bin, with list');
    assert.ok(pkg.scripts.build && pkg.scripts.prepare === 'node scripts/prepare.cjs', 'npm ci builds the CLI (prepare)');
    assert.match(readFileSync(path.join(REPO, 'scripts/prepare.cjs'), 'utf8'), /npm\(\['run', 'build'\]\)/, 'prepare runs the build');
  });
});

describe('the documented cron line', () => {
  it("the README's is docs/operations.md's, covers every profile, names the stable install path and takes only reap's flags", async () => {
    const { REAP_COMMAND_OPTIONS } = await import('../../src/cli/engine-option-table.js');
    const { GLOBAL_OPTIONS } = await import('../../src/cli/global-options.js');
    const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
    const row = /^\| Cron \| `([^`]+)`/m.exec(readme)?.[1];
    const ops = readFileSync(path.join(REPO, 'docs', 'operations.md'), 'utf8');
    const block = /```cron\n([\s\S]*?)```/.exec(ops)?.[1] ?? '';
    const line = block.split('\n').find((l) => l.trim() && !l.startsWith('#'));
    assert.ok(row && line, 'a cron line in each');
    assert.equal(row, line, 'one cron line, the same in both');
    // Without --all-profiles a run judges the home's own profile only: the others' containers would stay for ever.
    assert.match(line, /^\*\/15 \* \* \* \* HERMES_HOME=\S+ \/usr\/local\/bin\/hermes-janitor reap .*--all-profiles/);
    const flags = line.split(/\s+/).filter((w) => w.startsWith('--'));
    const known = new Set([...REAP_COMMAND_OPTIONS, ...GLOBAL_OPTIONS].map((d) => d.flag));
    for (const f of flags) assert.ok(known.has(f as `--${string}`), `reap takes ${f}`);
  });
});
