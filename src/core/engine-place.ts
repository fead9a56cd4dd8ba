/**
 * The one answer to "is this engine on this host", for every rule that needs it (owners of sandboxes, the exec-tree
 * pass's signals, an image budget given as a percentage of the disk).
 */

/**
 * An engine address on this host: a unix socket (`unix://`, or a bare path as DOCKER_HOST may give it) or a Windows
 * named pipe (`npipe://`). A `tcp://` or `ssh://` engine is elsewhere as far as anything here can prove, even at
 * 127.0.0.1 (a forwarded port), so nothing of this host (its processes, its disks) is taken to be the engine's.
 */
export function engineOnThisHost(host: string): boolean {
  return host.startsWith('unix://') || host.startsWith('npipe://') || host.startsWith('/');
}
