import type { Command } from 'commander';
import { toolLoopCappedLine } from '../../core/tool-loop.js';
import type { IdleOptions } from '../../reaper/sweep-types.js';
import type { Context } from '../../context.js';
import { ExitCode, errorMessage } from '../../errors.js';
import { UP_TO_DAYS, ago, agoSeconds, spanSeconds } from '../../core/ages.js';
import { diskSize } from '../../core/sizes.js';
import type { HermesProcessStatus, PassPart, StatusReport } from '../../status/gather.js';
import type { HermesSettings, Sourced } from '../../hermes/settings.js';
import { profileValuesOf } from '../../core/selection.js';
import type { Held } from '../../hermes/judgement.js';
import { TIED } from '../../core/policy.js';
import { PASSES } from '../../passes/index.js';
import { INSTALL_DIR_ENTRIES_CAP } from '../../hermes/installs.js';
import {
  judgingOf,
  type EngineCommandOptions,
  type RunPolicy,
  addEngineOptions,
  connectEngines,
  discoverTargets,
  homeWorth,
  loadHomeConfig,
  passInput,
  perProfileOf,
  resolvePolicy,
  resolveTargets,
  sayNotes,
} from '../engine-options.js';
import { runDeadline } from '../deadline.js';
import { type RunState, action, addOptions, writeJson } from '../shared.js';
import { STATUS_OPTIONS } from '../engine-option-table.js';
import { homeScope, policyFlags, scopeOf, suggest } from '../advice.js';
import { plural } from '../../util/plural.js';
import { escapeControls } from '../../util/escape-controls.js';
import { docsLine } from '../docs-page.js';

const HELP = `
Read-only: writes nothing, takes no lock. The first line is the verdict: OK,
or how many things need attention, the worst first.

Exit codes: 0 nothing needs attention
            1 something does (containers past the threshold, no completed
              sweep within twice the schedule, a watch not running or not
              healthy, a tripped breaker, a stale reap lock)
            2 bad usage
            3 an engine is unreachable, is not a Docker engine, or did not
              answer within --timeout`;

/**
 * status's --timeout (from the process's start): settings are read inside it, and past it the run is ended whatever it
 * is doing (cli/deadline.ts): one line, and with --json a document saying so; exit 3.
 */
function statusDeadline(opts: EngineCommandOptions, ctx: Context): ReturnType<typeof runDeadline> {
  const deadline = runDeadline(opts.timeout, 'status', ctx);
  deadline.phase('reading settings');
  deadline.onHardStop(({ timeoutSeconds, phase }) => {
    const line = `status timed out after --timeout ${timeoutSeconds}s while ${phase}: ended at the deadline`;
    if (opts.json) writeJson(ctx, { timedOut: true, endedAtDeadline: phase, error: line, exitCode: ExitCode.ENGINE });
    ctx.stderr.write(`hermes-janitor: ${escapeControls(line)}\n`);
    return ExitCode.ENGINE;
  });
  return deadline;
}

