/**
 * Loads dockerode with the parts the janitor never uses left unloaded until something uses them, and builds its
 * Docker object for one endpoint without letting docker-modem read the process environment.
 *
 * dockerode loads, as it starts, its BuildKit session module (gRPC, proto-loader, protobufjs), the tar and
 * .dockerignore stacks of its image builds, and (through docker-modem) ssh2 for `ssh://` engines and
 * readable-stream for attached stdin. Measured here with `node -e` and `process.hrtime` (NODE_EXTRA_CA_CERTS unset):
 * `require('dockerode')` 94-133 ms and 230 modules whole; with those parts deferred, 16.5-18.0 ms and 27 modules
 * (docker-modem alone, which loads ssh2 and readable-stream: 43 ms).
 * Each deferred module is a stand-in that loads the real one the first time it is used (called, constructed or
 * read), so an `ssh://` engine or an image build still works, and pays for it then.
 *
 * The stand-ins are in the process-wide require cache only while dockerode's and docker-modem's files are being
 * required (synchronously: no other code runs meanwhile); then every cache entry that load added is taken out
 * again, dockerode's own files with the stand-ins. The library's dockerode is thereby its own copy, and the host's
 * require cache is as it was: a later `require('ssh2')`, `require('tar-fs')` or `require('dockerode')` by the host
 * loads the real module, whatever the order (test/integration/library-host.test.ts). A host that loaded dockerode
 * first shares it: nothing is deferred then. Measured after this change, as above, with the machine busy
 * (other builds running): `loadDockerode()` 41-47 ms, as before it (41-46 ms), against 229-297 ms for a plain
 * `require('dockerode')`.
 */
import type { Agent } from 'node:https';
import { createRequire } from 'node:module';
import type Dockerode from 'dockerode';
import type Modem from 'docker-modem';
import { requirePackage } from '../util/require-package.js';
import { type EngineEndpoint, readTlsFiles } from './engine-host.js';
import { plainEngineAgent } from './engine-http.js';

/** API version the janitor speaks (Docker 20.10 and Podman's compat API both answer it). */
export const API_VERSION = 'v1.41';

/**
 * Modules dockerode's files require as they load, never used by the janitor's calls; `members`: properties read
 * at load time (`require('ssh2').Client`), handed out as stand-ins of their own until called or constructed.
 */
interface Deferred {
  id: string;
  members?: string[];
}
const DEFERRED_FROM_DOCKERODE: Deferred[] = [
  { id: './session.js' }, // BuildKit sessions: @grpc/grpc-js, @grpc/proto-loader, protobufjs
  { id: 'tar-fs' }, // image build contexts (lib/util.js)
  { id: '@balena/dockerignore' }, // image build contexts (lib/util.js)
];
/**
 * docker-modem's own: its ssh transport (lib/ssh.js) reads `require('ssh2').Client` as it loads (`ssh://` engines
 * only); its duplex stream for attached stdin (lib/http_duplex.js, with readable-stream: about 8 ms) serves
 * `attach`/`exec` with stdin, which the janitor never opens. Node.js's `https` (with `tls`: about 15 ms to load here),
 * which its lib/http.js requires at once, serves `https://` engines only (TLS contexts): a unix socket or plain `tcp://`
 * engine never loads it (`list` of ten sandboxes, #39).
 */
const DEFERRED_FROM_MODEM: Deferred[] = [{ id: 'ssh2', members: ['Client'] }, { id: './http_duplex.js' }, { id: 'https' }];

type DockerCtor = typeof Dockerode;
type ModemCtor = typeof Modem;

let loaded: Promise<{ Docker: DockerCtor; Modem: ModemCtor }> | undefined;

/** dockerode and its docker-modem, loaded once per process with the unused parts deferred. */
export function loadDockerode(): Promise<{ Docker: DockerCtor; Modem: ModemCtor }> {
  loaded ??= (async () => {
    const req = requirePackage;
    const fromDockerode = createRequire(req.resolve('dockerode'));
    const fromModem = createRequire(fromDockerode.resolve('docker-modem'));
    const before = new Set(Object.keys(req.cache));
    try {
      for (const d of DEFERRED_FROM_DOCKERODE) defer(fromDockerode, fromDockerode.resolve(d.id), d.members);
      for (const d of DEFERRED_FROM_MODEM) defer(fromModem, fromModem.resolve(d.id), d.members);
      const debugLine = quietUtil(req);
      // Required, not imported: an ESM import of a CommonJS module first scans its source for export names.
      const Docker = req('dockerode') as DockerCtor;
      // dockerode's own docker-modem (one copy in the tree; its Docker constructor takes a modem made from it).
      const Modem = fromDockerode('docker-modem') as ModemCtor;
      debugLine.wanted = modemDebugOn(fromModem);
      return { Docker, Modem };
    } finally {
      // The host's require cache as it was: no stand-in, and no copy of dockerode built with them, left in it.
      for (const file of Object.keys(req.cache)) if (!before.has(file)) delete req.cache[file];
    }
  })();
  return loaded;
}

/**
 * docker-modem formats every request's options for its debug line (`util.inspect` with `showHidden` and `depth: null`)
 * before `debug` looks at whether the line is wanted: about 17 ms of the main thread over the 300 inspects of a dry run
 * (CPU profile, #44). While dockerode loads, the `util` its files get (keyed `util` in the require cache, which
 * `require('util')` consults before the built-in; `node:util` never does) is Node.js's own but for `inspect`, which
 * formats nothing while docker-modem's debug output (`DEBUG=modem`) is off. The entry goes with the rest of the load's.
 * Returns the switch: `wanted` until dockerode's copy of `debug` has said otherwise.
 */
