#!/usr/bin/env node
'use strict';
// Thin entry. CommonJS on purpose (bin/package.json): hooks run on every tool call and shell start-up files on
// every prompt, and a CommonJS entry plus one bundled file (dist/fast-path.cjs, loaded with its V8 code cache by
// fast-path-loader.cjs) starts much faster than the ES module graph. When no fast path applies, the CLI proper
// (dist/cli/main.js) runs and decides the exit code.
const argv = process.argv.slice(2);

function missingBuild(err) {
  process.stderr.write(`hermes-janitor: cannot load the built CLI (${(err && (err.code || err.message)) || err}); run 'npm run build' first\n`);
  process.exit(1);
}

(async () => {
  let fast;
  try {
    fast = require('./fast-path-loader.cjs').loadFastPath().exports;
  } catch (err) {
    missingBuild(err);
  }
  const quick = await fast.runFastPath(argv);
  if (quick !== undefined) process.exit(quick);
  let main;
  try {
    ({ main } = await import('../dist/cli/main.js'));
  } catch (err) {
    missingBuild(err);
  }
  process.exit(await main(argv, undefined, { fastPathTried: true }));
})();
