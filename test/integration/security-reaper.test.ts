/**
 * Security review of the reaper side, one test per finding:
 * - nothing `list`/`reap` print (text, --json, NDJSON, the debug stack, the --background log) includes TLS key
 *   contents, registry credentials or a password in the engine address;
 * - bad TLS material is a clean engine error (exit 3), not a crash;
 * - the janitor never sends registry credentials to the engine;
 * - `--host` is honoured even when DOCKER_HOST / DOCKER_CERT_PATH point elsewhere (dockerode's own reading of
 *   them used to win);
 * - a profile name can never form a path outside the state directory: `--profile ../x` and friends are exit 2,
 *   before any file or engine is touched.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CliResult, assertUsageError, runCli, tempDir } from '../helpers/cli.js';
import { EngineSimulator } from '../helpers/engine-simulator.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PROFILE = 'sec';
const LABELS = { 'hermes-agent': '1', 'hermes-profile': PROFILE };

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** Every file under a directory (relative paths), for "nothing was written" checks. */
function tree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

function assertClean(res: CliResult, secrets: string[], what: string): void {
  for (const s of secrets) {
    assert.ok(!res.stdout.includes(s), `${what}: a secret is on stdout`);
    assert.ok(!res.stderr.includes(s), `${what}: a secret is on stderr`);
  }
}

/** Every way `list` and `reap` can report. */
const MODES: string[][] = [
  ['list'],
  ['list', '--json'],
  ['list', '--log-format', 'json'],
  ['reap'],
  ['reap', '--json'],
  ['reap', '--log-format', 'json'],
  ['reap', '--dry-run', '--json'],
];

