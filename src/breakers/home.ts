import os from 'node:os';
import { resolveHermesHome } from '../hermes/home.js';

/** How a library caller locates the hermes home (as the CLI's `--home` / `--profile`). */
export interface HomeOptions {
  /** Hermes home. Default: `$HERMES_HOME`, else `~/.hermes`. */
  home?: string;
  /** Hermes profile: selects `<root>/profiles/<name>` as the home when `home` is not given. */
  profile?: string;
  /** Environment for the resolution. Default: `process.env`. */
  env?: Record<string, string | undefined>;
}

/** The hermes home directory for library options, resolved exactly like the CLI does. */
export function libraryHome(options: HomeOptions): string {
  return resolveHermesHome({ home: options.home, profile: options.profile, env: options.env ?? process.env, homedir: os.homedir() }).home;
}
