#!/usr/bin/env node
'use strict';
// Thin entry. CommonJS on purpose (bin/package.json): hooks run on every tool call and shell start-up files on
// every prompt, and a CommonJS entry plus one bundled file (dist/*.cjs, loaded here with its V8 code cache) starts
// much faster than the ES module graph. When no fast path applies, the CLI proper runs and decides the exit code: one
// bundled CommonJS file (dist/cli/main.bundle.cjs, scripts/build-cli-bundle.cjs) loaded with its code cache too, not
// tsc's graph of about 200 files, whose resolving and linking alone cost a `reap` about 90 ms.
//
// The loader lives in this file, not in a module of its own: every file Node.js resolves and compiles costs a hook's
// start-up, and so does node:module. A bundle is handed `requireOnce` as its `require`, which is exact because it
// requires nothing but Node.js built-ins (scripts/build-fast-path.cjs fails the build otherwise).
//
// process.getBuiltinModule (Node.js 20.16 and later) hands out a built-in without require's module machinery, whose
// first call costs a hook about 0.06 ms (measured); older versions of Node.js use require.
const builtin = process.getBuiltinModule ? (id) => process.getBuiltinModule(id) : require;
const fs = builtin('node:fs');
const vm = builtin('node:vm');

// The functions a hook runs are written `const f = (function f() {...})`: V8 compiles a function in parentheses with
// the file, in one pass, where it would otherwise skim it then parse it again at its first call (this file has no
// code cache). About 0.1 ms of a hook's start-up (measured, in random order against the plain declarations).
const DIST = `${__dirname}/../dist`; // not path.join: its first call alone costs a hook 0.05 ms
/**
 * The bundles (scripts/build-fast-path.cjs): `fast-path` runs every fast path; a hook's own bundle runs only that
 * hook (and answers undefined, having read nothing, to anything else), at a smaller cost to load.
 */
const BUNDLES = ['fast-path', 'fast-path-tool-loop', 'fast-path-stop-hook'];

/**
 * Loads dist/<name>.cjs as require() would (the same wrapper), but with V8's code cache for it
 * (dist/<name>.cjs.cache, which the build makes after running the hooks once): compiling a bundle is a large part of
 * a hook's start-up cost. A cache made by another Node.js version is rejected by V8 and the bundle is compiled as
 * usual. Returns the bundle's exports and its script (for `createCachedData`); `fresh` ignores the cache.
 */
const loadFastPath = function loadFastPath(name = 'fast-path', fresh = false) {
  const file = `${DIST}/${name}.cjs`;
  const script = compileBundle(file, fresh, '');
  const bundle = { exports: {}, id: file, filename: file };
  script.runInThisContext()(bundle.exports, requireOnce, bundle, file, DIST);
  return { exports: bundle.exports, script };
};

/**
 * `file` compiled in require()'s wrapper (with `more` parameters after the usual five), with V8's code cache
 * `<file>.cache` unless `fresh`. V8 rejects a cache made by another Node.js version or with other V8 flags (and
 * `script.cachedDataRejected` says so): the file is then compiled as usual, never a failure.
 */
const compileBundle = function compileBundle(file, fresh, more) {
  const source = fs.readFileSync(file, 'utf8');
  let cachedData;
  if (!fresh) {
    try {
      cachedData = fs.readFileSync(`${file}.cache`);
    } catch {
      /* no cache: compile */
    }
  }
  const head = wrapperHead(more);
  const wrapped = source.startsWith(head) ? source : `${head}${source}\n});`;
  return new vm.Script(wrapped, { filename: file, cachedData });
};

/**
 * The head of require()'s wrapper with `more` parameters after the usual five. A bundle written inside it (the CLI's:
 * scripts/build-cli-bundle.cjs) is compiled as it is, with no copy of it made to wrap it.
 */
const wrapperHead = function wrapperHead(more) {
  return `(function (exports, require, module, __filename, __dirname${more}) { `;
};
/** The CLI bundle's parameter after the usual five (`loadCli`). */
const CLI_PARAMS = ', __hjImport';

/**
 * Loads the CLI proper, dist/cli/main.bundle.cjs (scripts/build-cli-bundle.cjs), as require() would, with its code
 * cache (dist/cli/main.bundle.cjs.cache, made by scripts/cli-cache.cjs after a warm-up run): compiling the bundle
 * cost a `reap` about 35-110 ms of CPU. It requires packages: its `require` is a real one, made for its own path. An
 * import() in a script compiled by vm would need an experimental loader option (a warning on stderr), so the bundle
 * is handed this file's own import() as `__hjImport` (src/util/import-esm.ts), for ora, the one ES-only package;
 * both files resolve a package from the same node_modules. Returns the bundle's exports and its script.
 */
