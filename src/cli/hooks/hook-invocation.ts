/**
 * Whether a command line is a hook an agent runs (`stop-hook`, `tool-loop pre`, `tool-loop post`) rather than a
 * command run by hand (`stop-hook arm`, `tool-loop status`, `--help`, ...): a hook's usage error must fail open
 * (hook-fail-open.ts), a hand-run command's is exit 2. Decided on argv alone, before or without commander, and
 * only when commander has failed on it: nothing here runs on a hook call that went well.
 */
import type { Context } from '../../context.js';
import { resolveHermesHome } from '../../hermes/home.js';
import { GLOBAL_OPTIONS } from '../global-options.js';
import { HOOK_FORMS } from './hook-options.js';

/** The verbs run by hand (by a person or an orchestrator), whose mistakes are usage errors. */
const STOP_HOOK_VERBS = new Set(['arm', 'heartbeat', 'disarm', 'status']);
const TOOL_LOOP_VERBS = new Set(['reset', 'status', 'disarm', 'arm']);
const HELP = new Set(['--help', '-h', '--version', '-V']);
/** Flags known to take a value (their value is not a word); an unknown flag's next word counts as a word. */
const VALUED = new Set<string>([...GLOBAL_OPTIONS, ...HOOK_FORMS.flatMap((f) => f.options)].filter((d) => d.value).map((d) => d.flag));

/** The words of argv: what is not an option nor a known option's value. */
function words(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (!a.startsWith('-')) out.push(a);
    else if (VALUED.has(a)) i++;
  }
  return out;
}

/**
 * The hook argv runs (`stop-hook`, `tool-loop pre`, `tool-loop post`, `tool-loop prompt`, or `tool-loop` with a verb it
 * does not know), or undefined for a command run by hand. `stop-hook` with a word that is not one of its verbs is the hook
 * (`stop-hook --max-block 3` leaves the word `3`).
 */
export function hookInvocation(argv: readonly string[]): string | undefined {
  if (argv.some((a) => HELP.has(a))) return undefined;
  const [command, verb, ...rest] = words(argv);
  if (command === 'stop-hook') return verb !== undefined && STOP_HOOK_VERBS.has(verb) ? undefined : 'stop-hook';
  if (command !== 'tool-loop' || verb === undefined || TOOL_LOOP_VERBS.has(verb)) return undefined;
  const event = [verb, ...rest].find((w) => w === 'pre' || w === 'post' || w === 'prompt');
  return event ? `tool-loop ${event}` : 'tool-loop';
}

/** The value of a global option in argv (`--home D` or `--home=D`), or undefined. */
function globalValue(argv: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === flag) return argv[i + 1];
    if (argv[i]!.startsWith(`${flag}=`)) return argv[i]!.slice(flag.length + 1);
  }
  return undefined;
}

/**
 * The hermes home a failing hook records its mistake under: as `--home`/`--profile` select it, else (a bad
 * profile) the home without the profile; undefined when there is none.
 */
export function hookHome(argv: readonly string[], ctx: Context): string | undefined {
  const inputs = { home: globalValue(argv, '--home'), profile: globalValue(argv, '--profile'), env: ctx.env, homedir: ctx.homedir, cwd: ctx.cwd };
  for (const profile of [inputs.profile, undefined]) {
    try {
      return resolveHermesHome({ ...inputs, profile }).home;
    } catch {
      /* a bad profile: try without it */
    }
  }
  return undefined;
}
