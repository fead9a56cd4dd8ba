/**
 * Patterns that settings files supply (`janitor.keep_images`, and `--keep-image` alike) compiled by a linear-time
 * engine: RE2's syntax and guarantee through re2js (the JavaScript port of RE2, no native code), so that no pattern
 * anyone writes can make a match take more than time proportional to the name matched. JavaScript's own engine
 * backtracks: `^sha256:(?:[0-9a-f]|[0-9a-f])*!` against an image id runs for minutes, synchronously (#47).
 *
 * RE2 is also what docuum's `--keep` takes (Rust's regex crate, the same syntax): the same pattern means the same
 * there. What RE2 leaves out, lookaround and backreferences, is refused with one line saying so.
 *
 * re2js is loaded on first use only (about 15 ms), synchronously (its CommonJS build): a run without a pattern never
 * loads it, and the start-up fast path (which bundles the option table) only checks a pattern's form.
 */
import { requirePackage } from './require-package.js';
import { ValueError } from '../core/parse-args.js';

type Re2js = typeof import('re2js');
let engine: Re2js | undefined;

function re2js(): Re2js {
  engine ??= requirePackage('re2js') as Re2js;
  return engine;
}

/** A keep pattern, compiled (`linearPattern`): its text as given, and whether it matches a name. */
export interface KeepPattern {
  readonly source: string;
  test(name: string): boolean;
}

/**
 * Compiles `raw` (unanchored unless it anchors itself) for `test`, in linear time; a pattern RE2 does not take is a
 * one-line `ValueError` naming `what` and the pattern.
 */
export function linearPattern(raw: string, what: string): KeepPattern {
  const { RE2JS } = re2js();
  let re: InstanceType<Re2js['RE2JS']>;
  try {
    re = RE2JS.compile(raw);
  } catch (err) {
    const why = (err as Error).message.replace(/^error parsing regexp: /, '');
    throw new ValueError(
      `${what} '${raw}' is not a regular expression hermes-janitor takes (${why}): RE2 syntax, as docuum's --keep; no lookaround or backreferences`,
    );
  }
  return { source: raw, test: (name: string) => re.test(name) };
}
