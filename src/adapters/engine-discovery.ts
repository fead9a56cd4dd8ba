/**
 * Engine discovery: when no `--host`, `--context`, `DOCKER_HOST`, `DOCKER_CONTEXT` or current docker context names
 * an engine, the first of the usual sockets that exists and answers a ping (the places hermes' container CLI,
 * docker or podman, finds its engine). Podman's sockets come first when hermes would run podman.
 */
import { statSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { EngineUnreachableError } from '../errors.js';
import type { EngineEndpoint } from './engine-host.js';
import { NO_SERVER_NAME } from './engine-http.js';

/** Bound on one probe: a socket that answers at all answers a ping in a few milliseconds. */
export const DISCOVERY_PING_TIMEOUT_MS = 1000;

export const PODMAN_SOCKET_HINT = 'systemctl --user enable --now podman.socket';

export interface SocketCandidate {
  path: string;
  /** What usually serves it (`Docker`, `rootless Docker`, `Docker Desktop`, `Colima`, `OrbStack`, `Rancher Desktop`, `Podman`). */
  kind: string;
  podman: boolean;
}

/** What one probe found. */
export interface ProbeAttempt {
  path: string;
  kind: string;
  /** `answered`, `absent` (no such file), `not a socket`, `refused` (nothing listening), `denied`, `timeout`, `error`. */
  outcome: 'answered' | 'absent' | 'not-socket' | 'refused' | 'denied' | 'timeout' | 'error';
  detail?: string;
  hint?: string;
}

/** The outcome of discovery: the endpoint chosen, why, and every probe made. */
export interface Discovery {
  endpoint: EngineEndpoint;
  /** One line: why this engine (also what was skipped before it). */
  reason: string;
  attempts: ProbeAttempt[];
}

export interface DiscoveryEnv {
  env: Record<string, string | undefined>;
  homedir: string;
  /** Defaults to process.getuid(). */
  uid?: number;
  /** Bound on each probe (default {@link DISCOVERY_PING_TIMEOUT_MS}). */
  timeoutMs?: number;
}

/** The user's runtime directory: `$XDG_RUNTIME_DIR`, else `/run/user/<uid>`. */
function runtimeDir(d: DiscoveryEnv): string {
  const uid = d.uid ?? (typeof process.getuid === 'function' ? process.getuid() : 0);
  return d.env.XDG_RUNTIME_DIR || `/run/user/${uid}`;
}

/** An executable file named `name` on `$PATH`. */
function onPath(name: string, env: Record<string, string | undefined>): boolean {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    try {
      const st = statSync(path.join(dir, name));
      if (st.isFile() && (st.mode & 0o111) !== 0) return true;
    } catch {
      /* not here */
    }
  }
  return false;
}

/**
 * Which container CLI hermes would run: `HERMES_DOCKER_BINARY` (its base name), else `docker` when on PATH, else
 * `podman` when on PATH; undefined when neither.
 */
export function hermesContainerCli(env: Record<string, string | undefined>): { cli: 'docker' | 'podman' | undefined; why: string } {
  const given = env.HERMES_DOCKER_BINARY?.trim();
  if (given) {
    const base = path.basename(given);
    return { cli: /podman/i.test(base) ? 'podman' : 'docker', why: `HERMES_DOCKER_BINARY=${given}` };
  }
  if (onPath('docker', env)) return { cli: 'docker', why: 'docker is on PATH' };
  if (onPath('podman', env)) return { cli: 'podman', why: 'podman is the only container CLI on PATH' };
  return { cli: undefined, why: 'no container CLI on PATH' };
}

/** The sockets to try, in order (Podman's first when hermes would run podman). */
export function discoveryCandidates(d: DiscoveryEnv): { candidates: SocketCandidate[]; podmanFirst: boolean; why: string } {
  const run = runtimeDir(d);
  const home = d.homedir;
  const docker: SocketCandidate[] = [
    { path: '/var/run/docker.sock', kind: 'Docker', podman: false },
    { path: path.join(run, 'docker.sock'), kind: 'rootless Docker', podman: false },
    { path: path.join(home, '.docker', 'run', 'docker.sock'), kind: 'Docker Desktop', podman: false },
    { path: path.join(home, '.docker', 'desktop', 'docker.sock'), kind: 'Docker Desktop', podman: false },
    { path: path.join(home, '.colima', 'default', 'docker.sock'), kind: 'Colima', podman: false },
    { path: path.join(home, '.orbstack', 'run', 'docker.sock'), kind: 'OrbStack', podman: false },
    { path: path.join(home, '.rd', 'docker.sock'), kind: 'Rancher Desktop', podman: false },
  ];
  const podman: SocketCandidate[] = [
    { path: path.join(run, 'podman', 'podman.sock'), kind: 'Podman', podman: true },
    { path: '/run/podman/podman.sock', kind: 'Podman (rootful)', podman: true },
  ];
  const cli = hermesContainerCli(d.env);
  const podmanFirst = cli.cli === 'podman';
  const all = podmanFirst ? [...podman, ...docker] : [...docker, ...podman];
  // The same path twice (XDG_RUNTIME_DIR=/var/run, ...) is probed once.
  const seen = new Set<string>();
  return { candidates: all.filter((c) => !seen.has(c.path) && seen.add(c.path)), podmanFirst, why: cli.why };
}

