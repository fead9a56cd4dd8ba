/**
 * The hook dialects agents speak, and how an input is recognised as one of them. Pure: no I/O.
 *
 * Each agent sends its hook input in its own dialect (event names, field names) and accepts answers in its own
 * shape. The breakers decide the same way whatever the dialect; only the reading (hook-readings.ts) and the wire
 * shape of the answer (hook-answers.ts) differ. The sources of every fact below are cited beside the test fixtures
 * that encode them (test/fixtures/hook-dialects/*.ts).
 */

export const DIALECTS = ['claude', 'codex', 'gemini', 'qwen', 'copilot', 'cursor', 'hermes'] as const;
export type Dialect = (typeof DIALECTS)[number];

/**
 * What an event means to the breakers: before a tool call, after one, a stop, the start of a turn (a person's
 * prompt, or a scheduled one), a permission request (Copilot CLI: where it can end the turn), or anything else (let
 * through).
 */
export type EventRole = 'pre' | 'post' | 'stop' | 'prompt' | 'permission' | 'other';

/** A dialect's events by role (a role not given has none). */
interface EventsByRole {
  pre: string[];
  post: string[];
  stop: string[];
  other: string[];
  prompt?: string[];
  permission?: string[];
}

/** A dialect's events and their roles, in this order (plain loops: every hook process builds these first thing). */
const roles = (pre: string[], post: string[], stop: string[], other: string[], extra: Omit<EventsByRole, 'pre' | 'post' | 'stop' | 'other'> = {}) => {
  const map = new Map<string, EventRole>();
  const add = (names: string[] | undefined, role: EventRole) => {
    if (names) for (let i = 0; i < names.length; i++) map.set(names[i]!, role);
  };
  add(pre, 'pre');
  add(post, 'post');
  add(stop, 'stop');
  add(other, 'other');
  add(extra.prompt, 'prompt');
  add(extra.permission, 'permission');
  return map as ReadonlyMap<string, EventRole>;
};

/** Each dialect's event names (`hook_event_name`), with their roles. A name not listed is not that dialect's. */
export const DIALECT_EVENTS: Readonly<Record<Dialect, ReadonlyMap<string, EventRole>>> = {
  claude: roles(
    ['PreToolUse'],
    ['PostToolUse', 'PostToolUseFailure'],
    ['Stop', 'SubagentStop'],
    [
      'SessionStart',
      'UserPromptExpansion',
      'PermissionRequest',
      'PermissionDenied',
      'PostToolBatch',
      'Notification',
      'SubagentStart',
      'TaskCreated',
      'TaskCompleted',
      'StopFailure',
      'TeammateIdle',
      'InstructionsLoaded',
      'ConfigChange',
      'CwdChanged',
      'FileChanged',
      'WorktreeCreate',
      'WorktreeRemove',
      'PreCompact',
      'PostCompact',
      'Elicitation',
      'ElicitationResult',
      'SessionEnd',
      'Setup',
    ],
    { prompt: ['UserPromptSubmit'] },
  ),
  codex: roles(
    ['PreToolUse'],
    ['PostToolUse'],
    ['Stop'],
    ['SessionStart', 'PermissionRequest', 'PreCompact', 'PostCompact', 'SubagentStart', 'SubagentStop', 'StopFailure'],
    { prompt: ['UserPromptSubmit'] },
  ),
  gemini: roles(
    ['BeforeTool'],
    ['AfterTool'],
    ['AfterAgent'],
    ['Notification', 'SessionStart', 'SessionEnd', 'PreCompress', 'BeforeModel', 'AfterModel', 'BeforeToolSelection'],
    { prompt: ['BeforeAgent'] },
  ),
  qwen: roles(
    ['PreToolUse'],
    ['PostToolUse', 'PostToolUseFailure'],
    ['Stop'],
    [
      'PostToolBatch',
      'Notification',
      'UserPromptExpansion',
      'SessionStart',
      'MessageDisplay',
      'SubagentStart',
      'SubagentStop',
      'PreCompact',
      'PostCompact',
      'SessionEnd',
      'SessionDelete',
      'PermissionRequest',
      'PermissionDenied',
      'StopFailure',
      'TodoCreated',
      'TodoCompleted',
      'InstructionsLoaded',
    ],
    { prompt: ['UserPromptSubmit'] },
  ),
  // Copilot CLI's camelCase payloads carry no event name (the hook's own command says which event it serves); its
  // "VS Code compatible" payloads, for hooks configured under PascalCase event names, do.
  copilot: roles(
    ['PreToolUse'],
    ['PostToolUse', 'PostToolUseFailure'],
    ['Stop'],
    ['SessionStart', 'SessionEnd', 'SubagentStop', 'ErrorOccurred', 'PreCompact', 'Notification'],
    { prompt: ['UserPromptSubmit'], permission: ['PermissionRequest'] },
  ),
  cursor: roles(
    ['preToolUse', 'beforeShellExecution', 'beforeMCPExecution'],
    ['postToolUse', 'postToolUseFailure', 'afterShellExecution', 'afterMCPExecution'],
    ['stop'],
    [
      'beforeReadFile',
      'afterFileEdit',
      'afterAgentResponse',
      'afterAgentThought',
      'beforeTabFileRead',
      'afterTabFileEdit',
      'sessionStart',
      'sessionEnd',
      'subagentStart',
      'subagentStop',
      'preCompact',
    ],
    { prompt: ['beforeSubmitPrompt'] },
  ),
  hermes: roles(
    ['pre_tool_call'],
    ['post_tool_call'],
    ['pre_verify'],
    [
      'subagent_start',
      'subagent_stop',
      'post_llm_call',
      'pre_api_request',
      'post_api_request',
      'api_request_error',
      'on_session_start',
      'on_session_end',
      'on_session_finalize',
      'on_session_reset',
      'transform_tool_result',
      'transform_llm_output',
      'transform_terminal_output',
      'pre_gateway_dispatch',
      'pre_approval_request',
      'post_approval_response',
    ],
    { prompt: ['pre_llm_call'] },
  ),
};