export function register(program: Command, ctx: Context, state: RunState): void {
  const cmd = program
    .command('status')
    .description('One screen: engines, containers by verdict, janitor state, breakers; exit 1 when something needs attention.')
    .addHelpText('after', HELP + docsLine('docs/status.md'));
  addOptions(addEngineOptions(cmd, { output: 'policy' }), STATUS_OPTIONS).action(
    action(state, async (opts: EngineCommandOptions & { schedule?: number }, command: Command) => {
      const targets = resolveTargets(command, opts, ctx);
      const deadline = statusDeadline(opts, ctx); // settings are read inside it; the run ends there whatever it does
      const { signal } = deadline;
      const files = await loadHomeConfig(targets.home, ctx, signal, await homeWorth(targets, ctx));
      const policy = await resolvePolicy(opts, ctx, files, targets, signal);
      const input = passInput(opts, ctx, files, { ...targets, profiles: policy.passProfiles, lifetimeSeconds: policy.lifetimeSeconds }, { command: 'status' });
      sayNotes(targets, opts, ctx);
      let discoveryError: string | undefined;
      let noEngine: string | undefined;
      try {
        await discoverTargets(targets, {}, ctx);
      } catch (err) {
        const { NoEngineFoundError } = await import('../../adapters/engine-discovery.js');
        if (!(err instanceof NoEngineFoundError)) throw err;
        const { noEngineAtAll } = await import('../no-engine.js');
        const none = await noEngineAtAll(err, targets.endpoints);
        if (none !== null) noEngine = none;
        else discoveryError = errorMessage(err);
      }
      const { maxBlocksFromEnv } = await import('../hooks/run-stop-hook.js');
      const warnings: string[] = [];
      const maxStopBlocks = await maxBlocksFromEnv(ctx.env, warnings);
      const { gatherStatus } = await import('../../status/gather.js');
      deadline.phase('gathering');
      // The advice names the home whichever way it was chosen (--home, HERMES_HOME, --profile, the default), so that
      // pasted by another user (root) it acts on the same one.
      const scope = scopeOf(command, ctx, targets.home);
      const { report, parts } = await gatherStatus({
        home: targets.home.home,
        commands: { reap: suggest('reap', scope, policyFlags(ctx.argv)), restartGuardClear: suggest('restart-guard clear', homeScope(scope)) },
        selection: targets.selection,
        endpoints: targets.endpoints,
        ...(discoveryError ? { discoveryError } : {}),
        ...(noEngine ? { noEngine } : {}),
        connect: connectEngines,
        ...judgingOf(policy),
        asOf: policy.asOf,
        now: ctx.now(),
        concurrency: opts.concurrency,
        ...(signal ? { signal } : {}),
        env: ctx.env,
        ...(maxStopBlocks !== undefined ? { maxStopBlocks } : {}),
        idle: await readOnlyIdle(policy.idle),
        passes: PASSES,
        passInput: input,
        ...(opts.schedule !== undefined ? { scheduleSeconds: opts.schedule / 1000 } : {}),
      });
      for (const w of warnings) ctx.stderr.write(`hermes-janitor: warning: ${escapeControls(w)}\n`);
      // As root over another user's home: whether what they wrote applies as written (they can act on the engine).
      if (report.trust.owner) report.trust.settings = { worth: files.worth.worth, why: files.worth.why };
      const profiles = policy.profiles.map((p) => ({ profile: p.profile, home: p.home, settings: p.hermes, refused: p.refused }));
      const identity = {
        identities: profileValuesOf(targets.selection),
        // Labels only (a home's own rules for the containers tied to it are `<label>\u0000<home>`: not said here).
        held: labelsOnly(policy.held),
        ...(policy.thresholdByProfile ? { thresholdByLabel: labelsOnly(policy.thresholdByProfile) } : {}),
        refused: files.refused,
      };
      deadline.writing();
      if (opts.json) writeJson(ctx, { ...report, settings: policy.sources, ...identity, ...(opts.allProfiles ? { profiles } : {}) });
      else {
        const text = render(report, ctx.now(), { settings: policy.sources, parts, perProfile: perProfileOf(policy) !== null });
        ctx.stdout.write(text + renderIdentity({ ...identity, profile: targets.selection.profile }) + renderProfiles(profiles));
      }
      return report.exitCode === 0 ? ExitCode.OK : report.exitCode === 1 ? ExitCode.FAILED : ExitCode.ENGINE;
    }),
  );
}

/** A rule table without the entries of a home's own rules (`<label>\u0000<home>`, core/policy.ts `tiedLabels`). */
function labelsOnly<T>(table: Readonly<Record<string, T>>): Record<string, T> {
  return Object.fromEntries(Object.entries(table).filter(([l]) => !l.includes(TIED)));
}

/** `--all-profiles`: each profile's hermes settings, from its own home. */
function renderProfiles(profiles: Array<{ profile: string; home: string; settings: HermesSettings | null; refused: string | null }>): string {
  if (!profiles.length) return '';
  const out = ['Profiles (each from its own home)'];
  for (const { profile, home, settings: s, refused } of profiles) {
    const settings = s
      ? `sandbox root ${s.sandboxRoot.value} (${s.sandboxRoot.source}), lifetime ${s.lifetimeSeconds.value} s ` +
        `(${withReadings(s.lifetimeSeconds, (v) => `${v} s`)})`
      : 'settings unreadable';
    out.push(`  ${profile} (${home}): ${settings}${refused ? `; REFUSED by hermes (${refused}): nothing removed or stopped for it` : ''}`);
  }
  return shownLines(out);
}

