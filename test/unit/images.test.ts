/**
 * The image budget's rules (passes/images/rule.ts, passes/images/rule-budget.ts, passes/images/rule-size.ts) and its pass (passes/images/run.ts)
 * through the engine simulator, at the scale too (2,000 images, 20,000 containers: correctness here; the
 * timing is bench/images.ts's).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createDockerodeEngine } from '../../src/adapters/dockerode-engine.js';
import { ImageUses } from '../../src/passes/images/uses.js';
import { MemoryStateStore } from '../../src/adapters/state-file.js';
import { checkImageBudget, checkKeepPattern } from '../../src/passes/images/rule-budget.js';
import type { KeepPattern } from '../../src/util/linear-pattern.js';
import { keepPattern } from '../../src/passes/images/settings.js';
import { parseImageBudget } from '../../src/passes/images/rule-size.js';
import type { ImageFacts } from '../../src/core/image-facts.js';
import { type ImageUse, imageWalk, imagesBytes, recordUses, summarizeImages, usesOf } from '../../src/passes/images/rule.js';
import { ValueError } from '../../src/core/parse-args.js';
import { defaultSelection } from '../../src/core/selection.js';
import { type ImagePassOptions, reduceImages } from '../../src/passes/images/run.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

const img = (id: string, size: number, extra: Partial<ImageFacts> = {}): ImageFacts => ({
  id,
  tags: [`t/${id}:1`],
  createdMs: 0,
  size,
  sharedSize: 0,
  ...extra,
});
const use = (lastUsedMs: number, hermes = true): ImageUse => ({ lastUsedMs, hermes });
const HOUR = 3_600_000;

describe('image budget: sizes, percentages and patterns', () => {
  it('reads sizes as Docker and docuum mean them: GB is 10^9, GiB 2^30, a plain number bytes', () => {
    assert.deepEqual(parseImageBudget('50GB', 'x'), { kind: 'bytes', bytes: 50_000_000_000, raw: '50GB' });
    assert.equal((parseImageBudget('20GiB', 'x') as { bytes: number }).bytes, 20 * 2 ** 30);
    assert.equal((parseImageBudget('1500000000', 'x') as { bytes: number }).bytes, 1_500_000_000);
    assert.equal((parseImageBudget('512MiB', 'x') as { bytes: number }).bytes, 512 * 2 ** 20);
    assert.equal((parseImageBudget('1.5 GB', 'x') as { bytes: number }).bytes, 1_500_000_000);
    assert.deepEqual(parseImageBudget('80%', 'x'), { kind: 'percent', percent: 80, raw: '80%' });
    // Docker's one-letter spellings are binary, as docker run -m reads them; gb is GB.
    for (const [raw, n] of [
      ['10g', 10 * 2 ** 30],
      ['10G', 10 * 2 ** 30],
      ['512m', 512 * 2 ** 20],
      ['1.5t', 1.5 * 2 ** 40],
      ['10gb', 10e9],
      ['10 GiB', 10 * 2 ** 30],
    ] as const) {
      assert.equal((parseImageBudget(raw, 'x') as { bytes: number }).bytes, n, raw);
      assert.equal(checkImageBudget(raw, 'x'), null, raw);
    }
  });

  it('refuses what does not parse, 0, and percentages outside (0, 100]: one line naming the input', () => {
    for (const bad of ['0', '0GB', '0.0', '0g', '-1', '5XB', '', 'abc', '1e9', '0%', '101%', '5X', 'GB', 'g']) {
      assert.throws(
        () => parseImageBudget(bad, '--images-over'),
        (e: Error) => e instanceof ValueError && e.message.includes('--images-over') && !e.message.includes('\n'),
        bad,
      );
      assert.throws(() => checkImageBudget(bad, '--images-over'), ValueError, bad);
    }
    assert.throws(() => keepPattern('(a', '--keep-image'), /--keep-image '\(a' is not a regular expression hermes-janitor takes \(missing closing \)/);
    assert.throws(() => keepPattern(' ', '--keep-image'), /empty/);
    assert.throws(() => checkKeepPattern(' ', '--keep-image'), /empty/);
    assert.ok(keepPattern('^swebench/', 'k').test('swebench/django:1'));
    assert.ok(!keepPattern('^swebench/', 'k').test('docker.io/swebench/django:1'), 'anchored only where the pattern anchors itself');
    assert.ok(keepPattern('swebench/', 'k').test('docker.io/swebench/django:1'));
    // What RE2 leaves out is refused with one line that says so (docuum's --keep takes the same syntax).
    for (const p of ['a(?=b)', '(?<!a)b', '(a)\\1']) {
      assert.throws(
        () => keepPattern(p, 'janitor.keep_images'),
        (e: Error) => e instanceof ValueError && /no lookaround or backreferences/.test(e.message) && !e.message.includes('\n'),
        p,
      );
    }
  });

  it("a keep pattern runs in linear time: the issue's hostile pattern against a 64-hex id returns (#47)", () => {
    // JavaScript's backtracking engine runs this for minutes; RE2 answers at once. No clock is asserted: it returns.
    const hostile = keepPattern('^sha256:(?:[0-9a-f]|[0-9a-f])*!', 'janitor.keep_images');
    assert.equal(hostile.test(`sha256:${'a'.repeat(64)}`), false);
    assert.equal(hostile.test(`sha256:${'a'.repeat(64)}!`), true);
  });
});

describe('image budget: which images count and in what order', () => {
  const now = 100 * HOUR;
  const policy = { allImages: false, minAgeMs: HOUR, keep: [] as KeepPattern[] };

  it('walks hermes images least recently used first (ties by id); others are not counted', () => {
    const images = [img('c', 1), img('a', 1), img('b', 1), img('other', 1)];
    const uses = new Map([
      ['a', use(5 * HOUR)],
      ['b', use(2 * HOUR)],
      ['c', use(5 * HOUR)],
      ['other', use(1 * HOUR, false)],
    ]);
    assert.deepEqual(
      imageWalk(images, uses, policy, now).map((s) => s.image.id),
      ['b', 'a', 'c'],
    );
  });

  it('--all-images counts every image; one never seen counts as used now', () => {
    const images = [img('seen', 1), img('unseen', 1)];
    const walk = imageWalk(images, new Map([['seen', use(1 * HOUR, false)]]), { ...policy, allImages: true }, now);
    assert.deepEqual(
      walk.map((s) => [s.image.id, s.lastUsedMs]),
      [
        ['seen', HOUR],
        ['unseen', now],
      ],
    );
    assert.equal(walk[1]!.keep?.reason, 'recent', 'first seen now: under the minimum age');
  });

  it('keeps images matching a keep pattern (a tag or the id), and those used or created within the minimum age', () => {
    const images = [img('kept', 1, { tags: ['python:3.11'] }), img('young', 1), img('built', 1, { createdMs: now - 60_000 }), img('old', 1)];
    const uses = new Map([
      ['kept', use(0)],
      ['young', use(now - 10 * 60_000)],
      ['built', use(0)],
      ['old', use(0)],
    ]);
    const walk = imageWalk(images, uses, { ...policy, keep: [/^python:/] }, now);
    assert.deepEqual(
      walk.map((s) => [s.image.id, s.keep?.reason ?? null]),
      [
        ['built', 'recent'],
        ['kept', 'keep-pattern'],
        ['old', null],
        ['young', 'recent'],
      ],
    );
    assert.equal(imageWalk(images, uses, { ...policy, minAgeMs: 0 }, now).filter((s) => s.keep).length, 0, '0s keeps none for age');
  });

  it('counts shared layers once, removing one frees its unique size', () => {
    const images = [img('a', 5, { sharedSize: 2 }), img('b', 4, { sharedSize: 2 }), img('c', 3)];
    assert.equal(imagesBytes(images), 3 + 2 + 3 + 2);
    assert.equal(imagesBytes(images, 99), 99, "the engine's LayersSize when it gives one");
    assert.deepEqual(
      summarizeImages(
        images,
        new Map([
          ['a', use(7)],
          ['c', use(3)],
          ['b', use(1, false)],
        ]),
      ),
      { count: 2, uniqueBytes: 6, oldestLastUseMs: 3 },
    );
  });

  it('records uses: a last use only moves forward, hermes stays, other engines untouched, images gone forgotten', () => {
    let doc = recordUses(undefined, 'h1', [
      { id: 'a', atMs: 10, hermes: true },
      { id: 'b', atMs: 10, hermes: false },
    ]);
    doc = recordUses(doc, 'h2', [{ id: 'z', atMs: 1, hermes: true }]);
    doc = recordUses(
      doc,
      'h1',
      [
        { id: 'a', atMs: 5, hermes: false },
        { id: 'b', atMs: 20, hermes: true },
      ],
      new Set(['a', 'b']),
    );
    assert.deepEqual(
      [...usesOf(doc, 'h1')],
      [
        ['a', use(10)],
        ['b', use(20)],
      ],
    );
    doc = recordUses(doc, 'h1', [], new Set(['b']));
    assert.deepEqual([...usesOf(doc, 'h1').keys()], ['b']);
    assert.deepEqual([...usesOf(doc, 'h2').keys()], ['z']);
    assert.deepEqual([...usesOf({ engines: { h1: { x: { lastUsed: 'garbage' } } } }, 'h1')], [], 'an entry that does not parse is dropped');
  });
});

describe('image budget: the pass through the engine simulator', () => {
  let sim: EngineSimulator;
  const MB = 1_000_000;
  const selection = defaultSelection(null);
  const hermes = { 'hermes-agent': '1', 'hermes-profile': 'p' };

  before(async () => {
    sim = await EngineSimulator.start();
  });
  after(() => sim.close());

  async function pass(over: Partial<ImagePassOptions> & { uses: ImageUses }) {
    const engine = await createDockerodeEngine({ host: sim.host, socketPath: sim.socketPath! });
    return reduceImages({
      engine,
      selection,
      budget: { kind: 'bytes', bytes: 1, raw: '1' },
      policy: { allImages: false, minAgeMs: 0, keep: [] },
      dryRun: false,
      now: () => new Date(),
      filesystemBytes: async () => null,
      ...over,
    });
  }

  it('at 2,000 images and 20,000 containers: removes exactly the least recently used unused images, in order, until under the budget', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 2000; i++) ids.push(sim.addImage({ size: MB, tags: [`task/${i}:latest`], created: new Date(0) }));
    // Images 1000-1999 are used by 20 hermes containers each; images 0, 10, 20, 30, 40 by one unlabelled container.
    for (let i = 0; i < 19_995; i++) sim.add({ labels: hermes, image: ids[1000 + (i % 1000)]!, state: 'exited' });
    for (const i of [0, 10, 20, 30, 40]) sim.add({ labels: {}, image: ids[i]!, state: 'created' });
    const base = Date.now() - 10 * HOUR;
    const store = new MemoryStateStore(
      recordUses(
        undefined,
        sim.host,
        ids.map((id, i) => ({ id, atMs: base + i * 1000, hermes: true })),
      ),
    );
    const total = 2000 * MB;
    const r = await pass({ uses: new ImageUses(store), budget: { kind: 'bytes', bytes: total - 100 * MB, raw: '' } });
    const expected = ids.slice(0, 105).filter((_, i) => i % 10 !== 0 || i > 40);
    assert.equal(expected.length, 100);
    assert.deepEqual(
      r.removed.map((x) => x.id),
      expected,
    );
    assert.deepEqual(sim.imageRemovals, expected);
    assert.deepEqual(
      r.kept.map((k) => [k.id, k.reason]),
      [0, 10, 20, 30, 40].map((i) => [ids[i], 'in-use']),
    );
    assert.deepEqual(r.failed, []);
    assert.equal(r.bytesBefore, total);
    assert.equal(r.bytesAfter, total - 100 * MB);
    assert.equal(sim.stats.forcedRemovals, 0);
    // The containers' images were seen used now: the newest of all.
    const usesAfter = usesOf(store.snapshot(), sim.host);
    assert.ok(usesAfter.get(ids[1500]!)!.lastUsedMs > usesAfter.get(ids[999]!)!.lastUsedMs);
    // A second pass: under the budget now, it removes nothing, and forgets the images the engine no longer has.
    const again = await pass({ uses: new ImageUses(store), budget: { kind: 'bytes', bytes: total - 100 * MB, raw: '' } });
    assert.deepEqual([again.removed, again.failed, again.bytesBefore], [[], [], total - 100 * MB]);
    assert.equal(usesOf(store.snapshot(), sim.host).has(expected[0]!), false);
  });

  it('a run cut short (--timeout) after a removal keeps the rest as cut-short, never as failed', async () => {
    const ids = [0, 1, 2].map((i) => sim.addImage({ size: MB, tags: [`cut/${i}:1`], created: new Date(0) }));
    const store = new MemoryStateStore(
      recordUses(
        undefined,
        sim.host,
        ids.map((id, i) => ({ id, atMs: i * 1000, hermes: true })),
      ),
    );
    const engine = await createDockerodeEngine({ host: sim.host, socketPath: sim.socketPath! });
    const ctl = new AbortController();
    // The run's signal goes off as the first removal is answered (what --timeout does, without a clock).
    const cutting = Object.assign(Object.create(engine) as typeof engine, {
      removeImage: async (id: string, signal?: AbortSignal) => {
        const r = await engine.removeImage(id, signal);
        ctl.abort(new Error('timed out'));
        return r;
      },
    });
    const r = await pass({ engine: cutting, uses: new ImageUses(store), signal: ctl.signal });
    assert.deepEqual(
      r.removed.map((x) => x.id),
      [ids[0]],
    );
    assert.deepEqual(
      r.kept.map((k) => [k.id, k.reason]),
      [[ids[1], 'cut-short']],
    );
    assert.deepEqual(r.failed, []);
    assert.ok(sim.images.has(ids[1]!) && sim.images.has(ids[2]!));
  });

  it('a percentage is measured only for an engine on this host; otherwise nothing is removed and the pass says why', async () => {
    await sim.close();
    sim = await EngineSimulator.start(); // a small engine of its own
    const id = sim.addImage({ size: MB });
    const store = new MemoryStateStore(recordUses(undefined, sim.host, [{ id, atMs: 0, hermes: true }]));
    const measured = await pass({
      uses: new ImageUses(store),
      budget: { kind: 'percent', percent: 50, raw: '50%' },
      filesystemBytes: async (p) => (p === '/var/lib/docker' ? 2 * MB - 2 : null),
      dryRun: true,
    });
    assert.equal(measured.budget, MB - 1);
    assert.ok(measured.removed.some((x) => x.id === id));
    const unmeasured = await pass({ uses: new ImageUses(store), budget: { kind: 'percent', percent: 50, raw: '50%' }, dryRun: true });
    assert.equal(unmeasured.budget, null);
    assert.deepEqual(unmeasured.removed, []);
    assert.match(unmeasured.failed[0]!.error, /--images-over 50% .*cannot be measured.*give a size instead/);
    assert.ok(sim.images.has(id));
  });
});
