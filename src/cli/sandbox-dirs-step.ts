/**
 * The sandbox-directory step of `reap` and `watch`: the removal pass with `--sandbox-dirs-older-than` (rules and
 * files in reaper/sandbox-dirs.ts), and the measure behind the `hermes_janitor_sandbox_dir*` metrics. Loaded only
 * when one of them is asked for.
 */
import type { EngineClient } from '../adapters/engine.js';
import type { SandboxDirGauges } from '../adapters/metrics.js';
import { type SandboxRoot, sandboxRoot } from '../core/sandbox-dirs.js';
import { namedByOwner } from '../core/trust.js';
import { homeAccess } from '../adapters/trust.js';
import type { SandboxDirsResult } from '../reaper/sandbox-dirs.js';
import { errorMessage } from '../errors.js';

export interface SandboxDirsStep {
  /** The run's sandbox roots (`--all-profiles`: every profile's); one directory named twice is measured and swept once. */
  roots: readonly SandboxRoot[];
  /** Remove unused task directories unchanged this long; null: none is removed (measured only, for the metrics). */
  olderThanMs: number | null;
  dryRun: boolean;
  now: () => Date;
  signal?: AbortSignal | undefined;
  /** Measure the directories for the metrics (after the removals). */
  gauges: boolean;
}

/** One engine of the run, and whether it answered it (an engine that did not might hold a container that uses one). */
export interface EngineAnswer {
  engine: EngineClient;
  answered: boolean;
  error?: string;
}

/**
 * Before a run touches anything: a sandbox root (or its `docker` directory) that is not a directory is bad input. A
 * root refused for the run (`untrusted-root`: root over another user's home) is not bad input: the pass reports it.
 */
export async function checkSandboxRoot(root: SandboxRoot): Promise<void> {
  const [{ listTaskDirs }, { rootRefusal }] = await Promise.all([import('../adapters/sandbox-dirs.js'), import('../reaper/sandbox-dirs.js')]);
  if (rootRefusal(root)) return;
  await listTaskDirs(root); // throws UsageError naming the root and what is wrong with it
}

/** The home's owner when the janitor runs as root over another user's home (adapters/trust.ts `homeAccess`), else null. */
export function ownerOfHome(home: string): { uid: number; home: string } | null {
  const owner = homeAccess(home).owner;
  return owner ? { uid: owner.uid, home } : null;
}

/**
 * A home's sandbox root as a run uses it (core/sandbox-dirs.ts `sandboxRoot`), with the uid it must belong to when the
 * janitor runs as root over another user's home and the root is that user's word: the default under their home, or a
 * value from their `.env` or `config.yaml` (core/trust.ts `namedByOwner`).
 */
export function rootOfHome(setting: { value: string; source: string }, home: string): SandboxRoot {
  const r = sandboxRoot(setting, home);
  const owner = homeAccess(home).owner;
  return owner && namedByOwner(setting.source, home) ? { ...r, owner: owner.uid } : r;
}

export async function runSandboxDirsStep(
  step: SandboxDirsStep, engines: readonly EngineAnswer[],
): Promise<{ result: SandboxDirsResult | null; gauges: SandboxDirGauges | null }> {
  let result: SandboxDirsResult | null = null;
  if (step.olderThanMs !== null) {
    const { removeUnusedSandboxDirs } = await import('../reaper/sandbox-dirs.js');
    try {
      result = await removeUnusedSandboxDirs({
        roots: step.roots, engines, olderThanMs: step.olderThanMs, dryRun: step.dryRun, now: step.now,
        ...(step.signal ? { signal: step.signal } : {}),
      });
    } catch (err) {
      // The root went bad since the run checked it (it never throws for one directory): nothing of it was removed.
      result = { removed: [], kept: [], failed: [{ path: step.roots.map((r) => r.root).join(', '), error: errorMessage(err), partial: false }] };
    }
  }
  return { result, gauges: step.gauges ? await measure(step, engines).catch(() => null) : null };
}

/** Used and unused task directories and their size; a state is null when not every engine answered. */
async function measure(step: SandboxDirsStep, engines: readonly EngineAnswer[]): Promise<SandboxDirGauges> {
  const { surveySandboxDirs } = await import('../status/sandbox-dirs.js');
  const reachable = engines.filter((e) => e.answered).map((e) => e.engine);
  const unreachable = engines.filter((e) => !e.answered).map((e) => e.engine.host);
  const total = { count: 0, bytes: 0, unused: 0, unusedBytes: 0 };
  for (const root of uniqueRoots(step.roots)) {
    const { summary: s } = await surveySandboxDirs(root, reachable, unreachable, step.signal);
    if (s.count === null || s.bytes === null || s.unused === null || s.unusedBytes === null) return { used: null, unused: null };
    total.count += s.count;
    total.bytes += s.bytes;
    total.unused += s.unused;
    total.unusedBytes += s.unusedBytes;
  }
  return {
    used: { count: total.count - total.unused, bytes: Math.max(0, total.bytes - total.unusedBytes) },
    unused: { count: total.unused, bytes: total.unusedBytes },
  };
}

/** The roots, each directory once (the first naming of it kept): two profiles sharing a root are handled once. */
export function uniqueRoots(roots: readonly SandboxRoot[]): SandboxRoot[] {
  const seen = new Set<string>();
  return roots.filter((r) => !seen.has(r.root) && Boolean(seen.add(r.root)));
}
