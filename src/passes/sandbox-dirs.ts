/**
 * The sandbox-directory pass: hermes' task directories under `<sandbox root>/docker/` that no container uses and
 * nothing changed in for `--sandbox-dirs-older-than`. Rules in core/sandbox-dirs.ts, files in adapters/sandbox-dirs.ts,
 * the run in reaper/sandbox-dirs.ts.
 */
import type { JanitorSetting } from '../reaper/janitor-settings.js';

export const SANDBOX_DIRS_OLDER_THAN: JanitorSetting<'duration'> = {
  key: 'janitor.sandbox_dirs_older_than', kind: 'duration', flag: '--sandbox-dirs-older-than', falseIsOff: true, accepts: 'a duration such as 30d, 12h or 90m (or seconds)',
  description: 'remove the task directories no container uses and nothing changed in for this long', defaultText: 'never',
};