/** The run's container identities, and the labels nothing is removed or stopped for. */
function renderIdentity(i: { identities: string[] | null; held: Record<string, Held>; refused: string | null; profile: string | null }): string {
  const out: string[] = [];
  // Said when it is not the profile's own name (a shared container key).
  if (i.identities && i.identities.length && (i.identities.length > 1 || i.identities[0] !== i.profile)) {
    out.push(`Container identity: hermes-profile=${i.identities.join(' or ')}`);
  }
  for (const [label, h] of Object.entries(i.held)) out.push(`  ${label}: kept (${h.reason}: ${h.why})`);
  return out.length ? `${out.join('\n')}\n` : '';
}

/**
 * A setting's source, and for hermes' own its two readings (`scope`: as a routed turn reads the profile, `launch`: as
 * a process launched on it does) and which one is acted on (the one that removes, stops or ends later; paths as
 * launched: `hermes/readings.ts`).
 */
function withReadings<T>(s: Sourced<T>, show: (v: T) => string): string {
  let out = s.source;
  if (s.readings && s.readings.length >= 2) {
    const [a, b] = s.readings;
    const same = a!.value === b!.value;
    const each = s.readings.map((r) => `${r.reading} ${show(r.value)} from ${r.source}`).join(', ');
    out += `; ${each}${same ? '' : `: acting on ${s.used}${s.scopeNotTaken ? ` (the scope reading is not taken: ${s.scopeNotTaken})` : ''}`}`;
  }
  return out + targetsText(s, show);
}

/** The named execution targets read for a setting (`hermes/targets.ts`), and the one acted on. */
function targetsText<T>(s: Sourced<T>, show: (v: T) => string): string {
  if (!s.targets?.length) return '';
  const each = s.targets.map((t) =>
    t.counts
      ? `${t.target} (docker) ${t.value === null ? 'unreadable (skipped)' : show(t.value)} from ${t.source}`
      : `${t.target} (${t.backend}: not docker, not counted)`,
  );
  return `; execution targets: ${each.join(', ')}${s.target ? `: acting on target ${s.target}` : ''}`;
}

/** Each setting read from hermes' files, the environment or a flag, and where its value came from (the passes' last). */
export function renderSettings(s: RunPolicy['sources'], passes = PASSES): string[] {
  const row = (name: string, value: string, source: string) => `  ${name}: ${value} (${source})`;
  const onOff = (v: boolean) => (v ? 'on' : 'off');
  const secs = (v: number) => `${v} s`;
  const key = (v: string) => (v === '' ? '(none)' : `'${v}'`);
  return [
    "Settings (value, then where it came from; hermes' own: its scope and launch readings)",
    row('sandbox root', s.sandboxRoot.value, withReadings(s.sandboxRoot, String)),
    row('lifetime', secs(s.lifetimeSeconds.value), withReadings(s.lifetimeSeconds, secs)),
    row('command timeout', secs(s.terminalTimeoutSeconds.value), withReadings(s.terminalTimeoutSeconds, secs)),
    row('foreground timeout cap', secs(s.foregroundMaxTimeoutSeconds.value), withReadings(s.foregroundMaxTimeoutSeconds, secs)),
    row('shared container key', key(s.dockerSharedContainerKey.value), withReadings(s.dockerSharedContainerKey, key)),
    row('hermes orphan reaper switch', s.dockerOrphanReaper.value ? 'on' : 'off (the janitor does not reap)', withReadings(s.dockerOrphanReaper, onOff)),
    row('stop idle sandboxes', s.stopIdle.value ? 'yes' : 'no', s.stopIdle.source),
    row('idle max processes', s.idleMaxProcesses.value === null ? 'init and command' : String(s.idleMaxProcesses.value), s.idleMaxProcesses.source),
    ...passes.flatMap((p) => p.status?.sourceRows?.(s) ?? []),
  ];
}

/**
 * The trust section, when there is something to say: the home is another user's (root reads it with their rights,
 * its own state elsewhere), and every path refused this run and why.
 */
