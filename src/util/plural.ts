/** `1 session`, `3 sessions`, `2 running sandboxes` (`many` for a plural that is not `<word>s`). */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}
