/**
 * `require` for the packages the janitor loads on first use (commander, cli-table3, luxon, js-yaml, re2js, bytes-iec,
 * prom-client, dockerode) and for built-ins a module wants only on some paths (node:worker_threads).
 *
 * One `require`, made for this file: every module under src/ sits at depth two (src/<dir>/<file>), so a package
 * resolves from the same node_modules wherever it is asked for, in tsc's output (dist/<dir>/) as in the CLI's bundle
 * (dist/cli/, where import.meta.url is the bundle's own: scripts/build-cli-bundle.cjs). A package required here lands
 * in the process's require cache as `require` would put it; dockerode-loader.ts takes its own entries out again.
 */
import { createRequire } from 'node:module';

export const requirePackage: NodeJS.Require = createRequire(import.meta.url);
