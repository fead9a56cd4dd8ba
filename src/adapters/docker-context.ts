import { sha256Hex } from '../util/sha256.js';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../errors.js';
import { DEFAULT_SOCKET, type EngineEndpoint, parseEngineUrl } from './engine-host.js';

/** The docker CLI's configuration directory: `$DOCKER_CONFIG`, else `~/.docker`. */
export function dockerConfigDir(env: Record<string, string | undefined>, homedir: string): string {
  return env.DOCKER_CONFIG || path.join(homedir, '.docker');
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** `currentContext` from `<config dir>/config.json`, if set. */
export function currentContext(env: Record<string, string | undefined>, homedir: string): string | undefined {
  const cfg = readJson(path.join(dockerConfigDir(env, homedir), 'config.json')) as { currentContext?: unknown } | undefined;
  return typeof cfg?.currentContext === 'string' && cfg.currentContext !== '' ? cfg.currentContext : undefined;
}

/**
 * A docker context's engine: `Endpoints.docker.Host` in `contexts/meta/<sha256 of the name>/meta.json`, TLS
 * files under `contexts/tls/<sha256>/docker/`. The context `default` is the default socket.
 */
export function contextEndpoint(name: string, env: Record<string, string | undefined>, homedir: string): EngineEndpoint {
  const defaultEndpoint = { host: `unix://${DEFAULT_SOCKET}`, socketPath: DEFAULT_SOCKET, context: 'default' };
  if (name === 'default') return defaultEndpoint;
  const dir = dockerConfigDir(env, homedir);
  const digest = sha256Hex(name);
  const meta = readJson(path.join(dir, 'contexts', 'meta', digest, 'meta.json')) as
    | { Endpoints?: { docker?: { Host?: unknown; SkipTLSVerify?: unknown } } }
    | undefined;
  if (!meta) {
    throw new UsageError(
      `unknown docker context '${name}': no ${path.join(dir, 'contexts', 'meta', digest, 'meta.json')}; list contexts with 'docker context ls'`,
    );
  }
  const host = meta.Endpoints?.docker?.Host;
  if (typeof host !== 'string' || host === '') {
    throw new UsageError(`docker context '${name}' has no Endpoints.docker.Host: fix it with 'docker context update ${name} --docker host=...'`);
  }
  const tlsDir = path.join(dir, 'contexts', 'tls', digest, 'docker');
  const skipVerify = meta.Endpoints?.docker?.SkipTLSVerify === true;
  // A context's own TLS material replaces DOCKER_TLS_VERIFY / DOCKER_CERT_PATH (an ssh agent is still the run's).
  const endpoint = parseEngineUrl(host, { SSH_AUTH_SOCK: env.SSH_AUTH_SOCK }, homedir);
  const hasTlsDir = existsSync(tlsDir);
  // As the docker CLI: TLS when the context has TLS material or skips verification (then with no material at all).
  if (endpoint.protocol === 'http' && (hasTlsDir || skipVerify)) {
    endpoint.protocol = 'https';
    if (!new URL(host).port) endpoint.port = 2376;
  }
  if (endpoint.protocol === 'https') {
    if (hasTlsDir) endpoint.tlsDir = tlsDir;
    else delete endpoint.tlsDir; // never the run's DOCKER_CERT_PATH or ~/.docker: a context's TLS is its own
    endpoint.tlsVerify = !skipVerify;
  }
  return { ...endpoint, context: name };
}

/**
 * The engines to use, in the docker CLI's order: `--host` (repeatable), else `--context`, else `$DOCKER_HOST`,
 * else `$DOCKER_CONTEXT`, else `currentContext` in config.json. When none names an engine, one endpoint marked
 * `discover` (the default socket's address until discovery probes the usual sockets; see engine-discovery.ts).
 */
export function resolveEngines(
  hosts: string[] | undefined,
  context: string | undefined,
  env: Record<string, string | undefined>,
  homedir: string,
): EngineEndpoint[] {
  if (hosts?.length) return hosts.map((h) => ({ ...parseEngineUrl(h, env, homedir), source: '--host' }));
  if (context) return [{ ...contextEndpoint(context, env, homedir), source: `--context ${context}` }];
  if (env.DOCKER_HOST) return [{ ...parseEngineUrl(env.DOCKER_HOST, env, homedir), source: 'DOCKER_HOST' }];
  if (env.DOCKER_CONTEXT) return [{ ...contextEndpoint(env.DOCKER_CONTEXT, env, homedir), source: `DOCKER_CONTEXT=${env.DOCKER_CONTEXT}` }];
  const current = currentContext(env, homedir);
  // `default` in config.json is what `docker context use default` leaves behind: it names no engine of its own.
  if (current && current !== 'default') {
    const configFile = path.join(dockerConfigDir(env, homedir), 'config.json');
    return [{ ...contextEndpoint(current, env, homedir), source: `current docker context '${current}' (${configFile})` }];
  }
  return [{ host: `unix://${DEFAULT_SOCKET}`, socketPath: DEFAULT_SOCKET, discover: true, source: 'discovery' }];
}

/**
 * The key a `--once-per` stamp is filed under: the address, or `discover:` for an engine found by discovery (so
 * the fast path, which never probes, finds the stamp whichever socket answered).
 */
export function stampKey(endpoint: EngineEndpoint): string {
  return endpoint.discover ? 'discover:' : endpoint.host;
}
