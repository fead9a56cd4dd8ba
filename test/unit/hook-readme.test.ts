/**
 * The ready configuration per agent in docs/breakers.md (section "Dialects", moved there from the README) is what each agent's documented schema accepts,
 * names only events of that agent, and wires each event to the hook form that decides it (`tool-loop pre` before a
 * call, `tool-loop post` after one, `stop-hook` at a stop), spelled as the fast path takes it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { load as parseYaml } from 'js-yaml';
import { GLOBAL_OPTIONS } from '../../src/cli/global-options.js';
import { HOOK_FORMS } from '../../src/cli/hooks/hook-options.js';
import { parsePlainArgv } from '../../src/cli/option-table.js';
import { DIALECT_EVENTS, type Dialect, type EventRole } from '../../src/core/hook-dialects.js';
import { REPO } from '../helpers/cli.js';

const README = readFileSync(path.join(REPO, 'docs', 'breakers.md'), 'utf8');
const section = README.slice(README.indexOf('### Dialects'), README.indexOf('### stop-hook:'));

/** The fenced blocks of the section, each with the paragraph that introduces it. */
function snippets(): Array<{ intro: string; lang: string; body: string }> {
  const out: Array<{ intro: string; lang: string; body: string }> = [];
  const fence = /```(json|yaml)\n([\s\S]*?)```/g;
  let last = 0;
  for (let m = fence.exec(section); m; m = fence.exec(section)) {
    out.push({ intro: section.slice(last, m.index), lang: m[1]!, body: m[2]! });
    last = fence.lastIndex;
  }
  return out;
}

/** Copilot CLI's configuration event names (camelCase; docs: cli-hooks-reference.md, "Hook events") and the role each has here. */
const COPILOT_CONFIG_EVENTS: Record<string, EventRole> = {
  agentStop: 'stop',
  errorOccurred: 'other',
  notification: 'other',
  permissionRequest: 'other',
  PermissionRequest: 'permission',
  postToolUse: 'post',
  postToolUseFailure: 'post',
  preCompact: 'other',
  preToolUse: 'pre',
  sessionEnd: 'other',
  sessionStart: 'other',
  subagentStart: 'other',
  subagentStop: 'other',
  userPromptSubmitted: 'prompt',
};
const FORM_OF: Record<string, EventRole> = { 'tool-loop pre': 'pre', 'tool-loop post': 'post', 'stop-hook': 'stop', 'tool-loop prompt': 'prompt' };
/** `tool-loop pre` decides Copilot CLI's permission requests too (where a second loop in a turn ends it). */
const sameForm = (form: EventRole, role: EventRole) => form === role || (form === 'pre' && role === 'permission');

/** The role of the hook form a command runs (`hermes-janitor tool-loop pre`), which the fast path must take. */
function commandRole(command: unknown, what: string): EventRole {
  assert.equal(typeof command, 'string', what);
  const [bin, ...argv] = (command as string).split(' ');
  assert.equal(bin, 'hermes-janitor', what);
  const parsed = parsePlainArgv(argv, GLOBAL_OPTIONS, HOOK_FORMS);
  assert.ok(parsed, `${what}: the fast path takes ${JSON.stringify(command)}`);
  return FORM_OF[parsed.form.name]!;
}

const only = (obj: object, keys: string[], what: string) =>
  assert.deepEqual(
    Object.keys(obj).filter((k) => !keys.includes(k)),
    [],
    `${what}: only ${keys.join(', ')}`,
  );

/** `{"hooks": {Event: [{"matcher"?, "hooks": [{"type": "command", "command"}]}]}}` (Claude Code, Gemini CLI, Codex, Qwen Code). */
function checkMatcherGroups(doc: Record<string, unknown>, dialect: Dialect): string[] {
  only(doc, ['hooks'], dialect);
  const events = Object.entries(doc.hooks as Record<string, unknown[]>);
  for (const [event, groups] of events) {
    const role = DIALECT_EVENTS[dialect].get(event);
    assert.ok(role && role !== 'other', `${dialect}: ${event} is one of its events the breakers decide`);
    for (const g of groups as Array<Record<string, unknown>>) {
      only(g, ['matcher', 'hooks'], `${dialect} ${event}`);
      if (g.matcher !== undefined) assert.equal(typeof g.matcher, 'string');
      for (const h of g.hooks as Array<Record<string, unknown>>) {
        only(h, ['type', 'command'], `${dialect} ${event}`);
        assert.equal(h.type, 'command');
        assert.ok(sameForm(commandRole(h.command, `${dialect} ${event}`), role!), `${dialect} ${event} runs the hook that decides it`);
      }
    }
  }
  return events.map(([e]) => e);
}

