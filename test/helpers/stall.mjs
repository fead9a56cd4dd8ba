// A stall the run cannot yield from, for the tests of the deadline (#47): loaded into the CLI under test with
// `NODE_OPTIONS=--import <this file>` (into each of its threads), it makes a listing of the directory $HJ_STALL_DIR
// (by its real path, however the CLI reaches it: /proc/self/fd/<n> included) a synchronous loop that never ends.
// Whatever the run was doing before is done and reported; nothing after it runs unless the deadline ends the run from
// outside that loop. With $HJ_STALL_ONCE (a file path), only the first listing stalls, in whichever thread or process
// (the file is made as it begins): `watch` started again after a stuck run then carries on.
import fs from 'node:fs';

const target = process.env.HJ_STALL_DIR && fs.realpathSync(process.env.HJ_STALL_DIR);

function stalls(dir) {
  if (!target) return false;
  try {
    return fs.realpathSync(String(dir)) === target;
  } catch {
    return false;
  }
}

function stall() {
  if (process.env.HJ_STALL_ONCE) {
    try {
      fs.writeFileSync(process.env.HJ_STALL_ONCE, `${process.pid}\n`, { flag: 'wx' });
    } catch {
      return; // stalled once already
    }
  }
  process.stderr.write(`[stall: listing ${target}]\n`);
  for (;;) {
    /* a loop that never yields */
  }
}

for (const name of ['readdirSync', 'opendirSync']) {
  const real = fs[name];
  fs[name] = function patched(dir, ...rest) {
    if (stalls(dir)) stall();
    return real.call(this, dir, ...rest);
  };
}
for (const name of ['readdir', 'opendir']) {
  const real = fs.promises[name];
  fs.promises[name] = function patched(dir, ...rest) {
    if (stalls(dir)) stall();
    return real.call(this, dir, ...rest);
  };
}
