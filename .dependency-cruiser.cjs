/**
 * Import rules for src/ (`npm run lint`): no module imports a module that imports it, type-only imports included
 * (`tsPreCompilationDeps`: a circle through types is still a circle for a reader), and the layers of a cleanup pass
 * (docs/development.md, "Layout" and "Adding a pass"). A pass is one folder, `src/passes/<pass>/`: its pure rule
 * (`rule.ts`, `rule-*.ts`), its I/O, its run, its settings, its part of `status` and its descriptor (`pass.ts`).
 * What two passes share lives in a shared folder of its own under src/passes/ (SHARED below), never in one of the two.
 * test/unit/depcruise-rules.test.ts runs each rule over a fixture that breaks it (test/fixtures/depcruise/).
 */

/** The shared folders under src/passes/: code two passes share (the temp directories; a directory tree's removal). */
const SHARED = ['temp-dirs', 'dir-trees'];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A module imports a module that (through others) imports it: move the shared types to a leaf module.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'pass-rule-no-io',
      severity: 'error',
      comment:
        "A pass's rule (src/passes/<pass>/rule.ts, rule-*.ts) is pure: names, facts and the clock in, decisions out, so that " +
        'it is tested with plain data and read without the I/O around it. It imports no node:fs, no node:child_process, ' +
        "nothing in src/adapters/, and of src/passes/ only rule files (a pass's files.ts, run.ts... do I/O).",
      from: { path: '^src/passes/[^/]+/rule[^/]*\\.ts$' },
      to: {
        path: ['^(node:)?(fs|fs/promises|child_process)$', '^src/adapters/', '^src/passes/'],
        pathNot: ['^src/passes/[^/]+/rule[^/]*\\.ts$'],
      },
    },
    {
      name: 'pass-not-another-pass',
      severity: 'error',
      comment:
        "A pass is read in one folder: it imports no other pass's folder. What two passes share goes to a shared folder " +
        `(${SHARED.join(', ')}), which any pass may import and which itself imports no pass.`,
      from: { path: '^src/passes/([^/]+)/' },
      to: { path: '^src/passes/[^/]+/', pathNot: ['^src/passes/$1/', `^src/passes/(${SHARED.join('|')})/`] },
    },
    {
      name: 'pass-only-through-the-list',
      severity: 'error',
      comment:
        'Every reporter, command, metrics file and status takes the passes from the one list (src/passes/index.ts) through ' +
        'the pass interface (src/passes/types.ts; a sweep pass, which the container sweep runs per sandbox, through its ' +
        'hooks: src/passes/sweep-pass.ts): nothing outside the pass folders imports a pass folder but the list.',
      from: { path: '^src/', pathNot: ['^src/passes/[^/]+/', '^src/passes/index\\.ts$'] },
      to: { path: '^src/passes/[^/]+/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
  },
};
