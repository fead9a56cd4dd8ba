/**
 * Reading a container's counters from its cgroup, against fake /proc and /sys trees: cgroup v1 (separate and
 * co-mounted controllers, a mount showing a sub-tree), v2, hybrid; and every case where the cgroup cannot be shown to
 * be the container's, which must give null (the caller then asks the engine).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { readCgroupCounters } from '../../src/adapters/cgroup-counters.js';

const ID = 'a'.repeat(40) + '0123456789abcdef01234567';
const OTHER = 'b'.repeat(64);
const PID = 4321;
const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const MEMORY_STAT = 'cache 0\nrss 106496\npgfault 1078\npgmajfault 0\ntotal_pgfault 1078\n';

/** A fake host: `mounts` are [root, mount point under the tree, fstype, super options]; files are relative to the tree. */
function host(opts: { mounts: Array<[string, string, string, string]>; cgroup: string; files: Record<string, string> }) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hj-cgroup-'));
  dirs.push(root);
  const put = (rel: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  };
  const info = opts.mounts.map(
    ([r, mp, type, sup], i) => `${30 + i} 23 0:${28 + i} ${r} ${path.join(root, mp)} rw,relatime shared:${i} - ${type} ${type} ${sup}`,
  );
  put('proc/self/mountinfo', ['22 1 8:1 / / rw - ext4 /dev/sda1 rw', ...info].join('\n') + '\n');
  put(`proc/${PID}/cgroup`, opts.cgroup);
  for (const [rel, text] of Object.entries(opts.files)) put(rel, text);
  return { proc: path.join(root, 'proc') };
}

const v1 = (cg: string, extra: Partial<Record<'cpu' | 'mem', string>> = {}) =>
  host({
    mounts: [
      ['/', 'sys/fs/cgroup/cpuacct', 'cgroup', 'rw,cpuacct'],
      ['/', 'sys/fs/cgroup/memory', 'cgroup', 'rw,memory'],
    ],
    cgroup: `4:memory:${cg}\n2:cpuacct:${cg}\n1:cpu:${cg}\n0::${cg}\n`,
    files: {
      [`sys/fs/cgroup/cpuacct${cg}/cpuacct.usage`]: extra.cpu ?? '26816675\n',
      [`sys/fs/cgroup/memory${cg}/memory.stat`]: extra.mem ?? MEMORY_STAT,
    },
  });

