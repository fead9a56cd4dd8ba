/**
 * One normalised reading of a hook input per dialect: the session, the tool, its input, the tool-call id and
 * whether the call failed (tool hooks), or the session and whether this stop follows a block (stop hooks). Pure.
 */
import { DIALECT_EVENTS, type Dialect, type EventRole } from './hook-dialects.js';

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/**
 * How a finished tool call went: a failure counts, a success clears the count, neutral changes nothing (an
 * interrupted or vetoed call); `unknown`: it ran, but the agent does not say whether it failed (Cursor's
 * afterShellExecution): its result is kept, the failure counts are left alone.
 */
export type CallOutcome = 'success' | 'failure' | 'neutral' | 'unknown';

/** A tool hook's input, read. */
export interface ToolCallReading {
  /** The dialect's event name (for Copilot's camelCase format, which has none: the one the hook serves). */
  event: string;
  role: EventRole;
  /** The session id; empty when the input has none. */
  session: string;
  tool: string;
  /** The call's arguments (null when missing). */
  input: unknown;
  /** The host's id of this call, when it sends one. */
  callId?: string;
  /** After the call: how it went. */
  outcome?: CallOutcome;
  /**
   * After the call: what it returned, as the dialect gives it (`value`), for the rules that compare results; absent
   * where the dialect gives none (Codex' shell results, a string with no exit status).
   */
  result?: { value: unknown };
  /** Cursor's `generation_id` (one per prompt), to count once a call two hook sets report. */
  generation?: string;
  /** Before a turn: what started it, where the agent says (hermes' `extra.platform`, e.g. `cron`). */
  source?: string;
  /** A subagent's event (Claude Code, Codex: `agent_id`), where the agent says. */
  agent?: string;
}

/** A stop hook's input, read. */
export interface StopReading {
  event: string;
  role: EventRole;
  sessionId?: string;
  /** True when this stop follows a block; undefined when the dialect does not say (counts as true). */
  stopHookActive?: boolean;
  /** A subagent's stop (Claude Code's `SubagentStop`, its `agent_id`): counted apart from the main session's. */
  subagent?: string;
}

type Obj = Record<string, unknown>;

export function isPlainObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const absent = (v: unknown) => v === undefined || v === null;

/**
 * A tool response is a failure when it is an object carrying a truthy `error`, `is_error: true`,
 * `isError: true` or `success: false`; anything else is a success.
 */
export function isFailure(response: unknown): boolean {
  if (!isPlainObject(response)) return false;
  return Boolean(response.error) || response.is_error === true || response.isError === true || response.success === false;
}

/** A JSON text parsed when it is one (Copilot's `toolArgs`, Cursor's MCP `tool_input` and `result_json`), else as is. */
function maybeJson(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}

/** The first of `keys` present in `p`: its key and value. */
function field(p: Obj, keys: readonly string[]): { key: string; value: unknown } {
  for (const key of keys) if (!absent(p[key])) return { key, value: p[key] };
  return { key: keys[0]!, value: undefined };
}

/** Checks that each present field is a string. */
function strings(p: Obj, keys: readonly string[]): string | undefined {
  for (const key of keys) if (!absent(p[key]) && typeof p[key] !== 'string') return `the hook input is invalid: '${key}' must be a string`;
  return undefined;
}

/** Where each dialect keeps the common fields. */
const SESSION: Record<Dialect, readonly string[]> = {
  claude: ['session_id'],
  codex: ['session_id'],
  gemini: ['session_id'],
  qwen: ['session_id'],
  copilot: ['sessionId', 'session_id'],
  cursor: ['conversation_id'],
  hermes: ['session_id'],
};

/** The hook a command serves: before a call, after one, a stop, or the start of a turn (`tool-loop prompt`). */
export type HookRole = 'pre' | 'post' | 'stop' | 'prompt';

/** Copilot CLI's camelCase event each hook serves (its camelCase payloads name none). */
function copilotEvent(p: Obj, hook: HookRole): string {
  if (hook === 'pre') return 'preToolUse';
  if (hook === 'stop') return 'agentStop';
  if (hook === 'prompt') return 'userPromptSubmitted';
  return !absent(p.error) ? 'postToolUseFailure' : 'postToolUse';
}

