/**
 * The end of a switch that handles every member of a union: the compiler names each switch a new member leaves
 * unhandled (its value is then not `never`), and a value from outside the types (a corrupt file, a newer version)
 * is a clear error, not a silent fall-through.
 */
export function unreachable(value: never, what: string): never {
  throw new Error(`unhandled ${what}: ${JSON.stringify(value)}`);
}
