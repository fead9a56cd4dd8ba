/** The engine simulator for bench/images.ts, in its own process: seeds images and containers, then says where it listens. */
import { EngineSimulator } from '../test/helpers/engine-simulator.js';

const [images, containers] = process.argv.slice(2).map(Number) as [number, number];
const sim = await EngineSimulator.start();
const ids: string[] = [];
for (let i = 0; i < images; i++) ids.push(sim.addImage({ size: 1_000_000, tags: [`task/${i}:latest`], created: new Date(0) }));
const half = Math.floor(images / 2);
const unlabelled = [0, 10, 20, 30, 40].filter((i) => i < half);
for (let i = 0; i < containers - unlabelled.length; i++) {
  sim.add({ labels: { 'hermes-agent': '1', 'hermes-profile': 'bench' }, image: ids[half + (i % (images - half))]!, state: 'exited' });
}
for (const i of unlabelled) sim.add({ labels: {}, image: ids[i]!, state: 'created' });
process.send!({ host: sim.host, socketPath: sim.socketPath, ids });