function eventOf(p: Obj, dialect: Dialect, hook: HookRole): { event: string; role: EventRole } | { problem: string } {
  const e = p.hook_event_name;
  if (!absent(e) && typeof e !== 'string') return { problem: "the hook input is invalid: 'hook_event_name' must be a string" };
  if (typeof e === 'string') return { event: e, role: DIALECT_EVENTS[dialect].get(e) ?? 'other' };
  // No event name: the hook's own event (Copilot's camelCase format never names it; others' older inputs may not).
  if (dialect === 'copilot') return { event: copilotEvent(p, hook), role: hook };
  const first = [...DIALECT_EVENTS[dialect]].find(([, role]) => role === hook);
  return { event: first?.[0] ?? hook, role: hook };
}

/** The tool, its input and its call id, where the dialect keeps them. */
function toolFields(p: Obj, dialect: Dialect, event: string): Parsed<{ tool: string; input: unknown; callId?: string }> {
  if (dialect === 'cursor' && (event === 'beforeShellExecution' || event === 'afterShellExecution')) {
    if (typeof p.command !== 'string') return { ok: false, problem: "the hook input is invalid: 'command' must be a string" };
    const input: Obj = { command: p.command };
    if (typeof p.cwd === 'string') input.cwd = p.cwd;
    return { ok: true, value: { tool: 'Shell', input } };
  }
  const name = field(p, dialect === 'copilot' ? ['toolName', 'tool_name'] : ['tool_name']);
  if (typeof name.value !== 'string' || name.value === '') {
    return { ok: false, problem: `the hook input is invalid: '${name.key}' must be a non-empty string` };
  }
  const args = field(p, dialect === 'copilot' ? ['toolArgs', 'tool_input'] : ['tool_input']);
  const input = dialect === 'copilot' || dialect === 'cursor' ? maybeJson(args.value) : args.value;
  const extra = isPlainObject(p.extra) ? p.extra : {};
  const id = dialect === 'hermes' ? extra.tool_call_id : dialect === 'copilot' ? undefined : p.tool_use_id;
  const value: { tool: string; input: unknown; callId?: string } = { tool: name.value, input: input ?? null };
  if (typeof id === 'string' && id !== '') value.callId = id;
  return { ok: true, value };
}

/** How a finished call went, as each dialect reports it. */
function outcomeOf(p: Obj, dialect: Dialect, event: string): CallOutcome {
  const verdict = (failed: boolean): CallOutcome => (failed ? 'failure' : 'success');
  switch (dialect) {
    case 'claude':
    case 'qwen':
      if (event === 'PostToolUseFailure') return p.is_interrupt === true ? 'neutral' : 'failure';
      return verdict(isFailure(p.tool_response));
    case 'codex':
      return verdict(isFailure(p.tool_response));
    case 'gemini': {
      if (isFailure(p.tool_response)) return 'failure';
      return geminiShellOutcome(p.tool_name, p.tool_response) ?? 'success';
    }
    case 'copilot': {
      if (event === 'postToolUseFailure' || event === 'PostToolUseFailure') return 'failure';
      const result = field(p, ['toolResult', 'tool_result']).value;
      const type = isPlainObject(result) ? (result.resultType ?? result.result_type) : undefined;
      return type === 'denied' ? 'neutral' : verdict(type === 'failure' || type === 'error');
    }
    case 'cursor':
      if (event === 'postToolUseFailure') return p.is_interrupt === true || p.failure_type === 'permission_denied' ? 'neutral' : 'failure';
      if (event === 'postToolUse') return verdict(isFailure(maybeJson(p.tool_output)));
      return event === 'afterMCPExecution' ? verdict(isFailure(maybeJson(p.result_json))) : 'unknown';
    case 'hermes': {
      const extra = isPlainObject(p.extra) ? p.extra : {};
      if (extra.status === 'ok') return 'success';
      if (extra.status === 'error') return 'failure';
      return absent(extra.status) ? verdict(isFailure(maybeJson(extra.result))) : 'neutral'; // 'blocked': a hook vetoed it, it never ran
    }
  }
}

