/**
 * Command-line options declared once, as data: commander registers them from these declarations (see
 * `addOptions` in shared.ts) and the start-up fast paths parse argv with them (`parsePlainArgv`). This module must
 * stay cheap to import: the fast paths load it on every hook call, so it imports nothing.
 */

/** One option. */
export interface OptionDecl {
  /** The long flag, `--max-blocks`. */
  readonly flag: `--${string}`;
  /** The value's placeholder (`<n>`); absent for a switch such as `--json`. */
  readonly value?: `<${string}>`;
  readonly description: string;
  /** Parses and checks a value; throws a one-line error (`ValueError`) for a bad one. Default: the string as given. */
  readonly parse?: (raw: string) => unknown;
  /** A one-letter alias (`-q`). */
  readonly short?: `-${string}`;
  /** May be given more than once: its values are collected in order. */
  readonly repeatable?: true;
  /** The value when the option is not given (commander; the fast paths do not need it). */
  readonly defaultValue?: unknown;
  /** How `--help` shows the default, where the value itself does not say it (`10s` for 10000 ms). */
  readonly defaultDescription?: string;
  /** The values a shell completes for it (`completion`), where they are a fixed few. */
  readonly values?: readonly string[];
  /** The shell start-up fast path (`reap --once-per` with fresh stamps) accepts it (see once-per-fast-path.ts). */
  readonly startup?: true;
}

/** A command the fast path may run: its words, then only these options (each at most once). */
export interface PlainForm {
  readonly words: readonly string[];
  readonly options: readonly OptionDecl[];
}

/** What `parsePlainArgv` found. */
export interface PlainArgv<F extends PlainForm> {
  form: F;
  /** Global options given, by flag, with their parsed values. */
  globals: Map<string, unknown>;
  /** The form's options given, by flag, with their parsed values (`true` for a switch; a list for a repeatable one). */
  options: Map<string, unknown>;
}

/** The attribute commander stores an option under: `--max-blocks` is `maxBlocks`. */
export function optionKey(flag: string): string {
  return flag.replace(/^--/, '').replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** The flags string commander takes: `--max-blocks <n>`, `-q, --quiet`, or `--json`. */
export function commanderFlags(decl: OptionDecl): string {
  const long = decl.value ? `${decl.flag} ${decl.value}` : decl.flag;
  return decl.short ? `${decl.short}, ${long}` : long;
}

/** The declaration `flag` (a long flag or its one-letter alias) names. */
function declOf(decls: readonly OptionDecl[], flag: string): OptionDecl | undefined {
  return decls.find((d) => d.flag === flag || d.short === flag);
}

type Token = { word: string } | { flag: string; inline?: string };

function tokenize(arg: string): Token {
  if (!arg.startsWith('-')) return { word: arg };
  const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
  return eq > 0 ? { flag: arg.slice(0, eq), inline: arg.slice(eq + 1) } : { flag: arg };
}

/**
 * Parses a plain invocation: global options anywhere, then the form's words, then the form's options, each given
 * once (a repeatable one any number of times), a value as `--flag value` or `--flag=value`, a one-letter alias as
 * its long flag. Returns undefined for anything else (help, an unknown or
 * repeated option, an option before the words, a value that is missing, starts with '-' or does not parse): the
 * caller then leaves argv to commander, which reports it with its usual messages.
 */
export function parsePlainArgv<F extends PlainForm>(argv: readonly string[], globals: readonly OptionDecl[], forms: readonly F[]): PlainArgv<F> | undefined {
  const words: string[] = [];
  const found: Array<{ flag: string; raw: string | true }> = [];
  for (let i = 0; i < argv.length; i++) {
    const t = tokenize(argv[i]!);
    if ('word' in t) {
      if (found.some((f) => !globals.some((g) => g.flag === f.flag))) return undefined; // an option between the words
      words.push(t.word);
      continue;
    }
    const decl = declOf([...globals, ...forms.flatMap((f) => f.options)], t.flag);
    if (!decl || (!decl.repeatable && found.some((f) => f.flag === decl.flag))) return undefined;
    if (!decl.value) {
      if (t.inline !== undefined) return undefined;
      found.push({ flag: decl.flag, raw: true });
      continue;
    }
    const raw = t.inline ?? argv[++i];
    if (raw === undefined || raw === '' || raw.startsWith('-')) return undefined;
    found.push({ flag: decl.flag, raw });
  }
  const form = forms.find((f) => f.words.length === words.length && f.words.every((w, j) => w === words[j]));
  if (!form) return undefined;
  const out: PlainArgv<F> = { form, globals: new Map(), options: new Map() };
  for (const { flag, raw } of found) {
    const global = globals.find((g) => g.flag === flag);
    const decl = global ?? form.options.find((d) => d.flag === flag);
    if (!decl) return undefined; // another form's option
    try {
      const value = raw === true ? true : decl.parse ? decl.parse(raw) : raw;
      const into = global ? out.globals : out.options;
      into.set(flag, decl.repeatable ? [...((into.get(flag) as unknown[] | undefined) ?? []), value] : value);
    } catch {
      return undefined; // a bad value: commander reports it
    }
  }
  return out;
}