describe('the reaper never prints environment secrets', () => {
  const base = tempDir('hj-sec-');
  const certs = path.join(base.dir, 'certs');
  const keyMarker = `TLSKEY${randomBytes(8).toString('hex')}`;
  const certMarker = `TLSCERT${randomBytes(8).toString('hex')}`;
  const regMarker = `REGSECRET${randomBytes(8).toString('hex')}`;
  const passMarker = `PASS${randomBytes(8).toString('hex')}`;
  const realKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  // Every 16-character run of the real key's base64 body counts as a leak.
  const realKeyChunks = realKey
    .split('\n')
    .filter((l) => !l.startsWith('-----') && l.length >= 16)
    .map((l) => l.slice(0, 16));
  const secrets = [keyMarker, certMarker, regMarker, Buffer.from(`user:${regMarker}`).toString('base64'), passMarker, ...realKeyChunks];
  let sim: EngineSimulator;
  let simTcp: EngineSimulator;
  /** The container whose removal always fails (HTTP 500). */
  let failing: string;

  before(async () => {
    mkdirSync(certs);
    sim = await EngineSimulator.start({
      record: true,
      containers: [
        { labels: LABELS, finishedAt: '2020-01-01T00:00:00Z' },
        { labels: LABELS, finishedAt: '2020-01-01T00:00:00Z', faults: { removeStatus: 500 } },
        { labels: LABELS, finishedAt: 'garbage' },
      ],
    });
    failing = sim.ids()[1]!;
    simTcp = await EngineSimulator.start({ port: 0, record: true });
  });
  after(async () => {
    await sim?.close();
    await simTcp?.close();
    base.cleanup();
  });

  /** A HOME whose docker config holds registry credentials (auths, identity token, a credential helper). */
  function homeWithRegistryAuth(name: string): string {
    const home = path.join(base.dir, name);
    mkdirSync(path.join(home, '.docker'), { recursive: true });
    writeFileSync(
      path.join(home, '.docker', 'config.json'),
      JSON.stringify({
        auths: {
          'registry.example.com': { auth: Buffer.from(`user:${regMarker}`).toString('base64'), identitytoken: regMarker },
          'https://index.docker.io/v1/': { username: 'user', password: regMarker },
        },
        credHelpers: { 'gcr.io': regMarker },
        HttpHeaders: { 'X-Meta-Secret': regMarker },
      }),
    );
    return home;
  }

  it('TLS key and certificate contents: never printed, in any output mode, for unusable or real key material', async () => {
    const port = await closedPort();
    const cases: Array<{ name: string; files: Record<string, string>; host: string }> = [
      {
        name: 'garbage PEM, unreachable engine',
        files: {
          'key.pem': `-----BEGIN PRIVATE KEY-----\n${keyMarker}\n-----END PRIVATE KEY-----\n`,
          'cert.pem': `-----BEGIN CERTIFICATE-----\n${certMarker}\n-----END CERTIFICATE-----\n`,
          'ca.pem': `-----BEGIN CERTIFICATE-----\n${certMarker}\n-----END CERTIFICATE-----\n`,
        },
        host: `tcp://127.0.0.1:${port}`,
      },
      { name: 'real key, no certificate, unreachable engine', files: { 'key.pem': realKey }, host: `tcp://127.0.0.1:${port}` },
      { name: 'real key, engine that does not speak TLS', files: { 'key.pem': realKey }, host: simTcp.host },
      { name: 'not PEM at all', files: { 'key.pem': `${keyMarker}\n`, 'cert.pem': `${certMarker}\n` }, host: simTcp.host },
    ];
    for (const c of cases) {
      const dir = path.join(certs, c.name.replace(/\W+/g, '-'));
      mkdirSync(dir);
      for (const [f, text] of Object.entries(c.files)) writeFileSync(path.join(dir, f), text, { mode: 0o600 });
      for (const debug of [undefined, '1']) {
        for (const mode of MODES) {
          const res = await runCli([...mode, '--profile', PROFILE], {
            env: {
              HOME: path.join(base.dir, 'home-tls'),
              DOCKER_HOST: c.host,
              DOCKER_TLS_VERIFY: '1',
              DOCKER_CERT_PATH: dir,
              HERMES_JANITOR_DEBUG: debug,
            },
          });
          const what = `${c.name}: ${mode.join(' ')}${debug ? ' (debug)' : ''}`;
          assertClean(res, secrets, what);
          assert.equal(res.code, 3, `${what}: an engine problem, exit 3 (${res.stderr.trim()})`);
          assert.doesNotMatch(res.stderr, /unexpected error/, what);
          if (mode.includes('--json')) assert.equal((JSON.parse(res.stdout) as { hosts: Array<{ reachable: boolean }> }).hosts[0]!.reachable, false);
        }
      }
    }
  });

  it('registry credentials (config.json auths, DOCKER_AUTH_CONFIG): never printed, never sent to the engine', async () => {
    const home = homeWithRegistryAuth('home-reg');
    const dockerConfig = path.join(home, '.docker');
    const port = await closedPort();
    const authEnv = JSON.stringify({ auths: { 'registry.example.com': { auth: Buffer.from(`user:${regMarker}`).toString('base64') } } });
    for (const host of [sim.host, `tcp://127.0.0.1:${port}`]) {
      for (const mode of MODES) {
        for (const env of [{ HOME: home }, { HOME: path.join(base.dir, 'empty-home'), DOCKER_CONFIG: dockerConfig, DOCKER_AUTH_CONFIG: authEnv }]) {
          const res = await runCli(
            [...mode, '--dry-run', '--profile', PROFILE, '--host', host].filter((a) => a !== '--dry-run' || mode[0] === 'reap'),
            {
              env: { ...env, HERMES_JANITOR_DEBUG: '1' },
            },
          );
          assertClean(res, secrets, `${mode.join(' ')} on ${host}`);
        }
      }
    }
    // A real (non-dry) reap with a failure in it, and a malformed config.json that still holds a secret.
    writeFileSync(path.join(base.dir, 'bad-config.json'), `{"auths": {"x": {"auth": "${regMarker}"}}, oops`);
    const badHome = path.join(base.dir, 'home-badcfg');
    mkdirSync(path.join(badHome, '.docker'), { recursive: true });
    writeFileSync(path.join(badHome, '.docker', 'config.json'), readFileSync(path.join(base.dir, 'bad-config.json')));
    // The simulator answers every DELETE of the second container with 500: both runs must report it, exit 1.
    for (const env of [{ HOME: home }, { HOME: badHome }]) {
      const res = await runCli(['reap', '--json', '--profile', PROFILE, '--host', sim.host, '--as-of', '2026-01-01T00:00:00Z'], { env });
      assertClean(res, secrets, `reap with ${env.HOME}`);
      assert.equal(res.code, 1, `a failed removal is exit 1: ${res.stderr}`);
      const out = JSON.parse(res.stdout) as { failed: Array<{ id: string }> };
      assert.deepEqual(
        out.failed.map((f) => f.id),
        [failing],
      );
    }
    assert.ok(sim.ids().includes(failing));
    for (const req of sim.requests) {
      const text = `${req.url} ${JSON.stringify(req.headers)}`;
      for (const s of secrets) assert.ok(!text.includes(s), `a secret was sent to the engine: ${req.method} ${req.url}`);
      assert.equal(req.headers['x-registry-auth'], undefined);
      assert.equal(req.headers['x-registry-config'], undefined);
    }
    assert.ok(sim.requests.length > 0);
  });

  it('a password in the engine address (DOCKER_HOST or --host) is never printed', async () => {
    const port = await closedPort();
    const address = `tcp://user:${passMarker}@127.0.0.1:${port}`;
    for (const mode of MODES) {
      const viaEnv = await runCli([...mode, '--profile', PROFILE], { env: { HOME: path.join(base.dir, 'home-pass'), DOCKER_HOST: address } });
      assertClean(viaEnv, [passMarker], `DOCKER_HOST: ${mode.join(' ')}`);
      assert.equal(viaEnv.code, 3);
      assert.match(viaEnv.stdout + viaEnv.stderr, /tcp:\/\/user:\*\*\*@127\.0\.0\.1/);
      const viaFlag = await runCli([...mode, '--profile', PROFILE, '--host', address], { env: { HOME: path.join(base.dir, 'home-pass') } });
      assertClean(viaFlag, [passMarker], `--host: ${mode.join(' ')}`);
    }
    const invalid = await runCli(['list', '--host', `tcp://user:${passMarker}@127.0.0.1:notaport`], { env: { HOME: path.join(base.dir, 'home-pass') } });
    assertUsageError(invalid, ['tcp://user:***@127.0.0.1:notaport']);
    assertClean(invalid, [passMarker], 'invalid address');
  });

  it('the --background log holds no environment secret either', async () => {
    const home = homeWithRegistryAuth('home-bg');
    const dir = path.join(certs, 'bg');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'key.pem'), `-----BEGIN PRIVATE KEY-----\n${keyMarker}\n-----END PRIVATE KEY-----\n`);
    const port = await closedPort();
    const hermesHome = path.join(home, 'hermes');
    const res = await runCli(['reap', '--background', '--home', hermesHome, '--profile', PROFILE], {
      env: { HOME: home, DOCKER_HOST: `tcp://user:${passMarker}@127.0.0.1:${port}`, DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: dir },
    });
    assert.equal(res.code, 0, res.stderr);
    const log = path.join(hermesHome, 'logs', 'janitor.log');
    let text = '';
    for (let i = 0; i < 100 && !/unreachable|cannot reach/.test(text); i++) {
      await sleep(100);
      text = existsSync(log) ? readFileSync(log, 'utf8') : '';
    }
    assert.match(text, /cannot reach the engine/, `the background run logged its outcome: ${text}`);
    for (const s of secrets) assert.ok(!text.includes(s), 'a secret is in the background log');

    // A password given on the command line is masked in the log's header line too.
    const flagHome = path.join(home, 'hermes-flag');
    const viaFlag = await runCli(['reap', '--background', '--home', flagHome, '--profile', PROFILE, '--host', `tcp://user:${passMarker}@127.0.0.1:${port}`], {
      env: { HOME: home },
    });
    assert.equal(viaFlag.code, 0, viaFlag.stderr);
    const flagLog = path.join(flagHome, 'logs', 'janitor.log');
    let flagText = '';
    for (let i = 0; i < 100 && !/cannot reach/.test(flagText); i++) {
      await sleep(100);
      flagText = existsSync(flagLog) ? readFileSync(flagLog, 'utf8') : '';
    }
    assert.match(flagText, /^--- .* --host tcp:\/\/user:\*\*\*@127\.0\.0\.1/m);
    assert.ok(!flagText.includes(passMarker), 'the password from --host is in the background log');
  });
});