/** Gemini CLI's shell tool (`SHELL_TOOL_NAME`): the only tool whose `llmContent` carries an exit status. */
const GEMINI_SHELL = 'run_shell_command';
/** A command a person cancelled (it says nothing of the command): `Command was cancelled by user before it could ...`. */
const GEMINI_CANCELLED = /^Command was cancelled by user\b/;
/** A command stopped at its timeout: it did not do its work (current and older wordings). */
const GEMINI_TIMED_OUT = /^(?:Command was automatically cancelled because it exceeded the timeout|Command execution timed out|Command timed out)\b/;

/**
 * How a Gemini CLI shell result went, judged by its exit status (undefined: it does not say): `run_shell_command`
 * sets `error` only when the command cannot start; a command that ran and failed says so in its `llmContent` (current
 * versions: `Exit Code: N` only when N is not 0, `Signal: N` when a signal ended it; older ones print every line,
 * `Exit Code: 0` and `Signal: (none)` included) and, where the version sends it, `data.exitCode`; one stopped at its
 * timeout failed, one a person cancelled is neutral (google-gemini/gemini-cli packages/core/src/tools/shell.ts,
 * packages/core/src/services/shellExecutionService.ts). The last `Exit Code:` line is the shell's own: the command's
 * output comes before it.
 */
export function geminiShellOutcome(tool: unknown, response: unknown): CallOutcome | undefined {
  if (tool !== GEMINI_SHELL || !isPlainObject(response)) return undefined;
  const data = response.data;
  if (isPlainObject(data) && typeof data.exitCode === 'number') return data.exitCode !== 0 ? 'failure' : 'success';
  const text = contentText(response.llmContent);
  if (GEMINI_CANCELLED.test(text)) return 'neutral';
  if (GEMINI_TIMED_OUT.test(text)) return 'failure';
  let code: string | undefined;
  for (const m of text.matchAll(/^Exit Code: (-?\d+)[ \t]*$/gm)) code = m[1];
  if (code !== undefined) return code === '0' ? 'success' : 'failure';
  return /^Signal: \d+[ \t]*$/m.test(text) ? 'failure' : undefined;
}

/** Gemini CLI's `llmContent`: a string, or parts with `text`. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return isPlainObject(content) && typeof content.text === 'string' ? content.text : '';
  return content.map((part) => (isPlainObject(part) && typeof part.text === 'string' ? part.text : typeof part === 'string' ? part : '')).join('\n');
}

/** What a finished call returned, where each dialect keeps it; undefined where the dialect gives nothing to compare. */
function resultOf(p: Obj, dialect: Dialect, event: string): { value: unknown } | undefined {
  const has = (v: unknown) => (absent(v) ? undefined : { value: v });
  switch (dialect) {
    case 'claude':
    case 'qwen':
      return event === 'PostToolUseFailure' ? has(p.error) : has(p.tool_response);
    case 'codex':
      // A shell result is a string with no exit status: compared as it is (it says nothing of failure).
      return has(p.tool_response);
    case 'gemini': {
      const r = p.tool_response;
      if (!isPlainObject(r)) return has(r);
      return { value: { content: contentText(r.llmContent), error: r.error ?? null, exitCode: isPlainObject(r.data) ? (r.data.exitCode ?? null) : null } };
    }
    case 'copilot': {
      if (event === 'postToolUseFailure' || event === 'PostToolUseFailure') return has(p.error);
      const r = field(p, ['toolResult', 'tool_result']).value;
      return isPlainObject(r) ? has(r.textResultForLlm ?? r.text_result_for_llm ?? r) : has(r);
    }
    case 'cursor':
      if (event === 'postToolUseFailure') return has(p.error_message ?? p.error);
      if (event === 'postToolUse') return has(maybeJson(p.tool_output));
      return event === 'afterMCPExecution' ? has(maybeJson(p.result_json)) : has(p.output);
    case 'hermes': {
      const extra = isPlainObject(p.extra) ? p.extra : {};
      // hermes' tools return JSON text (terminal: {"output", "exit_code", "error"}): compared as the value it holds.
      return has(maybeJson(extra.result ?? extra.error_message));
    }
  }
}

/** The session-level fields of any event: its generation (Cursor), its subagent, what started a turn (hermes). */
function contextOf(p: Obj, dialect: Dialect, reading: ToolCallReading): void {
  if (dialect === 'cursor' && typeof p.generation_id === 'string' && p.generation_id !== '') reading.generation = p.generation_id;
  const agent = p.agent_id;
  if ((dialect === 'claude' || dialect === 'codex') && typeof agent === 'string' && agent !== '') reading.agent = agent;
  if (reading.role === 'prompt') {
    const extra = isPlainObject(p.extra) ? p.extra : {};
    const source = dialect === 'hermes' ? extra.platform : undefined;
    if (typeof source === 'string' && source !== '') reading.source = source;
  }
}

