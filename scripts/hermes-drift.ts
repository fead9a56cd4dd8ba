/**
 * `npm run hermes-drift [-- VERSION]`: every rule the janitor follows of hermes (src/hermes/rules.ts), the hermes file
 * and function it follows, the version it was last checked against, and which to read again for VERSION (default:
 * the newest release whose notes were read). Exit 0; the list is the work, not a verdict.
 */
import { driftReport } from '../src/hermes/rules.js';

const against = process.argv[2];
process.stdout.write(driftReport(against && against.trim() !== '' ? against.trim() : undefined));
