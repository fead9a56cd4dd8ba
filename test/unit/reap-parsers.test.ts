/**
 * The two parsers of `reap` agree on every option they share. The shell start-up form (`reap --once-per D` with
 * fresh stamps) is parsed by the fast path (once-per-fast-path.ts) without commander; everything else by commander.
 * Both read the same declarations (engine-option-table.ts, global-options.ts): every option of `reap`, in every
 * spelling, is parsed by commander, and those declared `startup` by the fast path too, with the same values; the
 * fast path leaves every other option to commander. Nothing here names an option: a new one is covered as declared.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Command } from 'commander';
import { REAP_COMMAND_OPTIONS, REAP_OPTIONS } from '../../src/cli/engine-option-table.js';
import { passOptions } from '../../src/passes/index.js';
import { addActionOptions, addEngineOptions } from '../../src/cli/engine-options.js';
import { GLOBAL_OPTIONS } from '../../src/cli/global-options.js';
import { ONCE_PER_FORM } from '../../src/cli/once-per-fast-path.js';
import { type OptionDecl, optionKey, parsePlainArgv } from '../../src/cli/option-table.js';
import { addOptions } from '../../src/cli/shared.js';

/** Values by placeholder: the first one an option's parser takes is its sample. */
const CANDIDATES = ['90s', '2', 'unix:///run/x.sock', 'team=a', 'prod', '/tmp/out.prom', 'text', '2026-11-22T10:00:00Z', '127.0.0.1:0'];

function sample(d: OptionDecl): string {
  if (!d.parse) return d.value === '<file>' || d.value === '<path>' ? '/tmp/plan.json' : 'prod';
  const ok = CANDIDATES.find((raw) => {
    try {
      d.parse!(raw);
      return true;
    } catch {
      return false;
    }
  });
  assert.ok(ok, `add a sample value that ${d.flag} ${d.value} accepts to CANDIDATES`);
  return ok;
}

/** Every spelling of one option: `--flag value`, `--flag=value`, the one-letter alias, and given twice if repeatable. */
function spellings(d: OptionDecl): string[][] {
  if (!d.value) return [[d.flag], ...(d.short ? [[d.short]] : [])];
  const v = sample(d);
  return [[d.flag, v], [`${d.flag}=${v}`], ...(d.short ? [[d.short, v]] : []), ...(d.repeatable ? [[d.flag, v, `${d.flag}=${v}`]] : [])];
}

/** What commander makes of `reap ARGS`, as `reap` registers its options. */
function viaCommander(args: string[]): Record<string, unknown> {
  const root = new Command().exitOverride();
  addOptions(root, GLOBAL_OPTIONS);
  const cmd = root.command('reap').exitOverride();
  addEngineOptions(addActionOptions(addOptions(cmd, REAP_OPTIONS)));
  let seen: Record<string, unknown> = {};
  cmd.action((opts: Record<string, unknown>) => {
    seen = { ...opts, ...root.opts() };
  });
  root.parse(['reap', ...args], { from: 'user' });
  return seen;
}

describe('reap: the fast path and commander parse the same options the same way', () => {
  it('every option of reap is declared once: commander registers exactly the declared ones', () => {
    const cmd = new Command('reap');
    addEngineOptions(addActionOptions(addOptions(cmd, REAP_OPTIONS)));
    assert.deepEqual(cmd.options.map((o) => o.long).sort(), [...REAP_COMMAND_OPTIONS, ...passOptions()].map((d) => d.flag).sort());
  });

  for (const d of [...REAP_COMMAND_OPTIONS, ...passOptions()]) {
    for (const spelled of spellings(d)) {
      const args = d.flag === '--once-per' ? spelled : ['--once-per', '1h', ...spelled];
      it(`${spelled.join(' ')}: ${d.startup ? 'the same values on both paths' : 'left to commander'}`, () => {
        const full = viaCommander(args);
        const fast = parsePlainArgv(['reap', ...args], GLOBAL_OPTIONS, [ONCE_PER_FORM]);
        if (!d.startup) {
          assert.equal(fast, undefined, 'the fast path leaves it to the full CLI');
          return;
        }
        assert.ok(fast, 'the fast path takes it');
        const key = d.flag.startsWith('--no-') ? optionKey(d.flag.slice(3)) : optionKey(d.flag);
        assert.deepEqual(fast.options.get(d.flag), full[key], `${d.flag}: fast path vs commander`);
        assert.equal(fast.options.get('--once-per'), full.oncePer);
      });
    }
  }

  it('the global options, before or after the command, on both paths', () => {
    for (const g of GLOBAL_OPTIONS) {
      const v = sample(g);
      for (const args of [
        [g.flag, v, 'reap', '--once-per', '1h'],
        ['reap', '--once-per', '1h', g.flag, v],
      ]) {
        const fast = parsePlainArgv(args, GLOBAL_OPTIONS, [ONCE_PER_FORM]);
        assert.equal(fast?.globals.get(g.flag), v, args.join(' '));
        const root = new Command().exitOverride();
        addOptions(root, GLOBAL_OPTIONS);
        const cmd = root.command('reap').exitOverride();
        addEngineOptions(addActionOptions(addOptions(cmd, REAP_OPTIONS)));
        cmd.action(() => undefined);
        root.parse(args, { from: 'user' });
        assert.equal(cmd.optsWithGlobals()[optionKey(g.flag)], v, args.join(' '));
      }
    }
  });
});