describe('the engine address is the one asked for', () => {
  it('--host wins over DOCKER_HOST, DOCKER_TLS_VERIFY and a DOCKER_CERT_PATH without certificates', async () => {
    const sim = await EngineSimulator.start({ containers: [{ labels: LABELS, finishedAt: '2020-01-01T00:00:00Z' }] });
    const home = tempDir('hj-host-');
    try {
      const port = await closedPort();
      for (const env of [
        { DOCKER_HOST: `tcp://127.0.0.1:${port}` },
        { DOCKER_HOST: `tcp://127.0.0.1:${port}`, DOCKER_TLS_VERIFY: '1' },
        { DOCKER_HOST: `tcp://127.0.0.1:${port}`, DOCKER_CERT_PATH: path.join(home.dir, 'no-such-dir') },
        { DOCKER_CERT_PATH: path.join(home.dir, 'no-such-dir'), DOCKER_TLS_VERIFY: '1' },
      ]) {
        const res = await runCli(['list', '--json', '--profile', PROFILE, '--host', sim.host], { env: { HOME: home.dir, ...env } });
        assert.equal(res.code, 0, `${JSON.stringify(env)}: ${res.stderr}${res.stdout}`);
        const out = JSON.parse(res.stdout) as { containers: unknown[]; hosts: Array<{ host: string }> };
        assert.equal(out.containers.length, 1, JSON.stringify(env));
        assert.equal(out.hosts[0]!.host, sim.host);
      }
    } finally {
      await sim.close();
      home.cleanup();
    }
  });
});

