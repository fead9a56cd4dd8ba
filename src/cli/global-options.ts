/**
 * The program's global options, declared once: `main` registers them with commander, finds the subcommand past
 * their values, and the fast paths accept them. Cheap to import (the fast paths load it).
 */
import type { OptionDecl } from './option-table.js';

export const GLOBAL_OPTIONS: readonly OptionDecl[] = [
  { flag: '--home', value: '<dir>', description: 'hermes home (default: $HERMES_HOME, else ~/.hermes)' },
  { flag: '--profile', value: '<name>', description: "hermes profile: selects <root>/profiles/<name> ('default' is the root) and its containers" },
];

/** The flags of the global options that take a value. */
export const GLOBAL_VALUE_FLAGS: ReadonlySet<string> = new Set(GLOBAL_OPTIONS.filter((o) => o.value).map((o) => o.flag));
