import os from 'node:os';
import { resolveHermesHome } from '../hermes/home.js';
import { homeAccess } from '../adapters/trust.js';

/** How a library caller locates the hermes home (as the CLI's `--home` / `--profile`). */
export interface HomeOptions {
  /** Hermes home. Default: `$HERMES_HOME`, else `~/.hermes`. */
  home?: string;
  /** Hermes profile: selects `<root>/profiles/<name>` as the home when `home` is not given. */
  profile?: string;
  /** Environment for the resolution. Default: `process.env`. */
  env?: Record<string, string | undefined>;
}

/**
 * The hermes home directory for library options, resolved exactly like the CLI does. As root, whose home it is is
 * decided here too (adapters/trust.ts `homeAccess`): files in another user's home are then read by the trust rules,
 * and a write there as root is refused (the library never changes its host's ids: run it as that user).
 */
export function libraryHome(options: HomeOptions): string {
  const home = resolveHermesHome({ home: options.home, profile: options.profile, env: options.env ?? process.env, homedir: os.homedir() }).home;
  try {
    homeAccess(home);
  } catch {
    /* a home several users can change: its files are still read by the rules, and root writes nothing there */
  }
  return home;
}