describe('docs/breakers.md: the ready configuration per agent', () => {
  const blocks = snippets();
  const block = (intro: string) => {
    const found = blocks.filter((b) => b.intro.includes(intro));
    assert.equal(found.length, 1, `one snippet introduced by ${JSON.stringify(intro)}`);
    return found[0]!;
  };

  it('Claude Code (.claude/settings.json), which Codex and Qwen Code take too: every breaker event, failures included', () => {
    const events = checkMatcherGroups(JSON.parse(block('Claude Code, `.claude/settings.json`').body), 'claude');
    assert.deepEqual(events, ['UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'PostToolUseFailure', 'Stop']);
    // Codex has no PostToolUseFailure: its hooks.json is the same object without it.
    const codex = JSON.parse(block('Claude Code, `.claude/settings.json`').body) as { hooks: Record<string, unknown> };
    delete codex.hooks.PostToolUseFailure;
    assert.deepEqual(checkMatcherGroups(codex, 'codex'), ['UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop']);
    assert.match(section, /without the\s+`PostToolUseFailure` entry \(Codex has no such event\)/);
    checkMatcherGroups(JSON.parse(block('Claude Code, `.claude/settings.json`').body), 'qwen');
  });

  it('Gemini CLI (.gemini/settings.json)', () => {
    assert.deepEqual(checkMatcherGroups(JSON.parse(block('Gemini CLI, `.gemini/settings.json`').body), 'gemini'), [
      'BeforeAgent',
      'BeforeTool',
      'AfterTool',
      'AfterAgent',
    ]);
  });

  it('GitHub Copilot CLI (.github/hooks/*.json): version 1, command hooks with bash', () => {
    const doc = JSON.parse(block('GitHub Copilot CLI, `.github/hooks/').body) as { version: number; hooks: Record<string, Array<Record<string, unknown>>> };
    only(doc, ['version', 'hooks'], 'copilot');
    assert.equal(doc.version, 1);
    for (const [event, entries] of Object.entries(doc.hooks)) {
      const role = COPILOT_CONFIG_EVENTS[event];
      assert.ok(role && role !== 'other', `copilot: ${event}`);
      for (const e of entries) {
        only(e, ['type', 'bash'], `copilot ${event}`);
        assert.equal(e.type, 'command');
        assert.ok(sameForm(commandRole(e.bash, `copilot ${event}`), role), `copilot ${event}`);
      }
    }
    assert.deepEqual(Object.keys(doc.hooks), ['userPromptSubmitted', 'preToolUse', 'PermissionRequest', 'postToolUse', 'postToolUseFailure', 'agentStop']);
  });

  it('Cursor (.cursor/hooks.json): version 1, a command per hook', () => {
    const doc = JSON.parse(block('Cursor, `<project>/.cursor/hooks.json`').body) as { version: number; hooks: Record<string, Array<Record<string, unknown>>> };
    only(doc, ['version', 'hooks'], 'cursor');
    assert.equal(doc.version, 1);
    for (const [event, entries] of Object.entries(doc.hooks)) {
      const role = DIALECT_EVENTS.cursor.get(event);
      assert.ok(role && role !== 'other', `cursor: ${event}`);
      for (const e of entries) {
        only(e, ['command'], `cursor ${event}`);
        assert.ok(sameForm(commandRole(e.command, `cursor ${event}`), role), `cursor ${event}`);
      }
    }
  });

  it("hermes-agent (the profile's config.yaml hooks:): a command per hook", () => {
    const b = block('hermes-agent, the profile');
    assert.equal(b.lang, 'yaml');
    const doc = parseYaml(b.body) as { hooks: Record<string, Array<Record<string, unknown>>> };
    only(doc, ['hooks'], 'hermes');
    for (const [event, entries] of Object.entries(doc.hooks)) {
      const role = DIALECT_EVENTS.hermes.get(event);
      assert.ok(role && role !== 'other', `hermes: ${event}`);
      for (const e of entries) {
        only(e, ['command', 'matcher', 'timeout'], `hermes ${event}`);
        assert.ok(sameForm(commandRole(e.command, `hermes ${event}`), role), `hermes ${event}`);
      }
    }
    assert.deepEqual(Object.keys(doc.hooks), ['pre_llm_call', 'pre_tool_call', 'post_tool_call', 'pre_verify']);
  });
});
