/**
 * The engine simulator is faithful: the reaper's engine-level scenarios run against BOTH the simulator and the
 * real engine, and must reach the same outcomes (exit codes, what is removed, kept and why, list verdicts, what
 * is left on the engine). So are the raw API answers the janitor relies on (filters, 404, 409, version prefix).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDockerodeEngine } from '../../src/adapters/dockerode-engine.js';
import type { EngineClient } from '../../src/adapters/engine.js';
import { EngineRequestError } from '../../src/errors.js';
import { runCli, tempDir } from '../helpers/cli.js';
import {
  ENGINE_HOST,
  ENGINE_KIND,
  ENGINE_SOCKET,
  EngineFixture,
  type HermesContainerSpec,
  RUN_LABEL,
  after as plus,
  requireEngine,
} from '../helpers/docker.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

interface Entry {
  id: string;
  state: string;
  finishedAt: string;
  ageSeconds: number | null;
}
interface ReapJson {
  removed: Entry[];
  kept: Array<Entry & { reason: string }>;
  failed: Array<Entry & { error: string }>;
}
interface ListJson {
  containers: Array<Entry & { verdict: string; reason: string }>;
}

/** One engine the scenarios run against: the real one or the simulator, driven the same way. */
interface Backend {
  readonly kind: 'engine' | 'simulator';
  readonly host: string;
  readonly profile: string;
  readonly runId: string;
  create(spec: HermesContainerSpec): Promise<string>;
  finishedAt(id: string): Promise<string>;
  remaining(): Promise<string[]>;
  state(id: string): Promise<string>;
  socketPath: string;
}

class EngineBackend implements Backend {
  readonly kind = 'engine' as const;
  readonly host = ENGINE_HOST;
  readonly socketPath = ENGINE_SOCKET;
  constructor(readonly fx: EngineFixture) {}
  get profile() {
    return this.fx.profile;
  }
  get runId() {
    return this.fx.runId;
  }
  create(spec: HermesContainerSpec) {
    return this.fx.create(spec);
  }
  finishedAt(id: string) {
    return this.fx.finishedAt(id);
  }
  remaining() {
    return this.fx.remaining();
  }
  state(id: string) {
    return this.fx.state(id);
  }
}

