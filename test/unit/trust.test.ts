/**
 * The trust rules (src/core/trust.ts), pure: who controls a directory, whose a home is, the owner rule for a root a
 * user's settings name, plans, log directories, and the name of root's state directory for a home. The same rules on
 * real files, as root with a throwaway user, are test/integration/root-trust.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ChainDir,
  type Controllers,
  addControllers,
  dirControllers,
  homeOwnerOf,
  logDirProblem,
  namedByOwner,
  planFileProblem,
  rootChainProblem,
  stateDirName,
} from '../../src/core/trust.js';

const gidOf = (uid: number) => (uid === 1001 ? 1001 : undefined);
const ctl = (...entries: Array<[Parameters<typeof addControllers>[1], string]>): Controllers => {
  const m: Controllers = new Map();
  for (const [cs, where] of entries) addControllers(m, cs, where);
  return m;
};

describe('trust rules', () => {
  it(
    "a directory is controlled by its owner (not root), its group when group-writable (not the owner's own), everyone when world-writable; " +
      "sticky ones only by their entries' owners",
    () => {
      assert.deepEqual(dirControllers({ uid: 0, gid: 0, mode: 0o40755 }, gidOf), { controllers: [], sticky: false });
      assert.deepEqual(dirControllers({ uid: 1001, gid: 1001, mode: 0o40775 }, gidOf), { controllers: [{ kind: 'user', id: 1001 }], sticky: false });
      assert.deepEqual(dirControllers({ uid: 1001, gid: 50, mode: 0o40775 }, gidOf).controllers, [
        { kind: 'user', id: 1001 },
        { kind: 'group', id: 50 },
      ]);
      assert.deepEqual(dirControllers({ uid: 0, gid: 0, mode: 0o40777 }, gidOf).controllers, [{ kind: 'anyone' }]);
      assert.deepEqual(dirControllers({ uid: 0, gid: 0, mode: 0o41777 }, gidOf), { controllers: [], sticky: true });
      assert.deepEqual(dirControllers({ uid: 0, gid: 0, mode: 0o40770 }, gidOf).controllers, [], "root's group is root's");
    },
  );

  it("a home is root's when only root controls the way to it, one user's when one user does, refused otherwise (naming who and where)", () => {
    assert.deepEqual(homeOwnerOf('/root/.hermes', ctl()), { owner: null });
    assert.deepEqual(homeOwnerOf('/home/a/.hermes', ctl([[{ kind: 'user', id: 1001 }], '/home/a'])), { owner: 1001 });
    const two = homeOwnerOf('/home/a/x/.hermes', ctl([[{ kind: 'user', id: 1001 }], '/home/a'], [[{ kind: 'user', id: 1002 }], '/home/a/x']));
    assert.ok('refused' in two && two.refused.includes('uid 1001 (/home/a), uid 1002 (/home/a/x)'), JSON.stringify(two));
    const all = homeOwnerOf('/srv/h', ctl([[{ kind: 'anyone' }], '/srv/h']));
    assert.ok('refused' in all && /every user \(\/srv\/h\)/.test(all.refused), JSON.stringify(all));
  });

  it("the owner rule for a root: every directory down to what is removed is the owner's, no symlink, one filesystem", () => {
    const d = (p: string, over: Partial<ChainDir> = {}): ChainDir => ({ path: p, symlink: false, directory: true, uid: 1001, dev: 1, mountId: 7, ...over });
    assert.equal(rootChainProblem([d('/h/sb'), d('/h/sb/docker')], 1001), null);
    assert.equal(rootChainProblem([], 1001), null, 'nothing there: nothing to remove');
    assert.match(rootChainProblem([d('/var/lib', { uid: 0 })], 1001)!, /^\/var\/lib belongs to uid 0, not to the home's owner uid 1001$/);
    assert.match(rootChainProblem([d('/h/sb'), d('/h/sb/docker', { symlink: true, directory: false })], 1001)!, /docker is a symlink/);
    assert.match(rootChainProblem([d('/h/sb'), d('/h/sb/docker', { mountId: 8 })], 1001)!, /another filesystem/);
    assert.match(rootChainProblem([d('/h/sb'), d('/h/sb/docker', { dev: 2 })], 1001)!, /another filesystem/);
    assert.match(rootChainProblem([d('/h/sb', { uid: 1002 })], 1001)!, /belongs to uid 1002/);
  });

  it("a plan root applies must be root's and writable by nobody else; a log's directory may be changed by its writer only", () => {
    assert.equal(planFileProblem('/p', { uid: 0, mode: 0o100600 }), null);
    assert.match(planFileProblem('/p', { uid: 1001, mode: 0o100600 })!, /belongs to uid 1001, not root/);
    assert.match(planFileProblem('/p', { uid: 0, mode: 0o100620 })!, /writable by others \(mode 0620\)/);
    assert.equal(logDirProblem('/h/logs', [{ kind: 'user', id: 1001 }], 1001), null);
    assert.match(logDirProblem('/h/logs', [{ kind: 'user', id: 1001 }], 0)!, /can be changed by uid 1001/);
    assert.match(logDirProblem('/h/logs', [{ kind: 'group', id: 50 }], 1001)!, /group 50/);
  });

  it("a root's setting is the owner's word when it is the default or comes from their .env or config.yaml", () => {
    assert.ok(namedByOwner('default', '/h'));
    assert.ok(namedByOwner('/h/.env', '/h'));
    assert.ok(namedByOwner('config.yaml terminal.sandbox_dir', '/h'));
    assert.ok(!namedByOwner('env TERMINAL_SANDBOX_DIR', '/h'));
    assert.ok(!namedByOwner('/etc/hermes/.env', '/h'));
    assert.ok(!namedByOwner('/etc/hermes/config.yaml terminal.sandbox_dir', '/h'));
  });

  it("root's state directory for a home: a readable tail of its real path and 16 hex of its SHA-256, one per home", () => {
    assert.match(stateDirName('/home/agent/.hermes'), /^home_agent_.hermes-[0-9a-f]{16}$/);
    assert.notEqual(stateDirName('/home/a/.hermes'), stateDirName('/home/a_/.hermes'));
    assert.equal(stateDirName('/home/a/.hermes'), stateDirName('/home/a/.hermes'));
    assert.ok(!stateDirName('/.x').startsWith('.'), 'never a hidden or dot-dot name');
    assert.ok(stateDirName(`/${'d/'.repeat(100)}h`).length <= 48 + 17);
  });
});