describe('profile names never form a path outside the state directory (reap/list)', () => {
  const BAD = [
    '../x',
    '..',
    '.',
    '../../../../tmp/evil',
    'a/../../b',
    'a/b',
    '/etc',
    '/tmp/x',
    '..\\x',
    'x/..',
    '',
    ' ',
    '.hidden',
    'Default',
    'a b',
    'x\ny',
    `${'a'.repeat(65)}`,
    '-x',
    '%2e%2e',
  ];

  it('every bad --profile is exit 2 with one line, before any file or the engine is touched', async () => {
    const sim = await EngineSimulator.start({ containers: [{ labels: LABELS, finishedAt: '2020-01-01T00:00:00Z' }] });
    const base = tempDir('hj-prof-');
    try {
      const home = path.join(base.dir, 'home');
      mkdirSync(home);
      for (const profile of BAD) {
        for (const args of [
          ['reap', '--profile', profile],
          ['reap', '--json', `--profile=${profile}`],
          ['list', '--profile', profile],
          ['--profile', profile, 'list', '--json'],
          ['reap', '--home', path.join(base.dir, 'h'), '--profile', profile],
        ]) {
          const res = await runCli([...args, '--host', sim.host], { env: { HOME: home } });
          const what = `${JSON.stringify(profile)}: ${args.join(' ')}`;
          // The message names the profile as given (control characters escaped).
          const shown = profile.replace(/[\u0000-\u001f]/g, (c) => JSON.stringify(c).slice(1, -1));
          assertUsageError(res, [`invalid profile '${shown}'`], what);
        }
      }
      assert.equal(sim.stats.requests, 0, 'the engine was never contacted');
      assert.equal(sim.size, 1);
      assert.deepEqual(tree(home), [], 'nothing was written under HOME');
      assert.deepEqual(readdirSync(base.dir).sort(), ['home'], 'nothing was written next to it');
      assert.ok(!existsSync('/tmp/evil') && !existsSync('/tmp/x/janitor'));
    } finally {
      await sim.close();
      base.cleanup();
    }
  });

  it('a good profile keeps every file the reaper writes inside <root>/profiles/<name>', async () => {
    const sim = await EngineSimulator.start({ containers: [{ labels: LABELS, finishedAt: '2020-01-01T00:00:00Z' }] });
    const base = tempDir('hj-prof-ok-');
    try {
      const res = await runCli(['reap', '--json', '--profile', PROFILE, '--host', sim.host], { env: { HOME: base.dir } });
      assert.equal(res.code, 0, res.stderr);
      assert.equal(sim.size, 0);
      const inside = path.join('.hermes', 'profiles', PROFILE);
      const written = tree(base.dir);
      assert.ok(
        written.some((f) => f.startsWith(inside)),
        `the reap wrote its lock and stamp: ${written.join(', ')}`,
      );
      for (const f of written) assert.ok(f.startsWith(inside) || inside.startsWith(f), `${f} is outside ${inside}`);
    } finally {
      await sim.close();
      base.cleanup();
    }
  });
});
