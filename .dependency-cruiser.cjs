/**
 * Import rules for src/ (`npm run lint`): no module imports a module that imports it, type-only imports included
 * (`tsPreCompilationDeps`: a circle through types is still a circle for a reader).
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A module imports a module that (through others) imports it: move the shared types to a leaf module.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
  },
};
