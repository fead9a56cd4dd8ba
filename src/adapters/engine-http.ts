/**
 * HTTP to an engine over a unix socket or plain `tcp://`, where no TLS server is named.
 *
 * Node.js's HTTP agent works out a TLS server name for every request that has none, even one without TLS: it tests the
 * host against its IP address patterns (`_http_agent.js`, `calculateServerName`). The first test compiles the IPv6
 * pattern, about 9 ms of the main thread, and the second about 2 ms more, in every run that talks to an engine
 * (measured with process.hrtime in a fresh Node.js 20 here: `net.isIP('localhost')` 9.1 ms, 2.0 ms, then 0.4 µs
 * each). `servername: ''` says there is none, and the agent skips the test.
 */
import http from 'node:http';

/** Request options that name no TLS server (a unix socket or plain HTTP). */
export const NO_SERVER_NAME = { servername: '' } as const;

let agent: http.Agent | undefined;

/**
 * One keep-alive agent for the engines reached over a unix socket or plain HTTP: as Node.js's global agent, which
 * docker-modem would use otherwise (keep-alive, `lifo`, idle sockets closed after 5 s and never holding the process
 * open), with no server name.
 */
export function plainEngineAgent(): http.Agent {
  agent ??= new http.Agent({ keepAlive: true, scheduling: 'lifo', timeout: 5000, ...NO_SERVER_NAME } as http.AgentOptions);
  return agent;
}
