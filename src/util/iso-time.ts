/**
 * `new Date(ms).toISOString()`, from the UTC getters. The hooks stamp their state with the time on every call, and
 * V8's toISOString costs a fresh process about 0.2 ms the first time (it sets up its date cache, reading the local
 * time zone); the getters do not. Years outside 0000-9999 (and an invalid date, which throws) go to toISOString.
 */
export function isoTime(ms: number): string {
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  if (!(year >= 0 && year <= 9999)) return d.toISOString();
  const two = (n: number) => (n < 10 ? `0${n}` : `${n}`);
  const millis = d.getUTCMilliseconds();
  return (
    `${`000${year}`.slice(-4)}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}` +
    `T${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`
  );
}
