/**
 * The options of the hook forms (`stop-hook`, `tool-loop pre`, `tool-loop post`, `tool-loop prompt`), declared once: the commander
 * commands register them from here and the hook fast path parses argv with them. Cheap to import (the fast path
 * loads it on every hook call).
 */
import { DIALECTS, type Dialect, isDialect } from '../../core/hook-dialects.js';
import { ValueError, parseWholeNumber } from '../../core/parse-args.js';
import type { OptionDecl, PlainForm } from '../option-table.js';

/**
 * The smallest value of each whole-number flag: `--max-blocks` >= 1, `--threshold` >= 2 (1 would deny every
 * call), `--cycle-threshold` >= 2 (1 would deny every sequence), `--failure-threshold` >= 1, `--same-outcome` >= 2,
 * `--same-failure` >= 1, `--poll-limit` >= 1, `--remaining` >= 0.
 */
export const COUNT_FLAG_MIN = {
  '--max-blocks': 1,
  '--threshold': 2,
  '--cycle-threshold': 2,
  '--failure-threshold': 1,
  '--same-outcome': 2,
  '--same-failure': 1,
  '--poll-limit': 1,
  '--remaining': 0,
} as const;
export type CountFlag = keyof typeof COUNT_FLAG_MIN;

/** The parser of a whole-number flag, with its smallest value. */
export function countParser(flag: CountFlag): (raw: string) => number {
  return (raw) => parseWholeNumber(raw, flag, COUNT_FLAG_MIN[flag]);
}

export const MARKER_OPTION: OptionDecl = { flag: '--marker', value: '<path>', description: 'the run marker (default: <home>/stop-hook/marker.json)' };

export const MAX_BLOCKS_OPTION: OptionDecl = {
  flag: '--max-blocks',
  value: '<n>',
  description:
    'consecutive blocks without progress before a stop is let through, an integer >= 1 (default: $HERMES_JANITOR_MAX_STOP_BLOCKS, else 5; 4 for ' +
    'cursor, 2 for hermes)',
  parse: countParser('--max-blocks'),
};

export const THRESHOLD_OPTION: OptionDecl = {
  flag: '--threshold',
  value: '<n>',
  description: 'identical consecutive calls that are denied when none of their results is known (no post hook), an integer >= 2 (default 5)',
  parse: countParser('--threshold'),
};

export const SAME_OUTCOME_OPTION: OptionDecl = {
  flag: '--same-outcome',
  value: '<n>',
  description: 'the n-th identical call in a row is denied when the n-1 before it gave the same result, an integer >= 2 (default 4)',
  parse: countParser('--same-outcome'),
};

export const SAME_FAILURE_OPTION: OptionDecl = {
  flag: '--same-failure',
  value: '<n>',
  description: 'after n identical calls in a row that all failed, the next is denied, an integer >= 1 (default 3)',
  parse: countParser('--same-failure'),
};

export const POLL_LIMIT_OPTION: OptionDecl = {
  flag: '--poll-limit',
  value: '<n>',
  description: 'identical calls in a row whose results change (a poll) allowed before the next is denied, an integer >= 1 (default 30)',
  parse: countParser('--poll-limit'),
};

export const CYCLE_THRESHOLD_OPTION: OptionDecl = {
  flag: '--cycle-threshold',
  value: '<n>',
  description: 'repetitions in a row of the same sequence of 2 to 4 calls that are denied, an integer >= 2 (default 3)',
  parse: countParser('--cycle-threshold'),
};

/** `--dialect NAME`: one of the dialects. */
export function parseDialect(raw: string): Dialect {
  if (!isDialect(raw)) throw new ValueError(`--dialect must be one of ${DIALECTS.join(', ')}, got '${raw}'`);
  return raw;
}

export const DIALECT_OPTION: OptionDecl = {
  flag: '--dialect',
  value: '<name>',
  description: `the agent's hook dialect: ${DIALECTS.join(', ')} (default: recognised from each input)`,
  parse: parseDialect,
  values: DIALECTS,
};

export const FAILURE_THRESHOLD_OPTION: OptionDecl = {
  flag: '--failure-threshold',
  value: '<n>',
  description: 'consecutive failures of one tool that are reported, an integer >= 1 (default 5)',
  parse: countParser('--failure-threshold'),
};

const json = (what: string): OptionDecl => ({ flag: '--json', description: `print one JSON document describing the decision and the ${what}` });

/** `stop-hook`: its own options (the verbs `arm`, `heartbeat`, ... read `--marker` and `--json` from it too). */
export const STOP_HOOK_OPTIONS: readonly OptionDecl[] = [MARKER_OPTION, MAX_BLOCKS_OPTION, DIALECT_OPTION, json('marker')];
export const TOOL_LOOP_PRE_OPTIONS: readonly OptionDecl[] = [
  THRESHOLD_OPTION,
  SAME_OUTCOME_OPTION,
  SAME_FAILURE_OPTION,
  POLL_LIMIT_OPTION,
  CYCLE_THRESHOLD_OPTION,
  DIALECT_OPTION,
  json('history'),
];
export const TOOL_LOOP_POST_OPTIONS: readonly OptionDecl[] = [FAILURE_THRESHOLD_OPTION, DIALECT_OPTION, json('history')];
export const TOOL_LOOP_PROMPT_OPTIONS: readonly OptionDecl[] = [DIALECT_OPTION, json('history')];

export type HookFormName = 'stop-hook' | 'tool-loop pre' | 'tool-loop post' | 'tool-loop prompt';

/** The hook invocations, as the fast path accepts them. */
export interface HookForm extends PlainForm {
  readonly name: HookFormName;
}

export const HOOK_FORMS: readonly HookForm[] = [
  { name: 'stop-hook', words: ['stop-hook'], options: STOP_HOOK_OPTIONS },
  { name: 'tool-loop pre', words: ['tool-loop', 'pre'], options: TOOL_LOOP_PRE_OPTIONS },
  { name: 'tool-loop post', words: ['tool-loop', 'post'], options: TOOL_LOOP_POST_OPTIONS },
  { name: 'tool-loop prompt', words: ['tool-loop', 'prompt'], options: TOOL_LOOP_PROMPT_OPTIONS },
];
