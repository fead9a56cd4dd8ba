'use strict';
// Build step: bundles the CLI proper (src/cli/main.ts and every module it imports, statically or with `import()`)
// into one CommonJS file, dist/cli/main.bundle.cjs, which bin/ loads when no fast path applies (`reap`, `list`,
// `status`, `watch`, ...) with V8's code cache for it (dist/cli/main.bundle.cjs.cache, made by
// scripts/cli-cache.cjs). The packages (dockerode, commander, luxon, ...) stay outside it, loaded from
// node_modules with require (ora, which is ES-only, with an import() that bin/ hands the bundle: src/util/import-esm.ts).
//
// Why one file: loading the CLI as tsc's ES module graph (about 200 files) costs every run its resolution, reading and
// linking (measured, CPU profile of `reap --dry-run` over 300 containers: 90 ms of 680 in getModuleJobForImport,
// resolve 54 ms). One file is read and compiled once; a module that the run does not use is still not evaluated
// (esbuild turns each `import()` of the source into a lazy initialiser). Why CommonJS: Node.js 20 has no code cache
// for an ES module (no module.enableCompileCache, no cachedData for vm.SourceTextModule without a flag), and
// compiling the bundle cost a run about 35-110 ms of CPU. dist/cli/main.js and the rest of tsc's output stay: the
// library (dist/index.js) and tests use them.
//
// import.meta.url is replaced by the bundle's own file URL (`pathToFileURL(__filename)`, what Node.js gives an ES
// module for that file). The bundle sits in dist/cli/ on purpose: source files that find a file relative to
// themselves (`new URL('../../package.json', import.meta.url)`, createRequire(import.meta.url)) are all at depth two
// under src/ (src/cli, src/adapters, src/core, src/util), so their relative paths mean the same from dist/cli/. A file
// elsewhere that uses import.meta fails the build rather than looking in the wrong place.
const esbuild = require('esbuild');
const { wrapperHead, CLI_PARAMS } = require('../bin/hermes-janitor.js');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const OUT = path.join(ROOT, 'dist', 'cli', 'main.bundle.cjs');
/** The bundle's import.meta.url (a name no source file uses: checked below). */
const META_URL = '__hjImportMetaUrl';

function fail(message) {
  process.stderr.write(`build-cli-bundle: ${message}\n`);
  process.exit(1);
}

// A code cache left from an earlier bundle goes first: V8 checks a cache against its source's length only, so a stale
// one could be taken for a new bundle of the same length. The ES bundle of earlier builds goes too.
for (const stale of [`${OUT}.cache`, path.join(ROOT, 'dist', 'cli', 'main.bundle.mjs')]) fs.rmSync(stale, { force: true });

const result = esbuild.buildSync({
  entryPoints: [path.join(ROOT, 'src', 'cli', 'main.ts')],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  packages: 'external',
  outfile: OUT,
  metafile: true,
  logLevel: 'warning',
  define: { 'import.meta.url': META_URL },
  // Whitespace and syntax minified, names kept (as the fast paths': scripts/build-fast-path.cjs): 930 kB became 730 kB.
  minifyWhitespace: true,
  minifySyntax: true,
  // "use strict" first: esbuild's own comes after the banner, where it is no longer a directive (ES modules are strict).
  banner: { js: `"use strict";\nvar ${META_URL} = require("node:url").pathToFileURL(__filename).href;` },
});

const sources = Object.keys(result.metafile.inputs).filter((input) => input.startsWith('src/'));
const misplaced = sources.filter((input) => {
  const depth = input.split('/').length - 1; // src/cli/main.ts: 2
  return depth !== 2 && fs.readFileSync(path.join(ROOT, input), 'utf8').includes('import.meta');
});
if (misplaced.length > 0) {
  fs.rmSync(OUT, { force: true });
  fail(`${misplaced.join(', ')}: import.meta outside src/<dir>/ would resolve from dist/cli/ in the bundle; move it or resolve from the bundle`);
}
// Only import.meta.url has a meaning in the bundle; and an import() of a package or built-in would need Node.js's
// ES module loader, which a script compiled by vm has not (bin/ hands it `__hjImport` for ES-only packages).
const bundled = fs.readFileSync(OUT, 'utf8');
const problems = [
  ...(/import\.meta/.test(bundled) ? ['import.meta other than import.meta.url'] : []),
  ...[...bundled.matchAll(/\bimport\((["'][^"']+["'])\)/g)].map(
    (m) => `import(${m[1]}): load it with requirePackage (src/util/require-package.ts), or importEsm`,
  ),
  ...sources.filter((input) => fs.readFileSync(path.join(ROOT, input), 'utf8').includes(META_URL)).map((input) => `${input} uses ${META_URL}`),
];
if (problems.length > 0) {
  fs.rmSync(OUT, { force: true });
  fail(`the bundle cannot run as CommonJS: ${problems.join('; ')}`);
}
// Written inside require()'s wrapper, which bin/ then compiles as it is (`compileBundle`): wrapped there, the 0.7 MB
// source was copied once more before V8 took it. Loading the bundle (read, compile with its code cache, run its top
// level) went from 31-36 ms to 22-23 ms with both (medians of 15 `reap` processes, marks in bin/, on this machine).
fs.writeFileSync(OUT, `${wrapperHead(CLI_PARAMS)}${bundled}\n});`);
