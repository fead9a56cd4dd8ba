#!/usr/bin/env node
// `npm run shapes [-- --max-lines 80 --max-params 5] [paths...]`
// Every function in src/ (TypeScript's own parser) longer than --max-lines lines or taking more than --max-params
// parameters, longest first, and the totals. Lines are counted from the function's first line to its last.
// Exit 0 always: a figure for maintainers, not a gate.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const USAGE = `usage: npm run shapes [-- --max-lines N] [--max-params N] [paths...]
Lists every function in the paths (default: src) longer than --max-lines lines (default 80) or taking more than
--max-params parameters (default 5), longest first, and the totals. Exits 0 (a figure, not a gate); 2 on bad usage.`;
const args = process.argv.slice(2);
const fail = (msg) => {
  process.stderr.write(`shapes: ${msg}\n${USAGE}\n`);
  process.exit(2);
};
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = Number(args[i + 1]);
  if (!Number.isInteger(v) || v < 0) fail(`${name} needs a whole number, got ${JSON.stringify(args[i + 1] ?? '')}`);
  args.splice(i, 2);
  return v;
};
const maxLines = opt('--max-lines', 80);
const maxParams = opt('--max-params', 5);
const unknown = args.find((a) => a.startsWith('-'));
if (unknown) fail(`unknown option ${unknown}`);
const roots = args.length ? args : ['src'];
for (const r of roots) {
  try {
    statSync(r);
  } catch {
    fail(`${r}: no such file or directory`);
  }
}

const files = [];
const walk = (p) => {
  if (statSync(p).isDirectory()) for (const e of readdirSync(p)) walk(path.join(p, e));
  else if (/\.ts$/.test(p) && !p.endsWith('.d.ts')) files.push(p);
};
roots.forEach(walk);

const found = [];
let count = 0;
for (const file of files) {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      count++;
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
      const end = sf.getLineAndCharacterOfPosition(node.end).line + 1;
      const name =
        (node.name && node.name.getText(sf)) ||
        (ts.isVariableDeclaration(node.parent) && node.parent.name.getText(sf)) ||
        (ts.isPropertyAssignment(node.parent) && node.parent.name.getText(sf)) ||
        '(anonymous)';
      const lines = end - start + 1;
      const params = node.parameters.length;
      if (lines > maxLines || params > maxParams) found.push({ where: `${file}:${start}`, name, lines, params });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
found.sort((a, b) => b.lines - a.lines || b.params - a.params);
for (const f of found) console.log(`${String(f.lines).padStart(4)} lines ${String(f.params).padStart(2)} params  ${f.name}  ${f.where}`);
const long = found.filter((f) => f.lines > maxLines).length;
const wide = found.filter((f) => f.params > maxParams).length;
console.log(`${count} functions in ${files.length} files: ${long} over ${maxLines} lines, ${wide} with more than ${maxParams} parameters`);
