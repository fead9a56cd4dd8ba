/**
 * An HTTP proxy in front of the test engine's socket that forwards every request, except those whose path matches
 * `refuse`: those get a 500 as from a failing engine. It records the paths it saw.
 */
import http from 'node:http';
import path from 'node:path';
import { ENGINE_SOCKET } from './docker.js';

export class EngineProxy {
  /** Requests whose path matches are answered 500 instead of forwarded. */
  refuse: RegExp | null = null;
  /** Paths seen, in order (query strings included). */
  readonly seen: string[] = [];
  /** Runs before a request is forwarded (e.g. to change the engine between a check and an action). */
  before: ((method: string, url: string) => Promise<void>) | null = null;

  private constructor(
    private readonly server: http.Server,
    readonly socket: string,
  ) {}

  static async start(dir: string, target: string = ENGINE_SOCKET): Promise<EngineProxy> {
    const socket = path.join(dir, 'engine-proxy.sock');
    let self: EngineProxy | undefined;
    const server = http.createServer((req, res) => {
      const url = req.url ?? '/';
      self!.seen.push(url);
      if (self!.refuse?.test(url.split('?')[0]!)) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ message: 'refused by the test proxy' }));
        req.resume();
        return;
      }
      const forward = () => {
        const up = http.request({ socketPath: target, method: req.method, path: url, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        up.on('error', () => res.destroy());
        req.pipe(up);
      };
      const hook = self!.before;
      if (hook) hook(req.method ?? 'GET', url).then(forward, () => res.destroy());
      else forward();
    });
    await new Promise<void>((r) => server.listen(socket, r));
    self = new EngineProxy(server, socket);
    return self;
  }

  get host(): string {
    return `unix://${this.socket}`;
  }

  /** Paths seen since `mark` (an index into `seen`). */
  since(mark: number): string[] {
    return this.seen.slice(mark);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
