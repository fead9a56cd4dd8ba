/**
 * Root's walk to a directory (src/adapters/trust.ts `walkDir`) on real files: a directory walked a moment ago through
 * directories only root controls is opened again by its real path, and only when it is still the same directory; one
 * that was replaced (another directory, a symlink) or that a user controls is walked again from `/`. As root only
 * (the walk is root's); skipped otherwise.
 */
import assert from 'node:assert/strict';
import { chmodSync, closeSync, fstatSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { rememberedRootOnly, rootRules, walkDir } from '../../src/adapters/trust.js';

const base = mkdtempSync(path.join(os.tmpdir(), 'hj-walk-'));
after(() => rmSync(base, { recursive: true, force: true }));

/** The inode of the directory a walk to `dir` ended at (the walk's descriptor closed). */
function walkedIno(dir: string): { ino: number; real: string; controllers: number } {
  const w = walkDir(dir);
  try {
    return { ino: fstatSync(w.fd).ino, real: w.real, controllers: w.controllers.size };
  } finally {
    closeSync(w.fd);
  }
}

describe('root walks a directory again unless it is the same one, reached through directories only root controls', { skip: !rootRules() && 'not root' }, () => {
  it('a root-only directory replaced by another one right after a walk: the next walk ends at the new one', () => {
    const dir = path.join(base, 'a');
    mkdirSync(dir);
    const first = walkedIno(dir);
    assert.equal(first.ino, statSync(dir).ino);
    assert.equal(first.controllers, 0);
    renameSync(dir, `${dir}.old`);
    mkdirSync(dir);
    assert.notEqual(statSync(dir).ino, first.ino);
    assert.equal(walkedIno(dir).ino, statSync(dir).ino, 'the walk ends at the directory there now, not the one walked before');
  });

  it('a root-only directory replaced by a symlink: the next walk follows it as a walk does (the real path is the target)', () => {
    const dir = path.join(base, 'b');
    const target = path.join(base, 'b-target');
    mkdirSync(dir);
    mkdirSync(target);
    walkedIno(dir);
    rmSync(dir, { recursive: true });
    symlinkSync(target, dir);
    const again = walkedIno(dir);
    assert.equal(again.real, target);
    assert.equal(again.ino, statSync(target).ino);
  });

  it('a directory under one every user can write is walked every time: replaced, the next walk ends at the new one', () => {
    const parent = path.join(base, 'c');
    mkdirSync(parent);
    chmodSync(parent, 0o777); // no sticky bit: every user controls what is in it
    const dir = path.join(parent, 'd');
    mkdirSync(dir);
    const first = walkedIno(dir);
    assert.ok(first.controllers > 0, 'every user controls the way');
    renameSync(dir, `${dir}.old`);
    mkdirSync(dir);
    const again = walkedIno(dir);
    assert.equal(again.ino, statSync(dir).ino);
    assert.ok(again.controllers > 0);
  });
  it('a walk below a directory walked a moment ago goes on from it, and still refuses a symlink a user planted below it', () => {
    const home = path.join(base, 'e');
    mkdirSync(home);
    walkedIno(home);
    const state = path.join(home, 'state');
    mkdirSync(state);
    assert.equal(walkedIno(state).ino, statSync(state).ino);
    const open = path.join(home, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const other = path.join(base, 'e-other');
    mkdirSync(other);
    symlinkSync(other, path.join(open, 'link'));
    assert.throws(() => walkDir(path.join(open, 'link')), /symlink in a directory every user can change/);
  });
  it('a long run remembers a bounded number of directories, however many it walks', () => {
    const many = path.join(base, 'many');
    mkdirSync(many);
    for (let i = 0; i < 600; i++) {
      const dir = path.join(many, `d${i}`);
      mkdirSync(dir);
      assert.equal(walkedIno(dir).ino, statSync(dir).ino);
    }
    assert.ok(rememberedRootOnly() <= 256, `${rememberedRootOnly()} remembered`);
  });
});
