/**
 * Which homes `--homes` and `--all-homes` find (adapters/home-discovery.ts): globs one component at a time as sh does,
 * and each user's `~/.hermes` from the password database.
 */
import assert from 'node:assert/strict';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  GLOB_DIR_ENTRIES_CAP,
  PROCESS_ROOTS_PER_USER,
  capRoots,
  expandHomes,
  passwdHomes,
  processHomes,
  uniqueHomes,
} from '../../src/adapters/home-discovery.js';

describe('the homes of a run over several', () => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'hj-disc-'));
  after(() => rmSync(base, { recursive: true, force: true }));
  for (const u of ['alice', 'bob', '.hidden', 'carol']) mkdirSync(path.join(base, 'home', u, u === 'carol' ? 'no-hermes' : '.hermes'), { recursive: true });
  writeFileSync(path.join(base, 'home', 'file'), '');

  it("a glob such as '/home/*/.hermes': each matching directory, sorted; a leading dot only by a leading dot; a plain path as is", () => {
    const g = path.join(base, 'home', '*', '.hermes');
    assert.deepEqual(expandHomes(g, '/'), [path.join(base, 'home', 'alice', '.hermes'), path.join(base, 'home', 'bob', '.hermes')]);
    assert.deepEqual(expandHomes(path.join(base, 'home', '[ab]*', '.hermes'), '/').length, 2);
    assert.deepEqual(expandHomes(path.join(base, 'home', '.h*', '.hermes'), '/'), [path.join(base, 'home', '.hidden', '.hermes')]);
    assert.deepEqual(expandHomes('nothing/here', base), [path.join(base, 'nothing', 'here')], 'a path that does not exist yet: an empty home');
    assert.deepEqual(expandHomes(path.join(base, 'none', '*'), '/'), []);
  });

  it("each user's ~/.hermes that is a directory, from the password database", () => {
    const passwd = path.join(base, 'passwd');
    const line = (name: string) => `${name}:x:1000:1000::${path.join(base, 'home', name)}:/bin/sh`;
    writeFileSync(passwd, [line('alice'), line('carol'), 'broken', line('bob'), 'root:x:0:0::relative:/bin/sh'].join('\n'));
    assert.deepEqual(passwdHomes(passwd), [path.join(base, 'home', 'alice', '.hermes'), path.join(base, 'home', 'bob', '.hermes')]);
  });

  it('each home once, by its real path', () => {
    const a = path.join(base, 'home', 'alice', '.hermes');
    symlinkSync(a, path.join(base, 'alias'));
    assert.deepEqual(uniqueHomes([a, path.join(base, 'alias'), a]), [a]);
  });
  it('a directory a glob reads that holds more than the cap: read that far, the rest not matched, and a note naming the pattern and the directory', () => {
    const full = path.join(base, 'full');
    mkdirSync(full);
    for (let i = 0; i < GLOB_DIR_ENTRIES_CAP + 50; i++) closeSync(openSync(path.join(full, `f${i}`), 'w'));
    for (const u of ['h1', 'h2']) mkdirSync(path.join(full, u));
    const notes: string[] = [];
    const pattern = path.join(full, '*');
    const found = expandHomes(pattern, '/', notes);
    assert.equal(notes.length, 1, notes.join('\n'));
    assert.match(notes[0]!, new RegExp(`^--homes ${pattern.replace(/[.*]/g, '\\$&')}: ${full} holds more than ${GLOB_DIR_ENTRIES_CAP} entries`));
    assert.ok(found.length <= 2 && found.every((h) => /\/h[12]$/.test(h)), found.join(' '));
    const few: string[] = [];
    assert.deepEqual(expandHomes(path.join(base, 'home', '*', '.hermes'), '/', few).length, 2);
    assert.deepEqual(few, [], 'a directory under the cap: no note');
  });

  it('more roots than a run reads: the first ones found, and a note saying how many were found and the cap', () => {
    const notes: string[] = [];
    const found = Array.from({ length: 12 }, (_, i) => `/r/${i}`);
    assert.deepEqual(capRoots(found, '--all-homes', notes, 10), found.slice(0, 10));
    assert.equal(notes.length, 1);
    assert.match(notes[0]!, /^--all-homes: 12 hermes roots found, more than 10: only the first 10 are read/);
    const none: string[] = [];
    assert.deepEqual(capRoots(found, '--homes', none, 12), found);
    assert.deepEqual(none, [], 'at the cap: no note');
  });

  it("one user's processes naming many hermes roots: at most PROCESS_ROOTS_PER_USER of theirs, oldest first, and a note naming the user", async () => {
    const dir = path.join(base, 'flood');
    mkdirSync(dir);
    const script = path.join(dir, 'hermes');
    writeFileSync(script, '#!/bin/sh\nsleep 3600\n'); // not exec: the shell, named hermes, stays
    chmodSync(script, 0o755);
    const count = PROCESS_ROOTS_PER_USER + 4;
    const roots = Array.from({ length: count }, (_, i) => path.join(dir, `root${String(i).padStart(2, '0')}`));
    const kids = [];
    try {
      for (const root of roots) {
        kids.push(
          spawn('/bin/sh', [script, 'gateway', 'run'], { env: { PATH: '/usr/bin:/bin', HOME: dir, HERMES_HOME: root }, detached: true, stdio: 'ignore' }),
        );
        await sleep(15); // each started later than the one before: "oldest first" is the spawn order
      }
      await sleep(200);
      const notes: string[] = [];
      const got = processHomes('/proc', notes);
      const ours = got.filter((r) => r.startsWith(`${dir}/`));
      // Another hermes of this user on the host (its gateway alive) takes part of the same allowance.
      const others = got.length - ours.length;
      assert.ok(ours.length <= PROCESS_ROOTS_PER_USER && ours.length >= PROCESS_ROOTS_PER_USER - others, `${ours.length} of ours read (${others} other roots)`);
      assert.deepEqual(ours, roots.slice(0, ours.length), 'the oldest processes first');
      const uid = process.getuid?.() ?? 0;
      assert.ok(
        notes.some((n) => n.startsWith(`--all-homes: the hermes processes of uid ${uid} name more than ${PROCESS_ROOTS_PER_USER} hermes roots`)),
        notes.join('\n'),
      );
    } finally {
      for (const k of kids) if (k.pid) process.kill(-k.pid, 'SIGKILL');
    }
  });
});
