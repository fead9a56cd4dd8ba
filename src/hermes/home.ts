import path from 'node:path';
import { DEFAULT_HOME_DIRNAME, ENV_HERMES_HOME, PROFILE_NAME_PATTERN } from '../defaults.js';
import { UsageError } from '../errors.js';
import { sanitizeLabelValue } from './labels.js';
import { escapeControls } from '../util/escape-controls.js';

/** Where hermes keeps its state, and which profile that is. */
export interface HermesHome {
  /** The profile home (state, config.yaml, logs live here). */
  home: string;
  /** The hermes root: `~/.hermes`, or the directory holding `profiles/`. */
  root: string;
  /** The profile name as hermes labels containers with it (sanitized). */
  profile: string;
}

export interface HomeInputs {
  /** `--home` */
  home?: string | undefined;
  /** `--profile` */
  profile?: string | undefined;
  env: Record<string, string | undefined>;
  /** The user's home directory. */
  homedir: string;
  cwd?: string;
}

function expand(p: string, homedir: string, cwd: string): string {
  if (p === '~') return homedir;
  if (p.startsWith('~/')) return path.join(homedir, p.slice(2));
  return path.resolve(cwd, p);
}

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The hermes root for a home, the way hermes derives it. */
export function hermesRoot(home: string, homedir: string): string {
  const defaultRoot = path.join(homedir, DEFAULT_HOME_DIRNAME);
  if (isInside(home, defaultRoot)) return defaultRoot;
  if (path.basename(path.dirname(home)) === 'profiles') return path.dirname(path.dirname(home));
  return home;
}

/** The profile name for a home under its root (unsanitized): `default`, `<name>` or `custom`. */
export function profileName(home: string, root: string): string {
  if (home === root) return 'default';
  if (path.dirname(home) === path.join(root, 'profiles')) {
    const name = path.basename(home);
    if (PROFILE_NAME_PATTERN.test(name)) return name;
  }
  return 'custom';
}

/** Checks a profile name given on the command line (breakers: a directory under `<root>/profiles`). */
export function checkProfileName(name: string): string {
  if (name !== 'default' && !PROFILE_NAME_PATTERN.test(name)) {
    throw new UsageError(
      // Control characters escaped: the name is the user's, the message stays one line (no forged output lines).
      `invalid profile '${escapeControls(name, { short: true })}': a profile name is 'default' or matches ^[a-z0-9][a-z0-9_-]{0,63}$ (lower-case ` +
        `letters, digits, '_' and '-')`,
    );
  }
  return name;
}

/** `--home`, else `$HERMES_HOME`, else `~/.hermes`: the home unless `--profile` selects another. */
function baseHome(inputs: HomeInputs): string {
  const cwd = inputs.cwd ?? process.cwd();
  const envHome = inputs.env[ENV_HERMES_HOME];
  if (inputs.home) return expand(inputs.home, inputs.homedir, cwd);
  return envHome ? expand(envHome, inputs.homedir, cwd) : path.join(inputs.homedir, DEFAULT_HOME_DIRNAME);
}

/** Where the home came from, for a message about it: `--home`, `$HERMES_HOME` or the default `~/.hermes`. */
export function homeSource(inputs: Pick<HomeInputs, 'home' | 'env'>): string {
  if (inputs.home) return '--home';
  return inputs.env[ENV_HERMES_HOME] ? `$${ENV_HERMES_HOME}` : `the default ~/${DEFAULT_HOME_DIRNAME}`;
}

/**
 * `resolveHermesHome(inputs).home`, without working out the root and profile name where `--profile` is not given:
 * the hooks need only the home, on every tool call.
 */
export function resolveHomeDir(inputs: HomeInputs): string {
  return inputs.profile === undefined ? baseHome(inputs) : resolveHermesHome(inputs).home;
}

/**
 * Resolves home, root and profile: home = `--home`, else `$HERMES_HOME`, else `~/.hermes`;
 * `--profile NAME` without `--home` selects `<root>/profiles/NAME` (`default` selects the root).
 * With both, `--profile` only names the profile.
 */
export function resolveHermesHome(inputs: HomeInputs): HermesHome {
  const base = baseHome(inputs);
  const baseRoot = hermesRoot(base, inputs.homedir);
  if (inputs.profile !== undefined) {
    const name = checkProfileName(inputs.profile);
    if (inputs.home) return { home: base, root: baseRoot, profile: sanitizeLabelValue(name) };
    const home = name === 'default' ? baseRoot : path.join(baseRoot, 'profiles', name);
    return { home, root: baseRoot, profile: sanitizeLabelValue(name) };
  }
  return { home: base, root: baseRoot, profile: sanitizeLabelValue(profileName(base, baseRoot)) };
}
