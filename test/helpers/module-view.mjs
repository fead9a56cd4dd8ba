/**
 * What a module looks like to the code that loads it: export names, their types, whether each function is a real
 * class or a plain function (a proxy stand-in is neither), whether `'prototype' in module` answers, and whether a
 * class extending each exported class builds instances of the subclass. Printed as JSON so that a host program's
 * view and a fresh Node process's view of the same module can be compared (test/integration/library-host.test.ts).
 *
 * `node test/helpers/module-view.mjs NAME...` prints a fresh process's view of each module.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { types } from 'node:util';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const req = createRequire(path.join(ROOT, 'package.json'));

function kind(value) {
  if (types.isProxy(value)) return 'proxy';
  if (typeof value !== 'function') return typeof value;
  return /^class[\s{]/.test(Function.prototype.toString.call(value)) ? 'class' : 'function';
}

function answers(fn) {
  try {
    return fn();
  } catch (err) {
    return `throws ${err?.constructor?.name}`;
  }
}

/** Whether `class X extends C {}` builds an X (constructed without arguments; a constructor that needs some is skipped). */
function subclassing(C) {
  class X extends C {}
  try {
    return new X() instanceof X;
  } catch {
    return 'needs arguments';
  }
}

function describeValue(mod) {
  const exportsOf = Object.keys(mod)
    .sort()
    .map((k) => {
      const v = answers(() => mod[k]);
      return { name: k, kind: kind(v), ...(kind(v) === 'class' ? { extends: answers(() => subclassing(v)) } : {}) };
    });
  return { kind: kind(mod), hasPrototype: answers(() => 'prototype' in mod), exports: exportsOf };
}

/** The module as `require` gives it and as `import` gives it (the ESM view of a CommonJS module is its own). */
export async function moduleView(name) {
  const required = req(name);
  const imported = await import(req.resolve(name));
  return { name, required: describeValue(required), imported: describeValue(imported), same: imported.default === required };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const views = [];
  for (const name of process.argv.slice(2)) views.push(await moduleView(name));
  process.stdout.write(`${JSON.stringify(views)}\n`);
}
