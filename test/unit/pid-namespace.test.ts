/**
 * Whether the janitor's view of processes is the engine's (src/adapters/pid-namespace.ts), against procfs roots the
 * test makes: the host's initial pid namespace sees everything; another sees everything only once a running
 * container's `State.Pid` is, in its /proc, a process of that container's cgroup (then remembered for that engine).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { INITIAL_PID_NAMESPACE, pidNamespaceProblem } from '../../src/adapters/pid-namespace.js';

const ID = 'a'.repeat(64);
const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A procfs root whose `self/ns/pid` is `ns`, with process `pid` in container `container`'s cgroup. */
function procRoot(ns: string, processes: Array<{ pid: number; container: string }> = []): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hj-pidns-'));
  roots.push(root);
  mkdirSync(path.join(root, 'self', 'ns'), { recursive: true });
  symlinkSync(ns, path.join(root, 'self', 'ns', 'pid'));
  for (const p of processes) {
    mkdirSync(path.join(root, String(p.pid)));
    writeFileSync(path.join(root, String(p.pid), 'cgroup'), `0::/system.slice/docker-${p.container}.scope\n`);
  }
  return root;
}

describe('pid namespace: a partial view of processes, known', () => {
  it("the host's initial pid namespace sees every process", () => {
    assert.equal(pidNamespaceProblem({ engineHost: 'unix:///a.sock', procRoot: procRoot(INITIAL_PID_NAMESPACE) }), null);
    assert.equal(pidNamespaceProblem({ engineHost: null, procRoot: procRoot(INITIAL_PID_NAMESPACE) }), null);
  });

  it("another pid namespace: partial, the reason naming it and the fix; the engine's State.Pid not a process of its container here changes nothing", () => {
    const root = procRoot('pid:[4026532999]', [{ pid: 4242, container: 'b'.repeat(64) }]);
    const why = pidNamespaceProblem({ engineHost: 'unix:///a.sock', evidence: { id: ID, pid: 4242 }, procRoot: root });
    assert.match(why ?? '', /pid namespace of its own \(pid:\[4026532999\]\), not the host's.*--pid=host/);
    assert.notEqual(pidNamespaceProblem({ engineHost: 'unix:///a.sock', evidence: { id: ID, pid: 99 }, procRoot: root }), null, 'no such process here');
    assert.notEqual(pidNamespaceProblem({ engineHost: null, procRoot: root }), null, 'nothing proved: partial');
  });

  it("the engine's own numbering holds here (its container's State.Pid is that container's process): the view is the engine's, remembered", () => {
    const root = procRoot('pid:[4026533000]', [{ pid: 88, container: ID }]);
    assert.notEqual(pidNamespaceProblem({ engineHost: 'unix:///b.sock', procRoot: root }), null, 'before any proof');
    assert.equal(pidNamespaceProblem({ engineHost: 'unix:///b.sock', evidence: { id: ID, pid: 88 }, procRoot: root }), null);
    assert.equal(pidNamespaceProblem({ engineHost: 'unix:///b.sock', procRoot: root }), null, 'remembered for that engine');
    assert.equal(pidNamespaceProblem({ engineHost: null, procRoot: root }), null, 'and for what needs no engine');
    assert.notEqual(pidNamespaceProblem({ engineHost: 'unix:///other.sock', procRoot: root }), null, 'not for another engine');
  });

  it("no procfs: not this check's to say (the process table cannot be read, said where it is read)", () => {
    assert.equal(pidNamespaceProblem({ engineHost: 'unix:///a.sock', procRoot: path.join(os.tmpdir(), 'hj-no-such-proc') }), null);
  });
});
