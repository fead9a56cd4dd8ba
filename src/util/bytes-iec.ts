/**
 * bytes-iec, loaded on first use only, synchronously (its CommonJS build), as re2js is (`linear-pattern.ts`): a run that
 * reads no size never loads it. The library's sweep loads the list of passes (the exec-tree pass is reached through
 * it), and with it the image pass's settings: a static import of this CommonJS package would put it in the host's
 * require cache (test/integration/library-host.test.ts).
 */
import { requirePackage } from './require-package.js';

type BytesIec = typeof import('bytes-iec');
let lib: BytesIec | undefined;

export function bytesIec(): BytesIec {
  lib ??= requirePackage('bytes-iec') as BytesIec;
  return lib;
}
