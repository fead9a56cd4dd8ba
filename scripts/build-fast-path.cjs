'use strict';
// Build step: bundles the start-up fast paths into CommonJS files that bin/ loads first (each with the V8 code cache
// scripts/fast-path-cache.cjs makes for it): src/cli/fast-path.ts (every fast path: the hooks and shell start-up's
// `reap --once-per`) as dist/fast-path.cjs, and each hook's own as dist/fast-path-tool-loop.cjs and
// dist/fast-path-stop-hook.cjs (a hook's start-up reads and deserialises only its own code; bin/ picks the bundle).
//
// One change to esbuild's output: its `__toESM` helper, which every default import of a Node.js built-in goes
// through (`import fs from 'node:fs'`), copies each of the module's properties onto a new object as a getter; for
// fs, path and os at the bundle's fifteen imports that is about 1 ms of a hook's start-up. Here a built-in's
// namespace object is made in O(1) instead: an object whose prototype is the module (so named imports read
// through) with `default` set to the module, which is what the copy gives for reading. A bundle where the helper
// is not found, or still copies, fails the build rather than getting slower unnoticed.
const esbuild = require('esbuild');
const fs = require('node:fs');
const path = require('node:path');

// Entry (src/cli) and bundle (dist) names: bin/ loads them, so its list is the one.
const { BUNDLES } = require('../bin/hermes-janitor.js');

const ROOT = path.join(__dirname, '..');

function fail(message) {
  process.stderr.write(`build-fast-path: ${message}\n`);
  process.exit(1);
}

/** esbuild's output made fit for bin/: only node: built-ins, their namespaces in O(1), node:os loaded lazily. */
function patch(name, code) {
  // bin/ hands the bundle its own `require`, which resolves a relative or package path from bin/, not from dist/:
  // exact only while the bundle requires nothing but Node.js built-ins.
  const requires = code.match(/\brequire\("[^"]*"\)/g) ?? [];
  const notBuiltin = requires.filter((r) => !/^require\("node:[a-z_/]+"\)$/.test(r));
  if (requires.length === 0 || notBuiltin.length > 0) {
    fail(`${name}: the bundle may require only node: built-ins, found ${[...new Set(notBuiltin)].join(', ') || 'no require at all'}`);
  }
  // Every call must be a built-in in node mode (`__toESM(require("node:x"), 1)`): only then is the cheap form exact.
  const calls = code.match(/__toESM\([^)]*\)(, 1)?\)?/g) ?? [];
  const helper = /^var __toESM = \(mod, isNodeMode, target\) => \(target = [\s\S]*?\n\)\);\n/m;
  const builtinCalls = code.match(/__toESM\(require\("node:[a-z_/]+"\), 1\)/g) ?? [];
  if (!helper.test(code) || builtinCalls.length !== calls.length) {
    fail(
      `${name}: esbuild's __toESM helper or its calls are not the expected ones (${builtinCalls.length} of ${calls.length} calls on node: built-ins); update scripts/build-fast-path.cjs`,
    );
  }
  code = code.replace(
    helper,
    "// A built-in's namespace in O(1) (scripts/build-fast-path.cjs): named imports read through the prototype.\n" +
      'var __toESM = (mod) => __defProp(__create(mod), "default", { value: mod, enumerable: true });\n' +
      "// A built-in Node.js's own start-up does not load, loaded on first use (scripts/build-fast-path.cjs).\n" +
      'var __lazyESM = (id) => { let ns; return new Proxy({}, { get: (_, key) => (ns ??= __toESM(require(id)))[key] }); };\n',
  );
  // node:os is not among the built-ins Node.js loads before running a file (fs and path are), and loading it costs a
  // hook about 0.15 ms; the hooks need it only where procfs or $HOME do not answer (process-identity.ts, context.ts).
  // So its namespace loads it on first use. A named import would load it at once: the build refuses one.
  for (const id of ['node:os']) {
    code = code.split(`__toESM(require("${id}"), 1)`).join(`__lazyESM("${id}")`);
    if (code.includes(`require("${id}")`)) fail(`${name}: ${id} must be a default import (import os from '${id}'), so that the bundle loads it lazily`);
  }
  return code;
}

fs.mkdirSync(path.join(ROOT, 'dist'), { recursive: true });
for (const name of BUNDLES) {
  const result = esbuild.buildSync({
    entryPoints: [path.join(ROOT, 'src', 'cli', ...(name === 'fast-path' ? [] : ['hooks']), `${name}.ts`)],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    write: false,
    logLevel: 'warning',
  });
  // Whitespace and syntax minified, names kept (the patterns patch() checks are esbuild's unminified output, so it runs
  // first): a hook reads and hashes the bundle before V8 takes its code cache; the tool-loop bundle goes from 113 to
  // 89 kB and its load from 5.6 to 5.3 ms of CPU (median of 30 alternating processes on this 2-core machine at load 16).
  const patched = patch(name, result.outputFiles[0].text);
  const small = esbuild.transformSync(patched, { minifyWhitespace: true, minifySyntax: true, target: 'node20', logLevel: 'warning' }).code;
  fs.writeFileSync(path.join(ROOT, 'dist', `${name}.cjs`), small);
}

// The watchdog thread of a run with a deadline (src/cli/deadline-watchdog.ts), as one CommonJS file: a Worker whose
// entry is an ES module sets up the module loader first, about 10 ms more of every such run's CPU (measured). It may
// require only node: built-ins (it reads no file of ours once started: src/cli/deadline.ts).
{
  const result = esbuild.buildSync({
    entryPoints: [path.join(ROOT, 'src', 'cli', 'deadline-watchdog.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    write: false,
    logLevel: 'warning',
  });
  const code = result.outputFiles[0].text;
  const foreign = (code.match(/\brequire\("[^"]*"\)/g) ?? []).filter((r) => !/^require\("node:[a-z_/]+"\)$/.test(r));
  if (foreign.length > 0) fail(`deadline-watchdog: may require only node: built-ins, found ${[...new Set(foreign)].join(', ')}`);
  fs.writeFileSync(path.join(ROOT, 'dist', 'cli', 'deadline-watchdog.cjs'), code);
}
