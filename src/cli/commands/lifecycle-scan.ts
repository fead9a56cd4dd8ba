import type { Command } from 'commander';
import type { Context } from '../../context.js';
import { MAX_REPORTED_MATCHES, MAX_SCAN_BYTES, scanLifecycle } from '../../breakers/lifecycle-scan.js';
import { RULE_DESCRIPTIONS, displayLine } from '../../core/lifecycle-scan.js';
import { ExitCode, errorMessage } from '../../errors.js';
import { type RunState, action, collect, homeFrom, warn, writeJson } from '../shared.js';
import { docsLine } from '../docs-page.js';

const MIB = MAX_SCAN_BYTES / (1024 * 1024);

const HELP = `
What matches (case-insensitive, after folding backslash-newline continuations;
one line at a time):
  hermes [options] gateway restart|stop     (hermes gateway start is fine)
  launchctl kickstart|unload|load|stop|restart|bootout|bootstrap|remove|
      disable ... whose arguments name the gateway (hermes.gateway,
      hermes-gateway, hermesgateway)
  systemctl [options] restart|stop|start ...  naming the gateway the same way
  kill / pkill / killall     on a line that mentions hermes and gateway

Input: the TEXT arguments joined with spaces, and/or each --script (a relative
path resolves under <home>/scripts/); with neither, stdin. Scripts are read as
bytes and decoded with replacement characters. At most the first ${MIB} MiB of
each input is scanned (a warning says so when an input is longer), and the scan
takes time linear in the input, so a huge or binary input cannot hang it. A
missing or unreadable script is a warning, not a match. Quote the text, or put
it after '--', when it contains options:
  hermes-janitor lifecycle-scan -- pkill -f 'hermes.*gateway'

Output: each matching line on stdout (control characters escaped, long lines
cut to an excerpt around the match); where and why on stderr.

Exit codes:
  0  no lifecycle command found: proceed (also when an input cannot be read:
     one warning on stderr)
  1  a gateway lifecycle command was found: refuse the scheduled command
  2  usage error`;

interface ScanOptions {
  script?: string[];
  json?: boolean;
}

export function register(program: Command, ctx: Context, state: RunState): void {
  program
    .command('lifecycle-scan')
    .description('Refuse scheduled commands that restart, stop or kill the gateway: exit 1 when TEXT, the scripts or stdin contain one.')
    .argument('[text...]', 'the command text to scan (several arguments are joined with spaces)')
    .option('--script <path>', 'scan this script file (relative: under <home>/scripts/); repeatable', collect)
    .option('--json', 'print one JSON document with the decision, the matches and what was scanned on stdout')
    .addHelpText('after', HELP + docsLine('docs/breakers.md'))
    .action(
      action(state, async (texts: string[], opts: ScanOptions, cmd: Command) => {
        const { home } = homeFrom(cmd, ctx);
        const scripts = opts.script ?? [];
        const useStdin = texts.length === 0 && scripts.length === 0;
        if (useStdin && ctx.stdin.isTTY && !opts.json) {
          ctx.stderr.write('lifecycle-scan: reading the text to scan from the terminal; end it with Ctrl-D\n');
        }
        let outcome;
        try {
          outcome = await scanLifecycle({ texts, scripts, home, ...(useStdin ? { stdin: ctx.stdin } : {}) });
        } catch (err) {
          // Fail open: an internal error must not block the caller.
          warn(ctx, `lifecycle-scan failed (${errorMessage(err)}); proceeding (the breaker fails open)`);
          if (opts.json)
            writeJson(ctx, {
              command: 'lifecycle-scan',
              decision: 'allow',
              matched: false,
              total: 0,
              matches: [],
              sources: [],
              warnings: [],
              error: errorMessage(err),
            });
          return ExitCode.OK;
        }
        for (const w of outcome.warnings) warn(ctx, w);
        const shown = outcome.matches.map((m) => ({ source: m.source, line: m.line, rule: m.rule, text: displayLine(m.text, m.column) }));
        if (opts.json) {
          writeJson(ctx, {
            command: 'lifecycle-scan',
            decision: outcome.matched ? 'refuse' : 'allow',
            matched: outcome.matched,
            total: outcome.total,
            matches: shown,
            sources: outcome.sources,
            max_scan_bytes: MAX_SCAN_BYTES,
            warnings: outcome.warnings,
            error: null,
            maxScanBytes: MAX_SCAN_BYTES, // camelCase beside max_scan_bytes (kept, deprecated: docs/breakers.md)
          });
        } else {
          for (const m of shown) ctx.stdout.write(`${m.text}\n`);
          for (const m of shown) {
            ctx.stderr.write(`lifecycle-scan: ${m.source} line ${m.line}: gateway lifecycle command (${RULE_DESCRIPTIONS[m.rule]})\n`);
          }
          if (outcome.total > shown.length) {
            ctx.stderr.write(
              `lifecycle-scan: ... and ${outcome.total - shown.length} more matching lines (only the first ${MAX_REPORTED_MATCHES} are shown)\n`,
            );
          }
          if (outcome.matched) ctx.stderr.write('lifecycle-scan: refused: this would restart, stop or kill the hermes gateway\n');
        }
        return outcome.matched ? ExitCode.TRIPPED : ExitCode.OK;
      }),
    );
}
