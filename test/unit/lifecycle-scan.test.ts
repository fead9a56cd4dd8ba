import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { createLifecycleScan, resolveScriptPath, scanLifecycle } from '../../src/breakers/lifecycle-scan.js';
import { main } from '../../src/cli/main.js';
import type { Context } from '../../src/context.js';
import { decodeScript, displayLine, logicalLines, matchLine, scanText } from '../../src/core/lifecycle-scan.js';
import { assertUsageError, tempDir } from '../helpers/cli.js';

// The numbers these tests pin, stated here (not imported from the code under test): a change to one is a change this test must see.
/** Lifecycle-scan reads at most 4 MiB of a script. */
const MAX_SCAN_BYTES = 4 * 1024 * 1024;

const matches = (text: string) => scanText(text).total > 0;

describe('lifecycle-scan core: the issue lists', () => {
  for (const text of [
    'hermes gateway restart',
    'launchctl kickstart gui/501/ai.hermes.gateway',
    'systemctl stop hermes-gateway.service',
    'pkill -f hermes.*gateway',
  ]) {
    it(`matches: ${text}`, () => assert.equal(matches(text), true));
  }
  for (const text of [
    'hermes gateway start',
    'hermes cron list',
    'launchctl unload ai.hermes.update-checker.plist',
    'systemctl restart hermes-meta.service',
    'research the gateway architecture',
    'the payment gateway needs a restart',
  ]) {
    it(`does not match: ${text}`, () => assert.equal(matches(text), false));
  }
});

describe('lifecycle-scan core: hermes gateway restart|stop', () => {
  it('matches with any whitespace, any case and options between the words', () => {
    for (const t of [
      'hermes gateway stop',
      'HERMES Gateway RESTART',
      'hermes\tgateway  \t restart',
      'hermes -p work gateway restart',
      'hermes --profile work gateway stop',
      'hermes --profile=work -v gateway restart',
      'hermes gateway --force restart',
      'hermes -p gateway gateway restart',
      '/home/u/.local/bin/hermes gateway restart',
      'sudo -u hermes hermes gateway stop',
      'sh -c "hermes gateway restart"',
      "sh -c 'hermes gateway restart'",
      '\\hermes gateway restart',
      'echo hi; hermes gateway restart && echo done',
      'x=$(hermes gateway restart)',
      'cd /tmp && (hermes gateway stop)',
    ]) {
      assert.equal(matches(t), true, t);
    }
  });

  it('does not match other subcommands or other programs', () => {
    for (const t of [
      'hermes gateway start',
      'hermes gateway status',
      'hermes gateway',
      'hermes restart gateway',
      'hermes cron add "restart the gateway"',
      'hermesx gateway restart',
      'hermes-agent gateway restart',
      'hermes gateway startup restart-notes',
      'hermes status; gateway restart',
    ]) {
      assert.equal(matches(t), false, t);
    }
  });
});

describe('lifecycle-scan core: launchctl and systemctl', () => {
  it('matches every launchctl verb naming the gateway in any spelling', () => {
    for (const verb of ['kickstart', 'unload', 'load', 'stop', 'restart', 'bootout', 'bootstrap', 'remove', 'disable']) {
      for (const name of ['ai.hermes.gateway', 'hermes-gateway', 'com.x.hermesgateway', 'gui/501/ai.hermes.gateway']) {
        assert.equal(matches(`launchctl ${verb} ${name}`), true, `${verb} ${name}`);
        assert.equal(matches(`LaunchCtl ${verb.toUpperCase()} ${name.toUpperCase()}`), true, `${verb} ${name} upper`);
      }
    }
    assert.equal(matches('launchctl kickstart -k gui/501/ai.hermes.gateway'), true);
    assert.equal(matches('launchctl unload -w ~/Library/LaunchAgents/ai.hermes.gateway.plist'), true);
  });

  it('does not match launchctl verbs outside the list, or arguments that do not name the gateway', () => {
    for (const t of [
      'launchctl list ai.hermes.gateway',
      'launchctl print gui/501/ai.hermes.gateway',
      'launchctl kickstart gui/501/ai.hermes.update-checker',
      'launchctl unload x.plist; echo hermes-gateway',
      'echo ai.hermes.gateway | launchctl load',
    ]) {
      assert.equal(matches(t), false, t);
    }
  });

  it('matches systemctl restart|stop|start with options naming the gateway', () => {
    for (const t of [
      'systemctl restart hermes-gateway',
      'systemctl start hermes-gateway.service',
      'systemctl --user stop hermes-gateway@work.service',
      'sudo systemctl -q --no-block restart hermes.gateway',
      'systemctl -H host restart hermes-gateway',
      'systemctl --machine box stop hermesgateway',
      '/usr/bin/systemctl restart --user hermes-gateway',
    ]) {
      assert.equal(matches(t), true, t);
    }
    for (const t of [
      'systemctl status hermes-gateway',
      'systemctl enable hermes-gateway',
      'systemctl restart hermes-meta.service',
      'systemctl restart nginx && echo hermes-gateway',
      'journalctl -u hermes-gateway --since restart',
    ]) {
      assert.equal(matches(t), false, t);
    }
  });
});

