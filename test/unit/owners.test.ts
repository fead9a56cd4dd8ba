/**
 * Owned and abandoned sandboxes, the pure rules (core/owners.ts) and the janitor's stop records (core/idle.ts):
 * which process owns a profile, engines elsewhere and hidden tables owning everything, the threshold of an owned
 * sandbox, and the retention of a sandbox the janitor stopped.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HermesProcess } from '../../src/hermes/process-facts.js';
import { isRetained, mergeIdleState, mergeStops, parseIdleState } from '../../src/core/idle.js';
import { engineOnThisHost } from '../../src/core/engine-place.js';
import { idleThresholdFor, ownerOf, ownerViewOf } from '../../src/core/owners.js';

const proc = (p: Partial<HermesProcess> & { pid: number }): HermesProcess => ({
  uid: 0,
  startedAtMs: Date.parse('2026-11-27T10:00:00Z'),
  command: 'hermes gateway',
  hermes: true,
  python: false,
  profile: 'work',
  serves: 'profile',
  owns: [p.profile ?? 'work'],
  ownsWhy: 'HERMES_HOME names profile work',
  why: 'entry point hermes',
  ...p,
});
const table = (processes: HermesProcess[], hidden: string | null = null, blindUids: Set<number> | null = new Set()) => ({
  processes,
  hidden,
  blindUids,
  readable: true,
});

describe('owners', () => {
  it("a profile's owner is the oldest hermes process serving it, or one serving every profile; else abandoned", () => {
    const view = ownerViewOf(
      table([proc({ pid: 10, profile: 'work' }), proc({ pid: 11, profile: 'ops', hermes: false, python: true })]),
      'unix:///var/run/docker.sock',
    );
    assert.deepEqual(ownerOf(view, 'work'), {
      pid: 10,
      command: 'hermes gateway',
      since: '2026-11-27T10:00:00.000Z',
      serves: 'profile',
      why: 'HERMES_HOME names profile work',
    });
    assert.equal(ownerOf(view, 'ops'), null, 'a Python interpreter that does not name hermes owns nothing');
    assert.equal(ownerOf(view, 'other'), null);
    const any = ownerViewOf(
      table([proc({ pid: 12, profile: null, owns: null, serves: 'all-profiles', ownsWhy: 'its environment cannot be read (EACCES)' })]),
      'unix:///run/podman/podman.sock',
    );
    assert.equal(ownerOf(any, 'whatever')?.pid, 12);
    assert.equal(ownerOf(any, null)?.pid, 12);
    assert.equal(ownerOf(any, 'whatever')?.serves, 'all-profiles');
    assert.match(ownerOf(any, 'whatever')!.why, /EACCES/);
  });

  it('a gateway owns the labels it serves (its profiles and their container identities), and nothing else', () => {
    const gw = proc({
      pid: 20,
      profile: null,
      serves: 'allowlist',
      owns: ['default', 'work', 'team-0123456789ab'],
      ownsWhy: 'the gateway launched on the hermes root /r: allowlist',
    });
    const view = ownerViewOf(table([gw]), 'unix:///s');
    for (const l of ['default', 'work', 'team-0123456789ab']) assert.equal(ownerOf(view, l)?.pid, 20, l);
    assert.equal(ownerOf(view, 'other'), null);
    assert.equal(ownerOf(view, null), null, 'an unlabelled sandbox is owned only by what owns everything');
    assert.equal(ownerOf(view, 'work')?.serves, 'allowlist');
  });

  it('an engine elsewhere, a hidden or unreadable process table: every sandbox owned, with the reason', () => {
    for (const h of ['tcp://10.0.0.5:2375', 'ssh://me@box', 'https://x:2376']) {
      assert.equal(engineOnThisHost(h), false, h);
      const o = ownerOf(ownerViewOf(table([]), h), 'p');
      assert.equal(o?.pid, null);
      assert.match(o!.command, /is not on this host/);
    }
    assert.equal(engineOnThisHost('unix:///var/run/docker.sock'), true);
    assert.match(ownerOf(ownerViewOf(table([], 'procfs is mounted with hidepid=2', null), 'unix:///s'), 'p')!.command, /hidepid=2/);
    assert.match(
      ownerOf(ownerViewOf({ processes: [], hidden: 'procfs cannot be read', blindUids: null, readable: false }, 'unix:///s'), 'p')!.command,
      /cannot be read/,
    );
    // Unreadable command lines alone do not blind the view (those processes are listed as owning every profile).
    assert.equal(ownerOf(ownerViewOf(table([], 'the command line of a process could not be read', new Set([5])), 'unix:///s'), 'p'), null);
  });

  it('the idle threshold: the owned one while owned (never: Infinity), else the usual one', () => {
    assert.equal(idleThresholdFor(false, 600, 86_400), 600);
    assert.equal(idleThresholdFor(true, 600, 86_400), 86_400);
    assert.equal(idleThresholdFor(true, 600, null), Infinity);
  });
});

describe("the janitor's stops", () => {
  const stop = { startedAt: '2026-11-27T10:00:00.1Z', stoppedAt: '2026-11-27T11:00:00Z' };
  const at = (iso: string) => Date.parse(iso);
  it('retained while the retention runs, for the same StartedAt only', () => {
    assert.equal(isRetained(stop, stop.startedAt, at('2026-11-27T11:00:59Z'), 60), true);
    assert.equal(isRetained(stop, stop.startedAt, at('2026-11-27T11:01:00Z'), 60), false);
    assert.equal(isRetained(stop, '2026-11-27T10:30:00Z', at('2026-11-27T11:00:01Z'), 60), false, 'started again since: not the one stopped');
    assert.equal(isRetained(undefined, stop.startedAt, at('2026-11-27T11:00:01Z'), 60), false);
  });
  it('kept in the idle state beside the observations, merged per engine, malformed records dropped', () => {
    let s = mergeStops(parseIdleState(undefined), 'h1', new Map([['c1', stop]]), []);
    s = mergeIdleState(s, 'h1', new Map(), []);
    const round = parseIdleState(JSON.parse(JSON.stringify(s)));
    assert.deepEqual(round.stops, { h1: { c1: stop } });
    const bad = parseIdleState({ version: 1, engines: {}, stops: { h1: { c1: { startedAt: 1 }, c2: stop } } });
    assert.deepEqual(bad.stops, { h1: { c2: stop } });
    assert.equal(mergeStops(round, 'h1', new Map(), ['c1']).stops, undefined);
  });
});

describe('is this engine on this host: one answer for every rule', () => {
  it('the exec-tree pass, the owners and the image budget ask the one function', async () => {
    const { readFileSync } = await import('node:fs');
    for (const f of ['src/passes/exec-trees/run.ts', 'src/core/owners.ts', 'src/passes/images/run.ts', 'src/passes/images/status.ts']) {
      const text = readFileSync(new URL(`../../${f}`, import.meta.url), 'utf8');
      assert.match(text, /import \{[^}]*engineOnThisHost[^}]*\} from '[./]+(core\/)?engine-place\.js'/, f);
      assert.doesNotMatch(text, /startsWith\('unix:\/\/'\)/, `${f} answers it itself`);
    }
    for (const [host, local] of [
      ['unix:///run/docker.sock', true],
      ['/run/docker.sock', true],
      ['npipe:////./pipe/docker_engine', true],
      ['tcp://127.0.0.1:2375', false],
      ['ssh://u@h', false],
    ] as const) {
      assert.equal(engineOnThisHost(host), local, host);
    }
  });
});