function renderTrust(r: StatusReport): string[] {
  const t = r.trust;
  if (!t.owner && t.refused.length === 0) return [];
  const out = ['Trust'];
  if (t.owner) {
    out.push(
      `  home of uid ${t.owner.uid}${t.owner.name ? ` (${t.owner.name})` : ''}: no symlink in it followed, written only with that user's rights; ` +
        `root's own state in ${escapeControls(t.stateDir)}`,
    );
    if (t.settings?.worth === 'as-written') out.push(`  their settings apply as written: ${escapeControls(t.settings.why)}`);
    if (t.settings?.worth === 'keep-more') {
      out.push(`  their settings may only keep more than hermes' defaults (untrusted-setting otherwise): ${escapeControls(t.settings.why)}`);
    }
  }
  for (const f of t.refused) out.push(`  refused ${f.what} (${f.reason}): ${f.detail}`);
  return out;
}

/** The host's own part: the hermes processes found. */
function renderProcesses(r: StatusReport): string[] {
  const out: string[] = [];
  const hp = r.hermesProcesses;
  if (hp) {
    out.push(`hermes processes on this host: ${hp.processes.length}${hp.hidden ? ` (some may be missing: ${hp.hidden})` : ''}`);
    // Those that make sandboxes owned first: who keeps them from being stopped, what each serves, why it counts as hermes.
    const shown = [...hp.processes].sort((a, b) => b.owns - a.owns).slice(0, 10);
    for (const p of shown) {
      const owns = p.owns ? `, makes ${plural(p.owns, 'running sandbox', 'running sandboxes')} owned` : '';
      out.push(`  pid ${p.pid}, user ${p.user ?? '?'} (uid ${p.uid}), ${servedText(p)}, running since ${p.since}${owns}: ${p.command.slice(0, 80)}`);
      out.push(`    serves: ${p.ownsWhy}`);
      out.push(`    counts as hermes: ${p.why}`);
    }
    if (hp.processes.length > 10) out.push(`  ... and ${hp.processes.length - 10} more`);
  }
  out.push(...renderInstalls(r));
  return out;
}

/** What a hermes process serves, in a few words. */
function servedText(p: HermesProcessStatus): string {
  const labels = p.labels === null ? 'every profile' : p.labels.join(', ');
  if (p.serves === 'profile') return `profile ${p.profile ?? labels}${p.labels && p.labels.length > 1 ? ` (labels ${labels})` : ''}`;
  return `${p.serves} (${labels})`;
}

/** The hermes installs found, against the newest hermes this janitor knows. */
function renderInstalls(r: StatusReport): string[] {
  const h = r.hermesInstalls;
  if (!h) return [];
  const n = h.known.notesReadUpTo;
  const out = [
    `hermes installs (this janitor was checked against hermes ${h.known.version} (${h.known.releaseDate}), commit ${h.known.commit.slice(0, 12)}; ` +
      `release notes read up to ${n.version} (${n.date}))`,
  ];
  if (h.installs.length === 0) out.push('  none found (no hermes checkout, venv or package behind a living hermes process or the hermes on PATH)');
  for (const i of h.installs) {
    const version = i.version ?? 'version unknown';
    const commit = i.commit ? `, commit ${i.commit.slice(0, 12)}` : '';
    const newer = i.newerThanKnown ? ': newer than this janitor knows (its rules may not match this hermes: see docs/hermes.md)' : '';
    const what = `${i.kind}${i.checkout ? ` of ${i.checkout}` : ''}${i.distribution ? `, ${i.distribution}` : ''}`;
    out.push(`  ${i.dir} (${what}): ${version}${commit}; found by ${i.foundBy.join(', ')}${newer}`);
    for (const dir of i.capped ?? [])
      out.push(`    ${dir} holds more than ${INSTALL_DIR_ENTRIES_CAP} entries: the version was looked for among the first read only`);
  }
  if (h.rules) {
    out.push('  each rule was last checked against (docs/hermes.md, npm run hermes-drift):');
    for (const rule of h.rules) out.push(`    ${rule.id}: ${rule.checked}`);
  }
  return out;
}

const groups = (m: Record<string, number>) =>
  Object.entries(m)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');

