/**
 * The homes of a run over several (`--homes`, `--all-homes`): each hermes root with its owner, what its settings are
 * worth on the run's engines and the profiles read under it. Types only: `cli/home-set.ts` resolves them; `status`
 * and the metrics can name a container's homes by them.
 */
import type { SettingsWorth } from './setting-worth.js';

/** One hermes home (a root: `~/.hermes`) of a run over several. */
export interface RunHome {
  /** The hermes root as found. */
  root: string;
  /** Where it was found: `--homes`, `passwd` (a user's `~/.hermes`), `process` (a living hermes' `HERMES_HOME`). */
  from: 'homes' | 'passwd' | 'process';
  /** The one user controlling it, or null: root's own (or the janitor runs as its owner). */
  owner: { uid: number; name: string | null } | null;
  /** What its settings are worth on the run's engines (core/setting-worth.ts). */
  worth: SettingsWorth;
  /** The label values of its profiles read (each profile's identities: `hermes/judgement.ts` `labelsOf`). */
  labels: string[];
}

/** Why a home found by `--all-homes` is left out of the run (a line said once), or a home `--homes` named that is refused. */
export interface SkippedHome {
  root: string;
  why: string;
}
