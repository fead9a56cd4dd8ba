import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveHermesHome } from '../../src/hermes/home.js';
import { sanitizeLabelValue } from '../../src/hermes/labels.js';
import { UsageError } from '../../src/errors.js';

const HOMEDIR = '/home/u';
const resolve = (o: { home?: string; profile?: string; env?: Record<string, string> }) =>
  resolveHermesHome({ home: o.home, profile: o.profile, env: o.env ?? {}, homedir: HOMEDIR, cwd: '/work' });

describe('sanitizeLabelValue', () => {
  it('replaces each code point outside [A-Za-z0-9_.-] with one underscore', () => {
    assert.equal(sanitizeLabelValue('work'), 'work');
    assert.equal(sanitizeLabelValue('my profile/x'), 'my_profile_x');
    assert.equal(sanitizeLabelValue('a🚀b'), 'a_b');
    assert.equal(sanitizeLabelValue('Ünïcode.v1-2_3'), '_n_code.v1-2_3');
  });
  it('cuts to 63 characters and maps empty or missing to unknown', () => {
    assert.equal(sanitizeLabelValue('x'.repeat(100)), 'x'.repeat(63));
    assert.equal(sanitizeLabelValue('🚀'.repeat(70)), '_'.repeat(63));
    assert.equal(sanitizeLabelValue(''), 'unknown');
    assert.equal(sanitizeLabelValue(undefined), 'unknown');
    assert.equal(sanitizeLabelValue(null), 'unknown');
  });
});

describe('resolveHermesHome', () => {
  it('defaults to ~/.hermes and the default profile', () => {
    assert.deepEqual(resolve({}), { home: '/home/u/.hermes', root: '/home/u/.hermes', profile: 'default' });
  });
  it('takes $HERMES_HOME, then --home over it', () => {
    assert.equal(resolve({ env: { HERMES_HOME: '/srv/h' } }).home, '/srv/h');
    assert.equal(resolve({ home: '/opt/x', env: { HERMES_HOME: '/srv/h' } }).home, '/opt/x');
    assert.equal(resolve({ home: '~/alt' }).home, '/home/u/alt');
    assert.equal(resolve({ home: 'rel' }).home, '/work/rel');
  });
  it('derives root and profile the hermes way', () => {
    assert.deepEqual(resolve({ home: '/home/u/.hermes/profiles/work' }), { home: '/home/u/.hermes/profiles/work', root: '/home/u/.hermes', profile: 'work' });
    assert.deepEqual(resolve({ home: '/home/u/.hermes/elsewhere' }), { home: '/home/u/.hermes/elsewhere', root: '/home/u/.hermes', profile: 'custom' });
    assert.deepEqual(resolve({ home: '/srv/h/profiles/ci-1' }), { home: '/srv/h/profiles/ci-1', root: '/srv/h', profile: 'ci-1' });
    assert.deepEqual(resolve({ home: '/srv/h' }), { home: '/srv/h', root: '/srv/h', profile: 'default' });
    assert.equal(resolve({ home: '/srv/h/profiles/Bad Name' }).profile, 'custom');
    assert.equal(resolve({ home: '/srv/h/profiles/_x' }).profile, 'custom');
    assert.equal(resolve({ home: '/home/u/.hermes/profiles/work/sub' }).profile, 'custom');
  });
  it('--profile without --home selects the profile home under the root', () => {
    assert.deepEqual(resolve({ profile: 'work' }), { home: '/home/u/.hermes/profiles/work', root: '/home/u/.hermes', profile: 'work' });
    assert.deepEqual(resolve({ profile: 'default', env: { HERMES_HOME: '/srv/h/profiles/a' } }), { home: '/srv/h', root: '/srv/h', profile: 'default' });
    assert.deepEqual(resolve({ profile: 'b', env: { HERMES_HOME: '/srv/h/profiles/a' } }).home, '/srv/h/profiles/b');
  });
  it('--profile with --home only names the profile', () => {
    assert.deepEqual(resolve({ home: '/opt/x', profile: 'work' }), { home: '/opt/x', root: '/opt/x', profile: 'work' });
  });
  it('rejects profile names hermes would not accept', () => {
    for (const bad of ['../x', 'A B', '', 'Work', '-x', 'x'.repeat(65), 'a/b']) {
      assert.throws(() => resolve({ profile: bad }), UsageError, bad);
    }
  });
});