/** The text report: one section per part, then what needs attention; ages as of the report's instant (`now`). */
/** The engines section: each engine, reachable or not, how it was chosen. */
function renderEngines(r: StatusReport): string[] {
  const out: string[] = [];
  out.push('Engines');
  for (const e of r.engines) {
    if (e.host === null && r.noEngine) {
      out.push(`  none on this host: ${r.noEngine}`);
      continue;
    }
    const what = e.reachable ? `reachable, ${e.kind ?? 'engine'} ${e.version ?? '?'}${e.apiVersion ? ` (API ${e.apiVersion})` : ''}` : 'UNREACHABLE';
    out.push(`  ${e.host ?? '(none found)'}: ${what}`);
    out.push(`    chosen: ${e.chosenBy}`);
    if (e.error) out.push(`    error: ${e.error}`);
  }
  return out;
}

/** Whether a client holds an exec: `client pid 4242 (since 3 hours ago)`, `no client`, `clients not visible here`. */
function clientPart(x: StatusReport['runningSandboxes'][number]['execs'][number], asOf: Date): string {
  // (Older sweeps' views had no client: shown as not known.)
  if (x.client) return `client pid ${x.client.pid} (since ${ago(Date.parse(x.client.since), asOf, UP_TO_DAYS)})`;
  if (x.clientUnverifiable !== null && x.clientUnverifiable !== undefined) return 'clients not visible here';
  return x.client === null ? 'no client' : 'client unknown';
}

/** The cost of the stops a reap would make: each idle sandbox with its writable layer, which hermes' reaper removes with it. */
function renderStopCosts(r: StatusReport): string[] {
  const out: string[] = [];
  if (r.stopCosts.length === 0) return out;
  out.push(
    `  a reap would stop ${plural(r.stopCosts.length, 'idle sandbox', 'idle sandboxes')}; a writable layer (what a sandbox wrote outside its mounts) is lost ` +
      "when hermes' own reaper removes the stopped sandbox at its next start, once stopped for 2 x its lifetime (unless terminal.docker_orphan_reaper is off):",
  );
  for (const c of r.stopCosts) {
    const idle = c.idleSeconds === null ? 'idle -' : `idle ${spanSeconds(c.idleSeconds, new Date(r.asOf), UP_TO_DAYS)}`;
    out.push(
      `    ${escapeControls(c.name || c.id.slice(0, 12))} (profile ${escapeControls(c.profile ?? '-')}): ${idle}, writable layer ` +
        `${c.writableLayerBytes === null ? 'unknown' : diskSize(c.writableLayerBytes)}`,
    );
  }
  return out;
}

/** How old an orphan is, by its rule: a running sandbox has not finished ("idle for 3 hours"), a never-started one was created. */
function orphanAge(o: { rule: string; verdict: string; ageSeconds: number }, asOf: string): string {
  const at = new Date(asOf);
  if (o.verdict === 'stop') return `running, idle for ${spanSeconds(o.ageSeconds, at, UP_TO_DAYS)}`;
  return `${o.rule === 'never-started' ? 'created' : 'finished'} ${agoSeconds(o.ageSeconds, at)}${o.rule === 'never-started' ? ', never started' : ''}`;
}

