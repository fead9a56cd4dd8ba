'use strict';
// Build step: bundles the CLI proper (src/cli/main.ts and every module it imports, statically or with `import()`)
// into one ES module, dist/cli/main.bundle.mjs, which bin/ loads when no fast path applies (`reap`, `list`, `status`,
// `watch`, ...). The packages (dockerode, commander, luxon, ...) stay outside it, loaded from node_modules as before.
//
// Why: loading the CLI as tsc's ES module graph (about 200 files) costs every run its resolution, reading and linking
// (measured, CPU profile of `reap --dry-run` over 300 containers: 90 ms of 680 in getModuleJobForImport, resolve
// 54 ms). One file is read and compiled once; a module that the run does not use is still not evaluated (esbuild turns
// each `import()` of the source into a lazy initialiser). dist/cli/main.js and the rest of tsc's output stay: the
// library (dist/index.js) and tests use them.
//
// The bundle sits in dist/cli/ on purpose: source files that find a file relative to themselves
// (`new URL('../../package.json', import.meta.url)`, createRequire(import.meta.url)) are all at depth two under src/
// (src/cli, src/adapters, src/core), so their relative paths mean the same from dist/cli/. A file elsewhere that uses
// import.meta fails the build rather than looking in the wrong place.
const esbuild = require('esbuild');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const OUT = path.join(ROOT, 'dist', 'cli', 'main.bundle.mjs');

function fail(message) {
  process.stderr.write(`build-cli-bundle: ${message}\n`);
  process.exit(1);
}

const result = esbuild.buildSync({
  entryPoints: [path.join(ROOT, 'src', 'cli', 'main.ts')],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  outfile: OUT,
  metafile: true,
  logLevel: 'warning',
});

const misplaced = Object.keys(result.metafile.inputs).filter((input) => {
  if (!input.startsWith('src/')) return false;
  const depth = input.split('/').length - 1; // src/cli/main.ts: 2
  return depth !== 2 && fs.readFileSync(path.join(ROOT, input), 'utf8').includes('import.meta');
});
if (misplaced.length > 0) {
  fs.rmSync(OUT, { force: true });
  fail(`${misplaced.join(', ')}: import.meta outside src/<dir>/ would resolve from dist/cli/ in the bundle; move it or resolve from the bundle`);
}
