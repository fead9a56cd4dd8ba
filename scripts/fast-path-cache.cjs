'use strict';
// Build step: runs the hooks through each bundle of dist/ (scripts/build-fast-path.cjs), in a temporary home, then
// saves V8's code cache of the bundle (every function the hooks compiled included) to dist/<bundle>.cjs.cache for
// bin/ to load.
//
// Each bundle is warmed in a child process whose stdin is a pipe (a socket, as a Node.js harness such as Claude Code
// gives its hooks), so its first hook takes the path a real one does (the input read from fd 0, the answer written
// to fds 1 and 2) and that path is in the cache too; the other hook forms follow in process.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Readable } = require('node:stream');
const { loadFastPath, BUNDLES, DIST } = require('../bin/hermes-janitor.js');

const call = { session_id: 's', tool_name: 'Bash', tool_input: { command: 'make' }, tool_use_id: 't' };
const PRE = { ...call, hook_event_name: 'PreToolUse' };
const POST_FAILURE = { ...call, hook_event_name: 'PostToolUseFailure', error: 'x' };
const STOP = { session_id: 's', hook_event_name: 'Stop', stop_hook_active: false };

/** What each bundle runs: first through the process path (argv, with `input` on stdin), then in process. */
const WARM = {
  'fast-path': {
    argv: ['tool-loop', 'pre'],
    input: PRE,
    inProcess: [
      ['tool-loop pre', PRE],
      ['tool-loop pre', PRE],
      ['tool-loop pre', PRE],
      ['tool-loop post', POST_FAILURE],
      ['stop-hook', STOP],
    ],
  },
  'fast-path-tool-loop': {
    argv: ['tool-loop', 'pre'],
    input: PRE,
    inProcess: [
      ['tool-loop pre', PRE],
      ['tool-loop pre', PRE],
      ['tool-loop pre', PRE],
      ['tool-loop post', POST_FAILURE],
    ],
  },
  'fast-path-stop-hook': {
    argv: ['stop-hook'],
    input: STOP,
    inProcess: [
      ['stop-hook', STOP],
      ['stop-hook', STOP],
    ],
  },
};

/** An armed run marker, so that a stop is decided (and blocked) rather than let through unread. */
function arm(home) {
  fs.mkdirSync(path.join(home, 'stop-hook'), { recursive: true });
  fs.writeFileSync(path.join(home, 'stop-hook', 'marker.json'), JSON.stringify({ remaining: 1 }));
}

/**
 * The stdin of the process path is a socket (what Node.js harnesses give); Codex, hermes and shells give a pipe, read
 * another way: warmed on a named pipe (no mkfifo, no harm: that path compiles as usual).
 */
async function warmPipe(fast, home) {
  const fifo = path.join(home, 'stdin.fifo');
  if (spawnSync('mkfifo', [fifo]).status !== 0) return;
  const reader = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  const writer = fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
  fs.writeSync(writer, JSON.stringify(PRE));
  fs.closeSync(writer);
  await fast.readHookInputFd(reader);
  fs.closeSync(reader);
}

/** The child: warms one bundle through the process path and in process, then writes its cache. */
async function warm(name, home) {
  const { exports: fast, script } = loadFastPath(name, true);
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
  const plan = WARM[name];
  arm(home);
  await fast.runFastPath(plan.argv); // this process's own stdin, stdout and stderr, as bin/ runs it
  await warmPipe(fast, home);
  for (const [form, input] of plan.inProcess) {
    arm(home);
    await fast.runFastPath(form.split(' '), context(input));
  }
  fs.writeFileSync(path.join(DIST, `${name}.cjs.cache`), script.createCachedData());
}

if (process.argv[2] === '--warm') {
  warm(process.argv[3], process.argv[4]).catch((err) => {
    process.stderr.write(`${(err && err.stack) || err}\n`);
    process.exit(1);
  });
} else {
  for (const name of BUNDLES) {
    const cache = path.join(DIST, `${name}.cjs.cache`);
    // A cache left from an earlier bundle goes first: V8 checks a cache against its source's length only.
    fs.rmSync(cache, { force: true });
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hj-cache-'));
    try {
      const r = spawnSync(process.execPath, [__filename, '--warm', name, home], {
        input: JSON.stringify(WARM[name].input),
        stdio: ['pipe', 'ignore', 'pipe'],
        env: { ...process.env, HERMES_HOME: home },
        encoding: 'utf8',
      });
      // No cache is no harm: bin/ compiles the bundle as usual.
      if (r.status !== 0) process.stderr.write(`${name}: code cache not made: ${(r.error && r.error.message) || r.stderr}\n`);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  }
}