/** The containers section: the verdicts, in-use and owned sandboxes, and running execs with their ages. */
function renderContainers(r: StatusReport, perProfile = false): string[] {
  const out: string[] = [];
  const scope = r.profile === null ? 'all profiles' : `profile ${r.profile}`;
  out.push(`Containers (${scope}, ${perProfile ? 'thresholds per profile' : `threshold ${r.thresholdSeconds} s`})`);
  const c = r.containers;
  if (r.unknownProfiles) out.push(`  unknown profiles (kept: no home of the run has them): ${r.unknownProfiles.join(', ')}`);
  if (!c) out.push('  unknown: no engine answered');
  else {
    out.push(
      `  ${plural(c.total, 'container')}: would remove ${c.wouldRemove.total}${c.wouldRemove.total ? ` (${groups(c.wouldRemove.byRule)})` : ''}, ` +
        `would stop ${c.wouldStop.total}${c.wouldStop.total ? ` (${groups(c.wouldStop.byRule)})` : ''}, ` +
        `kept ${c.kept.total}${c.kept.total ? ` (${groups(c.kept.byReason)})` : ''}`,
    );
    if (c.inUse) out.push(`  in use: ${plural(c.inUse, 'running sandbox', 'running sandboxes')} holding a process of their own (never stopped)`);
    if (c.oldestOrphan)
      out.push(`  oldest orphan: ${c.oldestOrphan.name || c.oldestOrphan.id.slice(0, 12)} (${c.oldestOrphan.rule}), ${orphanAge(c.oldestOrphan, r.asOf)}`);
    const v = c.anonymousVolumes;
    out.push(
      `  anonymous volumes: ${v.total} held by ` +
        `${plural(v.containers, 'container')}${v.heldByOrphans ? ` (${v.heldByOrphans} by orphans, freed by a reap)` : ''}`,
    );
    if (c.failed) out.push(`  ${plural(c.failed, 'container')} could not be inspected`);
    const o = r.sandboxOwners;
    if (o) {
      out.push(
        `  running sandboxes: ${o.owned} owned (a living hermes on this host may serve their profile), ${o.abandoned} abandoned; stopped-retained ` +
          `${o.stoppedRetained}`,
      );
      for (const b of o.blind) out.push(`    every sandbox owned: ${b}`);
    }
  }
  out.push(...renderStopCosts(r));
  for (const s of r.runningSandboxes) {
    for (const x of s.execs) {
      const age = x.ageSeconds === null ? 'age unknown' : `running ${spanSeconds(x.ageSeconds, new Date(r.asOf), UP_TO_DAYS)}`;
      const procs = x.processes === null ? 'processes unknown' : plural(x.processes, 'process', 'processes');
      out.push(
        `  exec ${x.id.slice(0, 12)} in ${s.name}: ${age}, ${procs}, ${clientPart(x, new Date(r.asOf))}${x.abandoned ? ', ABANDONED' : ''}: ${x.command}`,
      );
    }
  }
  return out;
}

/**
 * The text report: one section per part (the passes' on the engines' hosts after the janitor's state, those on this
 * host's files alone after its hermes processes), then what needs attention; ages as of the report's instant (`now`).
 */
export function render(r: StatusReport, now: Date, more: { settings?: RunPolicy['sources']; parts?: readonly PassPart[]; perProfile?: boolean } = {}): string {
  const parts = more.parts ?? [];
  const sections = (place: 'engine' | 'host') => parts.filter((p) => p.pass.place === place).flatMap((p) => p.pass.status!.render(p.part, now));
  // The answer first (kubectl get answers the common question first); the details after.
  const out: string[] = [r.verdict.line];
  out.push(...renderEngines(r), ...renderContainers(r, more.perProfile), ...renderJanitor(r, now));
  out.push(...renderTrust(r));
  out.push(...sections('engine'));
  out.push(...renderProcesses(r));
  out.push(...sections('host'));
  if (more.settings) out.push(...renderSettings(more.settings));
  const b = r.breakers;
  out.push('Breakers');
  out.push(
    `  restart-guard: ${plural(b.restartGuard.bootsInWindow, 'boot')} in the last ${b.restartGuard.windowSeconds} s (max ${b.restartGuard.max}): ` +
      `${b.restartGuard.tripped ? 'TRIPPED' : 'ok'}${b.restartGuard.problem ? ` (${b.restartGuard.problem})` : ''}`,
  );
  out.push(
    `  stuck-sessions: ${plural(b.stuckSessions.sessions, 'session')} counted, ` +
      `${b.stuckSessions.suspended.length ? `${b.stuckSessions.suspended.length} to suspend: ${b.stuckSessions.suspended.join(', ')}` : 'none to suspend'} ` +
      `(threshold ${b.stuckSessions.threshold})`,
  );
  const sh = b.stopHook;
  if (sh.problem) out.push(`  stop-hook: marker unusable: ${sh.problem}`);
  else if (!sh.armed) out.push('  stop-hook: not armed');
  else {
    out.push(
      `  stop-hook: armed, ${sh.remaining} remaining, owner ${sh.owner ?? '(any session)'}, ${sh.blocks}/${sh.maxBlocks} ` +
        `blocks${sh.stalled ? ' (STALLED)' : ''}`,
    );
  }
  const tl = b.toolLoop;
  const loops = tl.warnings + tl.stops > 0 ? `; loops found: ${tl.warnings} warned, ${tl.stops} stopped` : '';
  const disarmed = tl.disarmed ? `; DISARMED for every session since ${tl.disarmed}` : '';
  const looping = tl.looping.length ? `, looping: ${tl.looping.join(', ')}` : ', none looping';
  out.push(`  tool-loop: ${plural(tl.sessions.length, 'session')} on record${looping}${loops}${disarmed}`);
  if (tl.capped !== undefined) out.push(`  tool-loop: ${tl.location} ${toolLoopCappedLine(tl.capped)}`);
  if (r.attention.length === 0) out.push('Nothing needs attention.');
  else {
    out.push('Needs attention');
    for (const line of r.attention) out.push(`  - ${line}`);
  }
  return shownLines(out);
}

