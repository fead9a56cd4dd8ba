/**
 * A host application, as a user writes one: it imports hermes-janitor (the built package, by its name), runs a
 * sweep, and uses modules of its own that dockerode also loads. Run by test/integration/library-host.test.ts:
 *
 *   node test/helpers/library-host.mjs library-first|modules-first ENGINE_HOST HOME PROFILE MODULE...
 *
 * Prints one JSON line: the view of each module (test/helpers/module-view.mjs) as this host sees it after the
 * sweep, what the sweep removed, the require-cache entries the library left behind or took away, whether the
 * modules the host loaded first are still the same objects, and how often anything set a V8 flag.
 */
import { createRequire } from 'node:module';
import v8 from 'node:v8';
import { moduleView } from './module-view.mjs';

const [order, host, home, profile, ...names] = process.argv.slice(2);
const req = createRequire(import.meta.url);

// The library must not set V8 flags for its host: count every call.
let v8FlagCalls = 0;
const setFlags = v8.setFlagsFromString;
v8.setFlagsFromString = (flags) => {
  v8FlagCalls += 1;
  setFlags.call(v8, flags);
};

const early = order === 'modules-first' ? names.map((n) => req(n)) : [];
const cacheBefore = new Set(Object.keys(req.cache));

const { createReaper } = await import('hermes-janitor');
const reaper = createReaper({ host, home, profile, env: {}, stopIdle: false });
const listed = await reaper.list();
const reaped = await reaper.reap();

const cacheAfter = new Set(Object.keys(req.cache));
const views = [];
for (const n of names) views.push(await moduleView(n));
const result = {
  listed: listed.containers.length,
  removed: reaped.removed.length,
  cacheAdded: [...cacheAfter].filter((f) => !cacheBefore.has(f)),
  cacheRemoved: [...cacheBefore].filter((f) => !cacheAfter.has(f)),
  sameObjects: early.every((m, i) => req(names[i]) === m),
  v8FlagCalls,
  views,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