function quietUtil(req: NodeJS.Require): { wanted: boolean } {
  const debugLine = { wanted: true };
  if (req.cache.util) return debugLine;
  const util = req('node:util') as typeof import('node:util');
  const inspect = function inspect(this: unknown, ...args: unknown[]): string {
    return debugLine.wanted ? (Reflect.apply(util.inspect, this, args) as string) : '';
  };
  Object.setPrototypeOf(inspect, util.inspect); // inspect.custom (dockerode's objects define it), .defaultOptions, ...
  const exports = Object.create(util, { inspect: { value: inspect, enumerable: true } }) as typeof util;
  req.cache.util = { id: 'util', filename: 'util', loaded: true, exports, children: [], paths: [] } as unknown as NodeJS.Module;
  return debugLine;
}

/** Whether docker-modem's debug output is on (its copy of `debug`, `DEBUG=modem`); when unsure, on. */
function modemDebugOn(fromModem: NodeJS.Require): boolean {
  try {
    return (fromModem('debug') as { enabled(namespace: string): boolean }).enabled('modem');
  } catch {
    return true;
  }
}

type Loose = Record<PropertyKey, unknown> & ((...a: unknown[]) => unknown);

/** A function proxy that calls `target()`'s result on first use: call, construction, or (unless lazy) a property read. */
function standIn(target: () => Loose, members: readonly string[] = []): Loose {
  return new Proxy(function deferred() {} as unknown as Loose, {
    apply: (_t, self, args) => Reflect.apply(target(), self, args),
    construct: (_t, args) => Reflect.construct(target() as unknown as new (...a: unknown[]) => object, args),
    get: (_t, key) => (typeof key === 'string' && members.includes(key) ? standIn(() => target()[key] as Loose) : target()[key]),
    has: (_t, key) => key in target(),
  });
}

/**
 * Puts a stand-in for the module at `file` in the require cache (unless it is loaded already): the first call,
 * construction or property read (of a property other than `members`) loads the real module and forwards to it.
 * The real module is then required as the host would require it: its cached copy if the host has one.
 */
function defer(req: NodeJS.Require, file: string, members?: readonly string[]): void {
  if (req.cache[file]) return;
  let real: Loose | undefined;
  const load = (): Loose => {
    if (real === undefined) {
      if (req.cache[file]?.exports === exports) delete req.cache[file]; // used while dockerode loads
      real = req(file) as Loose;
    }
    return real;
  };
  const exports = standIn(load, members);
  req.cache[file] = { id: file, filename: file, loaded: true, exports, children: [], paths: [] } as unknown as NodeJS.Module;
}

let unverified: Agent | undefined;
/**
 * One keep-alive https agent that does not verify the engine's certificate (client certificates still go). node:https
 * is loaded here, for such an engine only (docker-modem loads it too, but later than this module).
 */
function unverifiedAgent(): Agent {
  const https = requirePackage('node:https') as typeof import('node:https');
  unverified ??= new https.Agent({ keepAlive: true, rejectUnauthorized: false });
  return unverified;
}

/** What docker-modem's constructor would set for this endpoint, from the endpoint alone. */
export function modemFields(endpoint: EngineEndpoint): Record<string, unknown> {
  const common = { version: API_VERSION, headers: {}, timeout: undefined, connectionTimeout: undefined };
  if (endpoint.socketPath) return { ...common, socketPath: endpoint.socketPath, protocol: 'http', sshOptions: {} };
  const protocol = endpoint.protocol ?? 'http';
  return {
    ...common,
    host: endpoint.hostname ?? 'localhost',
    port: endpoint.port ?? 2375,
    protocol,
    pathPrefix: '/',
    ...(endpoint.username ? { username: endpoint.username } : {}),
    sshOptions: protocol === 'ssh' && endpoint.sshAgent ? { agent: endpoint.sshAgent } : {},
    ...(endpoint.tlsDir ? readTlsFiles(endpoint.tlsDir) : {}),
    // SkipTLSVerify: docker-modem passes no rejectUnauthorized, but an agent's options win over a request's.
    ...(protocol === 'https' && endpoint.tlsVerify === false ? { agent: unverifiedAgent() } : {}),
  };
}

/**
 * One Docker object for an endpoint. docker-modem's constructor reads DOCKER_HOST, DOCKER_CERT_PATH and friends from
 * the process environment and lets them win over its options (with DOCKER_HOST=tcp://..., `--host unix:///path`
 * went to DOCKER_HOST's address; a DOCKER_CERT_PATH without cert.pem threw ENOENT for any host). The janitor
 * resolves those itself, from its Context's environment (engine-host.ts), so the modem is made from the endpoint
 * alone: the fields its constructor sets, on its prototype (a unit test holds them equal to what the constructor
 * sets in a clean environment), and for plain HTTP (a unix socket, `tcp://`) an agent of the janitor's own where the
 * constructor leaves Node.js's global one (engine-http.ts). No request timeout on the modem: every call is bounded by
 * its abort signal.
 */
export async function dockerFor(endpoint: EngineEndpoint): Promise<Dockerode> {
  const { Docker, Modem } = await loadDockerode();
  const fields = modemFields(endpoint);
  if (fields.protocol === 'http') fields.agent = plainEngineAgent();
  const modem = Object.assign(Object.create(Modem.prototype) as Modem, fields);
  return new Docker({ modem } as Dockerode.DockerOptions);
}
