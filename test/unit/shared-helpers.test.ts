/**
 * The helpers every message uses exist once in src/ (one plural, one control-character escaper, one reading of a
 * config number), and the escaper
 * covers the widest range any caller needs: C0, DEL and C1, so no message can carry a terminal escape or a newline.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { escapeControls, escapeJsonText, hasControls } from '../../src/util/escape-controls.js';
import { TextReporter } from '../../src/cli/report/text-reporter.js';
import { NdjsonReporter } from '../../src/cli/report/ndjson-reporter.js';
import type { Context } from '../../src/context.js';
import { plural } from '../../src/util/plural.js';
import { wholeNumberOf } from '../../src/core/config-number.js';
import { REPO } from '../helpers/cli.js';

function sources(dir = path.join(REPO, 'src')): Array<{ file: string; text: string }> {
  return readdirSync(dir).flatMap((e) => {
    const p = path.join(dir, e);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith('.ts') ? [{ file: path.relative(REPO, p), text: readFileSync(p, 'utf8') }] : [];
  });
}

describe('one definition of each shared helper', () => {
  it('plural and the control-character escaper are defined once, in src/util', () => {
    const src = sources();
    const plurals = src.filter((f) => /(function plural\b|const plural\s*=)/.test(f.text)).map((f) => f.file);
    assert.deepEqual(plurals, ['src/util/plural.ts']);
    // A regular expression over the C0 range written anywhere else is another escaper (or its test).
    const escapers = src.filter((f) => /\\u0000-\\u00(08|1f)/.test(f.text)).map((f) => f.file);
    assert.deepEqual(escapers, ['src/util/escape-controls.ts']);
    // The digits-with-spaces reading of a config number, once.
    const numbers = src.filter((f) => f.text.includes(String.raw`/^\s*\d+\s*$/`)).map((f) => f.file);
    assert.deepEqual(numbers, ['src/core/config-number.ts']);
  });

  it('a config number: a YAML whole number or digits with spaces around; floor on request; nothing else', () => {
    assert.equal(wholeNumberOf(90), 90);
    assert.equal(wholeNumberOf(' 90 '), 90);
    assert.equal(wholeNumberOf('0'), 0);
    for (const bad of ['-1', '+5', '9.5', '1e3', 'soon', '', true, null, undefined, -1, 2.5, 2 ** 60, '99999999999999999999']) {
      assert.equal(wholeNumberOf(bad), undefined, String(bad));
    }
    assert.equal(wholeNumberOf(90.9, { floor: true }), 90);
    assert.equal(wholeNumberOf('90.9', { floor: true }), undefined, 'text is never floored');
  });

  it('escapes C0, DEL and C1 as \\uXXXX; keeps tabs, writes JSON short forms or doubles backslashes when asked', () => {
    assert.equal(escapeControls('a\nb\u001b[2J\u007f\u0085\u009fz'), 'a\\u000ab\\u001b[2J\\u007f\\u0085\\u009fz');
    assert.equal(escapeControls('é ü → \u00a0'), 'é ü → \u00a0', 'printable text, non-ASCII included, is left alone');
    assert.equal(escapeControls('a\tb\n', { keepTab: true }), 'a\tb\\u000a');
    assert.equal(escapeControls('x\ny\t\u0001', { short: true }), 'x\\ny\\t\\u0001');
    assert.equal(escapeControls('a\\u000a\n', { backslash: true }), 'a\\\\u000a\\u000a');
    assert.equal(
      escapeControls('a\u2028b\u202ec\u2066d\ufffde\ud800f\udc00g'),
      'a\\u2028b\\u202ec\\u2066d\\ufffde\\ud800f\\udc00g',
      'separators, bidi controls, U+FFFD, lone surrogates',
    );
    assert.equal(escapeControls('emoji \ud83d\ude00 stays'), 'emoji \ud83d\ude00 stays', 'a surrogate pair is a character');
    assert.equal(escapeControls('\u0000\u009f\u202e', { bytes: true }), '\\x00\\x9f\\u202e');
    assert.equal(hasControls('plain'), false);
    assert.equal(hasControls('bell\u0007'), true);
    assert.equal(hasControls('c1\u0090'), true);
  });

  it('JSON text: every character the escaper escapes written as a JSON escape; the strings read back exact', () => {
    const value = { name: 'a\u001b[2Jb\u009b31m\u2028c\u202ed\r\ufffd', nested: ['\u0085'] };
    for (const json of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
      const safe = escapeJsonText(json);
      assert.equal(hasControls(safe.replace(/\n/g, '')), false, safe);
      assert.deepEqual(JSON.parse(safe), value);
    }
  });

  it('the text and NDJSON reporters: a container name, profile and engine error an agent chose reach no terminal raw', async () => {
    const out: string[] = [];
    const ctx = {
      stdout: { write: (s: string) => out.push(s) },
      stderr: { write: (s: string) => out.push(s) },
      now: () => new Date(0),
      env: {},
    } as unknown as Context;
    const entry = {
      id: 'f'.repeat(64),
      name: 'hermes-\u001b]8;;http://x\u0007link\u001b]8;;\u0007',
      profile: 'p\rforged',
      state: 'exited',
      finishedAt: '',
      ageSeconds: 10,
      host: 'unix:///run/docker.sock',
      rule: 'exited' as const,
    };
    const r = {
      dryRun: false,
      asOf: new Date(0),
      thresholdSeconds: 600,
      profile: null,
      stopIdle: false,
      idleAfterSeconds: 600,
      removed: [entry],
      stopped: [],
      kept: [],
      failed: [{ ...entry, error: 'engine said \u009b2J' }],
      hosts: [{ host: 'h', reachable: true, error: null }],
      timedOut: false,
      timeoutSeconds: 10,
      warnings: ['w\u001b[1m'],
      failOpen: false,
      passes: [],
    };
    await new TextReporter(ctx, false).reapResult(r);
    await new NdjsonReporter(ctx, false).reapResult(r);
    new NdjsonReporter(ctx, false).sweepEvent({ type: 'removed', entry, dryRun: false });
    const all = out.join('');
    assert.match(all, /removed ffffffffffff hermes-\\u001b\]8;;http:\/\/x\\u0007link/);
    assert.equal(hasControls(all.replace(/\n/g, '')), false, JSON.stringify(all));
  });

  it('plural', () => {
    assert.equal(plural(1, 'session'), '1 session');
    assert.equal(plural(0, 'session'), '0 sessions');
    assert.equal(plural(2, 'running sandbox', 'running sandboxes'), '2 running sandboxes');
  });
});
