'use strict';
// Loads dist/fast-path.cjs as require() would, but with V8's code cache for it (dist/fast-path.cjs.cache, which the
// build makes after running the hooks once): compiling the bundle is a large part of a hook's start-up cost. A cache
// made by another Node.js version is rejected by V8 and the bundle is compiled as usual.
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const vm = require('node:vm');

const FILE = path.join(__dirname, '..', 'dist', 'fast-path.cjs');
const CACHE = `${FILE}.cache`;

/** The bundle's exports, and its script (for `createCachedData`). `fresh`: ignore the cache (to make a new one). */
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
  const script = new vm.Script(Module.wrap(source), { filename: FILE, cachedData });
  const module = { exports: {}, id: FILE, filename: FILE };
  script.runInThisContext()(module.exports, Module.createRequire(FILE), module, FILE, path.dirname(FILE));
  return { exports: module.exports, script };
}

module.exports = { loadFastPath, FILE, CACHE };
