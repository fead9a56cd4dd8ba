/**
 * `npm run bench:shell-start [-- --runs 200]`
 *
 * What `shell-init`'s snippet costs a new interactive bash with a fresh stamp (#39): `bash --rcfile RC -i -c exit`
 * with an empty RC, with the snippet, and with the snippet as it was before it tested the stamp itself (node's
 * `reap --once-per` fast path at every shell), interleaved. Prints the medians and the snippet's cost over the empty
 * RC. Goal: within 5 ms. Needs the real engine (one real `reap` of a fresh profile writes the stamp) and, for its
 * proof, strace: the snippet's shell must start no node.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { shellSnippet } from '../src/cli/commands/shell-init.js';
import { median, repo } from './util.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '200' } } });
const runs = Number(values.runs);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'hj-bench-shell-'));
const bin = path.join(tmp, 'bin');
mkdirSync(bin);
symlinkSync(path.join(repo, 'bin', 'hermes-janitor.js'), path.join(bin, 'hermes-janitor'));
const profile = `bench-shell-${process.pid}`;
const env: NodeJS.ProcessEnv = { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: tmp, LANG: 'C.UTF-8', TERM: 'dumb' };
if (process.env.DOCKER_HOST) env.DOCKER_HOST = process.env.DOCKER_HOST;

function cli(args: string[]): string {
  const r = spawnSync('hermes-janitor', args, { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hermes-janitor ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

function timeBash(rc: string): number {
  const start = process.hrtime.bigint();
  const r = spawnSync('bash', ['--rcfile', rc, '-i', '-c', 'exit'], { env, stdio: 'ignore' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`bash --rcfile ${rc} exited ${r.status}`);
  return ms;
}

try {
  const rcs = { empty: path.join(tmp, 'empty.rc'), snippet: path.join(tmp, 'snippet.rc'), 'node every time': path.join(tmp, 'node.rc') };
  writeFileSync(rcs.empty, '');
  writeFileSync(rcs.snippet, cli(['--profile', profile, 'shell-init', 'bash']));
  writeFileSync(
    rcs['node every time'],
    shellSnippet('bash', '1h', `hermes-janitor reap --profile ${profile} --once-per 1h --background --fail-open --quiet`, null),
  );
  cli(['--profile', profile, 'reap', '--quiet']); // the stamp, fresh for an hour
  const traced = spawnSync('strace', ['-f', '-e', 'trace=execve', '-o', path.join(tmp, 'strace.out'), 'bash', '--rcfile', rcs.snippet, '-i', '-c', 'exit'], {
    env,
    stdio: 'ignore',
  });
  if (traced.error) console.log('strace: not installed (apt-get install strace): the proof that no node starts is skipped');
  else {
    const execs = spawnSync('grep', ['-c', 'execve(', path.join(tmp, 'strace.out')], { encoding: 'utf8' }).stdout.trim();
    const node = spawnSync('grep', ['-c', 'node', path.join(tmp, 'strace.out')], { encoding: 'utf8' }).stdout.trim();
    console.log(`strace -f -e execve of an interactive bash with the snippet: ${execs} execve (bash itself), ${node} naming node`);
  }
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(rcs).map((k) => [k, []]));
  for (let i = 0; i < 5; i++) for (const rc of Object.values(rcs)) timeBash(rc);
  for (let i = 0; i < runs; i++) {
    for (const name of Object.keys(rcs).sort(() => Math.random() - 0.5)) times[name]!.push(timeBash(rcs[name as keyof typeof rcs]));
  }
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) as Record<string, number>;
  for (const [k, v] of Object.entries(m)) console.log(`bash -i, rc ${k.padEnd(16)} median ${v.toFixed(2)} ms (${runs} runs)`);
  console.log(
    `the snippet with a fresh stamp costs ${(m.snippet! - m.empty!).toFixed(2)} ms over an empty rc (goal <= 5); ` +
      `node every time cost ${(m['node every time']! - m.empty!).toFixed(2)} ms`,
  );
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
