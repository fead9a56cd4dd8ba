/**
 * One way to say an age: the same instant reads the same in the `list` table, the `reap` lines, `status` and the CI
 * step summary, at month and year boundaries too (luxon's calendar difference, in UTC). Before, the `list` table
 * said "30 days ago" and the `reap` line "1 month ago" for a container that finished 30 days before 31 March.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { reapSummaryMarkdown } from '../../src/cli/render-markdown.js';
import { runCli, tempDir } from '../helpers/cli.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

const PROFILE = 'ages';
const LABELS = { 'hermes-agent': '1', 'hermes-profile': PROFILE };

/** [finished at, as of, what every output says]. */
const CASES: Array<[string, string, string]> = [
  // 1 March to 31 March is not a calendar month.
  ['2026-03-01T12:00:00Z', '2026-03-31T12:00:00Z', '30 days ago'],
  // A month and 30 days after a late-November finish (30 November would be 2 months).
  ['2026-11-26T12:00:00Z', '2027-01-25T12:00:00Z', '1 month ago'],
  ['2026-11-25T12:00:00Z', '2027-01-25T12:00:00Z', '2 months ago'],
  // Across the end of a year: hours, not "1 year ago" or "1 day ago".
  ['2026-12-31T23:00:00Z', '2027-01-01T01:30:00Z', '2 hours ago'],
  // A whole calendar year, and one day short of it.
  ['2025-03-31T12:00:00Z', '2026-03-31T12:00:00Z', '1 year ago'],
  ['2025-04-01T12:00:00Z', '2026-03-31T12:00:00Z', '11 months ago'],
  // A leap day: luxon's calendar adds a year to 29 February 2028 as 28 February 2029; a day earlier is 11 months.
  ['2028-02-29T12:00:00Z', '2029-02-28T12:00:00Z', '1 year ago'],
  ['2028-02-29T12:00:00Z', '2029-02-27T12:00:00Z', '11 months ago'],
];

describe('every output says an age the same way (simulator)', () => {
  const home = tempDir('hj-ages-');
  const env = { HOME: home.dir, HERMES_HOME: path.join(home.dir, 'hermes') };
  const sims: EngineSimulator[] = [];
  after(async () => {
    await Promise.all(sims.map((s) => s.close()));
    home.cleanup();
  });

  for (const [finishedAt, asOf, says] of CASES) {
    it(`finished ${finishedAt}, as of ${asOf}: "${says}" in list, reap, status and the step summary`, async () => {
      const sim = await EngineSimulator.start({ containers: [{ name: 'hermes-0a0a0a0a', labels: LABELS, finishedAt }] });
      sims.push(sim);
      const args = ['--host', sim.host, '--profile', PROFILE, '--as-of', asOf, '--lifetime', '0'];

      const list = await runCli(['list', ...args], { env });
      assert.equal(list.code, 0, list.stderr);
      const row = list.stdout.split('\n').find((l) => l.includes('hermes-0a0a0a0a'));
      assert.ok(row, list.stdout);
      assert.equal(row.split(/ {2,}/)[3], says, row); // ID NAME STATE FINISHED ...

      const dry = await runCli(['reap', '--dry-run', ...args], { env });
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(dry.stdout, new RegExp(`^Would remove \\S+ hermes-0a0a0a0a \\(profile ${PROFILE}, finished ${says}\\)$`, 'm'));

      const status = await runCli(['status', ...args], { env });
      assert.match(status.stdout, new RegExp(`oldest orphan: hermes-0a0a0a0a \\(exited\\), finished ${says}$`, 'm'), status.stdout);
      assert.match(status.stdout, new RegExp(`past the threshold \\(the oldest finished ${says}\\)`), status.stdout);

      const json = await runCli(['reap', '--dry-run', '--json', ...args], { env });
      assert.equal(json.code, 0, json.stderr);
      // The step summary's Age column is the same span without "ago".
      assert.match(reapSummaryMarkdown(JSON.parse(json.stdout)), new RegExp(`\\| exited \\| ${says.replace(/ ago$/, '')} \\|`));
    });
  }
});
