/**
 * Metrics of a host with two hermes homes, against the real engine, loaded the way a host's Prometheus loads them:
 * node_exporter's textfile collector over one directory (its log names a series two files hold: "collected before
 * with the same name and label values", while the scrape still answers 200 and its error gauge reads 0), `promtool
 * check metrics` on each file, and a parser (no series twice). And `watch`'s heartbeat: it moves while `watch` is idle.
 * node_exporter and promtool come from Debian's packages (scripts/metrics-tools.sh); without them those checks skip
 * (and fail under CI).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../helpers/cli.js';
import { ENGINE_HOST, ENGINE_KIND, EngineFixture, RUN_LABEL, requireEngine } from '../helpers/docker.js';
import { unmet } from '../helpers/preconditions.js';
import { duplicateSeries, promtoolCheck, sampleValue, textfileScrape, toolMissing } from '../helpers/prometheus.js';
import { WatchProcess } from '../helpers/watch-process.js';

describe(`metrics of two homes (built CLI, ${ENGINE_KIND})`, () => {
  const fx = new EngineFixture();
  const t = tempDir('hj-metrics-homes-');
  const homes = { alice: path.join(t.dir, 'alice', '.hermes'), bob: path.join(t.dir, 'bob', '.hermes') };
  const profiles = { alice: `a-${fx.runId}`, bob: `b-${fx.runId}` };
  const env = { HOME: t.dir, DOCKER_HOST: ENGINE_HOST };
  const asOf = () => new Date(Date.now() + 3600_000).toISOString();
  before(async () => {
    await requireEngine();
    for (const h of Object.values(homes)) mkdirSync(h, { recursive: true });
  });
  after(async () => {
    await fx.cleanup();
    t.cleanup();
  });

  /** A run over one home (`--home`, its profile, this test's containers only) writing `file`. */
  const reapHome = (who: 'alice' | 'bob', file: string) =>
    runCli(['reap', '--home', homes[who], '--profile', profiles[who], '--label', `${RUN_LABEL}=${fx.runId}`, '--as-of', asOf(), '--metrics-file', file], {
      env,
    });

  /**
   * The layouts that put both homes' series where one node_exporter reads them, each writing its files into `dir`
   * (`--homes`, once there, adds one: a run over both homes writing one file).
   */
  const LAYOUTS: Record<string, (dir: string) => Promise<void>> = {
    'one run per home, each writing its own file': async (dir) => {
      for (const who of ['alice', 'bob'] as const) {
        const r = await reapHome(who, path.join(dir, `hermes_janitor_${who}.prom`));
        assert.equal(r.code, 0, r.stderr);
      }
    },
  };

  for (const [layout, write] of Object.entries(LAYOUTS)) {
    it(`${layout}: node_exporter loads both homes' series, none twice; promtool finds nothing wrong`, async (tc) => {
      await fx.create({ state: 'exited', profile: profiles.alice });
      await fx.create({ state: 'exited', profile: profiles.bob });
      const dir = path.join(t.dir, layout.replace(/\W+/g, '-'));
      mkdirSync(dir);
      await write(dir);
      const files = readdirSync(dir).map((n) => readFileSync(path.join(dir, n), 'utf8'));
      assert.deepEqual(duplicateSeries(files), [], 'no series in two files');
      const all = files.join('\n');
      for (const who of ['alice', 'bob'] as const) {
        const removed = files.map((f) => {
          try {
            return sampleValue(f, 'hermes_janitor_containers_removed', { host: ENGINE_HOST, profile: profiles[who], home: homes[who] });
          } catch {
            return 0;
          }
        });
        assert.equal(
          removed.reduce((a, b) => a + b, 0),
          1,
          `${who}'s removal is counted under its home: ${all}`,
        );
      }
      if (!unmet(tc, toolMissing('promtool'))) {
        for (const f of files) {
          const check = promtoolCheck(f);
          assert.equal(check.status, 0, check.output);
        }
      }
      if (unmet(tc, toolMissing('node_exporter'))) return;
      const scrape = await textfileScrape(dir);
      assert.equal(scrape.status, 200);
      assert.doesNotMatch(scrape.log, /collected before/, scrape.log);
      assert.match(scrape.body, /^node_textfile_scrape_error 0$/m);
      for (const who of ['alice', 'bob'] as const) {
        assert.ok(
          scrape.body.includes(`hermes_janitor_containers_removed{home="${homes[who]}",host="${ENGINE_HOST}",profile="${profiles[who]}"} 1`),
          `${who}'s series is in the scrape`,
        );
      }
    });
  }

  it('the control: node_exporter refuses the same two files without their home (as they were written before)', async (tc) => {
    if (unmet(tc, toolMissing('node_exporter'))) return;
    const dir = path.join(t.dir, 'before');
    mkdirSync(dir);
    for (const who of ['alice', 'bob'] as const) {
      const file = path.join(dir, `hermes_janitor_${who}.prom`);
      assert.equal((await reapHome(who, file)).code, 0);
      const homeless = readFileSync(file, 'utf8')
        .replace(/\{home="[^"]*"\}/g, '')
        .replace(/,home="[^"]*"/g, '')
        .replace(/profile="[^"]*"/g, 'profile="default"'); // two users' default profiles
      writeFileSync(file, homeless);
    }
    const scrape = await textfileScrape(dir);
    assert.equal(scrape.status, 200, 'the scrape itself answers');
    assert.match(scrape.log, /hermes_janitor_last_run_timestamp_seconds.*was collected before with the same name and label values/);
  });

  it('watch: the heartbeat advances while it is idle (no sweep, no deadline), and its series carry the home', async () => {
    const w = WatchProcess.start(
      ['--home', homes.alice, '--profile', profiles.alice, '--label', `${RUN_LABEL}=${fx.runId}-idle`, '--metrics-listen', '127.0.0.1:0'],
      {
        ...env,
        HERMES_JANITOR_HEARTBEAT_EVERY: '1s',
      },
    );
    try {
      await w.waitFor('metrics address', (ls) => ls.some((l) => l.event === 'metrics'));
      await w.waitFor('connected', (ls) => ls.some((l) => l.event === 'engine' && l.state === 'connected'));
      const url = w.events('metrics')[0]!.url as string;
      const scrape = async () => {
        const text = await (await fetch(`${url}/metrics`)).text();
        const at = (name: string) => sampleValue(text, name, { home: homes.alice });
        return { beat: at('hermes_janitor_heartbeat_timestamp_seconds'), run: at('hermes_janitor_last_run_timestamp_seconds'), text };
      };
      const first = await scrape();
      let next = first;
      for (let i = 0; i < 100 && next.beat <= first.beat; i++) {
        await new Promise((r) => setTimeout(r, 100));
        next = await scrape();
      }
      assert.ok(next.beat > first.beat, `the heartbeat moved: ${first.beat} -> ${next.beat}`);
      assert.equal(next.run, first.run, 'no run meanwhile: idle');
      assert.ok(Math.abs(next.beat - Date.now() / 1000) < 5, 'it says now');
      assert.deepEqual(duplicateSeries([next.text]), []);
      assert.ok(!w.events('sweep').slice(1).length, 'one sweep, at start');
    } finally {
      const stop = await w.stop('SIGTERM');
      assert.equal(stop.code, 0, w.stderr);
    }
  });
});
