#!/usr/bin/env node
'use strict';
// Thin entry. CommonJS on purpose (bin/package.json): hooks run on every tool call and shell start-up files on
// every prompt, and a CommonJS entry plus one bundled file (dist/fast-path.cjs, loaded here with its V8 code cache)
// starts much faster than the ES module graph. When no fast path applies, the CLI proper (dist/cli/main.js) runs and
// decides the exit code.
//
// The loader lives in this file, not in a module of its own: every file Node.js resolves and compiles costs a hook's
// start-up, and so does node:module. The bundle is handed this file's `require`, which is exact because it requires
// nothing but Node.js built-ins (scripts/build-fast-path.cjs fails the build otherwise).
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const DIST = path.join(__dirname, '..', 'dist');
const FILE = path.join(DIST, 'fast-path.cjs');
const CACHE = `${FILE}.cache`;

/**
 * Loads dist/fast-path.cjs as require() would (the same wrapper), but with V8's code cache for it
 * (dist/fast-path.cjs.cache, which the build makes after running the hooks once): compiling the bundle is a large
 * part of a hook's start-up cost. A cache made by another Node.js version is rejected by V8 and the bundle is
 * compiled as usual. Returns the bundle's exports and its script (for `createCachedData`); `fresh` ignores the cache.
 */
function loadFastPath(fresh = false) {
  const source = fs.readFileSync(FILE, 'utf8');
  let cachedData;
  if (!fresh) {
    try {
      cachedData = fs.readFileSync(CACHE);
    } catch {
      /* no cache: compile */
    }
  }
  const wrapped = `(function (exports, require, module, __filename, __dirname) { ${source}\n});`;
  const script = new vm.Script(wrapped, { filename: FILE, cachedData });
  const bundle = { exports: {}, id: FILE, filename: FILE };
  script.runInThisContext()(bundle.exports, require, bundle, FILE, DIST);
  return { exports: bundle.exports, script };
}

function missingBuild(err) {
  process.stderr.write(`hermes-janitor: cannot load the built CLI (${(err && (err.code || err.message)) || err}); run 'npm run build' first\n`);
  process.exit(1);
}

async function run(argv) {
  let fast;
  try {
    fast = loadFastPath().exports;
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
}

if (require.main === module) run(process.argv.slice(2));
else module.exports = { loadFastPath, FILE, CACHE };
