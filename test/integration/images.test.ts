/**
 * The image budget against the real engine (Docker, and Podman through its Docker-compatible API): images of known,
 * different sizes made here (`docker import` of random data, and commits on the test image, which share its layers),
 * used by this run's hermes containers in a known order. Every image made is removed at the end.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, afterEach, before, describe, it } from 'node:test';
import { assertUsageError, runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_KIND, ENGINE_SOCKET, EngineFixture, RUN_EXTRA, TEST_IMAGE, docker, requireEngine } from '../helpers/docker.js';
import { EngineProxy } from '../helpers/engine-proxy.js';
import { WatchProcess } from '../helpers/watch-process.js';

const exec = promisify(execFile);

interface ImagesJson {
  removed: Array<{ id: string; tags: string[]; bytes: number; lastUsed: string }>;
  kept: Array<{ id: string; reason: string; detail: string }>;
  failed: Array<{ id: string | null; error: string }>;
  bytesBefore: number;
  bytesAfter: number;
  budget: number;
}
interface DfImage {
  Id: string;
  Size: number;
  SharedSize: number;
}

const full = (id: string) => (/^[0-9a-f]{64}$/.test(id) ? `sha256:${id}` : id);

/** `GET /system/df`'s images, straight from the engine's socket. */
function dfImages(): Promise<DfImage[]> {
  return new Promise((resolve, reject) => {
    http
      .get({ socketPath: ENGINE_SOCKET, path: '/v1.41/system/df' }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(((JSON.parse(body) as { Images: DfImage[] }).Images ?? []).map((i) => ({ ...i, Id: full(i.Id) }))));
      })
      .on('error', reject);
  });
}

/** What these images take as the engine reports them: unique sizes, shared layers once. */
function bytesOf(df: DfImage[], ids: string[]): number {
  const mine = df.filter((i) => ids.includes(i.Id));
  return mine.reduce((n, i) => n + i.Size - Math.max(0, i.SharedSize), 0) + Math.max(0, ...mine.map((i) => Math.max(0, i.SharedSize)));
}
const uniqueOf = (df: DfImage[], id: string) => {
  const i = df.find((x) => x.Id === id)!;
  return i.Size - Math.max(0, i.SharedSize);
};

async function exists(id: string): Promise<boolean> {
  return docker(['image', 'inspect', '--format', '{{.Id}}', id]).then(
    () => true,
    () => false,
  );
}

