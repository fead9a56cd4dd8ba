#!/usr/bin/env node
// Turns a `hermes-janitor reap --json` document (file argument, or stdin) into Markdown for $GITHUB_STEP_SUMMARY.
import { readFileSync } from 'node:fs';
import { reapSummaryMarkdown } from '../dist/cli/render-markdown.js';

let doc;
try {
  doc = JSON.parse(readFileSync(process.argv[2] ?? 0, 'utf8'));
} catch {
  doc = undefined;
}
process.stdout.write(reapSummaryMarkdown(doc));
