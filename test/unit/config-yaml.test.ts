/**
 * Reading a home's config.yaml (adapters/config.ts): YAML 1.2's core schema as before, an empty document null, a file
 * that does not parse a `problem` naming it, hermes' seeded size parsed in the run and a larger file in the worker,
 * both giving the same data.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../src/adapters/config.js';

describe('config.yaml as the janitor reads it', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hj-yaml-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const read = async (text: string) => {
    writeFileSync(path.join(dir, 'config.yaml'), text);
    return loadConfig(dir);
  };
  /** A config.yaml shaped like hermes' seeded one (mostly comments), of about `bytes`, with the terminal keys given. */
  const seeded = (bytes: number) => {
    let s = 'terminal:\n  lifetime_seconds: 900\n  env:\n    TMPDIR: /var/tmp/h\n';
    for (let i = 0; s.length < bytes; i++) {
      s += `# ====\n# Section ${i}: what its options mean, in a line or two of prose\nsection${i}:\n`;
      for (let j = 0; j < 4; j++) s += `  # key ${j}: what it does, and its default\n  key_${j}: "value ${j}"  # trailing\n  # other_${j}: 12\n`;
    }
    return s;
  };

  it('an empty file and one of comments only: there, readable, a null document (every key absent)', async () => {
    for (const text of ['', '# nothing set\n']) {
      const c = await read(text);
      assert.equal(c.problem, undefined);
      assert.equal(c.data, null);
      assert.equal(c.get('terminal.lifetime_seconds'), undefined);
    }
  });

  it("YAML 1.2's core schema: yes and on are words, 0o17 octal, 0x1f hex, ~ null", async () => {
    const c = await read('janitor:\n  a: yes\n  b: on\n  c: 0o17\n  d: 0x1f\n  e: ~\n  f: true\n');
    assert.deepEqual(c.data, { janitor: { a: 'yes', b: 'on', c: 15, d: 31, e: null, f: true } });
  });

  it('a file that does not parse (bad indentation, a duplicate key, nesting past 100, two documents): a problem naming the file', async () => {
    for (const text of ['terminal:\n  a: 1\n b: 2\n', 'terminal:\n  a: 1\n  a: 2\n', `a: ${'['.repeat(200)}${']'.repeat(200)}\n`, 'a: 1\n---\nb: 2\n']) {
      const c = await read(text);
      assert.match(c.problem ?? '', new RegExp(`^${path.join(dir, 'config.yaml').replace(/[.]/g, '\\.')} is not valid YAML \\(.+\\)$`), text);
      assert.equal(c.data, undefined);
    }
  });

  it("hermes' seeded size (126 KB) in the run, a file over 256 KiB in the worker: the same keys read", async () => {
    for (const bytes of [126_000, 300 * 1024]) {
      const c = await read(seeded(bytes));
      assert.equal(c.problem, undefined, String(bytes));
      assert.equal(c.get('terminal.lifetime_seconds'), 900);
      assert.equal(c.get('terminal.env.TMPDIR'), '/var/tmp/h');
      assert.equal(c.get('section3.key_2'), 'value 2');
    }
  });

  it('aliases of aliases (a billion laughs) read as shared references, at once', async () => {
    let s = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
    for (let i = 1; i < 30; i++)
      s += `a${i}: &a${i} [${Array(10)
        .fill(`*a${i - 1}`)
        .join(', ')}]\n`;
    const c = await read(`${s}terminal:\n  lifetime_seconds: 60\n`);
    assert.equal(c.get('terminal.lifetime_seconds'), 60);
  });
});
