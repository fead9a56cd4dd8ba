/**
 * import() of an ES-only package (ora). The CLI runs as a CommonJS bundle that bin/ compiles with vm.Script, for its
 * V8 code cache (scripts/build-cli-bundle.cjs); an import() there would need Node.js's experimental loader option
 * (`vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER`, Node.js 20.12 and later, with a warning on stderr at its first
 * use), so bin/ hands the bundle an import() of its own, `__hjImport`, which resolves a package from the same
 * node_modules. In tsc's modules (the library, the tests) this is a plain import().
 */
declare const __hjImport: ((id: string) => Promise<unknown>) | undefined;

export const importEsm = <T>(id: string): Promise<T> => (typeof __hjImport === 'function' ? __hjImport(id) : import(id)) as Promise<T>;
