/**
 * `npm run bench:images [-- --images 2000 --containers 20000 --remove 100 --runs 3]`
 *
 * One image pass (passes/images/run.ts: the sightings, `GET /system/df`, the LRU walk with a re-check and a DELETE per
 * image) against the engine simulator with `--images` images and `--containers` containers (hermes-labelled ones on
 * the newest half of the images, five unlabelled ones on old images), with a budget that needs `--remove` removals.
 * The simulator runs in a child process (bench/image-sim-child.ts), so the figures are the pass's own: wall time and
 * this process's peak RSS growth. Goal (issue 27): 2,000 images and 20,000 containers within 2 s and 150 MB.
 */
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createDockerodeEngine } from '../src/adapters/dockerode-engine.js';
import { ImageUses } from '../src/passes/images/uses.js';
import { MemoryStateStore } from '../src/adapters/state-file.js';
import { recordUses } from '../src/passes/images/rule.js';
import { defaultSelection } from '../src/core/selection.js';
import { reduceImages } from '../src/passes/images/run.js';

const { values } = parseArgs({
  options: {
    images: { type: 'string', default: '2000' },
    containers: { type: 'string', default: '20000' },
    remove: { type: 'string', default: '100' },
    runs: { type: 'string', default: '3' },
  },
});
const [images, containers, remove, runs] = [values.images, values.containers, values.remove, values.runs].map(Number) as [number, number, number, number];
const MB = 1_000_000;
const here = path.dirname(fileURLToPath(import.meta.url));

interface Seeded {
  host: string;
  socketPath: string;
  ids: string[];
}

function startSimulator(): Promise<{ seeded: Seeded; stop: () => void }> {
  const child = fork(path.join(here, 'image-sim-child.ts'), [String(images), String(containers)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ seeded: m as Seeded, stop: () => child.kill() }));
    child.once('exit', (code) => reject(new Error(`the simulator exited (${code})`)));
  });
}

const rows: string[] = [];
for (let r = 0; r < runs; r++) {
  const { seeded, stop } = await startSimulator();
  try {
    const base = Date.now() - 10 * 3_600_000;
    const store = new MemoryStateStore(
      recordUses(
        undefined,
        seeded.host,
        seeded.ids.map((id, i) => ({ id, atMs: base + i * 1000, hermes: true })),
      ),
    );
    const engine = await createDockerodeEngine({ host: seeded.host, socketPath: seeded.socketPath });
    global.gc?.();
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const t0 = process.hrtime.bigint();
    const result = await reduceImages({
      engine,
      uses: new ImageUses(store),
      selection: defaultSelection(null),
      budget: { kind: 'bytes', bytes: (images - remove) * MB, raw: '' },
      policy: { allImages: false, minAgeMs: 0, keep: [] },
      dryRun: false,
      now: () => new Date(),
      filesystemBytes: async () => null,
    });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    if (result.removed.length !== remove || result.failed.length)
      throw new Error(`unexpected result: removed ${result.removed.length}, failed ${JSON.stringify(result.failed.slice(0, 2))}`);
    rows.push(
      `run ${r + 1}: ${images} images, ${containers} containers, ${remove} removed, ${result.kept.length} kept in use: ${ms.toFixed(0)} ms, ` +
        `RSS +${((peak - rss0) / 2 ** 20).toFixed(1)} MiB (peak ${(peak / 2 ** 20).toFixed(1)} MiB)`,
    );
    console.log(rows.at(-1));
  } finally {
    stop();
  }
}
