/**
 * The answer each dialect accepts for each decision, in its exact shape and nothing more (Codex rejects fields it
 * does not accept for an event, and then runs the tool anyway). Where JSON cannot carry the answer, it is exit 2
 * with the text on stderr. Undefined: the dialect has no way to say it, so nothing is printed. Pure.
 */
import type { Dialect } from './hook-dialects.js';

/** What a hook prints: one JSON object on stdout (exit 0), or a text on stderr with exit 2. */
export type HookAnswer = { stdout: Record<string, unknown> } | { exitCode: 2; stderr: string };

const json = (stdout: Record<string, unknown>): HookAnswer => ({ stdout });

/** Deny a tool call before it runs. */
export function denyAnswer(dialect: Dialect, reason: string): HookAnswer {
  switch (dialect) {
    case 'claude':
    case 'codex':
    case 'qwen':
      return json({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason } });
    case 'gemini':
      return json({ decision: 'deny', reason });
    case 'copilot':
      return json({ permissionDecision: 'deny', permissionDecisionReason: reason });
    case 'cursor':
      return json({ permission: 'deny', agent_message: reason });
    case 'hermes':
      return json({ action: 'block', message: reason });
  }
}

/**
 * After a call: tell the model that a tool keeps failing (`event`: the event answered), in a form that adds the
 * message and keeps the call's own output (its error text is what the model needs to change course).
 */
export function failingAnswer(dialect: Dialect, event: string, reason: string): HookAnswer | undefined {
  switch (dialect) {
    case 'claude':
    case 'codex':
    case 'qwen':
      // Added to what the model sees, never in place of the call's own output: Codex replaces a PostToolUse's
      // output with a `decision: "block"` reason, and Qwen Code reads that decision as a blocking error.
      return json({ hookSpecificOutput: { hookEventName: event === 'PostToolUseFailure' ? 'PostToolUseFailure' : 'PostToolUse', additionalContext: reason } });
    case 'gemini':
      return json({ hookSpecificOutput: { hookEventName: 'AfterTool', additionalContext: reason } });
    case 'copilot':
      // A command hook on postToolUseFailure answers only by exit 2, its stderr returned to the model.
      return event === 'postToolUseFailure' || event === 'PostToolUseFailure' ? { exitCode: 2, stderr: reason } : undefined;
    case 'cursor':
      return undefined; // afterShellExecution / afterMCPExecution accept no output
    case 'hermes':
      return json({ context: reason });
  }
}

/** Keep the agent working instead of stopping. */
export function keepGoingAnswer(dialect: Dialect, reason: string): HookAnswer {
  switch (dialect) {
    case 'claude':
    case 'codex':
    case 'qwen':
    case 'copilot':
      return json({ decision: 'block', reason });
    case 'gemini':
      return json({ decision: 'deny', reason });
    case 'cursor':
      return json({ followup_message: reason });
    case 'hermes':
      return json({ action: 'continue', message: reason });
  }
}

/** Let the agent stop, with a message for the user, where the dialect has a place for one. */
export function stopMessageAnswer(dialect: Dialect, message: string): HookAnswer | undefined {
  switch (dialect) {
    case 'claude':
    case 'codex':
    case 'qwen':
    case 'gemini':
      return json({ systemMessage: message });
    case 'copilot': // agentStop takes decision and reason only
    case 'cursor': // stop takes followup_message only, which would keep the agent going
    case 'hermes': // pre_verify reads action/decision and message/reason only
      return undefined;
  }
}

/**
 * End the agent's turn (a loop found again after a warning in this turn), where the dialect can say it at this event
 * (`role`: the event's role); undefined where it cannot (the caller denies again, and may end the turn at the next
 * event that can). Claude Code: `continue: false` with `stopReason` on any event (the deny kept beside it, should an
 * older version ignore `continue`); Gemini CLI: `continue: false` on BeforeTool and AfterTool (their
 * `shouldStopExecution`); Codex: `continue: false` on PostToolUse only (its PreToolUse rejects it and runs the tool);
 * Copilot CLI: `interrupt: true` with a deny, on permissionRequest only.
 */
export function endTurnAnswer(dialect: Dialect, role: 'pre' | 'post' | 'permission', reason: string): HookAnswer | undefined {
  switch (dialect) {
    case 'claude':
      if (role === 'permission') return undefined;
      return role === 'pre'
        ? json({
            continue: false,
            stopReason: reason,
            hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason },
          })
        : json({ continue: false, stopReason: reason });
    case 'gemini':
      return role === 'permission' ? undefined : json({ continue: false, stopReason: reason });
    case 'codex':
      return role === 'post' ? json({ continue: false, stopReason: reason }) : undefined;
    case 'copilot':
      return role === 'permission' ? json({ behavior: 'deny', message: reason, interrupt: true }) : undefined;
    case 'qwen':
    case 'cursor':
    case 'hermes':
      return undefined;
  }
}

/**
 * After a call: tell the model something beside the call's own output (a loop found in warn-only mode), where the
 * dialect has a place for it; undefined where it has none.
 */
export function noteAnswer(dialect: Dialect, event: string, reason: string): HookAnswer | undefined {
  if (dialect === 'copilot') return event === 'postToolUse' || event === 'PostToolUse' ? json({ additionalContext: reason }) : undefined;
  const answer = failingAnswer(dialect, event, reason);
  return answer && 'stdout' in answer ? answer : undefined;
}
