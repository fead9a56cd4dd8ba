/**
 * The shell-snapshot pass: hermes' abandoned shell snapshots in its temp directory. Rules in core/shell-snapshots.ts,
 * files in adapters/shell-snapshots.ts, the run in reaper/shell-snapshots.ts.
 */
import { type JanitorSetting, SWITCH_ACCEPTS } from '../reaper/janitor-settings.js';

export const KEEP_SHELL_SNAPSHOTS: JanitorSetting<'switch'> = {
  key: 'janitor.keep_shell_snapshots', kind: 'switch', flag: '--keep-shell-snapshots', accepts: SWITCH_ACCEPTS,
  description: "true: hermes' abandoned shell snapshots are counted, never removed", defaultText: 'false',
};
