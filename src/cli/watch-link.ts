/**
 * What `watch`'s work, running in a Worker (watch-worker.ts), tells its supervisor on the main thread
 * (watch-supervisor.ts), and asks of it: the messages both sides speak, and the work side's handle on them
 * (`watchLink()`: null when `watch` runs without a supervisor, as in a test calling `main()`, where it behaves as
 * before). A leaf module: types, and one module-level value the worker entry sets.
 */

/** Work -> supervisor. */
export type ToSupervisor =
  /** A lock taken or released (file-lock.ts `observeLocks`): the supervisor releases those of a worker it ended. */
  | { t: 'lock'; held: boolean; lockPath: string; body: string }
  /** A bounded run began (`deadlineMs`: when its `--timeout` runs out) or ended. */
  | { t: 'run'; id: number; label: string; deadlineMs: number }
  | { t: 'run-end'; id: number }
  /** Every engine connected, or not (`/healthz`). */
  | { t: 'health'; ok: boolean }
  /** `--metrics-listen`: serve the endpoint (the supervisor answers `listening`). */
  | { t: 'listen'; host: string | undefined; port: number; maxConnections: number }
  /** A scrape's answer. */
  | { t: 'scraped'; id: number; body?: string; contentType?: string; error?: string }
  /** The command's exit code: the worker ends, and the process with it. */
  | { t: 'exit'; code: number };

/** Supervisor -> work. */
export type ToWork = { t: 'signal'; signal: NodeJS.Signals } | { t: 'listening'; url?: string; error?: string; first: boolean } | { t: 'scrape'; id: number };

/** What the worker is started with. */
export interface WatchWorkerData {
  argv: string[];
  /** How many times the supervisor started the work again after a run that did not end by its deadline. */
  restarts: number;
}

/** The work side's handle (set by watch-worker.ts before the command runs). */
export interface WatchLink {
  readonly restarts: number;
  /** `--metrics-listen` served by the supervisor: its URL, and whether this start of the work is the first to ask. */
  listen(host: string | undefined, port: number, maxConnections: number): Promise<{ url: string; first: boolean }>;
  /** What a scrape answers (asked by the supervisor for each `GET /metrics`). */
  onScrape(answer: () => Promise<{ body: string; contentType: string }>): void;
  health(ok: boolean): void;
  /** A run bounded by `--timeout` begins: past `deadlineMs` (and a grace) the supervisor ends the work. Returns its end. */
  run(label: string, deadlineMs: number): () => void;
}

let link: WatchLink | null = null;

/** The supervisor's handle, or null when `watch` runs without one. */
export function watchLink(): WatchLink | null {
  return link;
}

/** Set once, by the worker entry. */
export function setWatchLink(l: WatchLink): void {
  link = l;
}