/** Copilot CLI's camelCase input fields (its payloads in that format have no `hook_event_name`). */
const COPILOT_CAMEL_FIELDS = ['sessionId', 'toolName', 'toolArgs', 'toolResult', 'transcriptPath', 'stopReason'];

const has = (p: Record<string, unknown>, key: string) => p[key] !== undefined && p[key] !== null;

/** Whether a dialect is a valid name. */
export function isDialect(name: unknown): name is Dialect {
  return typeof name === 'string' && (DIALECTS as readonly string[]).includes(name);
}

/** A dialect given by a library caller, checked as the thresholds are: a name it does not know is a RangeError. */
export function checkDialect(name: unknown): Dialect | undefined {
  if (name === undefined || isDialect(name)) return name;
  throw new RangeError(`dialect must be one of ${DIALECTS.join(', ')}, got '${String(name)}'`);
}

/**
 * The dialect an input is written in, from its event name's spelling and its field names; undefined when no
 * dialect explains it (an event name none of them uses). An input with no event name is Copilot's when it has
 * Copilot's camelCase fields, else Claude's (the breakers have always accepted Claude-style input without one).
 */
export function recognizeDialect(payload: Record<string, unknown>): Dialect | undefined {
  const event = payload.hook_event_name;
  if (typeof event !== 'string') return COPILOT_CAMEL_FIELDS.some((k) => has(payload, k)) ? 'copilot' : 'claude';
  const owners = DIALECTS.filter((d) => DIALECT_EVENTS[d].has(event));
  if (owners.length <= 1) return owners[0];
  // Names shared by several dialects (Claude Code's, which Codex, Qwen Code and Copilot's VS Code format reuse):
  // Qwen Code and Copilot stamp every input with a `timestamp`, Codex adds `turn_id` and `model`, Claude Code neither.
  if (has(payload, 'timestamp')) {
    const role = DIALECT_EVENTS.copilot.get(event) ?? DIALECT_EVENTS.qwen.get(event);
    const copilot =
      has(payload, 'tool_result') ||
      (has(payload, 'stop_reason') && !has(payload, 'stop_hook_active')) ||
      ((role === 'pre' || role === 'post' || role === 'permission') && !has(payload, 'tool_use_id'));
    const d = copilot ? 'copilot' : 'qwen';
    return DIALECT_EVENTS[d].has(event) ? d : undefined;
  }
  if (has(payload, 'turn_id') || has(payload, 'model')) return DIALECT_EVENTS.codex.has(event) ? 'codex' : undefined;
  return DIALECT_EVENTS.claude.has(event) ? 'claude' : undefined;
}

/** Whether a dialect explains an input: its event name, when it has one, is one of that dialect's. */
export function explains(dialect: Dialect, payload: Record<string, unknown>): boolean {
  const event = payload.hook_event_name;
  return typeof event !== 'string' || DIALECT_EVENTS[dialect].has(event);
}

/**
 * The host's own cap on consecutive stop blocks, where it has one: Claude Code ends the turn after 8, Qwen Code
 * after 8 (`QWEN_CODE_STOP_HOOK_BLOCK_CAP`), Copilot CLI after 8 (its hooks reference, "Runaway guard"), Cursor submits
 * at most 5 automatic follow-ups, hermes allows `agent.max_verify_nudges` (default 3) `pre_verify` nudges a turn. Codex
 * has none (openai/codex #37937: the breaker is the only one); Gemini CLI's is not documented.
 */
export const HOST_STOP_CAP: Readonly<Record<Dialect, number | undefined>> = {
  claude: 8,
  codex: undefined,
  gemini: undefined,
  qwen: 8,
  copilot: 8,
  cursor: 5,
  hermes: 3,
};

/**
 * The dialect to read an input in: the one given (`--dialect`), when it explains the input, else the one
 * recognised. A `problem` (one line naming the input) when none explains it: the hook then fails open.
 */
export function dialectOf(payload: unknown, given?: Dialect): { dialect: Dialect } | { problem: string } {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return { problem: 'the hook input is not a JSON object' };
  const p = payload as Record<string, unknown>;
  const event = JSON.stringify(p.hook_event_name);
  if (given !== undefined) {
    return explains(given, p) ? { dialect: given } : { problem: `the hook input's event ${event} is not a ${given} hook event (check --dialect)` };
  }
  const d = recognizeDialect(p);
  return d ? { dialect: d } : { problem: `the hook input's event ${event} is not one any hook dialect uses (${DIALECTS.join(', ')})` };
}
