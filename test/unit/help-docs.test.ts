/**
 * `hermes-janitor <command> --help` ends with the page of the docs that covers the command, as a path to a file
 * that exists (the one shipped in the package: docs/ is in package.json's `files`, see
 * test/integration/package-files.test.ts), and the program's own --help ends with the README.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { main } from '../../src/cli/main.js';
import type { Context } from '../../src/context.js';
import { REPO } from '../helpers/cli.js';

async function help(args: string[]): Promise<string> {
  let stdout = '';
  const ctx: Context = {
    argv: args,
    env: {},
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: () => true },
    stdin: Readable.from([]),
    cwd: '/',
    homedir: '/nonexistent-home',
    now: () => new Date(),
  };
  assert.equal(await main([...args, '--help'], ctx), 0, `${args.join(' ')} --help exits 0`);
  return stdout;
}

/** The command names a help text lists under "Commands:" (not commander's own `help`). */
function commandsOf(text: string): string[] {
  const section = /\nCommands:\n([\s\S]*?)(?:\n\n|$)/.exec(text);
  if (!section) return [];
  return [...section[1]!.matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!).filter((n) => n !== 'help');
}

/** The page named by the help text's last line, which must be `Docs: <path of an existing file>`. */
function docsPage(text: string, what: string): string {
  const last = text.trimEnd().split('\n').at(-1)!;
  const m = /^Docs: (.+)$/.exec(last);
  assert.ok(m, `${what}: the help ends with a Docs: line, not ${JSON.stringify(last)}`);
  const page = m[1]!;
  assert.ok(path.isAbsolute(page), `${what}: ${page} is a path that opens from anywhere`);
  assert.ok(existsSync(page), `${what}: ${page} exists`);
  return path.relative(REPO, page);
}

/** Which page covers which command. */
const PAGES: Record<string, string> = {
  list: 'docs/reaping.md',
  reap: 'docs/reaping.md',
  status: 'docs/status.md',
  watch: 'docs/watch.md',
  'shell-init': 'docs/operations.md',
  'restart-guard': 'docs/breakers.md',
  'lifecycle-scan': 'docs/breakers.md',
  'stuck-sessions': 'docs/breakers.md',
  'stop-hook': 'docs/breakers.md',
  'tool-loop': 'docs/breakers.md',
  completion: 'docs/operations.md',
};

describe('--help ends with the docs page of the command', () => {
  it('hermes-janitor --help: the README', async () => {
    assert.equal(docsPage(await help([]), 'hermes-janitor'), 'README.md');
  });

  it('every command, with the page that documents it', async () => {
    const commands = commandsOf(await help([]));
    assert.deepEqual([...commands].sort(), Object.keys(PAGES).sort(), 'every command the program lists has its page here');
    for (const name of commands) {
      const page = docsPage(await help([name]), name);
      assert.equal(page, PAGES[name], `${name} --help names ${PAGES[name]}`);
      const text = readFileSync(path.join(REPO, page), 'utf8');
      assert.ok(new RegExp(`^#{1,4} .*\\b${name}\\b`, 'm').test(text) || text.includes(`hermes-janitor ${name}`), `${page} documents ${name}`);
    }
  });

  it("the breakers' verbs too (restart-guard, stuck-sessions)", async () => {
    for (const parent of ['restart-guard', 'stuck-sessions']) {
      const verbs = commandsOf(await help([parent]));
      assert.ok(verbs.length >= 3, `${parent} lists its verbs`);
      for (const verb of verbs) assert.equal(docsPage(await help([parent, verb]), `${parent} ${verb}`), 'docs/breakers.md');
    }
  });
});

/** Every command and verb, as argv: the program, each command, each verb a command lists. */
async function everyHelp(): Promise<string[][]> {
  const out: string[][] = [[]];
  for (const name of commandsOf(await help([]))) {
    out.push([name]);
    for (const verb of commandsOf(await help([name]))) out.push([name, verb]);
  }
  return out;
}

/** The options of a help text, each with its whole description (its continuation lines joined). */
function optionEntries(text: string): Array<{ flag: string; text: string }> {
  const out: Array<{ flag: string; text: string }> = [];
  for (const section of text.matchAll(/\n(?:Global )?Options:\n([\s\S]*?)(?:\n\n|$)/g)) {
    for (const line of section[1]!.split('\n')) {
      const m = /^ {2}(-\S+(?:, --\S+)?)(?: <[^>]+>)?\s+(.*)$/.exec(line);
      if (m) out.push({ flag: m[1]!, text: m[2]! });
      else if (out.length) out.at(-1)!.text += ` ${line.trim()}`;
    }
  }
  return out;
}

describe('--help fits a terminal', () => {
  it('every command and verb: no line over 80 columns, an exit code section, each default said once', async () => {
    for (const argv of await everyHelp()) {
      const what = `hermes-janitor ${argv.join(' ')} --help`;
      const text = await help(argv);
      for (const line of text.split('\n').filter((l) => !l.startsWith('Docs: '))) assert.ok(line.length <= 80, `${what}: ${line.length} columns: ${line}`);
      assert.match(text, /^Exit codes:/m, `${what}: an exit code section`);
      for (const o of optionEntries(text)) {
        const defaults = o.text.match(/\bdefault\b/g)?.length ?? 0;
        assert.ok(defaults <= 1, `${what}: ${o.flag} says its default ${defaults} times: ${o.text}`);
      }
    }
  });

  it('--timeout says 10s, and that a bare number is seconds', async () => {
    const text = (await help(['reap'])).replace(/\s+/g, ' ');
    assert.match(text, /--timeout <duration> [^-]*a bare number is seconds[^-]*\(default: 10s\)/);
    assert.doesNotMatch(text, /10000/);
  });
});