const loadCli = function loadCli(fresh = false) {
  const path = builtin('node:path');
  const file = path.resolve(DIST, 'cli', 'main.bundle.cjs');
  const script = compileBundle(file, fresh, CLI_PARAMS);
  const bundle = { exports: {}, id: file, filename: file };
  const req = builtin('node:module').createRequire(file);
  script.runInThisContext()(bundle.exports, req, bundle, file, path.dirname(file), (id) => import(id));
  return { exports: bundle.exports, script };
};

/**
 * The bundle's `require`: each built-in is required once. A bundle requires node:fs in each module that imports it
 * (seven times), and Node.js's `require` of a built-in does more than a lookup on every call: one of those calls cost
 * a hook 0.06 ms (measured; the others a few microseconds).
 */
const builtins = new Map();
const requireOnce = function requireOnce(id) {
  let m = builtins.get(id);
  if (m === undefined) builtins.set(id, (m = builtin(id)));
  return m;
};

/**
 * Whether argv is a hook an agent runs (`stop-hook` without a verb of its own, `tool-loop pre|post|prompt`): a hook's own
 * failure must let the agent go on (exit 0, one warning line), where a command run by hand fails (exit 1). The
 * full check, with the recording of the mistake, is the CLI's (src/cli/hooks/hook-invocation.ts); this one only runs when
 * the CLI itself cannot run.
 */
function isHook(argv) {
  if (argv.includes('--help') || argv.includes('-h')) return false;
  if (argv.includes('stop-hook')) return !argv.some((a) => a === 'arm' || a === 'heartbeat' || a === 'disarm' || a === 'status');
  return argv.includes('tool-loop') && (argv.includes('pre') || argv.includes('post') || argv.includes('prompt'));
}

function missingBuild(err, argv) {
  const why = `cannot load the built CLI (${(err && (err.code || err.message)) || err}); run 'npm run build' first`;
  if (isHook(argv)) {
    process.stderr.write(`hermes-janitor: warning: ${why}; the hook lets the agent go on\n`);
    process.exit(0);
  }
  process.stderr.write(`hermes-janitor: ${why}\n`);
  process.exit(1);
}

/** A fault in a fast path (it has caught its own errors: this is a last resort). */
function fastPathFault(err, argv) {
  if (!isHook(argv)) throw err;
  process.stderr.write(`hermes-janitor: warning: internal error: ${(err && err.message) || err}; the hook lets the agent go on\n`);
  process.exit(0);
}

/**
 * The bundles that may run a fast path for argv, in order: a hook's own first; the one of every fast path where it
 * could do more (`reap --once-per`, or the other hook, whose word may be an option's value here). So `stop-hook arm`
 * or `tool-loop status` loads one bundle before the CLI, as before, and a command no fast path serves none.
 */
const bundlesFor = function bundlesFor(argv) {
  const hook = argv.find((a) => a === 'tool-loop' || a === 'stop-hook');
  // No hook and no `--once-per`: no fast path can apply (src/cli/fast-path.ts `mayTakeFastPath`), so no bundle is read
  // (`list`, `status` and the rest start about 5 ms sooner).
  if (!hook) return argv.some((a) => a.startsWith('--once-per')) ? ['fast-path'] : [];
  const other = hook === 'tool-loop' ? 'stop-hook' : 'tool-loop';
  return argv.includes('reap') || argv.includes(other) ? [`fast-path-${hook}`, 'fast-path'] : [`fast-path-${hook}`];
};

/** A fast path's exit code, or undefined. */
const fastPath = async function fastPath(argv) {
  for (const name of bundlesFor(argv)) {
    let fast;
    try {
      fast = loadFastPath(name).exports;
    } catch (err) {
      missingBuild(err, argv);
    }
    const code = await fast.runFastPath(argv).catch((err) => fastPathFault(err, argv));
    if (code !== undefined) return code;
  }
  return undefined;
};

const run = async function run(argv) {
  const quick = await fastPath(argv);
  if (quick !== undefined) process.exit(quick);
  let main;
  try {
    ({ main } = loadCli().exports);
  } catch (err) {
    missingBuild(err, argv);
  }
  const code = await main(argv, undefined, { fastPathTried: true });
  // process.exit() drops what stdout and stderr still hold for a pipe: a large JSON report read slowly would be cut.
  await Promise.all([process.stdout, process.stderr].map((s) => (s.writableLength > 0 ? new Promise((r) => s.write('', r)) : undefined)));
  process.exit(code);
};

if (require.main === module) run(process.argv.slice(2));
else module.exports = { loadFastPath, loadCli, wrapperHead, CLI_PARAMS, BUNDLES, DIST };