/** The simulator, labelled exactly as EngineFixture labels real containers. */
class SimBackend implements Backend {
  readonly kind = 'simulator' as const;
  readonly runId = randomBytes(5).toString('hex');
  readonly profile = `t-${this.runId}`;
  constructor(readonly sim: EngineSimulator) {}
  get host() {
    return this.sim.host;
  }
  get socketPath() {
    return this.sim.socketPath!;
  }
  async create(spec: HermesContainerSpec): Promise<string> {
    const labels: Record<string, string> = { [RUN_LABEL]: this.runId };
    const agent = spec.agent === undefined ? '1' : spec.agent;
    if (agent !== null) labels['hermes-agent'] = agent;
    const profile = spec.profile === undefined ? this.profile : spec.profile;
    if (profile !== null) labels['hermes-profile'] = profile;
    labels['hermes-task-id'] = `task-${randomBytes(3).toString('hex')}`;
    Object.assign(labels, spec.labels ?? {});
    return this.sim.add({ labels, state: spec.state });
  }
  async finishedAt(id: string) {
    return String(this.sim.get(id)!.finishedAt);
  }
  async remaining() {
    return this.sim
      .ids()
      .filter((id) => this.sim.get(id)!.labels[RUN_LABEL] === this.runId)
      .sort();
  }
  async state(id: string) {
    return this.sim.get(id)!.state;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Names the containers of a scenario by role, so outcomes on both engines compare. */
class Roles {
  private readonly byId = new Map<string, string>();
  set(role: string, id: string) {
    this.byId.set(id, role);
    return id;
  }
  has(id: string) {
    return this.byId.has(id);
  }
  of(id: string) {
    return this.byId.get(id)!;
  }
  names(list: Array<{ id: string }>) {
    return list
      .filter((e) => this.has(e.id))
      .map((e) => this.of(e.id))
      .sort();
  }
  reasons(list: Array<{ id: string; reason: string }>) {
    return Object.fromEntries(
      list
        .filter((e) => this.has(e.id))
        .map((e) => [this.of(e.id), e.reason])
        .sort(),
    );
  }
}

describe('simulator parity with the real engine', () => {
  const fx = new EngineFixture();
  const home = tempDir('hj-parity-');
  let sim: EngineSimulator;
  let engine: Backend;
  let simulated: Backend;

  before(async () => {
    await requireEngine();
    sim = await EngineSimulator.start({ socketPath: path.join(home.dir, 'sim.sock') });
    engine = new EngineBackend(fx);
    simulated = new SimBackend(sim);
  });
  after(async () => {
    await fx.cleanup();
    await sim?.close();
    home.cleanup();
  });

  let homes = 0;
  const cli = (b: Backend, args: string[]) => runCli([...args, '--host', b.host], { env: { HOME: path.join(home.dir, `h${homes++}`) }, killAfterMs: 90_000 });

  /** Runs a scenario on both engines at once and requires equal outcomes; returns the real engine's. */
  async function both<T>(scenario: (b: Backend) => Promise<T>, podman?: (expected: T) => void): Promise<T> {
    const [real, simulatedOutcome] = await Promise.all([scenario(engine), scenario(simulated)]);
    // The simulator speaks Docker 20.10; against Podman, its answer is adjusted by Podman's documented differences.
    const expected = structuredClone(simulatedOutcome);
    if (ENGINE_KIND === 'podman') podman?.(expected);
    assert.deepEqual(real, expected, `the simulator and the real engine (${ENGINE_KIND}) disagree`);
    return real;
  }

  it('mixed set: dry run, reap and list agree (old, young, running, created, other profile, unlabelled, hermes-agent=0)', async () => {
    const outcome = await both(async (b) => {
      const r = new Roles();
      const old = r.set('old', await b.create({ state: 'exited' }));
      const oldFinished = await b.finishedAt(old);
      await sleep(1500);
      r.set('young', await b.create({ state: 'exited' }));
      const running = r.set('running', await b.create({ state: 'running' }));
      r.set('created', await b.create({ state: 'created' }));
      r.set('otherProfile', await b.create({ state: 'exited', profile: `${b.profile}-other` }));
      r.set('unlabelled', await b.create({ state: 'exited', agent: null }));
      r.set('agentZero', await b.create({ state: 'exited', agent: '0' }));
      const asOf = plus(oldFinished, 120);
      const base = ['--json', '--profile', b.profile, '--lifetime', '0', '--as-of', asOf];

      const dry = await cli(b, ['reap', '--dry-run', ...base]);
      const dj = JSON.parse(dry.stdout) as ReapJson;
      const listed = await cli(b, ['list', ...base]);
      const lj = JSON.parse(listed.stdout) as ListJson;
      const res = await cli(b, ['reap', ...base]);
      const rj = JSON.parse(res.stdout) as ReapJson;
      const zero = (e: Entry) => e.finishedAt === '0001-01-01T00:00:00Z';
      return {
        dryRun: { code: dry.code, removed: r.names(dj.removed), kept: r.reasons(dj.kept), failed: r.names(dj.failed) },
        list: {
          code: listed.code,
          rows: Object.fromEntries(
            lj.containers
              .filter((c) => r.has(c.id))
              .map((c) => [r.of(c.id), { state: c.state, verdict: c.verdict, reason: c.reason, zero: zero(c), aged: c.ageSeconds !== null }])
              .sort(),
          ),
        },
        reap: {
          code: res.code,
          removed: r.names(rj.removed),
          kept: r.reasons(rj.kept),
          failed: r.names(rj.failed),
          oldAge: Math.floor(rj.removed[0]?.ageSeconds ?? -1),
          rawFinishedAt: rj.removed[0]?.finishedAt === oldFinished,
        },
        left: r.names((await b.remaining()).map((id) => ({ id }))),
        runningState: await b.state(running),
      };
    });
    // And the outcome itself is the right one.
    // Running sandboxes are observed (idle rule) and created ones judged by the never-started rule: both reported kept.
    const kept = { created: 'too-recent', running: 'running', young: 'too-recent' };
    assert.deepEqual(outcome.reap, { code: 0, removed: ['old'], kept, failed: [], oldAge: 120, rawFinishedAt: true });
    assert.deepEqual(outcome.dryRun, { code: 0, removed: ['old'], kept, failed: [] });
    assert.deepEqual(Object.keys(outcome.list.rows), ['created', 'old', 'running', 'young']);
    assert.equal(outcome.list.rows.running!.reason, 'running');
    assert.equal(outcome.list.rows.created!.reason, 'too-recent'); // the never-started rule, aged by Created
    assert.equal(outcome.list.rows.old!.verdict, 'reap');
    assert.deepEqual(outcome.left, ['agentZero', 'created', 'otherProfile', 'running', 'unlabelled', 'young']);
    assert.equal(outcome.runningState, 'running');
  });

  it('--all-profiles drops the profile filter and still only takes hermes-agent=1', async () => {
    const outcome = await both(async (b) => {
      const r = new Roles();
      r.set('mine', await b.create({ state: 'exited', profile: `${b.profile}-x` }));
      const notOurs = r.set('notOurs', await b.create({ state: 'exited', agent: '0', profile: `${b.profile}-x` }));
      const noProfile = r.set('noProfile', await b.create({ state: 'exited', profile: null }));
      const latest = [await b.finishedAt(notOurs), await b.finishedAt(noProfile)].sort().at(-1)!;
      const res = await cli(b, ['reap', '--json', '--dry-run', '--all-profiles', '--as-of', plus(latest, 600)]);
      const j = JSON.parse(res.stdout) as ReapJson & { profile: string | null };
      return { code: res.code, profile: j.profile, removed: r.names(j.removed) };
    });
    assert.deepEqual(outcome, { code: 0, profile: null, removed: ['mine', 'noProfile'] });
  });

  it('a running container is never removed, even when asked for a far-future sweep', async () => {
    const outcome = await both(async (b) => {
      const r = new Roles();
      const running = r.set('running', await b.create({ state: 'running' }));
      r.set('exited', await b.create({ state: 'exited' }));
      const res = await cli(b, ['reap', '--json', '--profile', b.profile, '--as-of', '2999-01-01T00:00:00Z']);
      const j = JSON.parse(res.stdout) as ReapJson;
      return {
        code: res.code,
        removed: r.names(j.removed),
        kept: r.reasons(j.kept),
        state: await b.state(running),
        left: r.names((await b.remaining()).map((id) => ({ id }))),
      };
    });
    // reap only considers exited containers: the running one is neither touched nor reported.
    assert.deepEqual(outcome, { code: 0, removed: ['exited'], kept: { running: 'running' }, state: 'running', left: ['running'] });
  });

  it('two reap processes racing over the same orphans remove every one, without failures', async () => {
    const outcome = await both(async (b) => {
      const orphans: string[] = [];
      for (let i = 0; i < 6; i++) orphans.push(await b.create({ state: 'exited' }));
      const latest = (await Promise.all(orphans.map((id) => b.finishedAt(id)))).sort().at(-1)!;
      const args = ['reap', '--json', '--profile', b.profile, '--as-of', plus(latest, 600), '--concurrency', '3'];
      const runs = await Promise.all([cli(b, args), cli(b, args)]);
      const js = runs.map((x) => JSON.parse(x.stdout) as ReapJson);
      const removed = js
        .flatMap((j) => j.removed.map((e) => e.id))
        .filter((id) => orphans.includes(id))
        .sort();
      const keptReasons = [...new Set(js.flatMap((j) => j.kept.filter((e) => orphans.includes(e.id)).map((e) => e.reason)))];
      return {
        codes: runs.map((x) => x.code),
        failed: js.flatMap((j) => j.failed).length,
        // At least once in total: both engines may answer 204 to two racing DELETEs of one container.
        everyOne: JSON.stringify([...new Set(removed)]) === JSON.stringify([...orphans].sort()),
        keptOtherThanGone: keptReasons.filter((x) => x !== 'gone'),
        left: (await b.remaining()).filter((id) => orphans.includes(id)).length,
      };
    });
    assert.deepEqual(outcome, { codes: [0, 0], failed: 0, everyOne: true, keptOtherThanGone: [], left: 0 });
  });

  it('the engine API the janitor uses answers alike: filters, inspect, 404 and 409, never forcing', async () => {
    const outcome = await both(
      async (b) => {
        const client: EngineClient = await createDockerodeEngine(
          b.kind === 'engine' ? { host: b.host, socketPath: b.socketPath } : { host: b.host, socketPath: b.socketPath },
        );
        const r = new Roles();
        const exited = r.set('exited', await b.create({ state: 'exited' }));
        const running = r.set('running', await b.create({ state: 'running' }));
        const created = r.set('created', await b.create({ state: 'created' }));
        r.set('agentZero', await b.create({ state: 'exited', agent: '0' }));
        const run = `${RUN_LABEL}=${b.runId}`;
        const names = async (labels: string[], status?: string[]) => r.names(await client.list({ labels, ...(status ? { status } : {}) }));
        const filters = {
          all: await names([run]),
          agentKeyOnly: await names([run, 'hermes-agent']),
          agentOne: await names([run, 'hermes-agent=1']),
          agentOneExited: await names([run, 'hermes-agent=1'], ['exited']),
          exitedOrCreated: await names([run], ['exited', 'created']),
          running: await names([run], ['running']),
          profile: await names([run, `hermes-profile=${b.profile}`, 'hermes-agent=1']),
          noSuchProfile: await names([run, 'hermes-profile=nobody-has-this']),
          byId: r.names(await client.list({ labels: [], ids: [exited] })),
        };
        const d = await client.inspect(exited);
        const c = await client.inspect(created);
        const rn = await client.inspect(running);
        const inspect = {
          exited: {
            status: d!.status,
            running: d!.running,
            rfc3339: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/.test(d!.finishedAt),
            name: /^hermes-[0-9a-f]{8}$/.test(d!.name),
            labels: Object.keys(d!.labels).sort(),
          },
          created: { status: c!.status, running: c!.running, finishedAt: c!.finishedAt },
          running: { status: rn!.status, running: rn!.running },
          unknown: await client.inspect('0'.repeat(64)),
        };
        // A removal answers its outcome (removed, gone, conflict); any other refusal throws with the HTTP status.
        const status = async (p: Promise<unknown>) =>
          p.then(
            (v) => (v as { kind?: string } | undefined)?.kind ?? 'ok',
            (e: unknown) => (e instanceof EngineRequestError ? e.statusCode : String(e)),
          );
        const removeRunning = await status(client.remove(running));
        const removeUnknown = await status(client.remove('0'.repeat(64)));
        const stillRunning = await b.state(running);
        const removeExited = await status(client.remove(exited));
        const removeAgain = await status(client.remove(exited));
        const afterRemove = await client.inspect(exited);
        return { filters, inspect, removeRunning, removeUnknown, stillRunning, removeExited, removeAgain, afterRemove };
      },
      (expected) => {
        // Podman 4.3 answers a DELETE of a running container (no force) with 500, not 409; it is still not removed.
        expected.removeRunning = 500;
      },
    );
    assert.deepEqual(outcome.filters.agentKeyOnly, ['agentZero', 'created', 'exited', 'running']);
    assert.deepEqual(outcome.filters.agentOneExited, ['exited']);
    assert.deepEqual(outcome.filters.exitedOrCreated, ['agentZero', 'created', 'exited']);
    assert.deepEqual(outcome.filters.byId, ['exited']);
    assert.deepEqual(outcome.inspect.created, { status: 'created', running: false, finishedAt: '0001-01-01T00:00:00Z' });
    assert.equal(outcome.inspect.unknown, null);
    assert.deepEqual([outcome.removeRunning, outcome.removeUnknown, outcome.stillRunning], [ENGINE_KIND === 'podman' ? 500 : 'conflict', 'gone', 'running']);
    assert.deepEqual([outcome.removeExited, outcome.removeAgain, outcome.afterRemove], ['removed', 'gone', null]);
  });

  it('raw HTTP: /_ping, the version prefix, bad filters and a too-new API version answer alike', async () => {
    const get = (socketPath: string, p: string) =>
      new Promise<{ status: number; body: string; apiVersion: string | undefined }>((resolve, reject) => {
        const req = http.get({ socketPath, path: p, agent: false }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, body, apiVersion: res.headers['api-version'] as string | undefined }));
        });
        req.on('error', reject);
      });
    const outcome = await both(
      async (b) => {
        const id = await b.create({ state: 'exited' });
        const f = (o: object) => encodeURIComponent(JSON.stringify(o));
        const q = `all=1&filters=${f({ label: [`${RUN_LABEL}=${b.runId}`] })}`;
        const ping = await get(b.socketPath, '/_ping');
        const plain = await get(b.socketPath, `/containers/json?${q}`);
        const versioned = await get(b.socketPath, `/v1.41/containers/json?${q}`);
        const older = await get(b.socketPath, `/v1.24/containers/json?${q}`);
        const notAll = await get(b.socketPath, `/v1.41/containers/json?filters=${f({ label: [`${RUN_LABEL}=${b.runId}`] })}`);
        const legacyMap = await get(b.socketPath, `/v1.41/containers/json?all=1&filters=${f({ label: { [`${RUN_LABEL}=${b.runId}`]: true } })}`);
        const badStatus = await get(b.socketPath, `/v1.41/containers/json?all=1&filters=${f({ status: ['bogus'] })}`);
        const badKey = await get(b.socketPath, `/v1.41/containers/json?all=1&filters=${f({ bogus: ['x'] })}`);
        const tooNew = await get(b.socketPath, `/v1.99/containers/json`);
        const noSuch = await get(b.socketPath, `/v1.41/containers/${'0'.repeat(64)}/json`);
        const inspected = await get(b.socketPath, `/v1.41/containers/${id}/json`);
        const ids = (body: string) => (JSON.parse(body) as Array<{ Id: string }>).map((c) => c.Id);
        const rowKeys = Object.keys((JSON.parse(versioned.body) as object[])[0]!).sort();
        return {
          ping: [ping.status, ping.body, ping.apiVersion],
          plain: [plain.status, ids(plain.body).length === 1 && ids(plain.body)[0] === id],
          versioned: [versioned.status, ids(versioned.body).length === 1 && ids(versioned.body)[0] === id],
          older: older.status,
          notAll: [notAll.status, ids(notAll.body).length],
          legacyMap: [legacyMap.status, legacyMap.status === 200 ? ids(legacyMap.body).length : -1],
          badStatus: [badStatus.status, JSON.parse(badStatus.body)],
          badKey: [badKey.status, JSON.parse(badKey.body)],
          // Podman answers a too-new version with the (unfiltered) list itself: recorded as 'a list'.
          tooNew: [tooNew.status, tooNew.status === 200 && Array.isArray(JSON.parse(tooNew.body)) ? 'a list' : JSON.parse(tooNew.body)],
          noSuch: [noSuch.status, JSON.parse(noSuch.body)],
          rowKeys,
          inspectKeys: Object.keys(JSON.parse(inspected.body) as object)
            .filter((k) => ['Id', 'Name', 'State', 'Config', 'Created'].includes(k))
            .sort(),
          stateKeys: Object.keys((JSON.parse(inspected.body) as { State: object }).State).sort(),
        };
      },
      (expected) => {
        // Podman 4.3's compatible API, as measured here: bad filters are 500 with its own messages (the janitor only
        // sends valid ones), an unknown container's message differs, list rows and State carry other keys (the
        // janitor reads only Id, Names, Labels, State and State.Status/Running/FinishedAt), and it serves any
        // /v<version> prefix, even a too-new one.
        expected.badKey = [500, { cause: 'bogus is an invalid filter', message: 'bogus is an invalid filter', response: 500 }];
        expected.badStatus = [500, { cause: 'invalid argument', message: 'unknown container state: bogus: invalid argument', response: 500 }];
        expected.noSuch = [
          404,
          { cause: 'no such container', message: `no container with name or ID "${'0'.repeat(64)}" found: no such container`, response: 404 },
        ];
        expected.rowKeys = [
          'AdjustCPUShares',
          'Command',
          'Config',
          'Created',
          'Id',
          'Image',
          'ImageID',
          'Labels',
          'Mounts',
          'Name',
          'Names',
          'NetworkSettings',
          'NetworkingConfig',
          'Platform',
          'Ports',
          'State',
          'Status',
        ];
        expected.stateKeys = [...expected.stateKeys, 'Health'].sort();
        expected.tooNew = [200, 'a list'];
      },
    );
    assert.deepEqual(outcome.ping, [200, 'OK', '1.41']);
    assert.equal(outcome.badStatus[0], ENGINE_KIND === 'podman' ? 500 : 400);
    assert.equal(outcome.tooNew[0], ENGINE_KIND === 'podman' ? 200 : 400);
    assert.equal(outcome.noSuch[0], 404);
  });
});
