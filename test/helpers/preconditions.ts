/**
 * What an integration test needs of the machine (root, unshare, setpriv, a private dockerd). Where it is missing the
 * test is skipped with the reason, except under CI (`CI=true` or `CI=1`): there a skipped integration test would let a run pass
 * without proving what it names, so it fails with the reason instead (`.ci/run` installs and starts what they need).
 */
import type { TestContext } from 'node:test';

/** CI=true (what CI sets) or CI=1 (what many CI systems and people set): either means CI. */
export const IN_CI = process.env.CI === 'true' || process.env.CI === '1';

/** The message of a precondition that fails under CI. */
function ciFailure(reason: string): Error {
  return new Error(`${reason}: under CI (CI=${process.env.CI}) a skipped integration test fails the run; run it where this holds`);
}

/**
 * For a test body: `if (unmet(t, reason)) return;` skips the test when `reason` is a string (it does not run here),
 * and throws under CI; false means everything it needs is here.
 */
export function unmet(t: TestContext, reason: string | false | undefined): boolean {
  if (!reason) return false;
  if (IN_CI) throw ciFailure(reason);
  t.diagnostic(`SKIPPED: ${reason}`);
  t.skip(reason);
  return true;
}

/**
 * For a `describe` or `it` option (`{ skip: skipUnless(reason) }`): the reason to skip, or false under CI, where the
 * suite's `before` must call `failUnderCi(reason)` so that it fails instead.
 */
export function skipUnless(reason: string | false | undefined): string | false {
  return reason && !IN_CI ? reason : false;
}

/** Throws under CI when `reason` is set (the suite was not skipped because of CI: it must fail). */
export function failUnderCi(reason: string | false | undefined): void {
  if (reason && IN_CI) throw ciFailure(reason);
}
