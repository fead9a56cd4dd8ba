/**
 * The one reading of a whole number written in config.yaml or an environment/.env variable: a YAML number, or text
 * of digits with spaces around (` 90 `), as Python's `int()` takes it from hermes' files. Anything else (a sign, a
 * fraction in text, words, a number past 2^53) is undefined: the caller says what it expected and where.
 * `floor`: a YAML number with a fraction is cut to its whole part (hermes' `int(90.5)`), else it is undefined.
 */
export function wholeNumberOf(raw: unknown, opts: { floor?: boolean } = {}): number | undefined {
  let n: number;
  if (typeof raw === 'number') n = opts.floor && Number.isFinite(raw) ? Math.floor(raw) : raw;
  else if (typeof raw === 'string' && /^\s*\d+\s*$/.test(raw)) n = Number(raw);
  else return undefined;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}
