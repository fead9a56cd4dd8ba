/**
 * The loop corpus (test/fixtures/loops): every session, labelled a loop or progress, replayed through the tool-loop
 * breaker in every dialect (as each agent sends it) and through the published rules of OpenHands, Gemini CLI and Roo
 * Code. Prints a table (caught loops, false alarms, calls to detection) and holds the breaker to: no false alarm on a
 * progress session, every loop caught in every dialect, and within as many calls as the best of the peers' rules,
 * except where a session says why a peer is faster.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryToolLoopStore, createToolLoop } from '../../src/breakers/tool-loop.js';
import { DIALECTS, type Dialect } from '../../src/core/hook-dialects.js';
import { PEERS } from '../fixtures/loops/peers.js';
import { render } from '../fixtures/loops/render.js';
import { SESSIONS } from '../fixtures/loops/sessions.js';
import type { LoopSession } from '../fixtures/loops/types.js';

const T0 = Date.parse('2026-11-22T10:00:00Z');

/** The calls that ran before the breaker stopped the session in dialect `d` (its first deny or stop), or undefined. */
async function replay(session: LoopSession, d: Dialect): Promise<number | undefined> {
  let now = T0;
  const loop = createToolLoop({ store: new MemoryToolLoopStore(), now: () => new Date(now) });
  let ran = 0;
  for (const [i, step] of session.steps.entries()) {
    now += 20_000;
    const r = render(d, step, i);
    if ('prompt' in r) {
      const p = await loop.prompt(r.prompt);
      assert.equal(p.why, 'turn-start', `${d}: the prompt starts a turn (${p.warnings.join('; ')})`);
      continue;
    }
    const before = await loop.pre(r.pre);
    assert.deepEqual(before.warnings, [], `${d} ${session.name} call ${i}: no warning`);
    if (before.action !== 'allow') return ran;
    ran++;
    const after = await loop.post(r.post);
    assert.deepEqual(after.warnings, [], `${d} ${session.name} call ${i} (after): no warning`);
  }
  return undefined;
}

const cell = (label: LoopSession['label'], ran: number | undefined) =>
  ran === undefined ? (label === 'loop' ? 'missed' : 'ok') : label === 'loop' ? `${ran} calls` : `FALSE ALARM after ${ran}`;

describe('the loop corpus, replayed', () => {
  it('no false alarm on progress, every loop caught in every dialect, as soon as the best peer (or the session says why not)', async () => {
    const rows: string[][] = [];
    const totals = new Map<string, { caught: number; falseAlarms: number; calls: number }>();
    const tally = (who: string, label: LoopSession['label'], ran: number | undefined) => {
      const t = totals.get(who) ?? { caught: 0, falseAlarms: 0, calls: 0 };
      if (label === 'loop' && ran !== undefined) {
        t.caught++;
        t.calls += ran;
      }
      if (label === 'progress' && ran !== undefined) t.falseAlarms++;
      totals.set(who, t);
    };
    for (const session of SESSIONS) {
      const ours = new Map<Dialect, number | undefined>();
      for (const d of DIALECTS) ours.set(d, await replay(session, d));
      const peers = PEERS.map((p) => p.replay(session));
      const values = [...new Set(ours.values())];
      const mine = values.length === 1 ? cell(session.label, values[0]) : DIALECTS.map((d) => `${d} ${cell(session.label, ours.get(d))}`).join(', ');
      rows.push([session.name, session.label, mine, ...peers.map((p) => cell(session.label, p))]);
      tally('hermes-janitor', session.label, ours.get('claude'));
      PEERS.forEach((p, k) => tally(p.name, session.label, peers[k]));
      for (const d of DIALECTS) {
        const ran = ours.get(d);
        if (session.label === 'progress') assert.equal(ran, undefined, `${d}: ${session.name}: a false alarm after ${ran} calls`);
        else {
          assert.notEqual(ran, undefined, `${d}: ${session.name}: the loop is missed`);
          const best = Math.min(...peers.filter((p): p is number => p !== undefined));
          if (ran! > best) assert.ok(session.peerFaster, `${d}: ${session.name}: ${ran} calls, a peer stops it after ${best}: say why in peerFaster`);
        }
      }
      assert.equal(values.length, 1, `${session.name}: the same in every dialect: ${JSON.stringify([...ours])}`);
    }
    const head = ['session', 'label', 'hermes-janitor (all 7 dialects)', ...PEERS.map((p) => p.name)];
    const widths = head.map((h, k) => Math.max(h.length, ...rows.map((r) => r[k]!.length)));
    const line = (r: string[]) => r.map((c, k) => c.padEnd(widths[k]!)).join(' | ');
    const out = [line(head), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.map(line), ''];
    const loops = SESSIONS.filter((s) => s.label === 'loop').length;
    for (const [who, t] of totals) {
      out.push(`${who}: ${t.caught} of ${loops} loops caught, ${t.falseAlarms} false alarms, ${t.calls} calls ran before the loops caught were stopped`);
    }
    for (const s of SESSIONS.filter((x) => x.peerFaster)) out.push(`${s.name}: ${s.peerFaster}`);
    process.stdout.write(`\n${out.join('\n')}\n`);
  });
});
