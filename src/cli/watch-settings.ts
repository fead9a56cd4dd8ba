/**
 * `watch` follows hermes' files: when `<home>/.env`, `<home>/config.yaml` or the managed `.env`/`config.yaml` change
 * (checked every `SETTINGS_CHECK_MS` by their inode, size and modification time, before each run of a pass,
 * and at once on SIGHUP), the settings are resolved again and the new ones applied from the next sweep on, with one
 * log line naming what changed. Never a half-written file: a file that changed while it was read is read again at
 * the next check, and files that do not resolve (a config.yaml that is not YAML, a bad value) leave the last good
 * settings in place, said once per change.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Context } from '../context.js';
import { CONFIG_FILENAME, DOTENV_FILENAME } from '../defaults.js';
import { errorMessage } from '../errors.js';
import type { Notice } from './report/types.js';
import type { SettingsWorth } from '../core/setting-worth.js';
import { type EngineCommandOptions, type EngineTargets, type HomeFiles, type RunPolicy, loadHomeConfig, resolvePolicy } from './engine-options.js';

/** How often the files are looked at (four stat calls). */
export const SETTINGS_CHECK_MS = 2000;

export interface SettingsFollower {
  /** Looks at the files now; resolves once any change is applied (or refused). */
  check(): Promise<void>;
  stop(): void;
}

export interface FollowedRun {
  opts: EngineCommandOptions;
  ctx: Context;
  targets: EngineTargets;
  policy: RunPolicy;
  /** `settingsSignature` of the home, taken before `policy` was resolved. */
  baseline: string;
  /** What the home's settings are worth (decided once, at the start). */
  worth: SettingsWorth;
}

/** The files' identity and contents' signature: a change of any (or a file appearing or going) changes it. */
export async function settingsSignature(home: string, env: Record<string, string | undefined>, others: readonly string[] = []): Promise<string> {
  const { managedDir } = await import('../adapters/hermes-settings.js');
  const mdir = await managedDir(env);
  // A run over several homes (`--homes`): every profile home it judges by too.
  const files = [...new Set([home, ...others])].flatMap((h) => [path.join(h, DOTENV_FILENAME), path.join(h, CONFIG_FILENAME)]);
  if (mdir) files.push(path.join(mdir, DOTENV_FILENAME), path.join(mdir, CONFIG_FILENAME));
  const parts = await Promise.all(
    files.map(async (f) => {
      const st = await fs.stat(f).catch(() => null);
      return st ? `${f}:${st.ino}:${st.size}:${st.mtimeMs}` : `${f}:-`;
    }),
  );
  return parts.join('|');
}

/** What changed between two policies, one `name: old (source) -> new (source)` per setting, and the threshold. */
export function settingChanges(before: RunPolicy, after: RunPolicy): string[] {
  const out: string[] = [];
  for (const [name, was] of Object.entries(before.sources) as Array<[string, { value: unknown; source: string }]>) {
    const now = (after.sources as unknown as Record<string, { value: unknown; source: string }>)[name]!;
    // The value and where it came from (a reading not acted on changing alone is not a change of what is done).
    if (JSON.stringify([was.value, was.source]) !== JSON.stringify([now.value, now.source]))
      out.push(`${name}: ${String(was.value)} (${was.source}) -> ${String(now.value)} (${now.source})`);
  }
  if (before.thresholdSeconds !== after.thresholdSeconds) out.push(`threshold: ${before.thresholdSeconds} s -> ${after.thresholdSeconds} s`);
  return out;
}

/**
 * Starts following the files of `run`'s home. `apply` gets each new policy that differs from the one in force;
 * `notice` the log line. `run.baseline` is the files' signature taken before `run.policy` was resolved from them.
 */
export function followSettings(run: FollowedRun, apply: (p: RunPolicy, files: HomeFiles) => void, notice: (n: Notice) => void): SettingsFollower {
  const home = run.targets.home.home;
  // Over several homes, each profile home judged by (as of the policy in force); a home found since is taken on SIGHUP.
  const others = () => (run.policy.homes ? run.policy.profiles.map((p) => p.home) : []);
  let last = run.baseline;
  let refused: string | null = null;
  let current: Promise<void> = Promise.resolve();
  const once = async (force = false) => {
    const seen = await settingsSignature(home, run.ctx.env, others());
    if (!force && (seen === last || seen === refused)) return;
    let next: RunPolicy;
    let files: HomeFiles;
    try {
      files = await loadHomeConfig(run.targets.home, run.ctx, undefined, run.worth);
      next = await resolvePolicy(run.opts, run.ctx, files, run.targets);
    } catch (err) {
      if ((await settingsSignature(home, run.ctx.env, others())) !== seen) return; // written meanwhile: read again next time
      refused = seen;
      notice({ kind: 'settings', changes: [], problem: errorMessage(err) });
      return;
    }
    if ((await settingsSignature(home, run.ctx.env, others())) !== seen) return; // a file changed while it was read: next time
    last = seen;
    refused = null;
    const changes = settingChanges(run.policy, next);
    if (changes.length === 0) return;
    apply(next, files);
    notice({ kind: 'settings', changes });
  };
  const check = (force = false) => (current = current.then(() => once(force)).catch(() => undefined));
  const timer = setInterval(() => void check(), SETTINGS_CHECK_MS);
  timer.unref();
  // SIGHUP reads everything again, changed or not (a run over several homes: the homes as they are now).
  const onHup = () => void check(true);
  process.on('SIGHUP', onHup);
  return {
    check: () => check(),
    stop() {
      clearInterval(timer);
      process.off('SIGHUP', onHup);
    },
  };
}
