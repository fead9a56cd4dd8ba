#!/usr/bin/env node
// Thin entry: the CLI lives in dist/cli/main.js; this file only hands over argv and exits with its code.
let main;
try {
  ({ main } = await import('../dist/cli/main.js'));
} catch (err) {
  process.stderr.write(`hermes-janitor: cannot load the built CLI (${err?.code ?? err?.message}); run 'npm run build' first\n`);
  process.exit(1);
}
process.exit(await main(process.argv.slice(2)));