describe('lifecycle-scan core: kill, pkill, killall', () => {
  it('matches with hermes and gateway on the same line, in either order', () => {
    for (const t of [
      'pkill -f "hermes gateway"',
      'pkill -f gateway.*hermes',
      'killall hermes-gateway',
      'kill -9 $(pgrep -f hermes_gateway)',
      "ps aux | grep gateway | grep Hermes | awk '{print $2}' | xargs kill",
      '/bin/kill -TERM `cat ~/.hermes/gateway.pid`',
    ]) {
      assert.equal(matches(t), true, t);
    }
    for (const t of ['pkill -f hermes', 'killall gateway', 'skill hermes gateway', 'kill-switch for hermes gateway docs', 'hermes gateway kill-list']) {
      assert.equal(matches(t), false, t);
    }
  });
});

describe('lifecycle-scan core: lines', () => {
  it('folds backslash-newline continuations first and reports the first physical line', () => {
    const text = 'echo one\nhermes gateway \\\n  restart\necho two\nsystemctl \\\r\nstop \\\nhermes-gateway\n';
    const r = scanText(text);
    assert.deepEqual(
      r.matches.map((m) => [m.line, m.rule, m.text]),
      [
        [2, 'hermes-gateway', 'hermes gateway   restart'],
        [5, 'systemctl', 'systemctl stop hermes-gateway'],
      ],
    );
    assert.equal(matches('hermes gate\\\nway restart'), true, 'a continuation inside a word joins it');
  });

  it('does not fold an escaped backslash at the end of a line', () => {
    assert.deepEqual(logicalLines('a \\\\\nb'), [
      { line: 1, text: 'a \\\\' },
      { line: 2, text: 'b' },
    ]);
    // the next line is a command of its own, and still matches
    assert.equal(matches('echo \\\\\nhermes gateway restart'), true);
  });

  it('does not join commands across lines', () => {
    assert.equal(matches('hermes gateway\nrestart'), false);
    assert.equal(matches('pkill -f hermes\necho gateway'), false);
  });

  it('reports one match per line and counts them all', () => {
    const text = Array.from({ length: 150 }, () => 'hermes gateway stop; hermes gateway restart').join('\n');
    const r = scanText(text);
    assert.equal(r.total, 150);
    assert.equal(r.matches.length, 100);
  });

  it('says where the command word is', () => {
    assert.deepEqual(matchLine('echo x; sudo systemctl stop hermes-gateway'), { rule: 'systemctl', at: 13 });
  });
});

