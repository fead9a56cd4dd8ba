import { readFileSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../errors.js';

export const DEFAULT_SOCKET = '/var/run/docker.sock';

/** Where and how to reach one engine. */
export interface EngineEndpoint {
  /** The address as given (or resolved), used in output. */
  host: string;
  socketPath?: string;
  protocol?: 'http' | 'https' | 'ssh';
  hostname?: string;
  port?: number;
  username?: string;
  /** TLS material directory (contents are read when connecting, never printed). */
  tlsDir?: string;
  /**
   * https only: false = TLS without verifying the engine's certificate (a docker context's `SkipTLSVerify: true`,
   * as the docker CLI honours it); the client certificate, if any, is still sent.
   */
  tlsVerify?: boolean;
  /** `ssh://` engines: the ssh agent's socket (`SSH_AUTH_SOCK` of the run's environment). */
  sshAgent?: string;
  /** The docker context it came from, if any. */
  context?: string;
  /** Why this engine: `--host`, `--context`, `DOCKER_HOST`, `DOCKER_CONTEXT`, `docker config currentContext`, or discovery. */
  source?: string;
  /** Nothing named an engine: the address is to be found by probing the usual sockets (engine-discovery.ts). */
  discover?: boolean;
  /** One line: why this engine was chosen (set by discovery; otherwise `source` says it). */
  reason?: string;
}

/** Why an endpoint is the one used, for `--verbose` and `status`. */
export function whyEngine(e: EngineEndpoint): string {
  return e.reason ?? (e.source ? `named by ${e.source}` : 'given');
}

/**
 * Parses an engine URL: `unix:///path`, `tcp://host:port`, `http(s)://host:port`, `ssh://user@host[:port]`, or
 * a bare absolute socket path. TLS for tcp follows DOCKER_TLS_VERIFY / DOCKER_CERT_PATH like the docker CLI.
 */
export function parseEngineUrl(rawGiven: string, env: Record<string, string | undefined>, homedir: string): EngineEndpoint {
  const fix = 'use unix:///path/to/docker.sock, tcp://host:2376 or ssh://user@host';
  // A password in the address (tcp://user:secret@host) is never used to connect and never shown.
  const raw = redactPassword(rawGiven);
  const value = rawGiven.trim();
  if (value.startsWith('/')) return { host: `unix://${value}`, socketPath: value };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`invalid engine host '${raw}': ${fix}`);
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (scheme === 'unix') {
    const socketPath = decodeURIComponent(url.pathname || '');
    if (!socketPath) throw new UsageError(`invalid engine host '${raw}': the unix socket path is missing (${fix})`);
    return { host: raw.trim(), socketPath };
  }
  if (!url.hostname) throw new UsageError(`invalid engine host '${raw}': the host name is missing (${fix})`);
  if (scheme === 'ssh') {
    return {
      host: raw.trim(),
      protocol: 'ssh',
      hostname: url.hostname,
      port: url.port ? Number(url.port) : 22,
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
      ...(env.SSH_AUTH_SOCK ? { sshAgent: env.SSH_AUTH_SOCK } : {}),
    };
  }
  if (scheme === 'tcp' || scheme === 'http' || scheme === 'https') {
    const tlsEnv = env.DOCKER_TLS_VERIFY;
    const tlsFromEnv = tlsEnv !== undefined && tlsEnv !== '' && tlsEnv !== '0';
    const port = url.port ? Number(url.port) : scheme === 'https' || tlsFromEnv ? 2376 : 2375;
    const https = scheme === 'https' || tlsFromEnv || (scheme === 'tcp' && port === 2376);
    const certDir = env.DOCKER_CERT_PATH || path.join(homedir, '.docker');
    return {
      host: raw.trim(),
      protocol: https ? 'https' : 'http',
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port,
      // An address's TLS is always verified (only a docker context's SkipTLSVerify turns that off).
      ...(https ? { tlsDir: certDir, tlsVerify: true } : {}),
    };
  }
  throw new UsageError(`invalid engine host '${raw}': unsupported scheme '${scheme}' (${fix})`);
}

/** `scheme://user:secret@host` shown as `scheme://user:***@host`. */
export function redactPassword(address: string): string {
  return address.replace(/^(\s*[a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@/]*@/i, '$1:***@');
}

/** TLS files for an https endpoint (ca.pem, cert.pem, key.pem), those present. */
export function readTlsFiles(dir: string): { ca?: Buffer; cert?: Buffer; key?: Buffer } {
  const read = (name: string) => {
    try {
      return readFileSync(path.join(dir, name));
    } catch {
      return undefined;
    }
  };
  const out: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
  const ca = read('ca.pem');
  const cert = read('cert.pem');
  const key = read('key.pem');
  if (ca) out.ca = ca;
  if (cert) out.cert = cert;
  if (key) out.key = key;
  return out;
}
