/**
 * Reading the janitor's metrics as Prometheus does: series by name and label set (parse-prometheus-text-format), the
 * series two or more files hold (what node_exporter's textfile collector refuses: "collected before with the same
 * name and label values"), and the real tools when this machine has them: `promtool check metrics` and node_exporter's
 * textfile collector (`scripts/metrics-tools.sh` unpacks both from Debian's packages).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';

/** One series as Prometheus names it: `name{a="1",b="2"}`, labels sorted, empty values left out (they are no label). */
export function seriesKey(name: string, labels: Record<string, string> | undefined): string {
  const set = Object.entries(labels ?? {})
    .filter(([, v]) => v !== '')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return `${name}{${set.join(',')}}`;
}

/** Every series of an exposition, with its value. */
export function seriesOf(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const f of parsePrometheusTextFormat(text)) for (const m of f.metrics) out.set(seriesKey(f.name, m.labels), Number(m.value));
  return out;
}

/** The series more than one sample says: within one exposition, or across the files a textfile collector merges. */
export function duplicateSeries(texts: readonly string[]): string[] {
  const seen = new Map<string, number>();
  for (const text of texts) {
    for (const f of parsePrometheusTextFormat(text)) {
      for (const m of f.metrics) {
        const k = seriesKey(f.name, m.labels);
        seen.set(k, (seen.get(k) ?? 0) + 1);
      }
    }
  }
  return [...seen].filter(([, n]) => n > 1).map(([k]) => k);
}

/** The families of an exposition, by name. */
export function familiesOf(text: string): Map<string, ParsedFamily> {
  return new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
}

/**
 * The one sample of `name` whose labels include `labels` (as a PromQL selector matches: other labels may be there);
 * throws when none or several match.
 */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const fam = familiesOf(text).get(name);
  if (!fam) throw new Error(`family ${name} missing`);
  const hits = fam.metrics.filter((m) => Object.entries(labels).every(([k, v]) => (m.labels?.[k] ?? '') === v));
  if (hits.length !== 1) throw new Error(`${name}${JSON.stringify(labels)}: ${hits.length} samples match in ${JSON.stringify(fam.metrics)}`);
  return Number(hits[0]!.value);
}

const TOOLS = process.env.HERMES_JANITOR_TOOLS ? path.join(process.env.HERMES_JANITOR_TOOLS, 'bin') : '/var/cache/hermes-janitor/tools/bin';

/** A Prometheus tool (`promtool`, `node_exporter`): on PATH, or where scripts/metrics-tools.sh unpacked it; else null. */
export function tool(name: 'promtool' | 'node_exporter'): string | null {
  const unpacked = path.join(TOOLS, name);
  if (existsSync(unpacked)) return unpacked;
  const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return which.status === 0 && which.stdout.trim() ? which.stdout.trim() : null;
}

/** Why a tool cannot be used here (for `unmet`), or false. */
export function toolMissing(name: 'promtool' | 'node_exporter'): string | false {
  return tool(name) ? false : `${name} is not installed here (bash scripts/metrics-tools.sh unpacks it from Debian's package, as root)`;
}

/** `promtool check metrics` on an exposition: its exit status and what it said. */
export function promtoolCheck(text: string): { status: number | null; output: string } {
  const r = spawnSync(tool('promtool')!, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/**
 * One scrape of node_exporter's textfile collector over `dir` (every `*.prom` file in it), as a host's Prometheus
 * would see it: the body, and what node_exporter logged meanwhile (a duplicate series is logged there, while the
 * scrape itself still answers 200 and `node_textfile_scrape_error` reads 0).
 */
export async function textfileScrape(dir: string): Promise<{ status: number; body: string; log: string }> {
  const port = await freePort();
  const child = spawn(
    tool('node_exporter')!,
    ['--collector.disable-defaults', '--collector.textfile', `--collector.textfile.directory=${dir}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (log += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (log += d));
  try {
    for (let i = 0; ; i++) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`);
        const body = await res.text();
        await new Promise((r) => setTimeout(r, 200)); // its error line is written after the answer
        return { status: res.status, body, log };
      } catch (err) {
        if (i >= 50) throw new Error(`node_exporter did not answer on port ${port}: ${String(err)}; its log: ${log}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    child.kill('SIGTERM');
  }
}
