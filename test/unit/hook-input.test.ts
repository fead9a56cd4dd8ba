/**
 * Reading a hook's input from a file descriptor, as the fast path does in a real process: a regular file or a socket
 * at once, a pipe through a non-blocking descriptor of its own, with a deadline; anything else is left to the stream.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { readHookInputFd } from '../../src/cli/hooks/read-hook-input.js';
import { tempDir } from '../helpers/cli.js';

const tmp = tempDir('hj-input-');
after(tmp.cleanup);

describe('hook input from a file descriptor', () => {
  it('reads a regular file at once, and refuses one over the size limit', async () => {
    const file = path.join(tmp.dir, 'payload.json');
    writeFileSync(file, '\uFEFF {"tool_name":"Bash"}\n');
    const fd = openSync(file, 'r');
    try {
      assert.deepEqual(await readHookInputFd(fd), { payload: { tool_name: 'Bash' } });
    } finally {
      closeSync(fd);
    }
    const big = openSync(file, 'r');
    try {
      assert.match((await readHookInputFd(big, { maxBytes: 8 }))?.problem ?? '', /^the hook input is larger than /);
    } finally {
      closeSync(big);
    }
  });

  it('gives up on a pipe whose writer never ends it, at the deadline', async () => {
    const fifo = path.join(tmp.dir, 'stdin.fifo');
    execFileSync('mkfifo', [fifo]);
    const fd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK); // held open, never written
    try {
      assert.deepEqual(await readHookInputFd(fd, { timeoutMs: 300 }), { problem: 'the hook input did not end within 0.3 s' });
    } finally {
      closeSync(writer);
      closeSync(fd);
    }
  });

  it('gives up at the deadline on a blocking pipe too (read through a non-blocking descriptor of its own)', async () => {
    const fifo = path.join(tmp.dir, 'blocking.fifo');
    execFileSync('mkfifo', [fifo]);
    const opener = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY); // held open, never written
    const fd = openSync(fifo, constants.O_RDONLY); // blocking, as a shell gives stdin
    closeSync(opener);
    try {
      const started = Date.now();
      assert.deepEqual(await readHookInputFd(fd, { timeoutMs: 300 }), { problem: 'the hook input did not end within 0.3 s' });
      assert.ok(Date.now() - started < 2000);
    } finally {
      closeSync(writer);
      closeSync(fd);
    }
  });

  it('reads a pipe whose writer has ended it, the input in several writes', async () => {
    const fifo = path.join(tmp.dir, 'ended.fifo');
    execFileSync('mkfifo', [fifo]);
    const fd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY);
    writeSync(writer, '{"tool_name":');
    writeSync(writer, '"Bash"}');
    closeSync(writer);
    try {
      assert.deepEqual(await readHookInputFd(fd), { payload: { tool_name: 'Bash' } });
    } finally {
      closeSync(fd);
    }
  });

  it('leaves a device (a terminal, /dev/null) to the stream', async () => {
    const fd = openSync('/dev/null', 'r');
    try {
      assert.equal(await readHookInputFd(fd), undefined);
    } finally {
      closeSync(fd);
    }
  });
});
