/**
 * `status` for an operator, the pure parts: the verdict line (OK, or how many things, the worst first), each engine's
 * last sweep against its schedule, a recorded `watch` that is not running or not healthy, and a running sandbox that is
 * never said to have finished.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AttentionInput, type StatusEntry, attention, attentionItems, countContainers, verdictLine } from '../../src/core/status.js';
import { type StampFact, type WatchFacts, DEFAULT_SCHEDULE_SECONDS, sweepFreshness, watchProblem } from '../../src/core/janitor-health.js';

const NOW = new Date('2026-12-01T12:00:00Z');
const calm: AttentionInput = {
  unreachableEngines: [],
  orphans: 0,
  oldestOrphanAgeSeconds: null,
  asOf: NOW,
  inspectFailures: 0,
  timedOut: false,
  staleLocks: [],
  restartGuard: { tripped: false, count: 0, max: 3, windowSeconds: 60 },
  suspendedSessions: 0,
  stopHook: { stalled: false, blocks: 0, maxBlocks: 5, problem: null },
  toolLoopLooping: [],
};
const H = 'unix:///var/run/docker.sock';
const stamp = (ageSeconds: number, more: Partial<StampFact> = {}): StampFact => ({
  host: H,
  completedAt: new Date(NOW.getTime() - ageSeconds * 1000).toISOString(),
  ageSeconds,
  scheduleSeconds: null,
  by: 'reap',
  ...more,
});

describe('status: the verdict first', () => {
  it('OK when nothing needs attention; else the count and the worst first, whatever order they were found in', () => {
    assert.equal(verdictLine(attentionItems(calm)), 'OK: nothing needs attention');
    const a: AttentionInput = {
      ...calm,
      toolLoopLooping: ['s1'],
      orphans: 2,
      removable: { count: 2, oldest: { ageSeconds: 7200, rule: 'exited' } },
      idleSandboxes: { count: 0, longestIdleSeconds: null },
      restartGuard: { tripped: true, count: 3, max: 3, windowSeconds: 60 },
      staleSweeps: [`no completed sweep for 6 days on ${H}, more than twice the schedule of every 1 hour (default): run x`],
      watch: { kind: 'not-running', line: 'watch (pid 4) is not running: it ended without stopping' },
    };
    const items = attentionItems(a);
    assert.deepEqual(
      items.map((i) => i.title),
      [
        'watch not running',
        `no completed sweep for 6 days on ${H}`,
        'restart-guard tripped',
        '2 container(s) past the threshold',
        'tool-loop sessions looping',
      ],
    );
    assert.equal(
      verdictLine(items),
      `ATTENTION: 5 things, the worst first: watch not running; no completed sweep for 6 days on ${H}; restart-guard tripped; and 2 more`,
    );
    assert.deepEqual(
      attention(a),
      items.map((i) => i.line),
      'the lines in the same order',
    );
    const down = attentionItems({ ...a, unreachableEngines: [H] });
    assert.equal(down[0]!.title, `engine ${H} unreachable`, 'an engine cut off is the worst');
    assert.equal(verdictLine(attentionItems({ ...calm, suspendedSessions: 1 })), 'ATTENTION: 1 thing: stuck sessions');
  });

  it('a running sandbox is never "finished": it is idle past --idle-after; a never-started one was created', () => {
    const entries: StatusEntry[] = [
      { id: 'a', name: 'hermes-a', host: H, verdict: 'stop', reason: 'idle', rule: 'idle', ageSeconds: null, idleSeconds: 9000 },
      { id: 'b', name: 'hermes-b', host: H, verdict: 'reap', reason: 'expired', rule: 'never-started', ageSeconds: 700 },
    ];
    const c = countContainers(entries);
    assert.equal(c.oldestOrphan?.id, 'a');
    assert.equal(c.longestIdle?.ageSeconds, 9000);
    assert.equal(c.oldestRemovable?.id, 'b');
    const lines = attention({
      ...calm,
      orphans: c.orphans,
      oldestOrphanAgeSeconds: c.oldestOrphan!.ageSeconds,
      removable: { count: c.wouldRemove.total, oldest: c.oldestRemovable },
      idleSandboxes: { count: c.wouldStop.total, longestIdleSeconds: c.longestIdle!.ageSeconds },
    });
    assert.equal(lines.length, 2);
    assert.match(lines[0]!, /^1 container\(s\) past the threshold \(the oldest created 11 minutes ago, never started\): run hermes-janitor reap$/);
    assert.match(lines[1]!, /^1 running sandbox\(es\) idle past --idle-after \(the longest idle for 2 hours\), still running: run hermes-janitor reap/);
    for (const l of lines) assert.doesNotMatch(l, /finished/);
  });
});

describe('status: is the janitor running', () => {
  it('each engine: its freshest stamp against the schedule it records, --schedule, else 1 h; stale past twice it', () => {
    const f = (stamps: StampFact[], given?: number) => sweepFreshness(stamps, [H], given)[0]!;
    assert.deepEqual([f([stamp(7100)]).stale, f([stamp(7300)]).stale], [false, true], 'the default: 1 h, stale after 2 h');
    assert.equal(f([stamp(7300)]).scheduleSeconds, DEFAULT_SCHEDULE_SECONDS);
    const oncePer = f([stamp(1300, { scheduleSeconds: 600 })]);
    assert.deepEqual([oncePer.stale, oncePer.scheduleFrom], [true, 'reap --once-per']);
    const watch = f([stamp(50, { scheduleSeconds: 30, by: 'watch' })]);
    assert.deepEqual([watch.stale, watch.scheduleFrom], [false, 'watch heartbeat']);
    assert.equal(f([stamp(7300)], 4 * 3600).stale, false, '--schedule wins');
    assert.equal(f([stamp(9 * 86400, { profile: 'x' } as Partial<StampFact>), stamp(60)]).stale, false, 'the freshest stamp of any selection');
    assert.deepEqual([f([]).stale, f([], 900).stale], [false, true], 'none recorded: stale only when a schedule is given');
    assert.deepEqual(sweepFreshness([stamp(9 * 86400)], ['tcp://other:2375']), [
      { host: 'tcp://other:2375', completedAt: null, ageSeconds: null, scheduleSeconds: 3600, scheduleFrom: 'default', stale: false },
    ]);
  });

  it('a recorded watch: not running (dead, stopped), not healthy (heartbeat or /healthz), or fine', () => {
    const w: WatchFacts = {
      file: '/h/janitor/watch.json',
      pid: 42,
      startedAt: '2026-12-01T10:00:00.000Z',
      hosts: [H],
      heartbeatSeconds: 30,
      heartbeatAt: '2026-12-01T11:59:50.000Z',
      heartbeatAgeSeconds: 10,
      process: 'alive',
      stoppedAt: null,
      stoppedBy: null,
      healthz: { url: 'http://127.0.0.1:9464/healthz', status: 200, error: null },
    };
    assert.equal(watchProblem(w, NOW), null);
    assert.equal(watchProblem({ ...w, process: 'dead' }, NOW)?.kind, 'not-running');
    assert.match(
      watchProblem({ ...w, process: 'dead' }, NOW)!.line,
      /ended without stopping \(killed or crashed\).*remove \/h\/janitor\/watch\.json if it is retired/,
    );
    const stopped = watchProblem({ ...w, process: 'dead', stoppedAt: '2026-12-01T11:00:00.000Z', stoppedBy: 'SIGTERM' }, NOW)!;
    assert.deepEqual([stopped.kind, /stopped 1 hour ago by SIGTERM/.test(stopped.line)], ['not-running', true]);
    assert.equal(watchProblem({ ...w, heartbeatAgeSeconds: 64 }, NOW), null, 'one late beat is no problem');
    assert.match(watchProblem({ ...w, heartbeatAgeSeconds: 600 }, NOW)!.line, /is not healthy: last heartbeat 10 minutes ago/);
    assert.match(watchProblem({ ...w, healthz: { ...w.healthz!, status: 503 } }, NOW)!.line, /is not healthy: its \/healthz \(.*\) answered 503/);
    const away = watchProblem({ ...w, process: 'unknown', healthz: { ...w.healthz!, status: null, error: 'ECONNREFUSED' } }, NOW)!;
    assert.deepEqual([away.kind, /did not answer \(ECONNREFUSED\)/.test(away.line)], ['not-running', true]);
  });
});