describe('lifecycle-scan core: bytes and safety', () => {
  it('decodes invalid UTF-8 with replacement characters, which cannot hide a command', () => {
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('hermes gateway restart\n'), Buffer.from([0x80, 0xff])]);
    const text = decodeScript(bytes);
    assert.ok(text.startsWith('\ufffd'));
    assert.equal(matches(text), true);
    const glued = decodeScript(
      Buffer.concat([Buffer.from('echo x\n'), Buffer.from([0xff]), Buffer.from('launchctl kickstart \xff'), Buffer.from('gui/501/ai.hermes.gateway')]),
    );
    assert.equal(matches(glued), true);
  });

  it('escapes control characters and cuts long lines around the match for display', () => {
    assert.equal(displayLine('hermes gateway restart\u001b[2J\u0007'), 'hermes gateway restart\\u001b[2J\\u0007');
    const long = `${'x'.repeat(10_000)} hermes gateway restart ${'y'.repeat(10_000)}`;
    const shown = displayLine(long, matchLine(long)!.at);
    assert.ok(shown.length <= 402, String(shown.length));
    assert.ok(shown.includes('hermes gateway restart'));
    assert.ok(shown.startsWith('…') && shown.endsWith('…'));
  });

  it('scans multi-megabyte adversarial lines in linear time (no catastrophic backtracking)', { timeout: 120_000 }, () => {
    const MB = 1024 * 1024;
    const cases: Array<[string, boolean]> = [
      ['hermes -p '.repeat((4 * MB) / 10), false],
      ['systemctl -H '.repeat((4 * MB) / 13), false],
      ['launchctl '.repeat((4 * MB) / 10), false],
      ['launchctl stop '.repeat((4 * MB) / 15), false],
      [`${'hermes -x '.repeat((4 * MB) / 10)}gateway restart`, true],
      [`systemctl stop ${'-x '.repeat((4 * MB) / 3)} hermes-gateway`, true],
      [`${')'.repeat(4 * MB)}x`, false],
      ['\\'.repeat(4 * MB), false],
      [`kill ${'a'.repeat(4 * MB)}`, false],
      [' '.repeat(4 * MB), false],
      ['hermes\t'.repeat((4 * MB) / 7), false],
    ];
    for (const [text, expected] of cases) assert.equal(matches(text), expected, text.slice(0, 30));
  });
});

describe('lifecycle-scan breaker (in process)', () => {
  const tmp = tempDir('hj-ls-');
  after(tmp.cleanup);
  const home = path.join(tmp.dir, 'home');
  mkdirSync(path.join(home, 'scripts'), { recursive: true });

  it('resolves a relative script under <home>/scripts/', async () => {
    assert.equal(resolveScriptPath(home, 'restart.sh'), path.join(home, 'scripts', 'restart.sh'));
    assert.equal(resolveScriptPath(home, '/etc/x.sh'), '/etc/x.sh');
    writeFileSync(path.join(home, 'scripts', 'restart.sh'), '#!/bin/sh\nset -e\nlaunchctl kickstart -k gui/501/ai.hermes.gateway\n');
    const r = await scanLifecycle({ home, scripts: ['restart.sh'] });
    assert.equal(r.matched, true);
    assert.equal(r.matches[0]!.line, 3);
    assert.equal(r.matches[0]!.source, path.join(home, 'scripts', 'restart.sh'));
  });

  it('treats a missing, directory or FIFO script as a warning, not a match', async () => {
    const fifo = path.join(home, 'scripts', 'fifo');
    execFileSync('mkfifo', [fifo]);
    const r = await scanLifecycle({ home, scripts: ['missing.sh', '.', 'fifo', '/dev/zero'] });
    assert.equal(r.matched, false);
    assert.equal(r.warnings.length, 4);
    assert.match(r.warnings[0]!, /missing.sh does not exist; it was not scanned/);
    assert.match(r.warnings[1]!, /is a directory/);
    assert.match(r.warnings[2]!, /is not a regular file/);
    assert.match(r.warnings[3]!, /is not a regular file/);
  });

  it('scans at most maxBytes of each input and says so', async () => {
    const file = path.join(home, 'scripts', 'padded.sh');
    writeFileSync(file, `${'#'.repeat(1000)}\nhermes gateway restart\n`);
    const r = await scanLifecycle({ home, scripts: [file], maxBytes: 500 });
    assert.equal(r.matched, false);
    assert.equal(r.sources[0]!.truncated, true);
    assert.equal(r.sources[0]!.bytes, 500);
    assert.match(r.warnings[0]!, /larger than 500 bytes.*only its first 500 bytes were scanned/);
    const t = await scanLifecycle({ home, texts: ['x'.repeat(600)], maxBytes: 500 });
    assert.equal(t.sources[0]!.truncated, true);
  });

  it('stops reading an endless stdin after the cap', { timeout: 120_000 }, async () => {
    let produced = 0;
    const endless = new Readable({
      read() {
        produced += 65536;
        this.push(Buffer.alloc(65536, 0x41));
      },
    });
    const r = await scanLifecycle({ home, stdin: endless });
    assert.equal(r.matched, false);
    assert.equal(r.sources[0]!.truncated, true);
    assert.equal(r.sources[0]!.bytes, MAX_SCAN_BYTES);
    assert.ok(produced < MAX_SCAN_BYTES * 2);
  });

  it('joins several texts with spaces', async () => {
    const r = await createLifecycleScan({ home }).scanText('systemctl', 'stop', 'hermes-gateway.service');
    assert.equal(r.matched, true);
    assert.equal(r.matches[0]!.text, 'systemctl stop hermes-gateway.service');
  });
});

