// Runs the sandbox-dirs removal pass of the BUILT library in a process of its own (as another user under setpriv,
// or twice at once), the way reap and watch will call it: node test/helpers/sandbox-pass.mjs '<json options>'.
// Options: { roots: [{root, from}], hosts: [{host, socketPath, answered}], olderThanMs, dryRun }. Prints the result
// as one JSON line; a thrown error prints {"error": message} and exits 2.
import { createDockerodeEngine } from '../../dist/adapters/dockerode-engine.js';
import { removeUnusedSandboxDirs } from '../../dist/passes/sandbox-dirs/run.js';

const opts = JSON.parse(process.argv[2]);
try {
  const engines = await Promise.all(
    opts.hosts.map(async (h) => ({ engine: await createDockerodeEngine({ host: h.host, socketPath: h.socketPath }), answered: h.answered !== false })),
  );
  const result = await removeUnusedSandboxDirs({
    roots: opts.roots,
    engines,
    olderThanMs: opts.olderThanMs,
    dryRun: Boolean(opts.dryRun),
    now: () => new Date(),
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (err) {
  process.stdout.write(`${JSON.stringify({ error: err.message })}\n`);
  process.exitCode = 2;
}
