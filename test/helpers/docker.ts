import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** The image `scripts/engine.sh start` imports (busybox only). */
export const TEST_IMAGE = process.env.HERMES_JANITOR_TEST_IMAGE ?? 'hermes-janitor/busybox:test';
/** Label that marks every container a test run created, so cleanup only touches those. */
export const RUN_LABEL = 'hermes-janitor-test-run';

/** Which engine the engine suites run against: `docker` (default) or `podman` (via its Docker-compatible API). */
export const ENGINE_KIND = process.env.HERMES_JANITOR_TEST_ENGINE === 'podman' ? 'podman' : 'docker';
/** The engine's address, as the CLI reports it (DOCKER_HOST when set, else the default socket). */
export const ENGINE_HOST = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
/** The engine's unix socket path. */
export const ENGINE_SOCKET = ENGINE_HOST.replace(/^unix:\/\//, '');
/** Podman on these machines needs explicit ulimits for `run`. */
export const RUN_EXTRA = ENGINE_KIND === 'podman' ? ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'] : [];

/** A file whose immutability makes the engine fail to remove the container (HTTP 500), for failure tests. */
export function pinPath(fullId: string): string {
  return ENGINE_KIND === 'podman'
    ? `/var/lib/containers/storage/overlay-containers/${fullId}/userdata/config.json`
    : `/var/lib/docker/containers/${fullId}/hostname`;
}

export async function docker(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const { stdout } = await exec('docker', args, { env, maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

/** Fails loudly (never skips) when the engine is not up: run `scripts/engine.sh start` first. */
export async function requireEngine(): Promise<void> {
  try {
    await docker(['version', '--format', '{{.Server.Version}}']);
    await docker(['image', 'inspect', TEST_IMAGE, '--format', '{{.Id}}']);
  } catch (err) {
    throw new Error(`no Docker engine or no test image: run 'bash scripts/engine.sh start' first (${(err as Error).message.split('\n')[0]})`);
  }
}

export interface HermesContainerSpec {
  /** `hermes-profile` value; omit the label with null. */
  profile?: string | null;
  /** `hermes-agent` value; omit the label with null (default '1'). */
  agent?: string | null;
  /** Extra labels. */
  labels?: Record<string, string>;
  /** 'exited' (started, then stopped), 'running', or 'created' (never started). */
  state: 'exited' | 'running' | 'created';
  /** Image (default the test image) and command (default `sleep 3600`). */
  image?: string;
  cmd?: string[];
  /** Extra `docker run`/`create` arguments (e.g. `-v name:/path`). */
  args?: string[];
  /** Run with `--init` (default true, as hermes does; false as its s6-overlay images and snap-Docker mode run). */
  init?: boolean;
}

/** A test run's own namespace on the shared engine: a random profile and run label, and cleanup. */
export class EngineFixture {
  readonly runId = randomBytes(5).toString('hex');
  /** A profile name no other run uses. */
  readonly profile = `t-${this.runId}`;

  /** Creates a container the way hermes does (`docker run -d --init --label ...`), then brings it to `state`. */
  async create(spec: HermesContainerSpec, env?: NodeJS.ProcessEnv): Promise<string> {
    const labels: string[] = ['--label', `${RUN_LABEL}=${this.runId}`];
    const agent = spec.agent === undefined ? '1' : spec.agent;
    if (agent !== null) labels.push('--label', `hermes-agent=${agent}`);
    const profile = spec.profile === undefined ? this.profile : spec.profile;
    if (profile !== null) labels.push('--label', `hermes-profile=${profile}`);
    labels.push('--label', `hermes-task-id=task-${randomBytes(3).toString('hex')}`);
    for (const [k, v] of Object.entries(spec.labels ?? {})) labels.push('--label', `${k}=${v}`);
    const name = `hermes-${randomBytes(4).toString('hex')}`;
    const common = [
      ...(spec.init === false ? [] : ['--init']),
      ...RUN_EXTRA,
      '--name',
      name,
      ...labels,
      '--network',
      'none',
      ...(spec.args ?? []),
      spec.image ?? TEST_IMAGE,
      ...(spec.cmd ?? ['sleep', '3600']),
    ];
    if (spec.state === 'created') return docker(['create', ...common], env);
    const id = await docker(['run', '-d', ...common], env);
    if (spec.state === 'exited') await docker(['stop', '-t', '0', id], env);
    return id;
  }

  async createMany(n: number, spec: HermesContainerSpec, parallel = 6): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i += parallel) {
      ids.push(...(await Promise.all(Array.from({ length: Math.min(parallel, n - i) }, () => this.create(spec)))));
    }
    return ids;
  }

  /** `State.FinishedAt` of a container, as the engine reports it. */
  async finishedAt(id: string): Promise<string> {
    return docker(['inspect', '--format', '{{.State.FinishedAt}}', id]);
  }

  /** Ids of this run's containers still on the engine. */
  async remaining(): Promise<string[]> {
    const out = await docker(['ps', '-aq', '--no-trunc', '--filter', `label=${RUN_LABEL}=${this.runId}`]);
    return out ? out.split('\n').sort() : [];
  }

  async state(id: string): Promise<string> {
    return docker(['inspect', '--format', '{{.State.Status}}', id]);
  }

  /** Volumes and images this run made (removed by `cleanup`). */
  readonly volumes: string[] = [];
  readonly images: string[] = [];

  /** A named volume of this run. */
  async volume(): Promise<string> {
    const name = `hj-test-${this.runId}-${this.volumes.length}`;
    await docker(['volume', 'create', '--label', `${RUN_LABEL}=${this.runId}`, name]);
    this.volumes.push(name);
    return name;
  }

  /** The test image with `VOLUME /data` declared (`docker import --change`, which Podman's API takes too). */
  async volumeImage(): Promise<string> {
    const tag = `hermes-janitor/busybox-volume:${this.runId}`;
    const tmp = await docker(['create', TEST_IMAGE, 'true']);
    try {
      await exec('sh', ['-c', `docker export ${tmp} | docker import --change 'VOLUME /data' - ${tag}`], { env: process.env });
    } finally {
      await docker(['rm', '-f', tmp]).catch(() => undefined);
    }
    this.images.push(tag);
    return tag;
  }

  /** Removes this run's containers, whatever happened (between tests: a failed one leaves none to the next). */
  async removeContainers(): Promise<void> {
    const ids = await this.remaining().catch(() => []);
    if (ids.length) await docker(['rm', '-f', '-v', ...ids]).catch(() => undefined);
  }

  /** Removes everything this run created, whatever happened. */
  async cleanup(): Promise<void> {
    await this.removeContainers();
    if (this.volumes.length) await docker(['volume', 'rm', '-f', ...this.volumes]).catch(() => undefined);
    if (this.images.length) await docker(['rmi', '-f', ...this.images]).catch(() => undefined);
  }
}

/** An ISO instant at least `seconds` after a FinishedAt (for `--as-of`): rounded up to the next millisecond. */
export function after(finishedAt: string, seconds: number): string {
  const ms = Date.parse(finishedAt.replace(/(\.\d{3})\d+/, '$1'));
  return new Date(ms + 1 + seconds * 1000).toISOString();
}
