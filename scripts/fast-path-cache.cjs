'use strict';
// Build step: runs each hook once through dist/fast-path.cjs, in a temporary home, then saves V8's code cache of the
// bundle (every function the hooks compiled included) to dist/fast-path.cjs.cache for bin/ to load.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Readable } = require('node:stream');
const { loadFastPath, CACHE } = require('../bin/fast-path-loader.cjs');

const { exports: fast, script } = loadFastPath(true);
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hj-cache-'));
const context = (input) => ({
  argv: [],
  env: { HERMES_HOME: home },
  stdout: { write: () => true },
  stderr: { write: () => true },
  stdin: Readable.from([Buffer.from(JSON.stringify(input))]),
  cwd: home,
  homedir: home,
  now: () => new Date(),
});
const call = { session_id: 's', tool_name: 'Bash', tool_input: { command: 'make' }, tool_use_id: 't' };

(async () => {
  try {
    for (let i = 0; i < 3; i++) await fast.runFastPath(['tool-loop', 'pre'], context({ ...call, hook_event_name: 'PreToolUse' }));
    await fast.runFastPath(['tool-loop', 'post'], context({ ...call, hook_event_name: 'PostToolUseFailure', error: 'x' }));
    fs.mkdirSync(path.join(home, 'stop-hook'));
    fs.writeFileSync(path.join(home, 'stop-hook', 'marker.json'), JSON.stringify({ remaining: 1 }));
    await fast.runFastPath(['stop-hook'], context({ session_id: 's', hook_event_name: 'Stop', stop_hook_active: false }));
    fs.writeFileSync(CACHE, script.createCachedData());
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
})().catch((err) => {
  // No cache is no harm: bin/ compiles the bundle as usual.
  process.stderr.write(`fast-path cache not made: ${(err && err.message) || err}\n`);
});