/** Reads a tool hook's input (`hook`: the event the hook serves). A missing or empty session id is ''. */
export function readToolCall(payload: unknown, dialect: Dialect, hook: 'pre' | 'post' | 'prompt'): Parsed<ToolCallReading> {
  if (!isPlainObject(payload)) return { ok: false, problem: 'the hook input is not a JSON object' };
  const ev = eventOf(payload, dialect, hook);
  if ('problem' in ev) return { ok: false, problem: ev.problem };
  const session = field(payload, SESSION[dialect]);
  if (!absent(session.value) && typeof session.value !== 'string') {
    return { ok: false, problem: `the hook input is invalid: '${session.key}' must be a string` };
  }
  const reading: ToolCallReading = { event: ev.event, role: ev.role, session: (session.value as string | undefined) ?? '', tool: '', input: null };
  contextOf(payload, dialect, reading);
  if (ev.role !== hook || hook === 'prompt') return { ok: true, value: reading };
  const tf = toolFields(payload, dialect, ev.event);
  if (!tf.ok) return tf;
  Object.assign(reading, tf.value);
  if (hook === 'post') {
    reading.outcome = outcomeOf(payload, dialect, ev.event);
    const result = resultOf(payload, dialect, ev.event);
    if (result) reading.result = result;
  }
  return { ok: true, value: reading };
}

/** Reads a stop hook's input. */
export function readStop(payload: unknown, dialect: Dialect): Parsed<StopReading> {
  if (!isPlainObject(payload)) return { ok: false, problem: 'the hook input is not a JSON object' };
  const ev = eventOf(payload, dialect, 'stop');
  if ('problem' in ev) return { ok: false, problem: ev.problem };
  const camel = dialect === 'copilot' && absent(payload.session_id);
  const problem = strings(payload, [...SESSION[dialect], camel ? 'transcriptPath' : 'transcript_path', 'cwd']);
  if (problem) return { ok: false, problem };
  const reading: StopReading = { event: ev.event, role: ev.role };
  const session = field(payload, SESSION[dialect]).value;
  if (typeof session === 'string' && session !== '') reading.sessionId = session;
  const active = activeFlag(payload, dialect);
  if (active instanceof Error) return { ok: false, problem: `the hook input is invalid: ${active.message}` };
  if (active !== undefined) reading.stopHookActive = active;
  // A subagent's stop: Claude Code's SubagentStop carries the parent's session_id and the subagent's agent_id.
  const camelSubagent = dialect === 'copilot' && absent(payload.hook_event_name) && (!absent(payload.agentId) || !absent(payload.agentName));
  if (ev.event === 'SubagentStop' || ev.event === 'subagentStop' || camelSubagent) {
    const agent = payload.agent_id ?? payload.agentId ?? payload.agent_name ?? payload.agentName;
    reading.subagent = typeof agent === 'string' && agent !== '' ? agent : 'subagent';
  }
  // Cursor also fires `stop` when the user aborted the loop or it errored: only a completed loop is held.
  if (dialect === 'cursor' && ev.role === 'stop' && !absent(payload.status) && payload.status !== 'completed') reading.role = 'other';
  return { ok: true, value: reading };
}

/** Whether this stop follows a block: `stop_hook_active`, Cursor's `loop_count` > 0, hermes' `extra.attempt` > 0. */
function activeFlag(p: Obj, dialect: Dialect): boolean | undefined | Error {
  const count = (v: unknown, what: string) =>
    absent(v) ? undefined : typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v > 0 : new Error(`'${what}' must be a whole number`);
  if (dialect === 'cursor') return count(p.loop_count, 'loop_count');
  if (dialect === 'hermes') return count(isPlainObject(p.extra) ? p.extra.attempt : undefined, 'extra.attempt');
  const v = p.stop_hook_active;
  if (absent(v)) return undefined;
  return typeof v === 'boolean' ? v : new Error("'stop_hook_active' must be true or false");
}
