/**
 * `hermes-janitor completion bash|zsh|fish` (built CLI): the script installs as documented, and its function,
 * called as the shell calls it (COMP_WORDS/COMP_CWORD for bash, words/CURRENT for zsh, `complete -C` for fish),
 * offers the commands, verbs, flags and enumerated values of the command tree. No node runs at a TAB: the script
 * is static (checked here by running it without hermes-janitor on PATH).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BIN, runCli, tempDir } from '../helpers/cli.js';
import { unmet } from '../helpers/preconditions.js';

const has = (cmd: string) => spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
/** Why a shell's test cannot run here (scripts/engine.sh installs zsh and fish: under CI a missing one fails). */
const missing = (shell: string) => !has(shell) && `${shell} is not installed (scripts/engine.sh shells installs it)`;

describe('shell completions', () => {
  const tmp = tempDir('hj-completion-');
  const bin = path.join(tmp.dir, 'bin');
  const scripts: Record<string, string> = {};

  before(async () => {
    mkdirSync(bin);
    writeFileSync(path.join(bin, 'hermes-janitor'), `#!/bin/sh\nexec '${process.execPath}' '${BIN}' "$@"\n`);
    chmodSync(path.join(bin, 'hermes-janitor'), 0o755);
    for (const shell of ['bash', 'zsh', 'fish']) {
      const r = await runCli(['completion', shell]);
      assert.equal(r.code, 0, r.stderr);
      scripts[shell] = path.join(tmp.dir, `hj.${shell}`);
      writeFileSync(scripts[shell]!, r.stdout);
    }
  });
  after(() => tmp.cleanup());

  it("bash: source <(hermes-janitor completion bash) registers it (the issue's own check)", () => {
    const r = spawnSync('bash', ['-c', 'source <(hermes-janitor completion bash); complete -p hermes-janitor'], {
      env: { PATH: `${bin}:/usr/bin:/bin`, HOME: tmp.dir },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'complete -F _hermes_janitor hermes-janitor');
  });

  /** What the bash function offers for these words (the last is the one at the cursor). */
  function bash(...words: string[]): string[] {
    const script =
      `source '${scripts.bash}'; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); ` +
      `COMP_CWORD=${words.length - 1}; _hermes_janitor; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const r = spawnSync('bash', ['--norc', '-c', script], { env: { PATH: '/usr/bin:/bin', HOME: tmp.dir }, encoding: 'utf8', cwd: tmp.dir });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.split('\n').filter(Boolean);
  }

  it('bash: commands, verbs, flags and enumerated values, after global options and aliases too', () => {
    assert.deepEqual(bash('hermes-janitor', 're'), ['reap', 'restart-guard']);
    assert.ok(bash('hermes-janitor', '').includes('completion'));
    assert.deepEqual(bash('hermes-janitor', '--profile', 'work', 'ls', '--wi'), ['--wide']);
    assert.deepEqual(bash('hermes-janitor', 'list', '--log-format', ''), ['text', 'json']);
    assert.deepEqual(bash('hermes-janitor', 'stop-hook', ''), ['arm', 'heartbeat', 'disarm', 'status']);
    assert.deepEqual(bash('hermes-janitor', 'tool-loop', 'pre', '--dialect', 'c'), ['claude', 'codex', 'copilot', 'cursor']);
    assert.deepEqual(bash('hermes-janitor', 'shell-init', ''), ['bash', 'zsh', 'fish']);
    assert.ok(bash('hermes-janitor', 'reap', '--').includes('--once-per'), 'reap flags');
    assert.ok(bash('hermes-janitor', 'reap', '--').includes('--profile'), 'and the global ones');
    // A flag's value is not taken for a command: `--home reap` then `li` is still the top level.
    assert.deepEqual(bash('hermes-janitor', '--home', 'reap', 'lis'), ['list']);
  });

  it('bash: every command and verb the program has is offered', async () => {
    const top = (await runCli(['--help'])).stdout;
    const commands = [...top.matchAll(/^ {2}([a-z][a-z-]*)(?:\|[a-z]+)?\s/gm)].map((m) => m[1]!).filter((c) => c !== 'help');
    assert.ok(commands.length >= 11);
    assert.deepEqual(
      bash('hermes-janitor', '')
        .filter((c) => c !== 'ls')
        .sort(),
      [...commands].sort(),
    );
    for (const parent of ['restart-guard', 'stuck-sessions', 'stop-hook', 'tool-loop']) {
      const help = (await runCli([parent, '--help'])).stdout;
      const verbs = [...(/\nCommands:\n([\s\S]*?)(?:\n\n|$)/.exec(help)?.[1] ?? '').matchAll(/^ {2}([a-z][a-z-]*)/gm)]
        .map((m) => m[1]!)
        .filter((v) => v !== 'help');
      assert.deepEqual(bash('hermes-janitor', parent, '').sort(), [...verbs].sort(), parent);
    }
  });

  it('zsh: the same answers through its completion functions', (t) => {
    if (unmet(t, missing('zsh'))) return;
    const run = (...words: string[]) => {
      const script = [
        'compdef() { :; }',
        `source '${scripts.zsh}'`,
        '_describe() { print -rl -- "${(@)${(P)4}%%:*}"; }',
        'compadd() { shift; print -rl -- "$@"; }',
        `words=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length}; _hermes_janitor`,
      ].join('\n');
      const r = spawnSync('zsh', ['-f', '-c', script], { env: { PATH: '/usr/bin:/bin', HOME: tmp.dir }, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      return r.stdout.split('\n').filter(Boolean);
    };
    assert.ok(run('hermes-janitor', 're').includes('reap'));
    assert.deepEqual(run('hermes-janitor', 'list', '--log-format', ''), ['text', 'json']);
    assert.deepEqual(run('hermes-janitor', 'stop-hook', ''), ['arm', 'heartbeat', 'disarm', 'status']);
    assert.ok(run('hermes-janitor', 'tool-loop', 'post', '-').includes('--failure-threshold'));
  });

  it('fish: the same answers through complete -C', (t) => {
    if (unmet(t, missing('fish'))) return;
    const run = (line: string) => {
      const r = spawnSync('fish', ['--no-config', '-c', `source '${scripts.fish}'; complete -C '${line}'`], {
        env: { PATH: '/usr/bin:/bin', HOME: tmp.dir },
        encoding: 'utf8',
      });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr, '');
      return r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]!);
    };
    assert.deepEqual(run('hermes-janitor re').sort(), ['reap', 'restart-guard']);
    assert.deepEqual(run('hermes-janitor list --log-format ').sort(), ['json', 'text']);
    assert.deepEqual(run('hermes-janitor stop-hook ').sort(), ['arm', 'disarm', 'heartbeat', 'status']);
    assert.deepEqual(run('hermes-janitor --profile work ls --wi'), ['--wide']);
  });
});