/** Each engine's schedule, judged: `every 1 hour (default): ok, last completed sweep 12 minutes ago`, or STALE. */
function freshnessText(f: StatusReport['janitor']['freshness'][number], now: Date): string {
  const every = `every ${spanSeconds(f.scheduleSeconds, now)} (${f.scheduleFrom})`;
  const last = f.ageSeconds === null ? 'no completed sweep recorded' : `last completed sweep ${agoSeconds(f.ageSeconds, now)}`;
  return `  schedule on ${f.host}: ${every}: ${f.stale ? `STALE, ${last}, more than twice it` : `ok, ${last}`}`;
}

/** The home's `watch`: running and healthy, or what is wrong with it; none recorded. */
function watchText(w: StatusReport['janitor']['watch'], now: Date): string[] {
  if (!w) return ['  watch: none recorded for this home'];
  const beat = w.heartbeatAt === null ? 'no heartbeat yet' : `last heartbeat ${agoSeconds(w.heartbeatAgeSeconds, now)} (every ${w.heartbeatSeconds} s)`;
  const process = w.process === 'alive' ? 'running' : w.process === 'dead' ? 'NOT RUNNING' : 'process not visible here';
  const health = w.healthz ? `, /healthz ${w.healthz.status ?? `no answer (${w.healthz.error ?? '?'})`}` : '';
  // What is wrong with it is under "Needs attention", with what to do.
  return [`  watch: pid ${w.pid} on ${w.hosts.join(', ')}, ${process}, started ${w.startedAt}; ${beat}${health}`];
}

/** The janitor's own state: its sweeps against their schedule, its watch, locks and log. */
function renderJanitor(r: StatusReport, now: Date): string[] {
  const j = r.janitor;
  const out = ['Janitor'];
  if (j.sweeps.length === 0) out.push('  last sweep: none recorded');
  for (const s of j.sweeps) {
    out.push(
      `  last sweep on ${s.host} (${s.profile === null ? 'all profiles' : `profile ${s.profile}`}${s.by === 'watch' ? ', by watch' : ''}): ` +
        `${s.completedAt}${s.ageSeconds !== null ? `, ${agoSeconds(s.ageSeconds, now)}` : ''}`,
    );
  }
  for (const f of j.freshness) if (f.ageSeconds !== null || f.stale) out.push(freshnessText(f, now));
  out.push(...watchText(j.watch, now));
  if (j.locks.length === 0) out.push('  reap lock: none held');
  for (const l of j.locks) {
    const byWatch = j.watch && l.pid === j.watch.pid && !l.stale ? ' (the watch)' : '';
    out.push(`  reap lock: pid ${l.pid ?? '?'} on ${l.host ?? '?'} since ${l.since ?? '?'}${byWatch}${l.stale ? ' (STALE: holder gone)' : ''}`);
  }
  const log = j.log;
  out.push(`  log: ${log.path} ${log.exists ? `(${diskSize(log.sizeBytes)})` : '(none yet)'}`);
  if (log.lastRun) out.push(`    last background run: ${log.lastRun.startedAt} ${log.lastRun.completed ? 'completed' : 'no summary line'}`);
  return out;
}

/**
 * The report's lines through the one escaper: exec command lines, container names, paths, profiles and process
 * command lines are others' words, and none may reach the terminal as a control (an agent's ESC, CR, OSC 8 link).
 */
function shownLines(lines: readonly string[]): string {
  return `${lines.map((l) => escapeControls(l)).join('\n')}\n`;
}

/** The idle rule as `reap` would judge it, reading the observations `reap` and `list` recorded without writing. */
async function readOnlyIdle(idle: IdleOptions): Promise<IdleOptions> {
  const { ReadOnlyStateStore } = await import('../../adapters/state-file.js');
  return { ...idle, ...(idle.store ? { store: new ReadOnlyStateStore(idle.store) } : {}) };
}
