/**
 * `watch --images-over`: each create, start or destroy event of a selected container marks its image used at the
 * event's time (the state file), and the image pass runs once every engine is connected (or after a minute), then
 * every 10 minutes (`HERMES_JANITOR_IMAGES_EVERY`). An engine not connected at a pass is not touched.
 */
import type { EngineClient, EngineEvent } from '../adapters/engine.js';
import { hasImageCalls } from '../adapters/engine.js';
import { fullImageId } from '../core/images.js';
import { isExcluded, isSelected } from '../core/selection.js';
import { errorMessage } from '../errors.js';
import { type ImagesStep, imageGauges, runImagesStep } from './images-step.js';
import type { ImageGauges } from '../adapters/metrics.js';
import type { Reporter } from './report/reporter.js';
import { escapeControls } from '../util/escape-controls.js';

/** The actions that say a container of the image exists (docuum counts the same). */
const USE_ACTIONS = new Set(['create', 'start', 'destroy', 'remove']); // Podman says remove where Docker says destroy

export interface WatchImagesDeps {
  step: ImagesStep;
  reporter: Reporter;
  everyMs: number;
  stderr: { write(text: string): unknown };
  stopping: AbortSignal;
  /** Where each pass's gauges go (`--metrics-listen`), if anywhere. */
  onGauges?: (g: ImageGauges) => void;
}

export class WatchImages {
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private first: NodeJS.Timeout | undefined;

  constructor(private readonly deps: WatchImagesDeps) {}

  /** One engine event: a use of its image when a selected container was created, started or destroyed. */
  onEvent(engine: EngineClient, ev: EngineEvent): void {
    const { step } = this.deps;
    if (!USE_ACTIONS.has(ev.action) || !hasImageCalls(engine)) return;
    if (!isSelected(step.selection, ev.attributes) || isExcluded(step.selection, ev.attributes)) return;
    const ref = ev.attributes.image;
    if (!ref) return;
    const atMs = Number.isFinite(ev.timeMs) ? ev.timeMs : step.now().getTime();
    this.queue(async () => {
      const id = /^(sha256:)?[0-9a-f]{64}$/.test(ref) ? fullImageId(ref) : await engine.imageIdOf(ref, this.deps.stopping);
      if (!id) return;
      await step.uses.record(engine.host, [{ id, atMs, hermes: true }]);
      this.deps.reporter.imageUsed({ host: engine.host, id, container: ev.id, action: ev.action, at: new Date(atMs).toISOString() });
    }, 'image use');
  }

  /** Starts the passes: first once `healthy()` (or after a minute), then every `everyMs`. */
  start(answers: () => Array<{ engine: EngineClient; answered: boolean; error?: string }>, healthy: () => boolean): void {
    const started = Date.now();
    const tick = () => this.queue(async () => {
      const result = await runImagesStep(this.deps.step, answers());
      if (this.deps.stopping.aborted) return;
      this.deps.reporter.imagesPass(result, this.deps.step.dryRun);
      this.deps.onGauges?.(imageGauges(result, this.deps.step.dryRun));
    }, 'images');
    this.first = setInterval(() => {
      if (!healthy() && Date.now() - started < 60_000) return;
      clearInterval(this.first);
      tick();
      this.timer = setInterval(tick, this.deps.everyMs);
    }, 250);
  }

  async stop(): Promise<void> {
    clearInterval(this.first);
    clearInterval(this.timer);
    await this.chain;
  }

  /** One thing at a time: uses and passes in the order they came. */
  private queue(fn: () => Promise<void>, what: string): void {
    this.chain = this.chain.then(fn).catch((err: unknown) => {
      if (!this.deps.stopping.aborted) this.deps.stderr.write(`${new Date().toISOString()} ${what}: ${escapeControls(errorMessage(err))}\n`);
    });
  }
}