describe('readCgroupCounters', () => {
  it('cgroup v1 (Docker with cgroupfs): cpuacct.usage and memory.stat pgfault', () => {
    assert.deepEqual(readCgroupCounters(ID, PID, v1(`/docker/${ID}`)), { cpuNs: 26816675, pgfault: 1078, pids: null });
  });

  it('cgroup v1 with cpu,cpuacct co-mounted and the systemd driver', () => {
    const cg = `/system.slice/docker-${ID}.scope`;
    const roots = host({
      mounts: [
        ['/', 'sys/fs/cgroup/cpu,cpuacct', 'cgroup', 'rw,cpu,cpuacct'],
        ['/', 'sys/fs/cgroup/memory', 'cgroup', 'rw,memory'],
      ],
      cgroup: `5:memory:${cg}\n3:cpu,cpuacct:${cg}\n`,
      files: { [`sys/fs/cgroup/cpu,cpuacct${cg}/cpuacct.usage`]: '500\n', [`sys/fs/cgroup/memory${cg}/memory.stat`]: MEMORY_STAT },
    });
    assert.deepEqual(readCgroupCounters(ID, PID, roots), { cpuNs: 500, pgfault: 1078, pids: null });
  });

  it('a mount that shows a sub-tree: paths are taken relative to its root', () => {
    const roots = host({
      mounts: [
        ['/docker', 'cg/cpuacct', 'cgroup', 'rw,cpuacct'],
        ['/docker', 'cg/memory', 'cgroup', 'rw,memory'],
      ],
      cgroup: `4:memory:/docker/${ID}\n2:cpuacct:/docker/${ID}\n`,
      files: { [`cg/cpuacct/${ID}/cpuacct.usage`]: '77\n', [`cg/memory/${ID}/memory.stat`]: MEMORY_STAT },
    });
    assert.deepEqual(readCgroupCounters(ID, PID, roots), { cpuNs: 77, pgfault: 1078, pids: null });
  });

  it('cgroup v2 (Podman, systemd): cpu.stat usage_usec in nanoseconds; no memory.stat: CPU only', () => {
    const cg = `/machine.slice/libpod-${ID}.scope`;
    const files = { [`sys/fs/cgroup${cg}/cpu.stat`]: 'usage_usec 36259\nuser_usec 20000\nsystem_usec 16259\n' };
    const withMem = host({
      mounts: [['/', 'sys/fs/cgroup', 'cgroup2', 'rw,nsdelegate']],
      cgroup: `0::${cg}\n`,
      files: { ...files, [`sys/fs/cgroup${cg}/memory.stat`]: 'anon 0\npgfault 1394\n' },
    });
    assert.deepEqual(readCgroupCounters(ID, PID, withMem), { cpuNs: 36259000, pgfault: 1394, pids: null });
    const noMem = host({ mounts: [['/', 'sys/fs/cgroup', 'cgroup2', 'rw']], cgroup: `0::${cg}\n`, files });
    assert.deepEqual(readCgroupCounters(ID, PID, noMem), { cpuNs: 36259000, pgfault: null, pids: null });
  });

  it('hybrid hosts read the v1 controllers, never the unified tree (whose CPU count the engine does not report there)', () => {
    const cg = `/docker/${ID}`;
    const roots = host({
      mounts: [
        ['/', 'sys/fs/cgroup/cpuacct', 'cgroup', 'rw,cpuacct'],
        ['/', 'sys/fs/cgroup/memory', 'cgroup', 'rw,memory'],
        ['/', 'sys/fs/cgroup/unified', 'cgroup2', 'rw'],
      ],
      cgroup: `4:memory:${cg}\n2:cpuacct:${cg}\n0::${cg}\n`,
      files: {
        [`sys/fs/cgroup/cpuacct${cg}/cpuacct.usage`]: '123456\n',
        [`sys/fs/cgroup/memory${cg}/memory.stat`]: MEMORY_STAT,
        [`sys/fs/cgroup/unified${cg}/cpu.stat`]: 'usage_usec 999\n',
      },
    });
    assert.deepEqual(readCgroupCounters(ID, PID, roots), { cpuNs: 123456, pgfault: 1078, pids: null });
  });

  it('null whenever the cgroup cannot be shown to be the container', () => {
    // The pid belongs to another container (a reused pid), or to a host process.
    assert.equal(readCgroupCounters(ID, PID, v1(`/docker/${OTHER}`)), null);
    assert.equal(readCgroupCounters(ID, PID, v1('/user.slice')), null);
    // The id only in a parent directory, not the container's own cgroup.
    assert.equal(readCgroupCounters(ID, PID, v1(`/docker/${ID}/child`)), null);
    // Outside this process's cgroup namespace.
    assert.equal(readCgroupCounters(ID, PID, v1(`/../docker/${ID}`)), null);
    // No such process; no pid; a short or non-hex id.
    assert.equal(readCgroupCounters(ID, PID + 1, v1(`/docker/${ID}`)), null);
    assert.equal(readCgroupCounters(ID, 0, v1(`/docker/${ID}`)), null);
    assert.equal(readCgroupCounters(ID.slice(0, 12), PID, v1(`/docker/${ID.slice(0, 12)}`)), null);
    // No cgroup mount shows it.
    const unmounted = host({ mounts: [], cgroup: `2:cpuacct:/docker/${ID}\n`, files: {} });
    assert.equal(readCgroupCounters(ID, PID, unmounted), null);
    // A counter that is not a positive whole number.
    assert.equal(readCgroupCounters(ID, PID, v1(`/docker/${ID}`, { cpu: 'garbage\n' })), null);
    assert.equal(readCgroupCounters(ID, PID, v1(`/docker/${ID}`, { cpu: '0\n' })), null);
  });

  it('the process count: v1 pids controller pids.current (zombies included), v2 pids.current; absent or bad: null', () => {
    const cg = `/docker/${ID}`;
    const withPids = (pidsCg: string, count: string) =>
      host({
        mounts: [
          ['/', 'sys/fs/cgroup/cpuacct', 'cgroup', 'rw,cpuacct'],
          ['/', 'sys/fs/cgroup/memory', 'cgroup', 'rw,memory'],
          ['/', 'sys/fs/cgroup/pids', 'cgroup', 'rw,pids'],
        ],
        cgroup: `8:pids:${pidsCg}\n4:memory:${cg}\n2:cpuacct:${cg}\n`,
        files: {
          [`sys/fs/cgroup/cpuacct${cg}/cpuacct.usage`]: '500\n',
          [`sys/fs/cgroup/memory${cg}/memory.stat`]: MEMORY_STAT,
          [`sys/fs/cgroup/pids${pidsCg}/pids.current`]: count,
        },
      });
    assert.deepEqual(readCgroupCounters(ID, PID, withPids(cg, '4\n')), { cpuNs: 500, pgfault: 1078, pids: 4 });
    // Another cgroup's pids (a reused pid, a mislabelled tree) never count for this container; nor does garbage.
    assert.deepEqual(readCgroupCounters(ID, PID, withPids(`/docker/${OTHER}`, '2\n')), { cpuNs: 500, pgfault: 1078, pids: null });
    assert.deepEqual(readCgroupCounters(ID, PID, withPids(cg, 'max\n')), { cpuNs: 500, pgfault: 1078, pids: null });
    assert.deepEqual(readCgroupCounters(ID, PID, withPids(cg, '0\n')), { cpuNs: 500, pgfault: 1078, pids: null });
    const v2cg = `/machine.slice/libpod-${ID}.scope`;
    const v2 = host({
      mounts: [['/', 'sys/fs/cgroup', 'cgroup2', 'rw']],
      cgroup: `0::${v2cg}\n`,
      files: { [`sys/fs/cgroup${v2cg}/cpu.stat`]: 'usage_usec 10\n', [`sys/fs/cgroup${v2cg}/pids.current`]: '3\n' },
    });
    assert.deepEqual(readCgroupCounters(ID, PID, v2), { cpuNs: 10000, pgfault: null, pids: 3 });
  });

  it('a memory.stat without pgfault gives CPU only', () => {
    assert.deepEqual(readCgroupCounters(ID, PID, v1(`/docker/${ID}`, { mem: 'cache 0\n' })), { cpuNs: 26816675, pgfault: null, pids: null });
  });
});