describe(`image budget (${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const tmp = tempDir('hj-images-');
  const made: string[] = [];

  /** An image of `bytes` of random data (`docker import`): no layer shared with any other. */
  async function imported(name: string, bytes: number): Promise<string> {
    const dir = path.join(tmp.dir, `ctx-${name}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'blob'), randomBytes(bytes));
    const tag = `hj-img-${fx.runId}/${name}:t`;
    await exec('sh', ['-c', `tar -C '${dir}' -c . | docker import - ${tag}`], { env: process.env });
    const id = full(await docker(['image', 'inspect', '--format', '{{.Id}}', tag]));
    made.push(id);
    return id;
  }

  /** The test image plus `bytes` of random data (a commit): shares the test image's layers. */
  async function layered(name: string, bytes: number): Promise<string> {
    const tag = `hj-img-${fx.runId}/${name}:t`;
    const c = await docker([
      'run',
      '-d',
      ...RUN_EXTRA,
      '--network',
      'none',
      '--label',
      `hermes-janitor-test-run=${fx.runId}`,
      TEST_IMAGE,
      'sh',
      '-c',
      `head -c ${bytes} /dev/urandom > /blob`,
    ]);
    await docker(['wait', c]);
    // Podman 4.3's compatible API does not take `docker commit` (Decode(): EOF); its own CLI shares the storage.
    if (ENGINE_KIND === 'podman') await exec('podman', ['commit', '-q', c, tag]);
    else await docker(['commit', c, tag]);
    await docker(['rm', c]);
    const id = full(await docker(['image', 'inspect', '--format', '{{.Id}}', tag]));
    made.push(id);
    return id;
  }

  before(requireEngine);
  afterEach(() => fx.removeContainers());
  after(async () => {
    await fx.cleanup();
    for (const id of made) await docker(['rmi', '-f', id]).catch(() => undefined);
    tmp.cleanup();
  });

  /** A home of its own for each test: its own state file. */
  function homeFor(name: string) {
    const dir = path.join(tmp.dir, name);
    const env = { HOME: dir, HERMES_HOME: path.join(dir, 'hermes') };
    const state = path.join(dir, 'hermes', 'profiles', fx.profile, 'janitor', 'images.json');
    return { env, state };
  }
  const sel = () => ['--profile', fx.profile];

  /** A reap that sees what this run's containers use and removes nothing (a budget far above what they take). */
  async function sighting(env: Record<string, string>, via: string[] = []): Promise<void> {
    const r = await runCli(['reap', ...sel(), ...via, '--images-over', '1TB', '--images-min-age', '0s', '--json'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual((JSON.parse(r.stdout) as { images: ImagesJson }).images.removed, []);
  }

  /** A hermes container of this run from `image`, seen by a reap, then removed (`keep`: left as it is). */
  async function use(env: Record<string, string>, image: string, how: 'removed' | 'exited' | 'running', via: string[] = []): Promise<string> {
    const state = how === 'running' ? 'running' : how === 'exited' ? 'exited' : 'created';
    const id = await fx.create({ state, image, ...(how === 'removed' ? { cmd: ['x'], init: false } : {}) });
    await sighting(env, via);
    if (how === 'removed') await docker(['rm', id]);
    return id;
  }

  it('removes exactly the three least recently used hermes images, in that order, never one a container uses; a second run removes nothing', async () => {
    const { env, state } = homeFor('lru');
    const [u1, u2, u3, u4, e, r, x, n] = await Promise.all([
      imported('u1', 3_000_000),
      layered('u2', 2_500_000),
      imported('u3', 2_000_000),
      layered('u4', 1_500_000),
      layered('e', 1_200_000),
      layered('r', 1_000_000),
      imported('x', 1_700_000),
      imported('n', 1_300_000),
    ]);
    for (const u of [u1!, u2!, u3!, u4!]) await use(env, u, 'removed');
    await use(env, e!, 'exited');
    await use(env, r!, 'running');
    await fx.create({ state: 'created', image: x!, cmd: ['x'], init: false, agent: null, profile: null }); // unlabelled
    const uses = JSON.parse(readFileSync(state, 'utf8')) as { engines: Record<string, Record<string, { lastUsed: string; hermes: boolean }>> };
    const mine = Object.values(uses.engines)[0]!;
    const order = [u1!, u2!, u3!, u4!, e!, r!];
    assert.deepEqual(
      Object.keys(mine)
        .filter((id) => order.includes(id))
        .sort(),
      [...order].sort(),
      'every hermes image is remembered',
    );
    assert.ok(!(x! in mine) && !(n! in mine), 'the unlabelled and the never-used image are not');
    for (let i = 1; i < 4; i++) assert.ok(Date.parse(mine[order[i]!]!.lastUsed) > Date.parse(mine[order[i - 1]!]!.lastUsed), `use order at ${i}`);

    // A budget that three removals meet and two do not.
    const df = await dfImages();
    const total = bytesOf(df, order);
    const budget = total - uniqueOf(df, u1!) - uniqueOf(df, u2!) - uniqueOf(df, u3!) + Math.floor(uniqueOf(df, u3!) / 2);
    const args = ['reap', ...sel(), '--images-over', String(budget), '--images-min-age', '0s', '--json'];

    const dry = await runCli([...args, '--dry-run'], { env });
    assert.equal(dry.code, 0, dry.stderr);
    const would = (JSON.parse(dry.stdout) as { images: ImagesJson }).images;
    assert.deepEqual(
      would.removed.map((i) => i.id),
      [u1, u2, u3],
    );
    assert.equal(would.bytesBefore, total);
    assert.equal(would.bytesAfter, total - would.removed.reduce((s, i) => s + i.bytes, 0));
    for (const id of order) assert.ok(await exists(id), 'a dry run removes nothing');

    const run = await runCli(args, { env });
    assert.equal(run.code, 0, run.stderr);
    const images = (JSON.parse(run.stdout) as { images: ImagesJson }).images;
    assert.deepEqual(Object.keys(images).slice(0, 6), ['removed', 'kept', 'failed', 'bytesBefore', 'bytesAfter', 'budget']);
    assert.deepEqual(
      images.removed.map((i) => i.id),
      [u1, u2, u3],
      'the three least recently used, in that order',
    );
    assert.deepEqual(
      images.removed.map((i) => i.bytes),
      [u1, u2, u3].map((id) => uniqueOf(df, id!)),
    );
    assert.ok(images.removed.every((i) => i.tags.length === 1 && i.lastUsed === mine[i.id]!.lastUsed));
    assert.deepEqual(images.failed, []);
    assert.equal(images.budget, budget);
    assert.ok(images.bytesAfter <= budget, `bytesAfter ${images.bytesAfter} <= budget ${budget}`);
    for (const id of [u1!, u2!, u3!]) assert.equal(await exists(id), false, `${id} removed`);
    for (const id of [u4!, e!, r!, x!, n!]) assert.ok(await exists(id), `${id} stays`);
    const remaining = [u4!, e!, r!];
    assert.ok(bytesOf(await dfImages(), remaining) <= budget, 'system df afterwards is under the budget');

    const again = await runCli(
      args.filter((a) => a !== '--json'),
      { env },
    );
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /; images: removed 0 \(0 B freed\), kept 0, failed 0/);
    assert.doesNotMatch(again.stdout, /removed image/);
  });

  it(
    'keeps an image a container uses at the check, ' + 'and one a container starts using between the check and the removal (409): reported, not a failure',
    async () => {
      const { env } = homeFor('race');
      const [a, b] = await Promise.all([imported('race-a', 1_100_000), imported('race-b', 1_200_000)]);
      // The state is per engine address: the proxy's, for every run of this test.
      const proxy = await EngineProxy.start(tmp.dir);
      try {
        await use(env, a!, 'removed', ['--host', proxy.host]);
        await use(env, b!, 'removed', ['--host', proxy.host]);
        // a: an unlabelled container uses it before the reap (the check finds it; no DELETE is sent).
        await fx.create({ state: 'created', image: a!, cmd: ['x'], init: false, agent: null, profile: null });
        // b: a container is made from it right after the check, just before the engine gets the DELETE.
        proxy.before = async (method, url) => {
          if (method === 'DELETE' && decodeURIComponent(url).includes(b!)) {
            await fx.create({ state: 'created', image: b!, cmd: ['x'], init: false, agent: null, profile: null });
          }
        };
        const r = await runCli(['reap', ...sel(), '--host', proxy.host, '--images-over', '1', '--images-min-age', '0s', '--json'], { env });
        assert.equal(r.code, 0, r.stderr);
        const images = (JSON.parse(r.stdout) as { images: ImagesJson }).images;
        assert.deepEqual(images.removed, []);
        assert.deepEqual(images.failed, []);
        assert.deepEqual(
          images.kept.map((k) => [k.id, k.reason]),
          [
            [a, 'in-use'],
            [b, 'in-use'],
          ],
        );
        assert.match(images.kept[1]!.detail, /409/);
        const deletes = (id: string) => proxy.seen.filter((u) => decodeURIComponent(u.split('?')[0]!).endsWith(`/images/${id}`)).length;
        assert.equal(deletes(a!), 0, 'no DELETE for the image in use at the check');
        assert.equal(deletes(b!), 1, 'one DELETE for the image that came into use after it');
        assert.ok(await exists(a!));
        assert.ok(await exists(b!));
      } finally {
        await proxy.close();
      }
    },
  );

  it('two reaps at once remove each image once', async () => {
    const { env } = homeFor('twice');
    const ids = await Promise.all([imported('twice-a', 1_000_000), imported('twice-b', 1_100_000), imported('twice-c', 1_200_000)]);
    for (const id of ids) await use(env, id, 'removed');
    const args = ['reap', ...sel(), '--images-over', '1', '--images-min-age', '0s', '--wait', '--json'];
    const [one, two] = await Promise.all([runCli(args, { env }), runCli(args, { env })]);
    assert.equal(one.code, 0, one.stderr);
    assert.equal(two.code, 0, two.stderr);
    const removed = [one, two].flatMap((r) => (JSON.parse(r.stdout) as { images: ImagesJson }).images.removed.map((i) => i.id));
    assert.deepEqual([...removed].sort(), [...ids].sort(), 'each image removed once, by one of them');
    for (const id of ids) assert.equal(await exists(id), false);
  });

  it('watch: a container created from an image marks it used at that moment, in the state file and in what the next pass keeps', async () => {
    const { env, state } = homeFor('watch');
    const [a, b] = await Promise.all([imported('watch-a', 1_300_000), imported('watch-b', 1_000_000)]);
    await use(env, a!, 'removed');
    await use(env, b!, 'removed'); // a is now the least recently used
    const lastUse = (id: string) => {
      const doc = JSON.parse(readFileSync(state, 'utf8')) as { engines: Record<string, Record<string, { lastUsed: string }>> };
      return Date.parse(Object.values(doc.engines)[0]![id]!.lastUsed);
    };
    assert.ok(lastUse(a!) < lastUse(b!));
    const w = WatchProcess.start([...sel(), '--images-over', '1TB', '--images-min-age', '0s'], env);
    try {
      await w.waitFor('the first image pass', () => w.events('images').length > 0);
      const c = await fx.create({ state: 'created', image: a!, cmd: ['x'], init: false });
      await w.waitFor('the use of a', () => w.events('image-used').some((l) => l.id === a && l.container === c));
      const marked = w.events('image-used').find((l) => l.id === a && l.container === c)!;
      assert.equal(marked.action, 'create');
      assert.equal(lastUse(a!), Date.parse(marked.at as string), "the state file has the event's time");
      assert.ok(lastUse(a!) > lastUse(b!), 'a is now the most recently used');
      await docker(['rm', c]);
      await w.waitFor('the destroy', () => w.events('image-used').some((l) => l.id === a && (l.action === 'destroy' || l.action === 'remove')));
    } finally {
      assert.equal((await w.stop()).code, 0, w.stderr);
    }
    // The next pass, with a budget one removal meets: b goes, a (just used) stays.
    const df = await dfImages();
    const budget = bytesOf(df, [a!, b!]) - Math.floor(uniqueOf(df, b!) / 2);
    const r = await runCli(['reap', ...sel(), '--images-over', String(budget), '--images-min-age', '0s', '--json'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      (JSON.parse(r.stdout) as { images: ImagesJson }).images.removed.map((i) => i.id),
      [b],
    );
    assert.ok(await exists(a!));
  });

  it('config.yaml janitor.images_over and keep_images; status shows the images hermes used; the metrics file counts them', async () => {
    const { env, state } = homeFor('status');
    const profileHome = path.dirname(path.dirname(state));
    mkdirSync(profileHome, { recursive: true });
    const [a, k] = await Promise.all([imported('status-a', 1_400_000), imported('status-keep', 1_100_000)]);
    await use(env, a!, 'removed');
    await use(env, k!, 'removed');
    const df = await dfImages();
    writeFileSync(path.join(profileHome, 'config.yaml'), `janitor:\n  images_over: ${bytesOf(df, [a!, k!])}\n  keep_images: ['status-keep']\n`);
    const st = await runCli(['status', ...sel(), '--json'], { env });
    const images = (JSON.parse(st.stdout) as { images: Record<string, unknown> }).images;
    const lastUse = JSON.parse(readFileSync(state, 'utf8')) as { engines: Record<string, Record<string, { lastUsed: string }>> };
    assert.deepEqual(images, {
      count: 2,
      uniqueBytes: uniqueOf(df, a!) + uniqueOf(df, k!),
      bytes: bytesOf(df, [a!, k!]),
      budget: bytesOf(df, [a!, k!]),
      budgetGiven: String(bytesOf(df, [a!, k!])),
      oldestLastUse: Object.values(lastUse.engines)[0]![a!]!.lastUsed,
      error: null,
    });
    const text = await runCli(['status', ...sel()], { env });
    assert.match(text.stdout, /Images hermes used\n {2}2 images, .* unique\); budget /);

    // A budget one byte under what they take: the config's keep pattern keeps the one, the other goes.
    writeFileSync(path.join(profileHome, 'config.yaml'), `janitor:\n  images_over: ${bytesOf(df, [a!, k!]) - 1}\n  keep_images: ['status-keep']\n`);
    const prom = path.join(tmp.dir, 'status.prom');
    const r = await runCli(['reap', ...sel(), '--images-min-age', '0s', '--metrics-file', prom], { env });
    assert.equal(r.code, 0, r.stderr);
    // Podman names an imported image docker.io/<name>.
    assert.match(r.stdout, new RegExp(`removed image ${a!.slice(0, 19)} (docker\\.io/)?hj-img-${fx.runId}/status-a:t \\(`));
    assert.ok(await exists(k!));
    const metrics = readFileSync(prom, 'utf8');
    for (const [imageState, n] of [
      ['used', 1],
      ['removed', 1],
      ['kept', 0],
      ['failed', 0],
    ] as const) {
      assert.match(metrics, new RegExp(`^hermes_janitor_images\\{state="${imageState}",home="[^"]+"\\} ${n}$`, 'm'));
    }
    assert.match(metrics, new RegExp(`^hermes_janitor_image_bytes\\{home="[^"]+"\\} ${bytesOf(await dfImages(), [k!])}$`, 'm'));
  });

  it('list with a budget in config.yaml records the images its containers use', async () => {
    const { env, state } = homeFor('list');
    const profileHome = path.dirname(path.dirname(state));
    mkdirSync(profileHome, { recursive: true });
    const l = await imported('list-a', 1_000_000);
    await fx.create({ state: 'created', image: l, cmd: ['x'], init: false });
    const beforeList = Date.now();
    const none = await runCli(['list', ...sel(), '--json'], { env });
    assert.equal(none.code, 0, none.stderr);
    assert.throws(() => readFileSync(state), /ENOENT/, 'no budget: list writes nothing');
    writeFileSync(path.join(profileHome, 'config.yaml'), 'janitor:\n  images_over: 1TB\n');
    const r = await runCli(['list', ...sel(), '--json'], { env });
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(readFileSync(state, 'utf8')) as { engines: Record<string, Record<string, { lastUsed: string; hermes: boolean }>> };
    const seen = Object.values(doc.engines)[0]![l]!;
    assert.equal(seen.hermes, true);
    assert.ok(Date.parse(seen.lastUsed) >= beforeList);
  });

  it('--fail-open with an image pass that fails: exit 0 and one line on stderr naming it', async () => {
    const { env, state } = homeFor('fail-open');
    // The profile's home exists: a missing one is a warning line of its own (a mistyped profile?).
    mkdirSync(path.dirname(path.dirname(state)), { recursive: true });
    await fx.create({ state: 'running' });
    // The engine answers everything but the image calls: the pass cannot measure what the images take.
    const proxy = await EngineProxy.start(tmp.dir);
    proxy.refuse = /\/system\/df$/;
    try {
      const r = await runCli(['reap', ...sel(), '--host', proxy.host, '--images-over', '50%', '--fail-open', '--no-stop-idle'], { env });
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stderr,
        /^hermes-janitor: 1 image not removed, first: image pass on unix:\/\/\S+: [^\n]*refused by the test proxy[^\n]* \(--fail-open: exit 0\)\n$/,
        r.stderr,
      );
      const strict = await runCli(['reap', ...sel(), '--host', proxy.host, '--images-over', '50%', '--no-stop-idle'], { env });
      assert.equal(strict.code, 1, 'without --fail-open: exit 1');
      assert.match(strict.stderr, /^hermes-janitor: image pass on unix:\/\/\S+: [^\n]*refused by the test proxy/m);
    } finally {
      await proxy.close();
    }
  });

  it('bad input: one line, exit 2', async () => {
    const { env } = homeFor('bad');
    for (const [value, name] of [
      ['0', '--images-over'],
      ['12XB', '--images-over'],
      ['150%', '--images-over'],
    ] as const) {
      assertUsageError(await runCli(['reap', ...sel(), '--images-over', value], { env }), [name, value]);
    }
    assertUsageError(await runCli(['reap', ...sel(), '--images-over', '1GB', '--keep-image', '(a'], { env }), ['--keep-image', '(a']);
    assertUsageError(await runCli(['reap', ...sel(), '--all-images'], { env }), ['--all-images', '--images-over']);
  });
});
