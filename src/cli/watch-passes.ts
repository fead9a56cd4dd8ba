/**
 * `watch`'s passes: each pass of the list that runs after the sweep (`passes/index.ts`) runs on its schedule, first
 * once every engine is connected (or after a minute), then every `Pass.watch.every` (a duration in its environment
 * variable). Passes naming the same variable run together, one after the other in the list's order, one thing at a
 * time with the engine events a pass takes (`Pass.watch.onEvent`). An engine that is not connected at a run counts
 * as not answering: a pass removes nothing that such an engine might hold. After each run: the reporter's lines, the
 * metrics' gauges.
 */
import type { EngineClient, EngineEvent } from '../adapters/engine.js';
import type { Context } from '../context.js';
import { errorMessage } from '../errors.js';
import type { SettledPass } from '../passes/runner.js';
import { settlePasses } from '../passes/runner.js';
import type { EngineAnswer, Pass, PassSettingsInput } from '../passes/types.js';
import { envDuration } from '../reaper/settings.js';
import type { Reporter } from './report/types.js';
import { escapeControls } from '../util/escape-controls.js';

export interface WatchPassesDeps {
  ctx: Context;
  reporter: Reporter;
  dryRun: boolean;
  /** Aborted by SIGTERM or SIGINT: no new run starts, and what runs is told. */
  stopping: AbortSignal;
  /** The engines as they stand now (connected or not). */
  answers: () => EngineAnswer[];
  /** Every engine connected. */
  healthy: () => boolean;
  /** The pass settings' inputs as they stand now (`watch` follows hermes' files: a change comes with a new `generation`). */
  input: () => { input: PassSettingsInput; generation: number };
  /** Before each run: hermes' files as they are now (the settings may have moved). */
  beforeRun?: () => Promise<void>;
  /** Where a pass's gauges go (`--metrics-listen`), if anywhere. */
  setGauges?: (pass: Pass, gauges: unknown) => void;
  /** `--timeout` when given: each pass's run is bounded by it (as each sweep is); 0 or absent: by the stop only. */
  timeoutMs?: number;
  /**
   * A run bounded by `--timeout` begins (its label, when its deadline is): `watch`'s supervisor ends the work past
   * it whatever it is doing (cli/watch-supervisor.ts). Returns the run's end.
   */
  supervise?: (label: string, deadlineMs: number) => () => void;
}

/** Passes sharing one schedule. */
class Group {
  chain: Promise<void> = Promise.resolve();
  first: NodeJS.Timeout | undefined;
  timer: NodeJS.Timeout | undefined;
  settled: SettledPass[];
  generation: number;

  constructor(
    readonly passes: readonly Pass[],
    readonly everyMs: number,
    start: { settled: SettledPass[]; generation: number },
  ) {
    this.settled = start.settled;
    this.generation = start.generation;
  }

  /** The first pass's name for the group's error lines (`sandbox dirs: ...`). */
  get label(): string {
    return this.passes[0]!.nouns.texts;
  }
}

export class WatchPasses {
  private readonly groups: Group[] = [];

  private constructor(private deps: WatchPassesDeps) {}

  /** The engines and health (and the metrics) once the service that watches them runs. */
  connect(more: Pick<WatchPassesDeps, 'answers' | 'healthy' | 'setGauges'>): void {
    this.deps = { ...this.deps, ...more };
  }

  /**
   * The passes' groups: each pass with settings that say it runs (checked now: bad input is exit 2 before anything
   * is watched), and each schedule's interval (a bad variable is exit 2 too).
   */
  static async create(passes: readonly Pass[], deps: WatchPassesDeps): Promise<WatchPasses> {
    const w = new WatchPasses(deps);
    const { input, generation } = deps.input();
    const settled = await settlePasses(passes, input);
    const byEvery = new Map<string, Pass[]>();
    for (const p of passes) {
      if (p.kind !== 'run' || !p.watch || !p.run) continue;
      byEvery.set(p.watch.every.env, [...(byEvery.get(p.watch.every.env) ?? []), p]);
    }
    for (const group of byEvery.values()) {
      const own = settled.filter((s) => group.includes(s.pass));
      if (own.length === 0) continue;
      const every = group[0]!.watch!.every;
      w.groups.push(new Group(group, envDuration(deps.ctx.env, every.env) ?? every.defaultMs, { settled: own, generation }));
    }
    return w;
  }

  /** An engine event, for the passes that take them (queued with their runs, in the order they came). */
  onEvent(engine: EngineClient, ev: EngineEvent): void {
    for (const g of this.groups) {
      for (const { pass, settings } of g.settled) {
        if (!pass.watch?.onEvent) continue;
        this.queue(g, () =>
          pass.watch!.onEvent!(settings, engine, ev, (event, fields) => this.deps.reporter.passNotice(pass, event, fields), this.deps.stopping),
        );
      }
    }
  }

  /** Starts every schedule: first once `healthy()` (or after a minute), then every group's interval. */
  start(): void {
    const started = Date.now();
    for (const g of this.groups) {
      const tick = () => this.queue(g, () => this.runGroup(g));
      g.first = setInterval(() => {
        if (!this.deps.healthy() && Date.now() - started < 60_000) return;
        clearInterval(g.first);
        tick();
        g.timer = setInterval(tick, g.everyMs);
      }, 250);
    }
  }

  async stop(): Promise<void> {
    for (const g of this.groups) {
      clearInterval(g.first);
      clearInterval(g.timer);
    }
    await Promise.all(this.groups.map((g) => g.chain));
  }

  /** One run of a group's passes, in the list's order. */
  private async runGroup(g: Group): Promise<void> {
    const { deps } = this;
    await deps.beforeRun?.();
    const now = deps.input();
    if (now.generation !== g.generation) {
      // hermes' files changed: the passes' settings again (a pass may have been turned off, a root moved).
      g.settled = await settlePasses(g.passes, now.input);
      g.generation = now.generation;
    }
    for (const { pass, settings } of g.settled) {
      if (deps.stopping.aborted) return;
      // Bounded by --timeout when given, stopped by SIGTERM; the passes read in slices, so /healthz, the deadlines and
      // the engine stream keep their turns meanwhile.
      const signal = deps.timeoutMs ? AbortSignal.any([deps.stopping, AbortSignal.timeout(deps.timeoutMs)]) : deps.stopping;
      const ctx = { dryRun: deps.dryRun, now: () => deps.ctx.now(), signal, engines: deps.answers() };
      const end = deps.timeoutMs ? deps.supervise?.(`the ${pass.nouns.texts} pass`, Date.now() + deps.timeoutMs) : undefined;
      let report: Awaited<ReturnType<NonNullable<Pass['run']>>>;
      try {
        report = await pass.run!(settings, ctx);
      } finally {
        end?.();
      }
      const { result, gauges } = report;
      if (deps.stopping.aborted) return;
      if (result !== null) deps.reporter.passRun(pass, result, deps.dryRun);
      if (gauges !== null) deps.setGauges?.(pass, gauges);
    }
  }

  /** One thing at a time per group: events and runs in the order they came. */
  private queue(g: Group, fn: () => Promise<void>): void {
    g.chain = g.chain.then(fn).catch((err: unknown) => {
      if (!this.deps.stopping.aborted)
        this.deps.ctx.stderr.write(`${this.deps.ctx.now().toISOString()} ${escapeControls(`${g.label}: ${errorMessage(err)}`)}\n`);
    });
  }
}
