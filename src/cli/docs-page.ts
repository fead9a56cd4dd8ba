import { fileURLToPath } from 'node:url';

/**
 * The last line of a command's `--help`: the page of the documentation that covers it, as a path to the file shipped
 * in the package (`docs/` is in package.json's `files`), so it opens where the CLI is installed, offline, in the
 * version that is running. `page` is relative to the package root (`docs/reaping.md`, `README.md`); this module
 * sits two levels below it both as source (src/cli/) and built (dist/cli/).
 */
export function docsLine(page: string): string {
  return `\nDocs: ${fileURLToPath(new URL(`../../${page}`, import.meta.url))}`;
}
