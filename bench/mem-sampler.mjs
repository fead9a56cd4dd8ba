// Preload for memory investigations: every 100 ms, one stderr line with RSS, heap used/total and external (MB).
import v8 from 'node:v8';
const t0 = Date.now();
let peak = 0;
const timer = setInterval(() => {
  const m = process.memoryUsage();
  const old = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
  peak = Math.max(peak, m.rss);
  process.stderr.write(`mem ${((Date.now() - t0) / 1000).toFixed(1)}s rss ${(m.rss / 2 ** 20).toFixed(0)} heapUsed ${(m.heapUsed / 2 ** 20).toFixed(0)} heapTotal ${(m.heapTotal / 2 ** 20).toFixed(0)} old ${(old.space_used_size / 2 ** 20).toFixed(0)}/${(old.space_size / 2 ** 20).toFixed(0)} ext ${(m.external / 2 ** 20).toFixed(0)} ab ${(m.arrayBuffers / 2 ** 20).toFixed(0)}\n`);
}, 100);
timer.unref();