// ---- The command, in process ---------------------------------------------------------------------------------

async function cli(args: string[], input?: string | Buffer): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const ctx: Context = {
    argv: args,
    env: {},
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    stdin: Readable.from(input === undefined ? [] : [Buffer.from(input)]),
    cwd: '/',
    homedir: '/nonexistent-home',
    now: () => new Date(),
  };
  const code = await main(args, ctx);
  return { code, stdout, stderr };
}

describe('lifecycle-scan command (in process)', () => {
  const tmp = tempDir('hj-lsc-');
  after(tmp.cleanup);

  it('exits 1 and prints the matching line on stdout', async () => {
    const r = await cli(['lifecycle-scan', 'launchctl kickstart gui/501/ai.hermes.gateway']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'launchctl kickstart gui/501/ai.hermes.gateway\n');
    assert.match(r.stderr, /text line 1: gateway lifecycle command/);
  });

  it('exits 0 and prints nothing on stdout for a benign command', async () => {
    const r = await cli(['lifecycle-scan', 'hermes', 'gateway', 'start']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, '');
  });

  it('reads stdin when given neither TEXT nor --script', async () => {
    const r = await cli(['lifecycle-scan'], '0 * * * * cd /srv && \\\n  systemctl restart hermes-gateway\n');
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '0 * * * * cd /srv &&   systemctl restart hermes-gateway\n');
    assert.equal((await cli(['lifecycle-scan'], 'hermes cron list\n')).code, 0);
  });

  it('takes a command with options after --', async () => {
    const r = await cli(['lifecycle-scan', '--', 'pkill', '-f', 'hermes.*gateway']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'pkill -f hermes.*gateway\n');
  });

  it('resolves --script under <home>/scripts and warns (exit 0) when it is missing', async () => {
    const home = path.join(tmp.dir, 'h1');
    mkdirSync(path.join(home, 'scripts'), { recursive: true });
    writeFileSync(path.join(home, 'scripts', 'job.sh'), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('\nhermes -p work gateway restart\n')]));
    const r = await cli(['--home', home, 'lifecycle-scan', '--script', 'job.sh']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'hermes -p work gateway restart\n');
    const m = await cli(['--home', home, 'lifecycle-scan', '--script', 'nope.sh']);
    assert.equal(m.code, 0);
    assert.match(m.stderr, /^hermes-janitor: warning: script .*nope.sh does not exist; it was not scanned\n$/);
  });

  it('prints one JSON document with --json', async () => {
    const r = await cli(['lifecycle-scan', '--json', 'echo ok\nsystemctl stop hermes-gateway.service']);
    assert.equal(r.code, 1);
    const j = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.equal(j.decision, 'refuse');
    assert.equal(j.matched, true);
    assert.deepEqual(j.matches, [{ source: 'text', line: 2, rule: 'systemctl', text: 'systemctl stop hermes-gateway.service' }]);
    const ok = JSON.parse((await cli(['lifecycle-scan', '--json', 'hermes cron list'])).stdout) as Record<string, unknown>;
    assert.equal(ok.decision, 'allow');
    assert.deepEqual(ok.matches, []);
  });

  it('rejects unknown options with exit 2 and documents the cap and exit codes in --help', async () => {
    assertUsageError(await cli(['lifecycle-scan', '--bogus', 'x']), ["unknown option '--bogus'"]);
    assertUsageError(await cli(['lifecycle-scan', '--script']), ["option '--script <path>' argument missing"]);
    const h = await cli(['lifecycle-scan', '--help']);
    assert.equal(h.code, 0);
    assert.match(h.stdout, /At most the first 4 MiB/);
    assert.match(h.stdout, /Exit codes:/);
  });
});
