'use strict';
// Build step: runs the hooks through dist/fast-path.cjs, in a temporary home, then saves V8's code cache of the
// bundle (every function the hooks compiled included) to dist/fast-path.cjs.cache for bin/ to load.
//
// It runs in a child process whose stdin is a pipe (a socket, as a Node.js harness such as Claude Code gives its
// hooks), so the first hook takes the path a real one does (the input read from fd 0, the answer written to fds 1
// and 2) and that path is in the cache too; the other hook forms follow in process.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Readable } = require('node:stream');
const { loadFastPath, CACHE } = require('../bin/hermes-janitor.js');

const call = { session_id: 's', tool_name: 'Bash', tool_input: { command: 'make' }, tool_use_id: 't' };

/**
 * The stdin above is a socket (what Node.js harnesses give); Codex, hermes and shells give a pipe, read another way:
 * warmed on a named pipe (no mkfifo, no harm: that path compiles as usual).
 */
async function warmPipe(fast, home) {
  const fifo = path.join(home, 'stdin.fifo');
  if (spawnSync('mkfifo', [fifo]).status !== 0) return;
  const reader = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  const writer = fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
  fs.writeSync(writer, JSON.stringify({ ...call, hook_event_name: 'PreToolUse' }));
  fs.closeSync(writer);
  await fast.readHookInputFd(reader);
  fs.closeSync(reader);
}

/** The child: warms the bundle through the process path and in process, then writes the cache. */
async function warm(home) {
  const { exports: fast, script } = loadFastPath(true);
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
  await fast.runFastPath(['tool-loop', 'pre']); // this process's own stdin, stdout and stderr, as bin/ runs it
  await warmPipe(fast, home);
  for (let i = 0; i < 3; i++) await fast.runFastPath(['tool-loop', 'pre'], context({ ...call, hook_event_name: 'PreToolUse' }));
  await fast.runFastPath(['tool-loop', 'post'], context({ ...call, hook_event_name: 'PostToolUseFailure', error: 'x' }));
  fs.mkdirSync(path.join(home, 'stop-hook'));
  fs.writeFileSync(path.join(home, 'stop-hook', 'marker.json'), JSON.stringify({ remaining: 1 }));
  await fast.runFastPath(['stop-hook'], context({ session_id: 's', hook_event_name: 'Stop', stop_hook_active: false }));
  fs.writeFileSync(CACHE, script.createCachedData());
}

if (process.argv[2] === '--warm') {
  warm(process.argv[3]).catch((err) => {
    process.stderr.write(`${(err && err.stack) || err}\n`);
    process.exit(1);
  });
} else {
  // A cache left from an earlier bundle goes first: V8 checks a cache against its source's length only.
  fs.rmSync(CACHE, { force: true });
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hj-cache-'));
  try {
    const input = JSON.stringify({ ...call, hook_event_name: 'PreToolUse' });
    const r = spawnSync(process.execPath, [__filename, '--warm', home], {
      input,
      stdio: ['pipe', 'ignore', 'pipe'],
      env: { ...process.env, HERMES_HOME: home },
      encoding: 'utf8',
    });
    // No cache is no harm: bin/ compiles the bundle as usual.
    if (r.status !== 0) process.stderr.write(`fast-path cache not made: ${(r.error && r.error.message) || r.stderr}\n`);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}
