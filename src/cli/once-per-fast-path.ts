/**
 * The shell start-up fast path: `reap --once-per D` whose stamps are all fresh exits 0 without loading
 * commander, the engine client or config.yaml. It understands only a plain command line made of the flags
 * below; anything else (another flag, a bad value, `--json`, `--help`) returns undefined and the full CLI runs.
 */
import { stampFresh, stampPath } from '../adapters/janitor-files.js';
import { resolveEngines, stampKey } from '../adapters/docker-context.js';
import type { Context } from '../context.js';
import { resolveHermesHome } from '../core/hermes-home.js';
import { parseDuration } from '../core/parse-args.js';
import { selectionFrom } from '../core/selection.js';
import { GLOBAL_VALUE_FLAGS } from './global-options.js';

/** Flags that take a value, and flags that do not, which the fast path accepts (others: full CLI). */
const VALUE_FLAGS = new Set([...GLOBAL_VALUE_FLAGS, '--once-per', '--host', '--context', '--label', '--exclude-label', '--profile-label', '--timeout', '--concurrency', '--lifetime', '--metrics-file']);
const BOOLEAN_FLAGS = new Set(['--all-profiles', '--quiet', '-q', '--fail-open', '--background', '--wait']);
const REPEATABLE = new Set(['--host', '--label', '--exclude-label']);

export function oncePerFastPath(argv: readonly string[], ctx: Context): number | undefined {
  const values = new Map<string, string[]>();
  const flags = new Set<string>();
  let command: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i]!;
    let inline: string | undefined;
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0) {
      inline = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    if (VALUE_FLAGS.has(a)) {
      const v = inline ?? argv[++i];
      if (v === undefined) return undefined;
      if (!REPEATABLE.has(a) && values.has(a)) return undefined;
      values.set(a, [...(values.get(a) ?? []), v]);
    } else if (BOOLEAN_FLAGS.has(a) && inline === undefined) {
      flags.add(a);
    } else if (a === 'reap' && command === undefined) {
      command = a;
    } else {
      return undefined;
    }
  }
  const one = (k: string) => values.get(k)?.[0];
  const oncePer = one('--once-per');
  if (command !== 'reap' || oncePer === undefined) return undefined;
  try {
    const maxAgeMs = parseDuration(oncePer, '--once-per');
    const home = resolveHermesHome({ home: one('--home'), profile: one('--profile'), env: ctx.env, homedir: ctx.homedir, cwd: ctx.cwd });
    const selection = selectionFrom({
      profile: flags.has('--all-profiles') ? null : home.profile,
      labels: values.get('--label'),
      excludeLabels: values.get('--exclude-label'),
      profileLabel: one('--profile-label'),
    });
    const endpoints = resolveEngines(values.get('--host'), one('--context'), ctx.env, ctx.homedir);
    const now = ctx.now();
    return endpoints.every((e) => stampFresh(stampPath(home.home, stampKey(e), selection), now, maxAgeMs)) ? 0 : undefined;
  } catch {
    return undefined; // a bad value: the full CLI reports it properly
  }
}
