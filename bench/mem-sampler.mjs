// Preload for memory investigations: every 100 ms, one stderr line with RSS, heap used/total and external (MB).
import { readFileSync } from 'node:fs';
import v8 from 'node:v8';
const t0 = Date.now();
let peak = 0;
const timer = setInterval(
  () => {
    const m = process.memoryUsage();
    const old = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
    peak = Math.max(peak, m.rss);
    process.stderr.write(
      `mem ${((Date.now() - t0) / 1000).toFixed(1)}s rss ${(m.rss / 2 ** 20).toFixed(0)} heapUsed ${(m.heapUsed / 2 ** 20).toFixed(0)} heapTotal ${(m.heapTotal / 2 ** 20).toFixed(0)} old ${(old.space_used_size / 2 ** 20).toFixed(0)}/${(old.space_size / 2 ** 20).toFixed(0)} ext ${(m.external / 2 ** 20).toFixed(0)} ab ${(m.arrayBuffers / 2 ** 20).toFixed(0)}\n`,
    );
  },
  Number(process.env.HJ_MEM_SAMPLE_MS ?? 100),
);
timer.unref();
// At exit, the kernel's own peak (VmHWM), which a sample every interval can miss.
process.on('exit', () => {
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  process.stderr.write(`mem exit VmHWM ${hwm ? (Number(hwm[1]) / 1024).toFixed(0) : '?'} MB\n`);
});