/**
 * How late the ping's timer may fire before the ping is given one more `timeoutMs`: a timer that fires that late means
 * this process was not running (its own thread busy, reading settings while the ping waits; or the machine so loaded
 * that the process was not scheduled), and an answer may be waiting unread: the event loop runs due timers before it
 * reads sockets. An engine that never answers still gives up, after at most twice the limit plus the lateness.
 */
const PING_LATE_MS = 100;

/** `GET /_ping` over a unix socket, bounded; resolves to the probe's outcome (never throws). */
export function pingSocket(socketPath: string, timeoutMs: number): Promise<Pick<ProbeAttempt, 'outcome' | 'detail'>> {
  return new Promise((resolve) => {
    let done = false;
    let extended = false;
    const finish = (r: Pick<ProbeAttempt, 'outcome' | 'detail'>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve(r);
    };
    const due = (at: number) => () => {
      if (!extended && performance.now() - at > PING_LATE_MS) {
        extended = true;
        timer = setTimeout(due(performance.now() + timeoutMs), timeoutMs);
        return;
      }
      finish({ outcome: 'timeout', detail: `no answer within ${timeoutMs} ms` });
    };
    const req = http.request({ socketPath, path: '/_ping', method: 'GET', agent: false, ...NO_SERVER_NAME }, (res) => {
      res.resume();
      if (res.statusCode === 200) finish({ outcome: 'answered' });
      else finish({ outcome: 'error', detail: `HTTP ${res.statusCode}` });
    });
    let timer = setTimeout(due(performance.now() + timeoutMs), timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      const code = err.code ?? '';
      if (code === 'ECONNREFUSED') finish({ outcome: 'refused' });
      else if (code === 'ENOENT') finish({ outcome: 'absent' });
      else if (code === 'EACCES' || code === 'EPERM') finish({ outcome: 'denied', detail: code });
      else finish({ outcome: 'error', detail: code || err.message });
    });
    req.end();
  });
}

function describeAttempt(a: ProbeAttempt): string {
  const what: Record<ProbeAttempt['outcome'], string> = {
    answered: 'answered',
    absent: 'absent',
    'not-socket': 'not a socket',
    refused: 'not listening',
    denied: 'permission denied',
    timeout: 'no answer',
    error: 'error',
  };
  return `${a.path} (${what[a.outcome]}${a.detail && a.outcome !== 'denied' ? `: ${a.detail}` : ''}${a.hint ? `; ${a.hint}` : ''})`;
}

/** Probes the candidates in order and stops at the first that answers (later ones are never touched). */
export async function discoverEngine(d: DiscoveryEnv): Promise<Discovery> {
  const { candidates, podmanFirst, why } = discoveryCandidates(d);
  const timeoutMs = d.timeoutMs ?? DISCOVERY_PING_TIMEOUT_MS;
  const podmanCli = onPath('podman', d.env);
  const attempts: ProbeAttempt[] = [];
  for (const c of candidates) {
    let attempt: ProbeAttempt;
    let st: ReturnType<typeof statSync> | undefined;
    try {
      st = statSync(c.path);
    } catch {
      st = undefined;
    }
    if (!st) attempt = { path: c.path, kind: c.kind, outcome: 'absent' };
    else if (!st.isSocket()) attempt = { path: c.path, kind: c.kind, outcome: 'not-socket' };
    else attempt = { path: c.path, kind: c.kind, ...(await pingSocket(c.path, timeoutMs)) };
    if (c.podman && attempt.outcome === 'refused') attempt.hint = `Podman's API socket is off: ${PODMAN_SOCKET_HINT}`;
    if (attempt.outcome === 'denied') attempt.hint = 'join the group that owns the socket, or pass --host';
    attempts.push(attempt);
    if (attempt.outcome === 'answered') {
      const skipped = attempts.slice(0, -1);
      const order = podmanFirst ? `Podman sockets first (${why})` : 'Docker sockets first';
      const reason =
        `found by discovery: ${c.kind} socket ${c.path} answered a ping (${order}` +
        `${skipped.length ? `; skipped ${skipped.map(describeAttempt).join(', ')}` : ''})`;
      return {
        endpoint: { host: `unix://${c.path}`, socketPath: c.path, source: 'discovery', reason },
        reason,
        attempts,
      };
    }
  }
  // Podman installed, its user socket absent: socket activation is off.
  const userPodman = attempts.find((a) => a.kind === 'Podman');
  if (podmanCli && userPodman?.outcome === 'absent') userPodman.hint = `podman is installed: ${PODMAN_SOCKET_HINT}`;
  throw new NoEngineFoundError(attempts);
}

/** Nothing answered: one line with what was tried and how to point at an engine (exit 3). */
export class NoEngineFoundError extends EngineUnreachableError {
  constructor(readonly attempts: ProbeAttempt[]) {
    super(
      `no container engine found: tried ${attempts.map(describeAttempt).join(', ')}; start Docker or Podman, ` +
        'or point at an engine with --host unix:///path/to/docker.sock, DOCKER_HOST or --context',
    );
  }
}

/** Replaces an endpoint marked `discover` by the engine discovery finds; others pass through unchanged. */
export async function discoverEndpoints(endpoints: EngineEndpoint[], d: DiscoveryEnv): Promise<EngineEndpoint[]> {
  if (!endpoints.some((e) => e.discover)) return endpoints;
  const found = await discoverEngine(d);
  return endpoints.map((e) => (e.discover ? { ...found.endpoint, discover: true } : e));
}
