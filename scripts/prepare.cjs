'use strict';
// `prepare`: npm runs it after `npm install` or `npm ci` in a clone (the devDependencies are there: the build runs),
// before `npm pack` and `npm publish`, and for `npm install -g .` in a fresh clone, where npm runs it before it has
// installed any of the folder's dependencies: tsc and esbuild are not there ("tsc: not found"). Then the build's own
// dependencies are installed first, from the lock file as `npm ci` installs them (without their install scripts),
// and the build runs.
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');

function resolvable(id) {
  try {
    require.resolve(id, { paths: [root] });
    return true;
  } catch {
    return false;
  }
}

/**
 * npm as it runs this script (npm_execpath), else the one on PATH, for this folder: not the global install that may
 * be running this script (its npm_config_global and prefix would make `npm ci` refuse, or install elsewhere).
 */
function npm(args) {
  const [cmd, pre] = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ['npm', []];
  const env = { ...process.env, npm_config_global: 'false', npm_config_location: 'project' };
  delete env.npm_config_prefix;
  const r = spawnSync(cmd, [...pre, ...args], { cwd: root, stdio: 'inherit', env });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

if (!resolvable('typescript/package.json') || !resolvable('esbuild/package.json')) {
  process.stderr.write('hermes-janitor: prepare: installing the build tools first (npm ci --include=dev --ignore-scripts)\n');
  npm(['ci', '--include=dev', '--ignore-scripts', '--no-audit', '--no-fund']);
}
npm(['run', 'build']);
