// Lint: typescript-eslint with type information (exhaustive switches and floating promises need the types) and
// import-x for duplicate imports. Import cycles (type-only imports included) are dependency-cruiser's
// (.dependency-cruiser.cjs). Formatting (line length included) is Biome's (biome.json).
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

export default tseslint.config(
  // test/fixtures/depcruise: trees that break the import rules on purpose (test/unit/depcruise-rules.test.ts).
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test/fixtures/depcruise/**'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: ['./tsconfig.json', './test/tsconfig.json'], tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin, 'import-x': importX },
    rules: {
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: false, requireDefaultForNonUnion: false }],
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's test()/describe() return promises the runner awaits itself.
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-shadow': 'error',
      'import-x/no-duplicates': 'error',
      // Inside a function, a template string that spans lines makes its output's indentation the code's: join lines
      // instead. Module-level help texts are written as they print; the shell generators are the exception below.
      'no-restricted-syntax': ['error', { selector: ':function TemplateLiteral > TemplateElement[value.raw=/\\n/]', message: 'a template string spans lines inside a function: join the lines with \\n or an array' }],
      'max-len': ['error', { code: 160, tabWidth: 2, ignoreUrls: true }],
    },
  },
  {
    // These write shell scripts (start-up snippets, completions): each script is kept as the shell reads it.
    files: ['src/cli/commands/shell-init.ts', 'src/cli/completion.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
