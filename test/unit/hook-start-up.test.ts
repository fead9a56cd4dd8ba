/**
 * What the hooks call on every tool call, made cheaper to start: each must answer exactly what the Node.js API it
 * stands in for answers (toISOString, os.hostname, os.homedir), and a state file's update must set no timer.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { hostName } from '../../src/adapters/process-identity.js';
import { FileStateStore } from '../../src/adapters/state-file.js';
import { userHome } from '../../src/context.js';
import { resolveHermesHome, resolveHomeDir } from '../../src/hermes/home.js';
import { isoTime } from '../../src/util/iso-time.js';
import { tempDir } from '../helpers/cli.js';

const tmp = tempDir('hj-start-up-');
after(tmp.cleanup);

describe('hook start-up helpers', () => {
  it('isoTime is toISOString: every year from 0000 to 9999, leap days, milliseconds, and beyond (which toISOString spells)', () => {
    const samples = [
      0,
      -1,
      1,
      999,
      1000,
      951782400000,
      951868799999,
      1767225600000,
      Date.UTC(0, 0, 1) - 1,
      Date.UTC(9999, 11, 31, 23, 59, 59, 999) + 1,
      8.64e15,
      -8.64e15,
    ];
    samples.push(new Date('0000-01-01T00:00:00.000Z').getTime(), new Date('9999-12-31T23:59:59.999Z').getTime());
    let seed = 7;
    const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647 - 0.5) * 2;
    for (let i = 0; i < 20000; i++) samples.push(Math.round(random() * (i % 2 ? 8.64e15 : 4e12)));
    for (const ms of samples) assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms));
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 8.64e15 + 1]) assert.throws(() => isoTime(bad), RangeError);
  });

  it("hostName is os.hostname(); userHome is os.homedir() for this process, and $HOME wherever it is set (libuv's rule)", () => {
    assert.equal(hostName(), os.hostname());
    assert.equal(userHome(), os.homedir());
    if (process.platform !== 'win32') {
      assert.equal(userHome({ HOME: '/somewhere/else' }), '/somewhere/else');
      assert.equal(userHome({ HOME: '' }), '');
    }
  });

  it('resolveHomeDir is resolveHermesHome(...).home for every way of naming a home', () => {
    const homedir = '/home/u';
    for (const home of [undefined, '', '~', '~/h', 'rel/h', '/abs/h', '/home/u/.hermes/profiles/x']) {
      for (const envHome of [undefined, '', '~/e', 'rel/e', '/abs/e']) {
        for (const profile of [undefined, 'default', 'work']) {
          const inputs = { home, profile, env: { HERMES_HOME: envHome }, homedir, cwd: '/cwd' };
          assert.equal(resolveHomeDir(inputs), resolveHermesHome(inputs).home, JSON.stringify(inputs));
        }
      }
    }
    assert.throws(() => resolveHomeDir({ profile: 'Bad Name', env: {}, homedir }), /invalid profile/);
  });

  it("a state file's update sets no timer while it holds the lock, and makes a missing directory (mode 0700)", async () => {
    const file = path.join(tmp.dir, 'new', 'deeper', 'state.json');
    const store = new FileStateStore(file, { durable: false });
    const set = { setInterval: globalThis.setInterval, setTimeout: globalThis.setTimeout };
    let timers = 0;
    globalThis.setInterval = ((...args: Parameters<typeof setInterval>) => (timers++, set.setInterval(...args))) as typeof setInterval;
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => (timers++, set.setTimeout(...args))) as typeof setTimeout;
    try {
      await store.update(() => ({ next: { v: 1 }, result: undefined }));
    } finally {
      Object.assign(globalThis, set);
    }
    assert.equal(timers, 0);
    assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), { v: 1 });
    assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700);
    assert.equal(fs.statSync(path.join(tmp.dir, 'new')).mode & 0o777, 0o700);
  });
});
